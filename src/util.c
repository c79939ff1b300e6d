/* util.c: allocation, string, number and buffer helpers declared in util.h. */
#include "util.h"

#include <ctype.h>
#include <stdarg.h>

/* Allocation failure is not a condition gpunode can diagnose around: abort loudly. */
static void *oom_check(void *p) {
        if (!p) {
                fputs("gpunode: out of memory\n", stderr);
                abort();
        }
        return p;
}

void *xmalloc(size_t n) { return oom_check(malloc(n ? n : 1)); }
void *xcalloc(size_t n, size_t size) { return oom_check(calloc(n ? n : 1, size ? size : 1)); }
void *xrealloc(void *p, size_t n) { return oom_check(realloc(p, n ? n : 1)); }
char *xstrdup(const char *s) { return oom_check(strdup(s)); }
char *xstrndup(const char *s, size_t n) { return oom_check(strndup(s, n)); }

char *xasprintf(const char *fmt, ...) {
        va_list ap;
        char *s;
        va_start(ap, fmt);
        int r = vasprintf(&s, fmt, ap);
        va_end(ap);
        if (r < 0) oom_check(NULL);
        return s;
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

void buf_puts(struct buf *b, const char *s) { buf_append(b, s, strlen(s)); }

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
        *b = (struct buf){0};
}
