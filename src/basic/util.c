/* util.c: allocation, string, number and buffer helpers declared in util.h. */
#include "basic/util.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>

/* Allocation failure is not a condition gpunode can diagnose around: abort loudly. */
static void *oom_check(void *p) {
        if (!p) {
                fputs("gpunode: out of memory\n", stderr);
                abort();
        }
        return p;
}

void *xmalloc(size_t n) {
        return oom_check(malloc(n ? n : 1));
}
void *xcalloc(size_t n, size_t size) {
        return oom_check(calloc(n ? n : 1, size ? size : 1));
}
void *xrealloc(void *p, size_t n) {
        return oom_check(realloc(p, n ? n : 1));
}
char *xstrdup(const char *s) {
        return oom_check(strdup(s));
}
char *xstrndup(const char *s, size_t n) {
        return oom_check(strndup(s, n));
}

char *xvasprintf(const char *fmt, va_list ap) {
        char *s;
        if (vasprintf(&s, fmt, ap) < 0) oom_check(NULL);
        return s;
}

char *xasprintf(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        char *s = xvasprintf(fmt, ap);
        va_end(ap);
        return s;
}

int errorf(char **ret_error, int r, const char *fmt, ...) {
        if (ret_error) {
                va_list ap;
                va_start(ap, fmt);
                if (vasprintf(ret_error, fmt, ap) < 0) oom_check(NULL);
                va_end(ap);
        }
        return r;
}

char *strstrip_right(char *s) {
        size_t n = strlen(s);
        while (n > 0 && isspace((unsigned char)s[n - 1])) s[--n] = 0;
        return s;
}

int parse_u64(const char *s, int base, uint64_t *ret) {
        char *end;
        if (!s || !*s || *s == '-' || isspace((unsigned char)*s)) return -EINVAL;
        errno = 0;
        unsigned long long v = strtoull(s, &end, base);
        if (errno == ERANGE) return -ERANGE;
        if (end == s || *end) return -EINVAL;
        *ret = v;
        return 0;
}

int parse_i64(const char *s, int64_t *ret) {
        char *end;
        if (!s || !*s || isspace((unsigned char)*s)) return -EINVAL;
        errno = 0;
        long long v = strtoll(s, &end, 10);
        if (errno == ERANGE) return -ERANGE;
        if (end == s || *end) return -EINVAL;
        *ret = v;
        return 0;
}

void buf_append(struct buf *b, const char *s, size_t n) {
        if (b->len + n + 1 > b->cap) {
                size_t cap = b->cap ? b->cap : 256;
                while (cap < b->len + n + 1) cap *= 2;
                b->data = xrealloc(b->data, cap);
                b->cap = cap;
        }
        memcpy(b->data + b->len, s, n);
        b->len += n;
        b->data[b->len] = 0;
}

void buf_puts(struct buf *b, const char *s) {
        buf_append(b, s, strlen(s));
}

void buf_printf(struct buf *b, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(NULL, 0, fmt, ap);
        va_end(ap);
        if (n < 0) return;
        if (b->len + (size_t)n + 1 > b->cap) {
                size_t cap = b->cap ? b->cap : 256;
                while (cap < b->len + (size_t)n + 1) cap *= 2;
                b->data = xrealloc(b->data, cap);
                b->cap = cap;
        }
        va_start(ap, fmt);
        vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
        va_end(ap);
        b->len += (size_t)n;
}

void buf_free(struct buf *b) {
        free(b->data);
        *b = (struct buf){ 0 };
}

/* Returns the length of the valid UTF-8 sequence at s (1..4), or 0 when it is not one. */
static size_t utf8_sequence_length(const unsigned char *s) {
        if (s[0] < 0x80) return 1;
        size_t n;
        uint32_t cp;
        if ((s[0] & 0xE0) == 0xC0)
                n = 2, cp = s[0] & 0x1F;
        else if ((s[0] & 0xF0) == 0xE0)
                n = 3, cp = s[0] & 0x0F;
        else if ((s[0] & 0xF8) == 0xF0)
                n = 4, cp = s[0] & 0x07;
        else
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xC0) != 0x80) return 0;
                cp = (cp << 6) | (s[i] & 0x3F);
        }
        /* Overlong forms, surrogates and code points past U+10FFFF are invalid. */
        if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
                return 0;
        return n;
}

char *utf8_sanitize(const char *s) {
        size_t len = strlen(s);
        char *out = xmalloc(len + 1);
        size_t o = 0;
        for (size_t i = 0; i < len;) {
                const unsigned char *p = (const unsigned char *)s + i;
                size_t n = utf8_sequence_length(p);
                if (n == 0 || (n == 1 && p[0] < 0x20 && p[0] != '\t') || p[0] == 0x7F) {
                        out[o++] = '?';
                        i++;
                        continue;
                }
                memcpy(out + o, p, n);
                o += n;
                i += n;
        }
        out[o] = 0;
        return out;
}

/* Returns true when the code point of the valid UTF-8 sequence p (n bytes) must not reach a
 * terminal raw: C1 controls and the bidirectional embeddings, overrides and isolates. */
static bool unsafe_code_point(const unsigned char *p, size_t n) {
        if (n == 2) return p[0] == 0xC2 && p[1] >= 0x80 && p[1] <= 0x9F;                 /* U+0080..U+009F */
        if (n == 3 && p[0] == 0xE2 && p[1] == 0x80) return p[2] >= 0xAA && p[2] <= 0xAE; /* U+202A..U+202E */
        if (n == 3 && p[0] == 0xE2 && p[1] == 0x81) return p[2] >= 0xA6 && p[2] <= 0xA9; /* U+2066..U+2069 */
        return false;
}

char *escape_terminal(const char *s) {
        struct buf b = { 0 };
        buf_append(&b, "", 0);
        size_t len = strlen(s);
        for (size_t i = 0; i < len;) {
                const unsigned char *p = (const unsigned char *)s + i;
                size_t n = utf8_sequence_length(p);
                if (n == 1 && p[0] >= 0x20 && p[0] != 0x7F) {
                        buf_append(&b, (const char *)p, 1);
                } else if (n == 1 && (p[0] == '\n' || p[0] == '\r' || p[0] == '\t')) {
                        buf_puts(&b, p[0] == '\n' ? "\\n" : p[0] == '\r' ? "\\r" : "\\t");
                } else if (n > 1 && !unsafe_code_point(p, n)) {
                        buf_append(&b, (const char *)p, n);
                } else {
                        /* a control byte, a byte that starts no valid sequence, or each byte of an unsafe one */
                        if (n == 0) n = 1;
                        for (size_t k = 0; k < n; k++) buf_printf(&b, "\\x%02x", p[k]);
                }
                i += n;
        }
        return b.data;
}

int fprintf_escaped(FILE *f, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        char *text = NULL;
        int n = vasprintf(&text, fmt, ap);
        va_end(ap);
        if (n < 0) return -ENOMEM;
        bool newline = n > 0 && text[n - 1] == '\n';
        if (newline) text[n - 1] = 0;
        char *clean = escape_terminal(text);
        free(text);
        int r = fputs(clean, f) == EOF || (newline && fputc('\n', f) == EOF) ? -EIO : (int)(strlen(clean) + newline);
        free(clean);
        return r;
}

size_t utf8_valid_prefix(const char *s, size_t len) {
        size_t i = 0;
        while (i < len) {
                const unsigned char *p = (const unsigned char *)s + i;
                if (p[0] < 0x80) {
                        i++;
                        continue;
                }
                size_t need = (p[0] & 0xE0) == 0xC0 ? 2 : (p[0] & 0xF0) == 0xE0 ? 3 : (p[0] & 0xF8) == 0xF0 ? 4 : 0;
                if (need == 0 || i + need > len) return i;
                size_t n = utf8_sequence_length(p);
                if (n != need) return i;
                i += n;
        }
        return len;
}

FILE *fopen_private(const char *path, mode_t mode) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        if (fd < 0) return NULL;
        if (fchmod(fd, mode) < 0) {
                int e = errno;
                close(fd);
                errno = e;
                return NULL;
        }
        FILE *f = fdopen(fd, "w");
        if (!f) {
                int e = errno;
                close(fd);
                errno = e;
        }
        return f;
}

uint64_t monotonic_ms(void) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (uint64_t)t.tv_sec * 1000u + (uint64_t)t.tv_nsec / 1000000u;
}

struct timespec timespec_after_ms(clockid_t clock, uint64_t ms) {
        struct timespec t;
        clock_gettime(clock, &t);
        t.tv_sec += (time_t)(ms / 1000);
        t.tv_nsec += (long)(ms % 1000) * 1000000L;
        if (t.tv_nsec >= 1000000000L) {
                t.tv_sec++;
                t.tv_nsec -= 1000000000L;
        }
        return t;
}
