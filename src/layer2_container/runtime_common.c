/* runtime_common.c: what the layer 2 probes share: daemons in /proc, executables on the host's PATH. */
#include <ctype.h>

#include "facts/node.h"
#include "layer2_container/runtime_common.h"
#include "basic/hostfs.h"
#include "basic/kfmt.h"

const char *const runtime_bin_dirs[] = { "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin",
                                         "/sbin",           "/bin",           NULL };

int runtime_binary_check(const char *path) {
        struct stat st;
        int r = hostfs_stat(path, &st);
        if (r < 0) return r;
        if (S_ISDIR(st.st_mode)) return -EISDIR;
        if (!S_ISREG(st.st_mode)) return -EINVAL;
        return (st.st_mode & 0111) ? 0 : -EACCES;
}

char *runtime_find_binary(const char *name, const char *const *dirs) {
        if (strchr(name, '/')) return runtime_binary_check(name) == 0 ? xstrdup(name) : NULL;
        for (size_t i = 0; dirs[i]; i++) {
                char *p = xasprintf("%s/%s", dirs[i], name);
                if (runtime_binary_check(p) == 0) return p;
                free(p);
        }
        return NULL;
}

/* Returns the process start time in unix seconds from /proc/<pid>/stat field 22 and /proc/stat
 * btime, or -1 when either is unreadable. */
static int64_t start_from_stat(int pid) {
        _cleanup_free_ char *p = xasprintf("/proc/%d/stat", pid);
        _cleanup_free_ char *stat = NULL, *pstat = NULL;
        if (hostfs_read(p, 64 * 1024, &stat, NULL) < 0) return -1;
        const char *s = strrchr(stat, ')');
        if (!s) return -1;
        s++;
        /* fields after the comm: 3 (state) ... 22 (starttime) is the 20th */
        unsigned long long ticks = 0;
        for (int field = 3; field <= 22; field++) {
                while (*s == ' ') s++;
                if (!*s) return -1;
                if (field == 22) {
                        char *end;
                        errno = 0;
                        ticks = strtoull(s, &end, 10);
                        if (errno || end == s) return -1;
                        break;
                }
                s += strcspn(s, " ");
        }
        if (hostfs_read("/proc/stat", 1u << 20, &pstat, NULL) < 0) return -1;
        int64_t btime = kfmt_proc_stat_btime(pstat);
        if (btime < 0) return -1;
        long hz = sysconf(_SC_CLK_TCK);
        if (hz <= 0) hz = 100;
        return (int64_t)btime + (int64_t)(ticks / (unsigned long long)hz);
}

bool runtime_find_process(const char *comm, struct runtime_process *ret) {
        *ret = (struct runtime_process){ .started = -1 };
        _cleanup_strv_free_ char **names = NULL;
        int n = hostfs_list("/proc", false, &names);
        long best = -1;
        for (int i = 0; i < n; i++) {
                if (!isdigit((unsigned char)names[i][0])) continue;
                uint64_t pid;
                if (parse_u64(names[i], 10, &pid) < 0 || pid > INT32_MAX) continue;
                _cleanup_free_ char *p = xasprintf("/proc/%s/comm", names[i]);
                _cleanup_free_ char *c = NULL;
                if (hostfs_read_line(p, &c) < 0 || !streq(c, comm)) continue;
                if (best < 0 || (long)pid < best) best = (long)pid;
        }
        if (best < 0) return false;
        ret->pid = (int)best;
        ret->started = start_from_stat(ret->pid);
        if (ret->started >= 0) {
                ret->started_from = xasprintf("/proc/%d/stat starttime and /proc/stat btime", ret->pid);
        } else {
                struct stat st;
                _cleanup_free_ char *d = xasprintf("/proc/%d", ret->pid);
                if (hostfs_stat(d, &st) == 0) {
                        ret->started = st.st_mtime;
                        ret->started_from = xasprintf("the time of /proc/%d", ret->pid);
                }
        }
        _cleanup_free_ char *cp = xasprintf("/proc/%d/cmdline", ret->pid);
        _cleanup_free_ char *cmd = NULL;
        size_t len = 0;
        if (hostfs_read(cp, 64 * 1024, &cmd, &len) == 0) {
                for (size_t off = 0; off < len;) {
                        const char *arg = cmd + off;
                        size_t alen = strlen(arg);
                        const char *next = off + alen + 1 < len ? arg + alen + 1 : NULL;
                        const char *v;
                        if ((streq(arg, "--config") || streq(arg, "-c")) && next) {
                                ret->config_arg = utf8_sanitize(next);
                                break;
                        }
                        if ((v = startswith(arg, "--config=")) || (v = startswith(arg, "-c="))) {
                                ret->config_arg = utf8_sanitize(v);
                                break;
                        }
                        off += alen + 1;
                }
        }
        return true;
}

void runtime_process_free(struct runtime_process *p) {
        free(p->started_from);
        free(p->config_arg);
        *p = (struct runtime_process){ 0 };
}

void runtime_config_file_free(struct runtime_config_file *f) {
        free(f->path);
        free(f->error);
        free(f->imported_by);
        *f = (struct runtime_config_file){ 0 };
}

int containerd_parse_version(const char *s, int *ret_major, int *ret_minor) {
        *ret_major = *ret_minor = 0;
        /* a dpkg epoch ("1:1.7.24-1") or a leading 'v' ("v2.0.0") */
        const char *colon = strchr(s, ':');
        if (colon && colon > s && strspn(s, "0123456789") == (size_t)(colon - s)) s = colon + 1;
        if (*s == 'v') s++;
        if (!isdigit((unsigned char)s[0])) return -EINVAL;
        char *e;
        unsigned long major = strtoul(s, &e, 10);
        if (*e != '.' || !isdigit((unsigned char)e[1])) return -EINVAL;
        unsigned long minor = strtoul(e + 1, &e, 10);
        if (major == 0 || major > 99 || minor > 999) return -EINVAL;
        *ret_major = (int)major;
        *ret_minor = (int)minor;
        return 0;
}
