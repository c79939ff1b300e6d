/* write.c: writes gpunode collect's archive: host files as read (redacted), kernel log, NVML answers, manifest. */
#include "snapshot/snapshot.h"

#include "basic/dl_archive.h"
#include "basic/dl_crypto.h"
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "basic/hostfs.h"
#include "kube/net_replay.h"
#include "nvml/nvml_facts.h"

#ifndef GPUNODE_VERSION
#define GPUNODE_VERSION "0.0.0"
#endif

/* Symlinks followed while resolving one host path (as the kernel's MAXSYMLINKS). */
#define MAX_LINKS 40
/* Entries of one listed directory added as names (beyond that the listing is cut, and noted). */
#define MAX_DIR_ENTRIES 100000

struct snapshot_writer {
        struct archive *a;
        char *path, *tmp_path; /* tmp_path NULL when writing to standard output */
        int root_fd;
        time_t now;
        json_t *members; /* array of member objects, in archive order */
        json_t *names;   /* object used as a set of member names */
        json_t *redacted, *unreadable;
        json_t *kmsg, *nvml, *api;
        char **dirs; /* directories whose entries finish() adds */
        size_t n_dirs;
        int error; /* first archive error, sticky */
        char *error_text;
};

/* Returns a malloc'd lower-case hex SHA-256 of data, or NULL when libcrypto cannot be loaded. */
static char *sha256_hex(const void *data, size_t len) {
        if (dl_crypto_open(NULL) < 0) return NULL;
        unsigned char md[32];
        unsigned int n = 0;
        if (EVP_Digest(data, len, md, &n, EVP_sha256(), NULL) != 1 || n != 32) return NULL;
        char *s = xmalloc(65);
        for (int i = 0; i < 32; i++) snprintf(s + 2 * i, 3, "%02x", md[i]);
        return s;
}

/* Records an archive failure once. Returns -EIO. */
static int archive_failed(struct snapshot_writer *w, const char *what) {
        if (!w->error) {
                w->error = -EIO;
                w->error_text = xasprintf("cannot write %s: %s", what, archive_error_string(w->a) ?: "archive error");
        }
        return w->error;
}

/* Writes one member (permission bits perm, modification time mtime): type AE_IFREG (data, len), AE_IFLNK (target) or
 * AE_IFDIR, and lists it in the manifest with extra fields (a new reference or NULL). Returns 0, -EEXIST when the name
 * is there already, or -EIO. */
static int add_member_mode(struct snapshot_writer *w, const char *name, unsigned type, mode_t perm, time_t mtime,
                           const char *data, size_t len, const char *target, json_t *extra) {
        if (w->error) {
                json_decref(extra);
                return w->error;
        }
        if (json_object_get(w->names, name)) {
                json_decref(extra);
                return -EEXIST;
        }
        json_object_set_new(w->names, name, json_true());
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, name);
        archive_entry_set_filetype(e, type);
        archive_entry_set_perm(e, type == AE_IFLNK ? 0777 : perm & 0777);
        archive_entry_set_mtime(e, mtime, 0);
        archive_entry_set_size(e, type == AE_IFREG ? (la_int64_t)len : 0);
        if (type == AE_IFLNK) archive_entry_set_symlink(e, target);
        int r = archive_write_header(w->a, e);
        archive_entry_free(e);
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
                json_decref(extra);
                return archive_failed(w, name);
        }
        if (type == AE_IFREG && len > 0 && archive_write_data(w->a, data, len) != (la_ssize_t)len) {
                json_decref(extra);
                return archive_failed(w, name);
        }
        json_t *m = json_pack("{s:s,s:s}", "name", name, "type",
                              type == AE_IFREG   ? "file"
                              : type == AE_IFLNK ? "symlink"
                                                 : "directory");
        if (type == AE_IFREG) {
                json_object_set_new(m, "size", json_integer((json_int_t)len));
                _cleanup_free_ char *h = sha256_hex(data ? data : "", len);
                if (h) json_object_set_new(m, "sha256", json_string(h));
        }
        if (type == AE_IFLNK) json_object_set_new(m, "target", json_string(target));
        if (extra) json_object_update(m, extra);
        json_decref(extra);
        json_array_append_new(w->members, m);
        return 0;
}

/* add_member_mode with the default permissions (0755 directories, 0644 files). Returns the same. */
static int add_member(struct snapshot_writer *w, const char *name, unsigned type, const char *data, size_t len,
                      const char *target, json_t *extra) {
        return add_member_mode(w, name, type, type == AE_IFDIR ? 0755 : 0644, w->now, data, len, target, extra);
}

/* Notes a host path that could not be read. Returns 0. */
static int note_unreadable(struct snapshot_writer *w, const char *path, const char *error) {
        json_array_append_new(w->unreadable, json_pack("{s:s,s:s}", "path", path, "error", error));
        return 0;
}

int snapshot_writer_open(const char *path, struct snapshot_writer **ret, char **ret_error) {
        int lr = dl_archive_open(ret_error);
        if (lr < 0) return lr;
        struct snapshot_writer *w = xcalloc(1, sizeof *w);
        w->root_fd = open(hostfs_root(), O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (w->root_fd < 0) {
                int e = -errno;
                *ret_error = xasprintf("cannot open root %s: %s", hostfs_root(), strerror(-e));
                free(w);
                return e;
        }
        w->now = time(NULL);
        w->members = json_array();
        w->names = json_object();
        w->redacted = json_array();
        w->unreadable = json_array();
        w->a = archive_write_new();
        archive_write_set_format_pax_restricted(w->a);
        archive_write_add_filter_gzip(w->a);
        int r;
        if (streq(path, "-")) {
                w->path = xstrdup("-");
                r = archive_write_open_fd(w->a, STDOUT_FILENO);
        } else {
                w->path = xstrdup(path);
                w->tmp_path = xasprintf("%s.tmp-XXXXXX", path);
                int fd = mkostemp(w->tmp_path, O_CLOEXEC);
                if (fd < 0) {
                        int e = -errno;
                        *ret_error = xasprintf("cannot create %s: %s", w->tmp_path, strerror(-e));
                        free(w->tmp_path);
                        w->tmp_path = NULL;
                        snapshot_writer_abort(w);
                        return e;
                }
                fchmod(fd, 0600);
                close(fd);
                r = archive_write_open_filename(w->a, w->tmp_path);
        }
        if (r != ARCHIVE_OK) {
                *ret_error = xasprintf("cannot write %s: %s", path, archive_error_string(w->a) ?: "archive error");
                snapshot_writer_abort(w);
                return -EIO;
        }
        *ret = w;
        return 0;
}

/* Reads the regular file at rel (below the root) into *ret, at most SNAPSHOT_MEMBER_MAX bytes, by
 * reading (sysfs sizes lie). Returns 0 or -errno (-EFBIG when larger). */
static int read_rel(struct snapshot_writer *w, const char *rel, char **ret, size_t *ret_len) {
        _cleanup_close_ int fd = openat(w->root_fd, rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0) return -errno;
        return hostfs_read_fd(fd, SNAPSHOT_MEMBER_MAX, ret, ret_len);
}

/* Returns the kind of a special file for the manifest. */
static const char *special_kind(mode_t m) {
        if (S_ISCHR(m)) return "char-device";
        if (S_ISBLK(m)) return "block-device";
        if (S_ISFIFO(m)) return "fifo";
        if (S_ISSOCK(m)) return "socket";
        return "other";
}

/* Adds the final component rel (below the root, no symlinks in it) whose lstat is st. Returns 0 or
 * -EIO when the archive failed. */
static int add_resolved(struct snapshot_writer *w, const char *rel, const struct stat *st) {
        _cleanup_free_ char *host = xasprintf("/%s", rel);
        _cleanup_free_ char *name = xasprintf("root/%s", rel);
        if (json_object_get(w->names, name)) return 0;
        if (S_ISDIR(st->st_mode)) {
                w->dirs = xrealloc(w->dirs, (w->n_dirs + 1) * sizeof *w->dirs);
                w->dirs[w->n_dirs++] = xstrdup(rel);
                return add_member_mode(w, name, AE_IFDIR, st->st_mode, st->st_mtime, NULL, 0, NULL, NULL);
        }
        if (!S_ISREG(st->st_mode) || streq(host, "/dev/kmsg")) {
                /* Devices, FIFOs and sockets are never opened: an empty placeholder keeps the name. */
                json_t *x = json_pack("{s:s,s:b}", "host_type",
                                      S_ISREG(st->st_mode) ? "file" : special_kind(st->st_mode), "placeholder", 1);
                if (S_ISCHR(st->st_mode) || S_ISBLK(st->st_mode))
                        json_object_set_new(x, "device", json_sprintf("%u:%u", major(st->st_rdev), minor(st->st_rdev)));
                if (streq(host, "/dev/kmsg"))
                        json_object_set_new(x, "note", json_string("the kernel log is the kmsg member"));
                int r = add_member_mode(w, name, AE_IFREG, st->st_mode, st->st_mtime, "", 0, NULL, x);
                return r == -EEXIST ? 0 : r;
        }
        const char *why = NULL;
        enum redact_action act = redact_rule(host, &why);
        if (act == REDACT_OMIT) {
                json_array_append_new(w->redacted,
                                      json_pack("{s:s,s:s,s:s}", "path", host, "action", "omitted", "why", why));
                return 0;
        }
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        int r = read_rel(w, rel, &data, &len);
        if (r < 0) {
                _cleanup_free_ char *msg = r == -EFBIG ? xasprintf("larger than %llu bytes, not copied",
                                                                   (unsigned long long)SNAPSHOT_MEMBER_MAX)
                                                       : xstrdup(strerror(-r));
                return note_unreadable(w, host, msg);
        }
        if (act == REDACT_REPLACE) {
                json_array_append_new(w->redacted,
                                      json_pack("{s:s,s:s,s:s}", "path", host, "action", "replaced", "why", why));
                r = add_member_mode(w, name, AE_IFREG, st->st_mode, st->st_mtime, "REDACTED\n", 9, NULL,
                                    json_pack("{s:b}", "redacted", 1));
                return r == -EEXIST ? 0 : r;
        }
        size_t hl = strlen(host);
        if (startswith(host, "/proc/") && hl > 8 && streq(host + hl - 8, "/cmdline")) {
                struct buf out = { 0 };
                size_t n = redact_cmdline(data, len, &out);
                if (n > 0) {
                        json_array_append_new(w->redacted,
                                              json_pack("{s:s,s:s,s:I,s:s}", "path", host, "action", "values-replaced",
                                                        "count", (json_int_t)n, "why",
                                                        "credential arguments on a command line replaced"));
                        r = add_member_mode(w, name, AE_IFREG, st->st_mode, st->st_mtime, out.data, out.len, NULL,
                                            json_pack("{s:b}", "redacted", 1));
                        buf_free(&out);
                        return r == -EEXIST ? 0 : r;
                }
                buf_free(&out);
        }
        if (act == REDACT_FILTER && !memchr(data, 0, len)) {
                struct buf out = { 0 };
                size_t n = redact_text(data, len, &out);
                if (n > 0) {
                        json_array_append_new(w->redacted,
                                              json_pack("{s:s,s:s,s:I,s:s}", "path", host, "action", "values-replaced",
                                                        "count", (json_int_t)n, "why", why));
                        r = add_member_mode(w, name, AE_IFREG, st->st_mode, st->st_mtime, out.data, out.len, NULL,
                                            json_pack("{s:b}", "redacted", 1));
                        buf_free(&out);
                        return r == -EEXIST ? 0 : r;
                }
                buf_free(&out);
        }
        r = add_member_mode(w, name, AE_IFREG, st->st_mode, st->st_mtime, data, len, NULL, NULL);
        return r == -EEXIST ? 0 : r;
}

/* Joins a/b into a new path without duplicate slashes. Returns it (malloc'd). */
static char *join(const char *a, const char *b) {
        if (!*a) return xstrdup(b);
        if (!*b) return xstrdup(a);
        return xasprintf("%s/%s", a, b);
}

int snapshot_add_host_path(struct snapshot_writer *w, const char *path) {
        _cleanup_free_ char *todo = xstrdup(path);   /* what is left to resolve, from the root */
        _cleanup_free_ char *resolved = xstrdup(""); /* below the root, no symlinks, no leading '/' */
        unsigned links = 0;
        for (;;) {
                char *p = todo;
                while (*p == '/') p++;
                if (!*p) break;
                char *slash = strchr(p, '/');
                _cleanup_free_ char *comp = slash ? xstrndup(p, (size_t)(slash - p)) : xstrdup(p);
                _cleanup_free_ char *rest = xstrdup(slash ? slash : "");
                bool last = true;
                for (const char *q = rest; *q; q++)
                        if (*q != '/') last = false;
                if (streq(comp, ".")) {
                        free(todo);
                        todo = TAKE_PTR(rest);
                        continue;
                }
                if (streq(comp, "..")) {
                        char *s = strrchr(resolved, '/');
                        if (s)
                                *s = 0;
                        else
                                resolved[0] = 0;
                        free(todo);
                        todo = TAKE_PTR(rest);
                        continue;
                }
                _cleanup_free_ char *cand = join(resolved, comp);
                struct stat st;
                if (fstatat(w->root_fd, cand, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        if (errno == ENOENT || errno == ENOTDIR) return 0; /* the probe saw it missing too */
                        _cleanup_free_ char *host = xasprintf("/%s", cand);
                        return note_unreadable(w, host, strerror(errno));
                }
                if (S_ISLNK(st.st_mode)) {
                        char target[4096];
                        ssize_t n = readlinkat(w->root_fd, cand, target, sizeof target - 1);
                        if (n < 0) {
                                _cleanup_free_ char *host = xasprintf("/%s", cand);
                                return note_unreadable(w, host, strerror(errno));
                        }
                        target[n] = 0;
                        _cleanup_free_ char *name = xasprintf("root/%s", cand);
                        if (!json_object_get(w->names, name)) {
                                int r = add_member(w, name, AE_IFLNK, NULL, 0, target, NULL);
                                if (r < 0 && r != -EEXIST) return r;
                        }
                        if (++links > MAX_LINKS) {
                                _cleanup_free_ char *host = xasprintf("/%s", cand);
                                return note_unreadable(w, host, strerror(ELOOP));
                        }
                        /* Continue at the target: absolute targets start again at the root. */
                        char *next = target[0] == '/' ? xasprintf("%s%s", target, rest)
                                                      : xasprintf("/%s/%s%s", resolved, target, rest);
                        free(todo);
                        todo = next;
                        resolved[0] = 0; /* todo starts at the root again */
                        continue;
                }
                if (!last) {
                        if (!S_ISDIR(st.st_mode)) return 0;
                        free(resolved);
                        resolved = TAKE_PTR(cand);
                        free(todo);
                        todo = TAKE_PTR(rest);
                        continue;
                }
                return add_resolved(w, cand, &st);
        }
        /* The root itself. */
        return 0;
}

/* Adds the names in directory rel: links as links, directories as (empty) directories, other
 * entries as placeholders unless already added with their content. Returns 0 or -EIO. */
static int add_dir_entries(struct snapshot_writer *w, const char *rel) {
        int fd = openat(w->root_fd, rel, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) return 0;
        DIR *d = fdopendir(fd);
        if (!d) {
                close(fd);
                return 0;
        }
        struct dirent *de;
        size_t n = 0;
        int r = 0;
        while ((de = readdir(d)) && r >= 0) {
                if (streq(de->d_name, ".") || streq(de->d_name, "..")) continue;
                if (++n > MAX_DIR_ENTRIES) {
                        _cleanup_free_ char *host = xasprintf("/%s", rel);
                        note_unreadable(w, host, "more entries than a snapshot lists; the rest left out");
                        break;
                }
                _cleanup_free_ char *child = join(rel, de->d_name);
                _cleanup_free_ char *name = xasprintf("root/%s", child);
                if (json_object_get(w->names, name)) continue;
                struct stat st;
                if (fstatat(w->root_fd, child, &st, AT_SYMLINK_NOFOLLOW) < 0) continue;
                if (S_ISLNK(st.st_mode)) {
                        char target[4096];
                        ssize_t k = readlinkat(w->root_fd, child, target, sizeof target - 1);
                        if (k < 0) continue;
                        target[k] = 0;
                        r = add_member(w, name, AE_IFLNK, NULL, 0, target, NULL);
                } else if (S_ISDIR(st.st_mode)) {
                        r = add_member_mode(w, name, AE_IFDIR, st.st_mode, st.st_mtime, NULL, 0, NULL,
                                            json_pack("{s:b}", "listed_only", 1));
                } else {
                        const char *why;
                        _cleanup_free_ char *host = xasprintf("/%s", child);
                        if (S_ISREG(st.st_mode) && redact_rule(host, &why) == REDACT_OMIT) continue;
                        json_t *x = json_pack("{s:s,s:b,s:b}", "host_type",
                                              S_ISREG(st.st_mode) ? "file" : special_kind(st.st_mode), "placeholder", 1,
                                              "listed_only", 1);
                        r = add_member_mode(w, name, AE_IFREG, st.st_mode, st.st_mtime, "", 0, NULL, x);
                }
                if (r == -EEXIST) r = 0;
        }
        closedir(d);
        return r;
}

int snapshot_add_kmsg(struct snapshot_writer *w, const char *source, const char *data, size_t len, const char *error) {
        w->kmsg = json_pack("{s:s}", "source", source);
        if (!data) {
                json_object_set_new(w->kmsg, "member", json_null());
                json_object_set_new(w->kmsg, "error", json_string(error ? error : "not read"));
                return 0;
        }
        json_object_set_new(w->kmsg, "member", json_string("kmsg"));
        int r = add_member(w, "kmsg", AE_IFREG, data, len, NULL, NULL);
        return r == -EEXIST ? -EEXIST : r;
}

int snapshot_add_nvml(struct snapshot_writer *w, const char *json, const char *library, const struct nvml_facts *f,
                      int load_rc, const char *load_error) {
        w->nvml = json_pack("{s:s?}", "library", library);
        if (!json) {
                json_object_set_new(w->nvml, "member", json_null());
                json_object_set_new(w->nvml, "load_rc", json_integer(load_rc));
                json_object_set_new(w->nvml, "load_error", json_string(load_error ? load_error : "NVML did not load"));
                return 0;
        }
        json_object_set_new(w->nvml, "member", json_string("nvml.json"));
        if (f) {
                if (f->library_path) json_object_set_new(w->nvml, "library_path", json_string(f->library_path));
                json_object_set_new(w->nvml, "timeout_ms", json_integer(f->timeout_ms));
                json_object_set_new(w->nvml, "timed_out", json_boolean(f->timed_out));
                if (f->timed_out)
                        json_object_update_new(
                                w->nvml, json_pack("{s:s,s:i,s:s,s:i,s:i}", "blocked_call", f->blocked_call,
                                                   "blocked_gpu", f->blocked_gpu, "timeout_message", f->timeout_message,
                                                   "n_gpus", (int)f->n_gpus, "device_count", (int)f->device_count));
        }
        return add_member(w, "nvml.json", AE_IFREG, json, strlen(json), NULL, NULL);
}

int snapshot_add_api(struct snapshot_writer *w, const char *name, const char *json, size_t len) {
        size_t n = strlen(name);
        bool text = n > 4 && streq(name + n - 4, ".txt");
        if (n == 0 || n > 200 || name[0] == '/' || strstr(name, "..") || n < 5 ||
            !(text || (n > 5 && streq(name + n - 5, ".json"))))
                return -EINVAL;
        for (const char *p = name; *p; p++)
                if (!(isalnum((unsigned char)*p) || *p == '.' || *p == '_' || *p == '-' || *p == '/')) return -EINVAL;
        _cleanup_free_ char *member = xasprintf("api/%s", name);
        if (json_object_get(w->names, member)) return -EEXIST;
        json_t *doc = text ? NULL : json_loadb(json, len, 0, NULL);
        if (doc) {
                size_t count = redact_api_json(doc);
                if (count > 0)
                        json_array_append_new(w->redacted,
                                              json_pack("{s:s,s:s,s:I,s:s}", "path", member, "action",
                                                        "values-replaced", "count", (json_int_t)count, "why",
                                                        "credential values in an API response replaced"));
                char *s = json_dumps(doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
                json_decref(doc);
                if (!s) return -ENOMEM;
                int r = add_member(w, member, AE_IFREG, s, strlen(s), NULL, NULL);
                free(s);
                return r;
        }
        struct buf out = { 0 };
        size_t count = redact_text(json, len, &out);
        if (count > 0)
                json_array_append_new(w->redacted, json_pack("{s:s,s:s,s:I,s:s}", "path", member, "action",
                                                             "values-replaced", "count", (json_int_t)count, "why",
                                                             "credential values in an API response replaced"));
        int r = add_member(w, member, AE_IFREG, out.data, out.len, NULL, NULL);
        buf_free(&out);
        return r;
}

int snapshot_add_net_log(struct snapshot_writer *w, const struct net_log *log) {
        for (size_t i = 0; i < log->n; i++) {
                const struct net_exchange *x = &log->v[i];
                if (!x->member) continue;
                int r = snapshot_add_api(w, x->member + strlen("api/"), x->body ? x->body : "", x->len);
                if (r < 0) return r;
        }
        _cleanup_free_ char *index = NULL;
        int r = net_log_to_index(log, &index);
        if (r < 0) return r;
        r = add_member(w, "api/INDEX.json", AE_IFREG, index, strlen(index), NULL, NULL);
        if (r < 0) return r;
        json_decref(w->api);
        w->api = json_pack("{s:s,s:I,s:b}", "index", "api/INDEX.json", "exchanges", (json_int_t)log->n, "setup",
                           log->setup.recorded);
        return 0;
}

/* Returns the list of redaction rules for the manifest (a new reference). */
static json_t *rules_json(void) {
        return json_pack(
                "[s,s,s,s,s,s,s]", "/proc/<pid>/environ and task environments: never copied",
                "/var/run/secrets/** and /run/secrets/**: content replaced by REDACTED",
                "*.key *.pem *.crt *.cert *.der *.p12 *.pfx *.jks *.keystore id_rsa id_ecdsa id_ed25519 token: "
                "content replaced by REDACTED",
                "other files outside /proc and /sys, by format (JSON, TOML, YAML, INI/env, Prometheus text): "
                "values of credential keys (token, password, secret, auth, client-key-data, Authorization, "
                "...) replaced by REDACTED, the file kept parseable with the same structure; PEM private "
                "key blocks replaced",
                "everywhere, inside values too: user:password@ in URLs, the token after Bearer, "
                "Authorization: Basic V, key=V / key: V / --key V for credential keys",
                "/proc/<pid>/cmdline: values of credential arguments (--token=V, --password V, --basic-auth=V, "
                "AWS_SECRET_ACCESS_KEY=V) replaced, the argument count kept",
                "API responses: also Secrets' data and stringData, env values, httpHeaders values, "
                "annotations named like credentials or holding them, kubectl's last-applied-configuration, "
                "credential arguments in command/args");
}

void snapshot_writer_counts(const struct snapshot_writer *w, size_t *ret_redacted, size_t *ret_unreadable) {
        *ret_redacted = json_array_size(w->redacted);
        *ret_unreadable = json_array_size(w->unreadable);
}

int snapshot_writer_finish(struct snapshot_writer *w, const char *node, const char *root, size_t *ret_members,
                           char **ret_error) {
        for (size_t i = 0; i < w->n_dirs && !w->error; i++) add_dir_entries(w, w->dirs[i]);
        char created[32];
        struct tm tm;
        gmtime_r(&w->now, &tm);
        strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", &tm);
        size_t n_members = json_array_size(w->members) + 1;
        json_t *m = json_pack("{s:s,s:s,s:s,s:I,s:s,s:s}", "schema", "gpunode.snapshot/v1", "gpunode_version",
                              GPUNODE_VERSION, "created", created, "created_unix", (json_int_t)w->now, "node", node,
                              "root", root);
        json_object_set(m, "kmsg", w->kmsg ? w->kmsg : json_null());
        json_object_set(m, "nvml", w->nvml ? w->nvml : json_null());
        json_object_set(m, "api", w->api ? w->api : json_null());
        json_object_set_new(m, "redaction_rules", rules_json());
        json_object_set(m, "redacted", w->redacted);
        json_object_set(m, "unreadable", w->unreadable);
        json_object_set(m, "members", w->members);
        char *s = json_dumps(m, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        json_decref(m);
        if (!s) {
                *ret_error = xstrdup("cannot format the manifest");
                snapshot_writer_abort(w);
                return -ENOMEM;
        }
        int r = add_member(w, "MANIFEST.json", AE_IFREG, s, strlen(s), NULL, NULL);
        free(s);
        if (r < 0 || archive_write_close(w->a) != ARCHIVE_OK) {
                if (r >= 0) archive_failed(w, w->path);
                *ret_error = xstrdup(w->error_text ? w->error_text : "cannot write the archive");
                r = w->error ? w->error : -EIO;
                snapshot_writer_abort(w);
                return r;
        }
        if (w->tmp_path) {
                if (chmod(w->tmp_path, 0600) < 0 || rename(w->tmp_path, w->path) < 0) {
                        r = -errno;
                        *ret_error = xasprintf("cannot rename %s to %s: %s", w->tmp_path, w->path, strerror(-r));
                        snapshot_writer_abort(w);
                        return r;
                }
                free(w->tmp_path);
                w->tmp_path = NULL;
        }
        if (ret_members) *ret_members = n_members;
        snapshot_writer_abort(w);
        return 0;
}

void snapshot_writer_abort(struct snapshot_writer *w) {
        if (!w) return;
        if (w->a) archive_write_free(w->a);
        if (w->tmp_path) unlink(w->tmp_path);
        if (w->root_fd >= 0) close(w->root_fd);
        for (size_t i = 0; i < w->n_dirs; i++) free(w->dirs[i]);
        free(w->dirs);
        json_decref(w->members);
        json_decref(w->names);
        json_decref(w->redacted);
        json_decref(w->unreadable);
        json_decref(w->kmsg);
        json_decref(w->nvml);
        json_decref(w->api);
        free(w->error_text);
        free(w->tmp_path);
        free(w->path);
        free(w);
}
