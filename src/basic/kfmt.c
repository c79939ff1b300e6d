/* kfmt.c: parsers for small /proc and sysfs formats; pure functions, unit-tested and fuzzed. */
#include "basic/kfmt.h"
#include "basic/hostfs.h"
#include "basic/util.h"

#include <ctype.h>

int kfmt_numbered_state(const char *s, char **ret_text) {
        *ret_text = NULL;
        const char *colon = strchr(s, ':');
        if (!colon || colon == s || colon - s > 3) return -EINVAL;
        int v = 0;
        for (const char *p = s; p < colon; p++) {
                if (!isdigit((unsigned char)*p)) return -EINVAL;
                v = v * 10 + (*p - '0');
        }
        if (v > 255) return -EINVAL;
        const char *text = colon + 1;
        while (*text == ' ') text++;
        *ret_text = strstrip_right(xstrdup(text));
        return v;
}

char *kfmt_driver_version(const char *line, bool *ret_open) {
        const char *p = startswith(line, "NVRM version:");
        if (!p) return NULL;
        if (ret_open) *ret_open = strstr(line, "Open Kernel Module") != NULL;
        /* The first whitespace-separated token made of digits and dots, with at least one dot. */
        while (*p) {
                while (*p && isspace((unsigned char)*p)) p++;
                const char *start = p;
                bool digits = true, dot = false;
                while (*p && !isspace((unsigned char)*p)) {
                        if (*p == '.')
                                dot = true;
                        else if (!isdigit((unsigned char)*p))
                                digits = false;
                        p++;
                }
                size_t len = (size_t)(p - start);
                if (len && digits && dot && isdigit((unsigned char)start[0]) && isdigit((unsigned char)start[len - 1]))
                        return xstrndup(start, len);
        }
        return NULL;
}

char *kfmt_info_value(const char *text, const char *key) {
        size_t klen = strlen(key);
        for (const char *line = text; line;) {
                const char *nl = strchr(line, '\n');
                if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
                        const char *v = line + klen + 1;
                        while (*v == ' ' || *v == '\t') v++;
                        size_t len = nl ? (size_t)(nl - v) : strlen(v);
                        return strstrip_right(xstrndup(v, len));
                }
                line = nl ? nl + 1 : NULL;
        }
        return NULL;
}

char *kfmt_lockdown(const char *s) {
        const char *open = strchr(s, '[');
        const char *close = open ? strchr(open, ']') : NULL;
        if (!open || !close || close == open + 1) return NULL;
        return xstrndup(open + 1, (size_t)(close - open - 1));
}

int kfmt_efivar_bool(const char *data, size_t len) {
        if (len < 5) return -EINVAL;
        if (data[4] != 0 && data[4] != 1) return -EINVAL;
        return data[4];
}

size_t kfmt_proc_modules(const char *text, char ***ret) {
        size_t n = 0, cap = 8;
        char **v = xmalloc(cap * sizeof *v);
        for (const char *line = text; line && *line;) {
                const char *nl = strchr(line, '\n');
                size_t len = strcspn(line, " \t\n");
                if (len > 0 && len <= 64) {
                        if (n + 2 > cap) v = xrealloc(v, (cap *= 2) * sizeof *v);
                        v[n++] = xstrndup(line, len);
                }
                line = nl ? nl + 1 : NULL;
        }
        v[n] = NULL;
        *ret = v;
        return n;
}

int64_t kfmt_proc_stat_btime(const char *text) {
        for (const char *l = text; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
                if (!startswith(l, "btime ")) continue;
                const char *p = l + 6;
                while (*p == ' ') p++;
                int64_t v = 0;
                int digits = 0;
                for (; *p >= '0' && *p <= '9' && digits < 18; p++, digits++) v = v * 10 + (*p - '0');
                if (digits == 0 || digits >= 18 || !(*p == '\n' || *p == 0 || *p == ' ') || v <= 0) return -EINVAL;
                return v;
        }
        return -EINVAL;
}
