/* util.h: small helpers every file uses: cleanup attributes, string and number parsing. */
#pragma once

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#define _cleanup_(f)   __attribute__((cleanup(f)))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _unused_       __attribute__((unused))
#define ELEMENTSOF(x)  (sizeof(x) / sizeof((x)[0]))

static inline void freep(void *p) {
        free(*(void **)p);
}
static inline void fclosep(FILE **f) {
        if (*f) fclose(*f);
}
static inline void closep(int *fd) {
        if (*fd >= 0) close(*fd);
}
#define _cleanup_free_   _cleanup_(freep)
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Returns CLOCK_MONOTONIC in milliseconds (never fails on Linux). */
uint64_t monotonic_ms(void);
/* Returns the time on clock (CLOCK_MONOTONIC, CLOCK_REALTIME) ms milliseconds from now: a deadline
 * for pthread_cond_timedwait and the like. Never fails. */
struct timespec timespec_after_ms(clockid_t clock, uint64_t ms);

/* Opens path for writing (created or truncated) with exactly this mode, whatever the umask (a
 * file that existed gets the mode too). Returns the stream, or NULL with errno set. */
FILE *fopen_private(const char *path, mode_t mode);
#define _cleanup_close_ _cleanup_(closep)

/* Returns ptr and sets *p to NULL: hands ownership out of a _cleanup_ variable. */
#define TAKE_PTR(p)                                                                                                    \
        ({                                                                                                             \
                __typeof__(p) _t = (p);                                                                                \
                (p) = NULL;                                                                                            \
                _t;                                                                                                    \
        })

/* Returns true when a and b are equal strings (both may be NULL). */
static inline bool streq_ptr(const char *a, const char *b) {
        if (!a || !b) return a == b;
        return strcmp(a, b) == 0;
}
#define streq(a, b) (strcmp((a), (b)) == 0)

/* Returns the part of s after prefix, or NULL when s does not start with prefix. */
static inline const char *startswith(const char *s, const char *prefix) {
        size_t n = strlen(prefix);
        return strncmp(s, prefix, n) == 0 ? s + n : NULL;
}

/* Returns s with trailing whitespace removed in place. */
char *strstrip_right(char *s);

/* Sets *ret_error (when ret_error is not NULL) to the malloc'd printf of fmt and returns r: the
 * one line for "fail with this errno and this sentence". */
int errorf(char **ret_error, int r, const char *fmt, ...) _printf_(3, 4);

/* Returns a malloc'd printf result; aborts on out-of-memory (as all allocation helpers here do). */
char *xvasprintf(const char *fmt, va_list ap) _printf_(1, 0);
char *xasprintf(const char *fmt, ...) _printf_(1, 2);
void *xmalloc(size_t n) __attribute__((malloc, alloc_size(1), returns_nonnull));
void *xcalloc(size_t n, size_t size) __attribute__((malloc, alloc_size(1, 2), returns_nonnull));
void *xrealloc(void *p, size_t n) __attribute__((alloc_size(2), returns_nonnull));
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

/* Parses a whole decimal (or 0x hex with base 0) unsigned number; returns 0 or -EINVAL/-ERANGE. */
int parse_u64(const char *s, int base, uint64_t *ret);
/* Parses a whole signed decimal number; returns 0 or -EINVAL/-ERANGE. */
int parse_i64(const char *s, int64_t *ret);

/* A growing byte buffer, always NUL-terminated. */
struct buf {
        char *data;
        size_t len, cap;
};
void buf_append(struct buf *b, const char *s, size_t n);
void buf_puts(struct buf *b, const char *s);
void buf_printf(struct buf *b, const char *fmt, ...) _printf_(2, 3);
void buf_free(struct buf *b);

/* Returns a malloc'd copy of s in which every byte that is not part of a valid UTF-8 sequence,
 * and every control character but tab, is replaced by '?'. Never fails. */
char *utf8_sanitize(const char *s);

/* Returns a malloc'd copy of s safe to print on a terminal, for every string from outside the
 * program (file contents, names, API answers, kernel log lines): control characters (C0, with \n,
 * \r and \t spelled so), DEL, the C1 controls U+0080..U+009F, the bidirectional overrides
 * U+202A..U+202E and U+2066..U+2069, and bytes that are not valid UTF-8 become visible escapes such
 * as \x1b (C1 and bidi characters as the \xNN of each of their bytes). Other UTF-8 is kept as is,
 * and so is the backslash: the result is for eyes, not for parsing back. Never fails. */
char *escape_terminal(const char *s);

/* Formats like fprintf, then writes the text to f escaped by escape_terminal, except one trailing
 * newline which is written as is: for messages that quote outside data. Returns the bytes written
 * or -errno; errno (for %m) is read before anything else is called. */
int fprintf_escaped(FILE *f, const char *fmt, ...) _printf_(2, 3);

/* Returns the offset of the first byte of s (len bytes) that does not start a well-formed UTF-8
 * sequence (RFC 3629: no overlong forms, surrogates or code points past U+10FFFF), or len. */
size_t utf8_valid_prefix(const char *s, size_t len);
