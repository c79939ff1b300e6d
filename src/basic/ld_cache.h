/* ld_cache.h: the dynamic linker's cache (/etc/ld.so.cache, written by ldconfig) read without the linker. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* An entry's flags (glibc's elf/cache.h): the low byte is the type, the high byte the ABI. */
#define LD_CACHE_FLAG_ELF_LIBC6     0x0003u
#define LD_CACHE_FLAG_X8664_LIB64   0x0300u
#define LD_CACHE_FLAG_AARCH64_LIB64 0x0a00u

/* The flags an entry has when this process can load it (x86_64: 0x0303, aarch64: 0x0a03, others: 0, which
 * ld_cache_find treats as "any ELF libc6 entry"). */
uint32_t ld_cache_native_flags(void);

/* Called for each entry in file order: the soname (key), the path the linker would load (value, absolute)
 * and the entry's flags. Return 0 to go on, anything else to stop (ld_cache_parse then returns it). */
typedef int (*ld_cache_entry_fn)(const char *key, const char *value, uint32_t flags, void *userdata);

/*
 * Parses a cache image of len bytes (the whole file). Both layouts are read: the new one
 * ("glibc-ld.so.cache1.1", glibc 2.32+ writes only this one) and the old "ld.so-1.7.0" one, whose new-format
 * part that follows it is preferred when present. Returns 0 after calling fn for every entry, fn's nonzero
 * return when it stopped, or -EBADMSG with *ret_error (malloc'd, names the defect) for a truncated or
 * malformed cache: a bad magic, an entry table or string offset past the end, a string without its NUL, a
 * big-endian cache. Never reads outside data[0..len).
 */
int ld_cache_parse(const void *data, size_t len, ld_cache_entry_fn fn, void *userdata, char **ret_error);

/*
 * Returns the value of the first entry whose key is soname and whose flags are flags (0: any ELF libc6
 * entry) as a malloc'd string in *ret, 0 when found, -ENOENT when there is none, -EBADMSG (with *ret_error)
 * when the cache is malformed.
 */
int ld_cache_find(const void *data, size_t len, const char *soname, uint32_t flags, char **ret, char **ret_error);
