/* cgroup.c: which pod and container a process belongs to, from its /proc/<pid>/cgroup. */
#include "layer1_hardware/cgroup.h"

#include <ctype.h>

#include "basic/util.h"

/* Returns true when s[0..36) is a pod UID, 8-4-4-4-12 hex digits separated by '-' or '_'. */
static bool is_uid(const char *s, size_t n) {
        if (n < 36) return false;
        for (size_t i = 0; i < 36; i++) {
                bool sep = i == 8 || i == 13 || i == 18 || i == 23;
                if (sep ? (s[i] != '-' && s[i] != '_') : !isxdigit((unsigned char)s[i])) return false;
        }
        return n == 36 || !isxdigit((unsigned char)s[36]);
}

/* Returns the malloc'd container id in path component c[0..n) (prefix and ".scope" dropped), or NULL
 * when it is not 64 hex digits. */
static char *container_id(const char *c, size_t n) {
        static const char *const prefixes[] = { "cri-containerd-", "crio-", "docker-", "containerd-" };
        for (size_t i = 0; i < ELEMENTSOF(prefixes); i++) {
                size_t p = strlen(prefixes[i]);
                if (n > p && strncmp(c, prefixes[i], p) == 0) {
                        c += p;
                        n -= p;
                        break;
                }
        }
        if (n > 6 && strncmp(c + n - 6, ".scope", 6) == 0) n -= 6;
        if (n != 64) return NULL;
        for (size_t i = 0; i < n; i++)
                if (!isxdigit((unsigned char)c[i])) return NULL;
        char *id = xstrndup(c, n);
        for (char *q = id; *q; q++) *q = (char)tolower((unsigned char)*q);
        return id;
}

/* Looks for the pod in one cgroup path p[0..n). Returns 1 with the results, or 0. */
static int parse_path(const char *p, size_t n, char **ret_pod_uid, char **ret_container_id) {
        bool kubepods = false;
        for (size_t i = 0; i < n;) {
                while (i < n && p[i] == '/') i++;
                size_t start = i;
                while (i < n && p[i] != '/') i++;
                const char *c = p + start;
                size_t len = i - start;
                if (len >= 8 && strncmp(c, "kubepods", 8) == 0) kubepods = true;
                if (!kubepods) continue;
                /* "pod<uid>" at the start of the component or after a '-' */
                for (size_t k = 0; k + 3 + 36 <= len; k++) {
                        if ((k > 0 && c[k - 1] != '-') || strncmp(c + k, "pod", 3) != 0 ||
                            !is_uid(c + k + 3, len - k - 3))
                                continue;
                        char *uid = xstrndup(c + k + 3, 36);
                        for (char *q = uid; *q; q++) *q = *q == '_' ? '-' : (char)tolower((unsigned char)*q);
                        char *cid = NULL;
                        size_t j = i;
                        while (j < n && p[j] == '/') j++;
                        size_t cs = j;
                        while (j < n && p[j] != '/') j++;
                        if (j > cs) cid = container_id(p + cs, j - cs);
                        *ret_pod_uid = uid;
                        *ret_container_id = cid;
                        return 1;
                }
        }
        return 0;
}

int cgroup_pod_container(const char *text, size_t len, char **ret_pod_uid, char **ret_container_id) {
        *ret_pod_uid = *ret_container_id = NULL;
        const char *end = text + len;
        for (const char *line = text; line < end;) {
                const char *nl = memchr(line, '\n', (size_t)(end - line));
                const char *le = nl ? nl : end;
                if (le > line) {
                        const char *c1 = memchr(line, ':', (size_t)(le - line));
                        const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(le - c1 - 1)) : NULL;
                        if (!c2) return -EINVAL;
                        if (!*ret_pod_uid &&
                            parse_path(c2 + 1, (size_t)(le - c2 - 1), ret_pod_uid, ret_container_id) == 1)
                                return 1;
                }
                line = nl ? nl + 1 : end;
        }
        return 0;
}

int proc_stat_state(const char *text, size_t len, char comm[PROC_COMM_MAX]) {
        comm[0] = 0;
        size_t i = 0;
        while (i < len && text[i] >= '0' && text[i] <= '9') i++;
        if (i == 0 || i > 10 || len - i < 2 || text[i] != ' ' || text[i + 1] != '(') return -EINVAL;
        size_t open = i + 2, close = len;
        while (close > open && text[close - 1] != ')') close--;
        if (close == open) return -EINVAL; /* no ')' */
        close--;                           /* at the last ')' */
        if (len - close < 3 || text[close + 1] != ' ') return -EINVAL;
        char st = text[close + 2];
        if (!((st >= 'A' && st <= 'Z') || (st >= 'a' && st <= 'z'))) return -EINVAL;
        if (len - close > 3 && text[close + 3] != ' ' && text[close + 3] != '\n') return -EINVAL;
        size_t n = close - open < PROC_COMM_MAX - 1 ? close - open : PROC_COMM_MAX - 1;
        for (size_t k = 0; k < n; k++) {
                unsigned char c = (unsigned char)text[open + k];
                comm[k] = c < ' ' || c >= 0x7f ? '?' : (char)c;
        }
        comm[n] = 0;
        return (unsigned char)st;
}
