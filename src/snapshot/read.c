/* read.c: extracts a snapshot safely into a private temporary folder and loads what check --snapshot needs. */
#include "snapshot/snapshot.h"

#include "basic/dl_archive.h"
#include "basic/hostfs.h"
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <sys/stat.h>

#include "kube/net_replay.h"
#include "nvml/nvml_facts_json.h"

/* Longest member name taken. */
#define NAME_MAX_LEN 4096

struct snapshot_limits snapshot_default_limits(void) {
        return (struct snapshot_limits){ .member_max = SNAPSHOT_MEMBER_MAX,
                                         .total_max = SNAPSHOT_TOTAL_MAX,
                                         .members_max = SNAPSHOT_MEMBERS_MAX };
}

/* Checks a member name (leading "./" already dropped). Returns NULL when it is acceptable, else a
 * constant reason. */
static const char *name_problem(const char *name, unsigned type) {
        if (name[0] == '/') return "an absolute path";
        if (strlen(name) > NAME_MAX_LEN) return "a path that is too long";
        for (const char *p = name; p;) {
                const char *slash = strchr(p, '/');
                size_t n = slash ? (size_t)(slash - p) : strlen(p);
                if (n == 2 && p[0] == '.' && p[1] == '.') return "a path with \"..\"";
                p = slash ? slash + 1 : NULL;
        }
        bool in_root = streq(name, "root") || startswith(name, "root/");
        bool in_api = streq(name, "api") || startswith(name, "api/");
        bool plain = streq(name, "kmsg") || streq(name, "nvml.json") || streq(name, "MANIFEST.json");
        if (!in_root && !in_api && !plain)
                return "not part of a gpunode snapshot (root/, api/, kmsg, nvml.json, MANIFEST.json)";
        if (plain && type != AE_IFREG) return "not a regular file";
        if (type == AE_IFLNK && !startswith(name, "root/")) return "a link outside root/";
        return NULL;
}

/* Copies the current entry's data from in to out, within the limits. Returns 0 or -errno. */
static int copy_data(struct archive *in, struct archive *out, const char *name, const struct snapshot_limits *lim,
                     uint64_t *total, char **ret_error) {
        for (;;) {
                const void *buf;
                size_t size;
                la_int64_t off;
                int r = archive_read_data_block(in, &buf, &size, &off);
                if (r == ARCHIVE_EOF) return 0;
                if (r < ARCHIVE_WARN)
                        return errorf(ret_error, -EINVAL, "snapshot member %s: corrupt or truncated archive: %s", name,
                                      archive_error_string(in) ?: "read error");
                if (off < 0 || (uint64_t)off + size > lim->member_max)
                        return errorf(ret_error, -EFBIG, "snapshot member %s: larger than %llu bytes", name,
                                      (unsigned long long)lim->member_max);
                *total += size;
                if (*total > lim->total_max)
                        return errorf(ret_error, -EFBIG,
                                      "snapshot member %s: the archive holds more than %llu bytes in all", name,
                                      (unsigned long long)lim->total_max);
                if (archive_write_data_block(out, buf, size, off) < ARCHIVE_WARN)
                        return errorf(ret_error, -EIO, "snapshot member %s: cannot write: %s", name,
                                      archive_error_string(out) ?: "write error");
        }
}

/* Extracts every member of in into the working directory. Returns 0 or -errno with *ret_error. */
static int extract_here(struct archive *in, const struct snapshot_limits *lim, char **ret_error) {
        struct archive *out = archive_write_disk_new();
        archive_write_disk_set_options(out, ARCHIVE_EXTRACT_SECURE_NODOTDOT | ARCHIVE_EXTRACT_SECURE_SYMLINKS |
                                                    ARCHIVE_EXTRACT_SECURE_NOABSOLUTEPATHS | ARCHIVE_EXTRACT_TIME);
        uint64_t declared = 0, total = 0;
        size_t count = 0;
        int r = 0;
        for (;;) {
                struct archive_entry *e;
                int ar = archive_read_next_header(in, &e);
                if (ar == ARCHIVE_EOF) break;
                if (ar < ARCHIVE_WARN) {
                        r = errorf(ret_error, -EINVAL, "snapshot: corrupt or truncated archive after %zu members: %s",
                                   count, archive_error_string(in) ?: "read error");
                        break;
                }
                if (++count > lim->members_max) {
                        r = errorf(ret_error, -E2BIG, "snapshot: more than %zu members (member %zu: %s)",
                                   lim->members_max, count, archive_entry_pathname(e) ?: "?");
                        break;
                }
                const char *raw = archive_entry_pathname(e);
                if (!raw) {
                        r = errorf(ret_error, -EINVAL, "snapshot member %zu: a name that cannot be read", count);
                        break;
                }
                const char *name = raw;
                while (startswith(name, "./")) name += 2;
                while (*name == '/' && name != raw && name[-1] == '/') name++;
                if (!*name || streq(name, ".") || streq(name, "./")) {
                        archive_read_data_skip(in);
                        continue;
                }
                _cleanup_free_ char *clean = xstrdup(name);
                size_t cl = strlen(clean);
                while (cl > 1 && clean[cl - 1] == '/') clean[--cl] = 0;
                unsigned type = archive_entry_filetype(e);
                if (archive_entry_hardlink(e)) {
                        r = errorf(ret_error, -EINVAL, "snapshot member %s: a hard link, refused", clean);
                        break;
                }
                if (type != AE_IFREG && type != AE_IFDIR && type != AE_IFLNK) {
                        r = errorf(ret_error, -EINVAL, "snapshot member %s: a %s, refused", clean,
                                   type == AE_IFCHR    ? "character device"
                                   : type == AE_IFBLK  ? "block device"
                                   : type == AE_IFIFO  ? "FIFO"
                                   : type == AE_IFSOCK ? "socket"
                                                       : "special file");
                        break;
                }
                const char *problem = name_problem(clean, type);
                if (problem) {
                        r = errorf(ret_error, -EINVAL, "snapshot member %s: %s, refused", raw, problem);
                        break;
                }
                la_int64_t size = archive_entry_size_is_set(e) ? archive_entry_size(e) : 0;
                if (size < 0 || (uint64_t)size > lim->member_max) {
                        r = errorf(ret_error, -EFBIG,
                                   "snapshot member %s: declares %lld bytes, more than the %llu allowed", clean,
                                   (long long)size, (unsigned long long)lim->member_max);
                        break;
                }
                declared += (uint64_t)size;
                if (declared > lim->total_max) {
                        r = errorf(ret_error, -EFBIG,
                                   "snapshot member %s: the members declare more than %llu bytes in all", clean,
                                   (unsigned long long)lim->total_max);
                        break;
                }
                archive_entry_set_pathname(e, clean);
                /* The node's permission bits (probes look at execute bits), never set-id, always
                 * owner-writable so that the folder can be removed; the folder itself is 0700. */
                mode_t perm = archive_entry_perm(e) & 0755;
                archive_entry_set_perm(e, type == AE_IFDIR ? perm | 0700 : perm | 0600);
                archive_entry_set_uid(e, 0);
                archive_entry_set_gid(e, 0);
                ar = archive_write_header(out, e);
                if (ar < ARCHIVE_WARN) {
                        r = errorf(ret_error, -EINVAL, "snapshot member %s: refused: %s", clean,
                                   archive_error_string(out) ?: "cannot extract");
                        break;
                }
                if (type == AE_IFREG && size > 0) {
                        r = copy_data(in, out, clean, lim, &total, ret_error);
                        if (r < 0) break;
                }
                if (archive_write_finish_entry(out) < ARCHIVE_WARN) {
                        r = errorf(ret_error, -EIO, "snapshot member %s: cannot write: %s", clean,
                                   archive_error_string(out) ?: "write error");
                        break;
                }
        }
        if (archive_write_close(out) < ARCHIVE_WARN && r == 0)
                r = errorf(ret_error, -EIO, "snapshot: cannot finish extraction: %s",
                           archive_error_string(out) ?: "error");
        archive_write_free(out);
        return r;
}

/* Extracts in (opened) into dir: changes into dir and back. Returns 0 or -errno. Frees in. */
static int extract_into(struct archive *in, const char *dir, const struct snapshot_limits *lim, char **ret_error) {
        struct snapshot_limits def = snapshot_default_limits();
        if (!lim) lim = &def;
        int cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (cwd < 0) {
                archive_read_free(in);
                return errorf(ret_error, -errno, "cannot open the working directory: %m");
        }
        if (chdir(dir) < 0) {
                int e = -errno;
                close(cwd);
                archive_read_free(in);
                return errorf(ret_error, e, "cannot enter %s: %s", dir, strerror(-e));
        }
        int r = extract_here(in, lim, ret_error);
        archive_read_free(in);
        if (fchdir(cwd) < 0 && r == 0) r = errorf(ret_error, -errno, "cannot return to the working directory: %m");
        close(cwd);
        return r;
}

/* Returns a reader for gzip'd or plain tar. */
static struct archive *new_reader(void) {
        struct archive *in = archive_read_new();
        archive_read_support_filter_gzip(in);
        archive_read_support_filter_none(in);
        archive_read_support_format_tar(in);
        return in;
}

int snapshot_extract_memory(const void *data, size_t len, const char *dir, const struct snapshot_limits *lim,
                            char **ret_error) {
        int lr = dl_archive_open(ret_error);
        if (lr < 0) return lr;
        struct archive *in = new_reader();
        if (archive_read_open_memory(in, data, len) != ARCHIVE_OK) {
                int r = errorf(ret_error, -EINVAL, "snapshot: not a gzip tar archive: %s",
                               archive_error_string(in) ?: "?");
                archive_read_free(in);
                return r;
        }
        return extract_into(in, dir, lim, ret_error);
}

int snapshot_extract_file(const char *path, const char *dir, const struct snapshot_limits *lim, char **ret_error) {
        int lr = dl_archive_open(ret_error);
        if (lr < 0) return lr;
        struct archive *in = new_reader();
        if (archive_read_open_filename(in, path, 65536) != ARCHIVE_OK) {
                int e = archive_errno(in);
                int r = errorf(ret_error, e > 0 ? -e : -EINVAL, "snapshot %s: cannot read: %s", path,
                               archive_error_string(in) ?: "not a gzip tar archive");
                archive_read_free(in);
                return r;
        }
        return extract_into(in, dir, lim, ret_error);
}

/* nftw callback: removes one entry (children first). Returns 0 or -1 to stop. */
static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void)st;
        (void)ftw;
        if (flag == FTW_DP || flag == FTW_D || flag == FTW_DNR) return rmdir(path) < 0 ? -1 : 0;
        return unlink(path) < 0 ? -1 : 0;
}

int snapshot_remove_dir(const char *dir) {
        if (!dir) return 0;
        /* FTW_PHYS: links are removed, never followed; FTW_MOUNT: never crosses into another filesystem. */
        if (nftw(dir, remove_entry, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) < 0) return errno == ENOENT ? 0 : -errno;
        return 0;
}

/* Reads dir/name when it is a regular file (no link) of at most max bytes. Returns 0 and *ret
 * (NUL-terminated), -ENOENT when absent, or -errno. */
static int read_member(const char *dir, const char *name, size_t max, char **ret, size_t *ret_len) {
        _cleanup_free_ char *p = xasprintf("%s/%s", dir, name);
        _cleanup_close_ int fd = open(p, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0) return -errno;
        struct stat st;
        if (fstat(fd, &st) < 0) return -errno;
        if (S_ISREG(st.st_mode) && (uint64_t)st.st_size > max) return -EFBIG;
        return hostfs_read_fd(fd, max, ret, ret_len);
}

/* Returns a malloc'd copy of obj[key] when it is a string, else NULL. */
static char *json_str(const json_t *obj, const char *key) {
        const char *s = json_string_value(json_object_get(obj, key));
        return s ? xstrdup(s) : NULL;
}

/* Applies the manifest's record of how NVML went to s. Returns nothing. */
static void apply_nvml_manifest(struct snapshot *s, const json_t *nv) {
        if (!json_is_object(nv)) return;
        s->nvml_recorded = true;
        free(s->nvml_library);
        s->nvml_library = json_str(nv, "library");
        json_t *lr = json_object_get(nv, "load_rc");
        s->nvml_load_rc = json_is_integer(lr) ? (int)json_integer_value(lr) : 0;
        s->nvml_load_error = json_str(nv, "load_error");
        struct nvml_facts *f = s->nvml_facts;
        if (!f) return;
        f->library_path = json_str(nv, "library_path");
        json_t *t = json_object_get(nv, "timeout_ms");
        if (json_is_integer(t)) f->timeout_ms = (unsigned)json_integer_value(t);
        if (!json_is_true(json_object_get(nv, "timed_out"))) return;
        f->timed_out = true;
        snprintf(f->blocked_call, sizeof f->blocked_call, "%s",
                 json_string_value(json_object_get(nv, "blocked_call")) ?: "");
        snprintf(f->timeout_message, sizeof f->timeout_message, "%s",
                 json_string_value(json_object_get(nv, "timeout_message")) ?: "");
        json_t *bg = json_object_get(nv, "blocked_gpu");
        f->blocked_gpu = json_is_integer(bg) ? (int)json_integer_value(bg) : -1;
        json_t *n = json_object_get(nv, "n_gpus");
        if (json_is_integer(n) && json_integer_value(n) >= 0 && (unsigned)json_integer_value(n) < f->n_gpus)
                f->n_gpus = (unsigned)json_integer_value(n);
        if (f->blocked_gpu >= 0 && (unsigned)f->blocked_gpu < f->n_gpus) f->gpus[f->blocked_gpu].complete = false;
}

int snapshot_open(const char *path, struct snapshot **ret, char **ret_error) {
        const char *tmp = getenv("TMPDIR");
        _cleanup_free_ char *dir = xasprintf("%s/gpunode-snapshot-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(dir)) return errorf(ret_error, -errno, "cannot create a temporary folder %s: %m", dir);
        struct snapshot *s = xcalloc(1, sizeof *s);
        s->dir = TAKE_PTR(dir);
        int r = snapshot_extract_file(path, s->dir, NULL, ret_error);
        if (r < 0) {
                snapshot_close(s);
                return r;
        }
        s->root_dir = xasprintf("%s/root", s->dir);
        struct stat st;
        if (lstat(s->root_dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
                snapshot_close(s);
                return errorf(ret_error, -EINVAL, "%s: not a gpunode snapshot: no root/ folder", path);
        }
        s->kmsg_path = xasprintf("%s/kmsg", s->dir);

        _cleanup_free_ char *mtext = NULL;
        size_t mlen = 0;
        json_t *manifest = NULL;
        r = read_member(s->dir, "MANIFEST.json", SNAPSHOT_MEMBER_MAX, &mtext, &mlen);
        if (r == 0) {
                json_error_t jerr;
                manifest = json_loadb(mtext, mlen, 0, &jerr);
                const char *schema = json_string_value(json_object_get(manifest, "schema"));
                if (!json_is_object(manifest) || !schema || !startswith(schema, "gpunode.snapshot/")) {
                        json_decref(manifest);
                        snapshot_close(s);
                        return errorf(ret_error, -EINVAL, "%s: MANIFEST.json is not a gpunode snapshot manifest", path);
                }
        } else if (r != -ENOENT) {
                snapshot_close(s);
                return errorf(ret_error, r, "%s: cannot read MANIFEST.json: %s", path, strerror(-r));
        }

        _cleanup_free_ char *ntext = NULL;
        size_t nlen = 0;
        r = read_member(s->dir, "nvml.json", NVML_FACTS_JSON_MAX_BYTES, &ntext, &nlen);
        if (r == 0) {
                _cleanup_free_ char *err = NULL;
                r = nvml_facts_from_json(ntext, nlen, &s->nvml_facts, &err);
                if (r < 0) {
                        json_decref(manifest);
                        snapshot_close(s);
                        return errorf(ret_error, r, "%s: nvml.json: %s", path, err ? err : strerror(-r));
                }
        } else if (r != -ENOENT) {
                json_decref(manifest);
                snapshot_close(s);
                return errorf(ret_error, r, "%s: cannot read nvml.json: %s", path, strerror(-r));
        }

        _cleanup_free_ char *itext = NULL;
        size_t ilen = 0;
        r = read_member(s->dir, "api/INDEX.json", NET_INDEX_MAX_BYTES, &itext, &ilen);
        if (r == 0) {
                _cleanup_free_ char *err = NULL;
                r = net_log_from_index(itext, ilen, &s->net, &err);
                if (r < 0) {
                        json_decref(manifest);
                        snapshot_close(s);
                        return errorf(ret_error, r, "%s: %s", path, err ? err : strerror(-r));
                }
                s->net->dir = xstrdup(s->dir);
        } else if (r == -ENOENT) {
                s->net = net_log_new(); /* collected without API answers: every request answers "not in the snapshot" */
        } else {
                json_decref(manifest);
                snapshot_close(s);
                return errorf(ret_error, r, "%s: cannot read api/INDEX.json: %s", path,
                              r == -EFBIG ? "larger than a gpunode API index may be" : strerror(-r));
        }

        s->root_label = json_str(manifest, "root");
        s->node = json_str(manifest, "node");
        json_int_t created = json_integer_value(json_object_get(manifest, "created_unix"));
        s->created = created > 0 ? (int64_t)created : 0;
        s->kmsg_label = json_str(json_object_get(manifest, "kmsg"), "source");
        apply_nvml_manifest(s, json_object_get(manifest, "nvml"));
        if (!s->root_label) s->root_label = xstrdup("/");
        if (!s->kmsg_label) s->kmsg_label = xstrdup("/dev/kmsg");
        if (!s->nvml_recorded && !s->nvml_facts) {
                s->nvml_load_rc = -ENOENT;
                s->nvml_load_error = xstrdup("the snapshot holds no NVML answers (nvml.json)");
        }
        json_decref(manifest);
        *ret = s;
        return 0;
}

void snapshot_close(struct snapshot *s) {
        if (!s) return;
        snapshot_remove_dir(s->dir);
        free(s->dir);
        free(s->root_dir);
        free(s->kmsg_path);
        free(s->kmsg_label);
        free(s->root_label);
        free(s->node);
        free(s->nvml_library);
        free(s->nvml_load_error);
        nvml_facts_free(s->nvml_facts);
        net_log_free(s->net);
        free(s);
}
