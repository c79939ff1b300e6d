/* mountinfo.c: the /proc/<pid>/mountinfo parser. */
#include "layer2_container/mountinfo.h"
#include "basic/util.h"

/* Returns a copy of the n bytes at s with the kernel's octal escapes (\040 space, \011 tab, \012
 * newline, \134 backslash) decoded; other bytes as they are. */
static char *unescape(const char *s, size_t n) {
        char *r = xmalloc(n + 1), *o = r;
        for (size_t i = 0; i < n; i++) {
                if (s[i] == '\\' && n - i >= 4 && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
                    s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
                        *o++ = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
                        i += 3;
                } else
                        *o++ = s[i];
        }
        *o = 0;
        return r;
}

/* Returns true when the comma-separated options (n bytes at s) hold the option "ro". */
static bool has_ro(const char *s, size_t n) {
        size_t i = 0;
        while (i <= n) {
                size_t j = i;
                while (j < n && s[j] != ',') j++;
                if (j - i == 2 && s[i] == 'r' && s[i + 1] == 'o') return true;
                i = j + 1;
        }
        return false;
}

/* Returns true when the n bytes at s are decimal digits (at least one). */
static bool all_digits(const char *s, size_t n) {
        if (n == 0 || n > 20) return false;
        for (size_t i = 0; i < n; i++)
                if (s[i] < '0' || s[i] > '9') return false;
        return true;
}

/* Parses one line (n bytes, no newline) into e. Returns 0, or -EINVAL when it is not a mountinfo line. */
static int parse_line(const char *s, size_t n, struct mount_entry *e) {
        enum { MAX_FIELDS = 64 };
        const char *f[MAX_FIELDS];
        size_t fl[MAX_FIELDS], nf = 0, i = 0;
        if (memchr(s, 0, n)) return -EINVAL;
        while (i < n) {
                while (i < n && s[i] == ' ') i++;
                if (i >= n) break;
                size_t j = i;
                while (j < n && s[j] != ' ') j++;
                if (nf == MAX_FIELDS) return -EINVAL;
                f[nf] = s + i;
                fl[nf++] = j - i;
                i = j;
        }
        /* id parent major:minor root mount-point options [optional...] - fstype source super-options */
        size_t sep = 6;
        while (sep < nf && !(fl[sep] == 1 && f[sep][0] == '-')) sep++;
        if (nf < 10 || sep + 4 > nf) return -EINVAL; /* fstype, source and super options follow the '-' */
        if (!all_digits(f[0], fl[0]) || !all_digits(f[1], fl[1])) return -EINVAL;
        const char *colon = memchr(f[2], ':', fl[2]);
        if (!colon || !all_digits(f[2], (size_t)(colon - f[2])) ||
            !all_digits(colon + 1, fl[2] - (size_t)(colon - f[2]) - 1))
                return -EINVAL;
        if (f[4][0] != '/') return -EINVAL;
        e->mount_point = unescape(f[4], fl[4]);
        e->read_only = has_ro(f[5], fl[5]);
        e->fstype = unescape(f[sep + 1], fl[sep + 1]);
        e->source = unescape(f[sep + 2], fl[sep + 2]);
        e->sb_read_only = has_ro(f[sep + 3], fl[sep + 3]);
        return 0;
}

int mountinfo_parse(const char *text, size_t len, struct mount_entry **ret, size_t *ret_n, unsigned *ret_bad_line) {
        struct mount_entry *v = NULL;
        size_t n = 0;
        unsigned line = 0;
        *ret = NULL;
        *ret_n = 0;
        *ret_bad_line = 0;
        for (size_t i = 0; i < len;) {
                const char *nl = memchr(text + i, '\n', len - i);
                size_t end = nl ? (size_t)(nl - text) : len;
                line++;
                if (end > i) {
                        struct mount_entry e = { .line = line };
                        if (parse_line(text + i, end - i, &e) < 0) {
                                mount_entries_free(v, n);
                                *ret_bad_line = line;
                                return -EINVAL;
                        }
                        v = xrealloc(v, (n + 1) * sizeof *v);
                        v[n++] = e;
                }
                i = end + 1;
        }
        *ret = v;
        *ret_n = n;
        return 0;
}

const struct mount_entry *mountinfo_find(const struct mount_entry *v, size_t n, const char *path) {
        const struct mount_entry *best = NULL;
        size_t best_len = 0;
        for (size_t i = 0; i < n; i++) {
                const char *mp = v[i].mount_point;
                size_t l = strlen(mp);
                while (l > 1 && mp[l - 1] == '/') l--; /* "/var/" as "/var" */
                bool holds = l == 1 ? path[0] == '/' : strncmp(path, mp, l) == 0 && (path[l] == 0 || path[l] == '/');
                if (holds && l >= best_len) best = &v[i], best_len = l;
        }
        return best;
}

void mount_entries_free(struct mount_entry *v, size_t n) {
        for (size_t i = 0; v && i < n; i++) {
                free(v[i].mount_point);
                free(v[i].fstype);
                free(v[i].source);
        }
        free(v);
}
