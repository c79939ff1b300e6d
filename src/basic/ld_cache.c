/* ld_cache.c: glibc's ld.so.cache formats, read with bounds checks on every offset (see ld_cache.h). */
#include "basic/ld_cache.h"

#include <inttypes.h>
#include <string.h>

#include "basic/util.h"

#define MAGIC_NEW   "glibc-ld.so.cache"
#define VERSION_NEW "1.1"
#define MAGIC_OLD   "ld.so-1.7.0"

/* struct cache_file_new: magic[17], version[3], nlibs, len_strings, flags (1 byte), 3 padding bytes,
 * extension_offset, unused[3]; then nlibs struct file_entry_new (flags, key, value, osversion, hwcap u64). */
#define NEW_HEADER 48u
#define NEW_ENTRY  24u
/* struct cache_file: magic[11] (+1 padding), nlibs; then nlibs struct file_entry (flags, key, value). */
#define OLD_HEADER 16u
#define OLD_ENTRY  12u

/* The endianness bits of the new header's flags byte (glibc's cache_file_new_flags_endian_*). */
#define ENDIAN_MASK   3u
#define ENDIAN_UNSET  0u
#define ENDIAN_LITTLE 2u
#define ENDIAN_BIG    3u

uint32_t ld_cache_native_flags(void) {
#if defined(__x86_64__) && !defined(__ILP32__)
        return LD_CACHE_FLAG_ELF_LIBC6 | LD_CACHE_FLAG_X8664_LIB64;
#elif defined(__aarch64__) && !defined(__ILP32__)
        return LD_CACHE_FLAG_ELF_LIBC6 | LD_CACHE_FLAG_AARCH64_LIB64;
#else
        return 0;
#endif
}

/* Reads a native-endian u32 at p. */
static uint32_t u32_at(const unsigned char *p) {
        uint32_t v;
        memcpy(&v, p, sizeof v);
        return v;
}

/* Returns the NUL-terminated string at base + off when it lies within [0, len), else NULL. */
static const char *str_at(const unsigned char *base, size_t len, uint32_t off) {
        if (off >= len) return NULL;
        const void *nul = memchr(base + off, 0, len - off);
        return nul ? (const char *)base + off : NULL;
}

/* Walks a table of n entries of size entry_size at table; strings are offsets from strings_base, which
 * holds strings_len bytes. Returns 0, fn's stop value, or -EBADMSG with *ret_error. */
static int walk(const unsigned char *table, uint32_t n, size_t entry_size, const unsigned char *strings_base,
                size_t strings_len, const char *what, ld_cache_entry_fn fn, void *userdata, char **ret_error) {
        for (uint32_t i = 0; i < n; i++) {
                const unsigned char *e = table + (size_t)i * entry_size;
                uint32_t flags = u32_at(e), key = u32_at(e + 4), value = u32_at(e + 8);
                const char *k = str_at(strings_base, strings_len, key);
                const char *v = str_at(strings_base, strings_len, value);
                if (!k || !v)
                        return errorf(ret_error, -EBADMSG,
                                      "%s entry %" PRIu32 ": its %s offset %" PRIu32
                                      " is past the end of the cache or its string has no NUL",
                                      what, i, k ? "value" : "key", k ? value : key);
                int r = fn(k, v, flags, userdata);
                if (r) return r;
        }
        return 0;
}

/* Parses a new-format cache starting at p (len bytes to the end of the file). Returns as ld_cache_parse. */
static int parse_new(const unsigned char *p, size_t len, ld_cache_entry_fn fn, void *userdata, char **ret_error) {
        if (len < NEW_HEADER)
                return errorf(ret_error, -EBADMSG, "the ld.so.cache header is truncated (%zu of %u bytes)", len,
                              NEW_HEADER);
        if (memcmp(p + strlen(MAGIC_NEW), VERSION_NEW, strlen(VERSION_NEW)) != 0)
                return errorf(ret_error, -EBADMSG, "ld.so.cache format version %.3s, not " VERSION_NEW,
                              (const char *)p + strlen(MAGIC_NEW));
        unsigned endian = p[28] & ENDIAN_MASK;
        bool little = __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__;
        if (endian != ENDIAN_UNSET && endian != (little ? ENDIAN_LITTLE : ENDIAN_BIG))
                return errorf(ret_error, -EBADMSG, "ld.so.cache is %s, not this machine's byte order",
                              endian == ENDIAN_BIG      ? "big-endian"
                              : endian == ENDIAN_LITTLE ? "little-endian"
                                                        : "of invalid endianness");
        uint32_t n = u32_at(p + 20);
        if (n > (len - NEW_HEADER) / NEW_ENTRY)
                return errorf(ret_error, -EBADMSG,
                              "ld.so.cache claims %" PRIu32 " entries, more than its %zu bytes can hold", n, len);
        /* String offsets in the new format count from the new header. */
        return walk(p + NEW_HEADER, n, NEW_ENTRY, p, len, "ld.so.cache", fn, userdata, ret_error);
}

int ld_cache_parse(const void *data, size_t len, ld_cache_entry_fn fn, void *userdata, char **ret_error) {
        const unsigned char *p = data;
        if (ret_error) *ret_error = NULL;
        if (len >= strlen(MAGIC_NEW) && memcmp(p, MAGIC_NEW, strlen(MAGIC_NEW)) == 0)
                return parse_new(p, len, fn, userdata, ret_error);
        if (len < OLD_HEADER || memcmp(p, MAGIC_OLD, strlen(MAGIC_OLD)) != 0)
                return errorf(ret_error, -EBADMSG, "not an ld.so.cache (no %s or %s magic)", MAGIC_NEW, MAGIC_OLD);
        uint32_t n = u32_at(p + 12);
        if (n > (len - OLD_HEADER) / OLD_ENTRY)
                return errorf(ret_error, -EBADMSG,
                              "ld.so.cache (old format) claims %" PRIu32 " entries, more than its %zu bytes can hold",
                              n, len);
        size_t strings = OLD_HEADER + (size_t)n * OLD_ENTRY;
        /* The new format follows, aligned to 8 (glibc's ALIGN_CACHE); the linker prefers it. */
        size_t next = (strings + 7) & ~(size_t)7;
        if (next + NEW_HEADER <= len && memcmp(p + next, MAGIC_NEW, strlen(MAGIC_NEW)) == 0)
                return parse_new(p + next, len - next, fn, userdata, ret_error);
        /* Old-format string offsets count from the end of the entry table. */
        return walk(p + OLD_HEADER, n, OLD_ENTRY, p + strings, len - strings, "ld.so.cache (old format)", fn, userdata,
                    ret_error);
}

struct find_ctx {
        const char *soname;
        uint32_t flags;
        char *found;
};

/* An ld_cache_entry_fn: stops (1) at the first entry with the soname and the flags wanted. */
static int find_one(const char *key, const char *value, uint32_t flags, void *userdata) {
        struct find_ctx *c = userdata;
        if (!streq(key, c->soname) || value[0] != '/') return 0;
        if (c->flags ? flags != c->flags : (flags & 0xffu) != LD_CACHE_FLAG_ELF_LIBC6) return 0;
        c->found = xstrdup(value);
        return 1;
}

int ld_cache_find(const void *data, size_t len, const char *soname, uint32_t flags, char **ret, char **ret_error) {
        struct find_ctx c = { soname, flags, NULL };
        int r = ld_cache_parse(data, len, find_one, &c, ret_error);
        if (r < 0) return r;
        if (!c.found) return -ENOENT;
        *ret = c.found;
        return 0;
}
