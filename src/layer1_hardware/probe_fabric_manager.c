/* probe_fabric_manager.c: the fabric manager as the host shows it: its dpkg package and version, the tail of its log
 * (starts, versions, errors). */
#include "facts/node.h"
#include "basic/hostfs.h"
#include "basic/read_cap.h"

#include <fcntl.h>
#include <strings.h>

/* Returns the first occurrence of the NUL-terminated lit in the n bytes at p, or NULL. */
static const char *find(const char *p, size_t n, const char *lit) {
        return memmem(p, n, lit, strlen(lit));
}

/* Copies n bytes into dst (cap bytes) with every byte outside printable ASCII as '?'. Returns dst. */
static char *copy_ascii(char *dst, size_t cap, const char *src, size_t n) {
        size_t o = 0;
        for (size_t i = 0; i < n && o + 1 < cap; i++) {
                unsigned char c = (unsigned char)src[i];
                dst[o++] = c == '\t' ? ' ' : (c < 0x20 || c >= 0x7f) ? '?' : (char)c;
        }
        dst[o] = 0;
        return dst;
}

/* Returns a malloc'd version token ("550.54.15") starting at p (n bytes): digits, dots, letters,
 * '-' and '_', trailing '.' dropped; NULL when it does not start with a digit. */
static char *version_token(const char *p, size_t n) {
        size_t i = 0;
        while (i < n && i < 48 &&
               ((p[i] >= '0' && p[i] <= '9') || p[i] == '.' || p[i] == '-' || p[i] == '_' ||
                (p[i] >= 'a' && p[i] <= 'z')))
                i++;
        while (i > 0 && p[i - 1] == '.') i--;
        if (i == 0 || p[0] < '0' || p[0] > '9') return NULL;
        char buf[64];
        return xstrdup(copy_ascii(buf, sizeof buf, p, i));
}

/* Returns the kind of one error-ish line, or -1 when the line is neither an error nor a pattern
 * gpunode looks for. */
static int classify(const char *p, size_t n) {
        if ((find(p, n, "don't match with driver version") || find(p, n, "doesn't match with driver version") ||
             find(p, n, "don\xe2\x80\x99t match with driver version")))
                return FM_LOG_VERSION_MISMATCH;
        if (find(p, n, "match with any supported system topology")) return FM_LOG_TOPOLOGY_MISMATCH;
        if (find(p, n, "request to query NVSwitch device information from NVSwitch driver failed"))
                return FM_LOG_NVSWITCH_QUERY_FAILED;
        if (find(p, n, "detected NVSwitch fatal error")) return FM_LOG_NVSWITCH_FATAL;
        if (find(p, n, "detected NVSwitch non-fatal error")) return FM_LOG_NVSWITCH_NON_FATAL;
        if (find(p, n, "training failed") || find(p, n, "failed to train")) return FM_LOG_TRAINING_FAILED;
        if (find(p, n, "in the multicast team")) return FM_LOG_MULTICAST;
        if (find(p, n, "is not able to") || find(p, n, "failed to ")) return FM_LOG_NOT_ABLE;
        if (find(p, n, "[ERROR]")) return FM_LOG_ERROR;
        return -1;
}

/* Moves what was counted so far to "before the last start" and starts counting anew. */
static void restart(struct fm_log_facts *r) {
        r->errors_before_start += r->errors;
        r->errors = 0;
        memset(r->kind_count, 0, sizeof r->kind_count);
        r->n_kept = 0;
        free(r->mismatch_fm);
        free(r->mismatch_driver);
        r->mismatch_fm = r->mismatch_driver = NULL;
}

/* Looks at one line (no '\n'). */
static void scan_line(struct fm_log_facts *r, const char *p, size_t n) {
        r->lines++;
        const char *v = find(p, n, "Fabric Manager version ");
        if (v && find(p, n, " is running")) {
                v += strlen("Fabric Manager version ");
                char *ver = version_token(v, (size_t)(p + n - v));
                if (ver) {
                        restart(r);
                        free(r->running_version);
                        r->running_version = ver;
                        r->start_lineno = r->lines;
                        r->starts++;
                        return;
                }
        }
        int kind = classify(p, n);
        if (kind < 0) return;
        r->errors++;
        r->kind_count[kind]++;
        if (kind == FM_LOG_VERSION_MISMATCH) {
                const char *a = find(p, n, "interface version ");
                const char *b = find(p, n, "with driver version ");
                free(r->mismatch_fm);
                free(r->mismatch_driver);
                r->mismatch_fm = a ? version_token(a + 18, (size_t)(p + n - a - 18)) : NULL;
                r->mismatch_driver = b ? version_token(b + 20, (size_t)(p + n - b - 20)) : NULL;
        }
        if (r->n_kept == FM_LOG_KEPT) {
                memmove(r->kept, r->kept + 1, sizeof r->kept[0] * (FM_LOG_KEPT - 1));
                r->n_kept--;
        }
        struct fm_log_line *k = &r->kept[r->n_kept++];
        k->lineno = r->lines;
        k->kind = kind;
        copy_ascii(k->text, sizeof k->text, p, n);
}

/* Scans the log's text line by line (see layer1_hardware.h). Never fails. */
void fm_log_scan(const char *text, size_t len, struct fm_log_facts *ret) {
        const char *p = text, *end = text + len;
        while (p < end) {
                const char *nl = memchr(p, '\n', (size_t)(end - p));
                size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
                if (n > 0 && p[n - 1] == '\r') n--;
                scan_line(ret, p, n);
                p = nl ? nl + 1 : end;
        }
}

/* Returns true when a dpkg package name is the fabric manager: "nvidia-fabricmanager" or
 * "nvidia-fabricmanager-<branch>" (not -dev-, not libnvidia-...). */
static bool fm_package_name(const char *p, size_t n) {
        static const char prefix[] = "nvidia-fabricmanager";
        const size_t pl = sizeof prefix - 1;
        if (n < pl || memcmp(p, prefix, pl) != 0) return false;
        if (n == pl) return true;
        if (p[pl] != '-' || n == pl + 1) return false;
        for (size_t i = pl + 1; i < n; i++)
                if (p[i] < '0' || p[i] > '9') return false;
        return true;
}

/* Keeps one package in ret when it is an installed fabric manager package (the last one found wins). */
static void keep_package(struct fm_package_facts *ret, const struct dpkg_package *pkg) {
        if (!pkg->installed || !pkg->version || !fm_package_name(pkg->name, strlen(pkg->name))) return;
        char buf[80];
        free(ret->name);
        free(ret->raw_version);
        free(ret->version);
        ret->name = xstrdup(copy_ascii(buf, sizeof buf, pkg->name, strlen(pkg->name)));
        ret->raw_version = xstrdup(copy_ascii(buf, sizeof buf, pkg->version, strlen(pkg->version)));
        const char *u = ret->raw_version, *colon = strchr(u, ':');
        if (colon) u = colon + 1;           /* epoch */
        const char *dash = strrchr(u, '-'); /* Debian revision */
        ret->version = dash ? xstrndup(u, (size_t)(dash - u)) : xstrdup(u);
}

/* Finds the fabric manager package in dpkg's packages (see layer1_hardware.h). Never fails. */
void fm_package_find(const struct dpkg_status *dpkg, struct fm_package_facts *ret) {
        for (size_t i = 0; i < dpkg->n_packages; i++) keep_package(ret, &dpkg->packages[i]);
}

/* Returns the kind's name, or "?" when out of range. */
const char *fm_log_kind_name(enum fm_log_kind k) {
        static const char *const names[_FM_LOG_KIND_MAX] = {
                [FM_LOG_ERROR] = "error",
                [FM_LOG_VERSION_MISMATCH] = "version-mismatch",
                [FM_LOG_TOPOLOGY_MISMATCH] = "topology-mismatch",
                [FM_LOG_NVSWITCH_QUERY_FAILED] = "nvswitch-query-failed",
                [FM_LOG_NVSWITCH_FATAL] = "nvswitch-fatal",
                [FM_LOG_NVSWITCH_NON_FATAL] = "nvswitch-non-fatal",
                [FM_LOG_TRAINING_FAILED] = "training-failed",
                [FM_LOG_NOT_ABLE] = "failed",
                [FM_LOG_MULTICAST] = "multicast",
        };
        return (unsigned)k < _FM_LOG_KIND_MAX ? names[k] : "?";
}

/* Returns the log path the config names (LOG_FILE_NAME=...), FM_LOG_PATH when the config is absent
 * or names none; "" when the config sends the log to syslog (an empty LOG_FILE_NAME). */
static char *log_path(void) {
        _cleanup_free_ char *cfg = NULL;
        size_t len = 0;
        if (hostfs_read(FM_CONFIG_PATH, 1u << 20, &cfg, &len) < 0) return xstrdup(FM_LOG_PATH);
        for (const char *p = cfg; p && *p;) {
                const char *nl = strchr(p, '\n');
                size_t n = nl ? (size_t)(nl - p) : strlen(p);
                if (n >= 14 && memcmp(p, "LOG_FILE_NAME=", 14) == 0) {
                        _cleanup_free_ char *v = xstrndup(p + 14, n - 14);
                        size_t vl = strlen(v);
                        while (vl > 0 && (v[vl - 1] == ' ' || v[vl - 1] == '\r')) v[--vl] = 0;
                        if (vl == 0) return xstrdup("");
                        if (v[0] == '/') return xstrdup(v);
                }
                p = nl ? nl + 1 : NULL;
        }
        return xstrdup(FM_LOG_PATH);
}

/* Reads the log's last FM_LOG_TAIL_BYTES into ret. */
static void probe_log(struct fm_log_facts *ret) {
        ret->path = log_path();
        if (!*ret->path) {
                free(ret->path);
                ret->path = xstrdup(FM_CONFIG_PATH);
                ret->rc = -ENOENT;
                ret->error = xasprintf("%s: LOG_FILE_NAME is empty: the fabric manager logs to syslog", FM_CONFIG_PATH);
                return;
        }
        int fd = hostfs_open(ret->path, O_RDONLY | O_NONBLOCK);
        if (fd < 0) {
                ret->rc = fd;
                ret->error = read_error(ret->path, fd);
                return;
        }
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                ret->rc = -EINVAL;
                ret->error = xasprintf("%s: not a regular file", ret->path);
                close(fd);
                return;
        }
        ret->size = (uint64_t)st.st_size;
        if (ret->size > FM_LOG_TAIL_BYTES) {
                ret->tail_only = true;
                if (lseek(fd, (off_t)(ret->size - FM_LOG_TAIL_BYTES), SEEK_SET) < 0) {
                        ret->rc = -errno;
                        ret->error = read_error(ret->path, ret->rc);
                        close(fd);
                        return;
                }
        }
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        /* What was appended since fstat() is read up to the cap, and the rest left to the next look: a busy log is
         * not an unreadable one. */
        int r = read_fd_capped(fd, FM_LOG_TAIL_BYTES + (64u << 10), true, &text, &len);
        close(fd);
        if (r < 0) {
                ret->rc = r;
                ret->error = read_error(ret->path, r);
                return;
        }
        const char *p = text;
        if (ret->tail_only) {
                /* The first line read is most likely cut: start after it. */
                const char *nl = memchr(text, '\n', len);
                p = nl ? nl + 1 : text + len;
        }
        fm_log_scan(p, len - (size_t)(p - text), ret);
}

/* Finds the fabric manager's dpkg package into ret, from the status file probe_all read once. */
static void probe_package(const struct dpkg_status *dpkg, struct fm_package_facts *ret) {
        if (dpkg->rc < 0) {
                ret->rc = dpkg->rc;
                ret->error = read_error(DPKG_STATUS_PATH, dpkg->rc);
                return;
        }
        fm_package_find(dpkg, ret);
}

void probe_fabric_manager(const struct dpkg_status *dpkg, struct fabric_manager_facts *ret) {
        *ret = (struct fabric_manager_facts){ 0 };
        probe_package(dpkg, &ret->package);
        probe_log(&ret->log);
}

void fabric_manager_facts_free(struct fabric_manager_facts *f) {
        free(f->package.error);
        free(f->package.name);
        free(f->package.version);
        free(f->package.raw_version);
        free(f->log.error);
        free(f->log.path);
        free(f->log.running_version);
        free(f->log.mismatch_fm);
        free(f->log.mismatch_driver);
        *f = (struct fabric_manager_facts){ 0 };
}
