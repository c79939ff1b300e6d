/* probe_runtimes.c: layer 2 probes entry point, daemons in /proc, binaries, CRI-O drop-ins and Docker's daemon.json. */
#include <ctype.h>
#include <jansson.h>
#include <sys/stat.h>

#include "facts/node.h"
#include "facts/layer2_container.h"
#include "basic/hostfs.h"
#include "basic/toml.h"

#define CONFIG_READ_MAX (1u << 20)

static const char *const BIN_DIRS[] = {"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin", NULL};

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
        const char *b = strstr(pstat, "\nbtime ");
        if (!b) b = startswith(pstat, "btime ") ? pstat - 1 : NULL;
        if (!b) return -1;
        long long btime = strtoll(b + 7, NULL, 10);
        if (btime <= 0) return -1;
        long hz = sysconf(_SC_CLK_TCK);
        if (hz <= 0) hz = 100;
        return (int64_t)btime + (int64_t)(ticks / (unsigned long long)hz);
}

bool runtime_find_process(const char *comm, struct runtime_process *ret) {
        *ret = (struct runtime_process){.started = -1};
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
        *p = (struct runtime_process){0};
}

void runtime_config_file_free(struct runtime_config_file *f) {
        free(f->path);
        free(f->error);
        free(f->imported_by);
        *f = (struct runtime_config_file){0};
}

/* ---- CRI-O ---- */

int crio_apply_file(struct crio_facts *c, struct runtime_config_file *file, const char *text, size_t len) {
        _cleanup_toml_ struct toml_value *doc = NULL;
        struct toml_error err;
        if (toml_parse(text, len, &doc, &err) < 0) {
                file->rc = -EINVAL;
                file->error = xasprintf("%s: line %d, column %d: %s", file->path, err.line, err.column, err.message);
                return -EINVAL;
        }
        const struct toml_value *rt = toml_get_path(doc, "crio", "runtime", NULL);
        const char *def = toml_string(toml_table_get(rt, "default_runtime"));
        if (def) {
                free(c->default_runtime);
                free(c->default_runtime_file);
                c->default_runtime = utf8_sanitize(def);
                c->default_runtime_file = xstrdup(file->path);
        }
        const struct toml_value *runtimes = toml_table_get(rt, "runtimes");
        for (size_t i = 0; i < toml_table_size(runtimes); i++)
                if (startswith(toml_table_key_at(runtimes, i), "nvidia")) file->mentions_nvidia = true;
        const struct toml_value *nv = toml_table_get(runtimes, "nvidia");
        if (toml_type_of(nv) == TOML_TABLE) {
                c->has_nvidia = true;
                if (!c->nvidia_file) c->nvidia_file = xstrdup(file->path);
                const char *path = toml_string(toml_table_get(nv, "runtime_path"));
                if (path) {
                        free(c->nvidia_path);
                        free(c->nvidia_file);
                        c->nvidia_path = utf8_sanitize(path);
                        c->nvidia_file = xstrdup(file->path);
                }
        }
        return 0;
}

/* Reads one CRI-O file (missing is fine) and applies it. */
static void crio_read(struct crio_facts *c, const char *path) {
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = hostfs_read(path, CONFIG_READ_MAX, &text, &len);
        if (r == -ENOENT) return;
        c->files = xrealloc(c->files, (c->n_files + 1) * sizeof *c->files);
        struct runtime_config_file *f = &c->files[c->n_files++];
        *f = (struct runtime_config_file){.path = xstrdup(path), .mtime = -1};
        struct stat st;
        if (hostfs_stat(path, &st) == 0) f->mtime = st.st_mtime;
        if (r < 0) {
                f->rc = r;
                f->error = read_error(path, r);
        } else {
                r = crio_apply_file(c, f, text, len);
        }
        if (r < 0 && c->rc == 0) {
                c->rc = r;
                c->error = xstrdup(f->error);
        }
}

void probe_crio(struct crio_facts *ret) {
        *ret = (struct crio_facts){.nvidia_path_rc = BINARY_UNSET};
        ret->binary = runtime_find_binary("crio", BIN_DIRS);
        runtime_find_process("crio", &ret->process);
        ret->present = ret->binary || ret->process.pid || hostfs_exists("/etc/crio/crio.conf") ||
                       hostfs_exists("/etc/crio/crio.conf.d");
        if (!ret->present) return;
        crio_read(ret, "/etc/crio/crio.conf");
        _cleanup_strv_free_ char **names = NULL;
        int n = hostfs_list("/etc/crio/crio.conf.d", false, &names);
        for (int i = 0; i < n && i < 128; i++) {
                _cleanup_free_ char *p = xasprintf("/etc/crio/crio.conf.d/%s", names[i]);
                crio_read(ret, p);
        }
        if (ret->nvidia_path) {
                _cleanup_free_ char *found = runtime_find_binary(ret->nvidia_path, BIN_DIRS);
                ret->nvidia_path_rc = found ? 0 : ret->nvidia_path[0] == '/' ? runtime_binary_check(ret->nvidia_path) : -ENOENT;
        }
}

void crio_facts_free(struct crio_facts *f) {
        free(f->binary);
        runtime_process_free(&f->process);
        free(f->error);
        for (size_t i = 0; i < f->n_files; i++) runtime_config_file_free(&f->files[i]);
        free(f->files);
        free(f->nvidia_path);
        free(f->nvidia_file);
        free(f->default_runtime);
        free(f->default_runtime_file);
        *f = (struct crio_facts){0};
}

/* ---- Docker ---- */

int docker_parse_daemon_json(const char *text, size_t len, struct docker_facts *ret, char **ret_error) {
        json_error_t err;
        json_t *root = json_loadb(text, len, JSON_ALLOW_NUL, &err);
        if (!root) {
                *ret_error = xasprintf("line %d, column %d: %s", err.line, err.column, err.text);
                return -EINVAL;
        }
        if (!json_is_object(root)) {
                json_decref(root);
                *ret_error = xstrdup("the top level is not a JSON object");
                return -EINVAL;
        }
        json_t *nv = json_object_get(json_object_get(root, "runtimes"), "nvidia");
        if (json_is_object(nv)) {
                ret->has_nvidia = true;
                const char *p = json_string_value(json_object_get(nv, "path"));
                if (p) ret->nvidia_path = utf8_sanitize(p);
        }
        const char *def = json_string_value(json_object_get(root, "default-runtime"));
        if (def) ret->default_runtime = utf8_sanitize(def);
        ret->cdi_feature = json_is_true(json_object_get(json_object_get(root, "features"), "cdi"));
        json_decref(root);
        return 0;
}

void probe_docker(struct docker_facts *ret) {
        static const char *const path = "/etc/docker/daemon.json";
        *ret = (struct docker_facts){.nvidia_path_rc = BINARY_UNSET};
        ret->binary = runtime_find_binary("dockerd", BIN_DIRS);
        runtime_find_process("dockerd", &ret->process);
        ret->file = (struct runtime_config_file){.path = xstrdup(path), .mtime = -1};
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = hostfs_read(path, CONFIG_READ_MAX, &text, &len);
        ret->present = ret->binary || ret->process.pid || r != -ENOENT;
        if (r < 0) {
                ret->file.rc = r;
                if (r != -ENOENT) ret->file.error = read_error(path, r);
                return;
        }
        struct stat st;
        if (hostfs_stat(path, &st) == 0) ret->file.mtime = st.st_mtime;
        _cleanup_free_ char *err = NULL;
        if (docker_parse_daemon_json(text, len, ret, &err) < 0) {
                ret->file.rc = -EINVAL;
                ret->file.error = xasprintf("%s: %s", path, err);
                return;
        }
        ret->file.mentions_nvidia = ret->has_nvidia;
        if (ret->has_nvidia) {
                /* dockerd runs a runtime's path through its own PATH lookup when it is a bare name */
                ret->nvidia_resolved = runtime_find_binary(ret->nvidia_path ? ret->nvidia_path : "", BIN_DIRS);
                ret->nvidia_path_rc = ret->nvidia_resolved ? 0
                                      : ret->nvidia_path && ret->nvidia_path[0] == '/' ? runtime_binary_check(ret->nvidia_path)
                                                                                       : -ENOENT;
        }
}

void docker_facts_free(struct docker_facts *f) {
        free(f->binary);
        runtime_process_free(&f->process);
        runtime_config_file_free(&f->file);
        free(f->nvidia_path);
        free(f->nvidia_resolved);
        free(f->default_runtime);
        *f = (struct docker_facts){0};
}

/* ---- all of layer 2 ---- */

struct runtime_facts *probe_runtime(void) {
        struct runtime_facts *f = xcalloc(1, sizeof *f);
        probe_containerd(&f->containerd);
        probe_crio(&f->crio);
        probe_docker(&f->docker);
        probe_toolkit(&f->toolkit);
        probe_cdi(&f->cdi);
        _cleanup_strv_free_ char **procs = NULL;
        int np = hostfs_list("/proc", false, &procs);
        for (int i = 0; i < np && !f->proc_visible; i++) f->proc_visible = isdigit((unsigned char)procs[i][0]);
        _cleanup_strv_free_ char **names = NULL;
        int n = hostfs_list("/dev/infiniband", false, &names);
        f->infiniband_rc = n < 0 ? n : 0;
        for (int i = 0; i < n; i++) {
                if (startswith(names[i], "uverbs")) f->n_uverbs++;
                if (streq(names[i], "rdma_cm")) f->have_rdma_cm = true;
        }
        return f;
}

void runtime_facts_free(struct runtime_facts *f) {
        if (!f) return;
        containerd_facts_free(&f->containerd);
        crio_facts_free(&f->crio);
        docker_facts_free(&f->docker);
        toolkit_facts_free(&f->toolkit);
        cdi_facts_free(&f->cdi);
        free(f);
}
