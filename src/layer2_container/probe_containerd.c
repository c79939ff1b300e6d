/* probe_containerd.c: containerd's configuration as containerd itself loads it (imports, versions, merge), and its
 * process. */
#include <fnmatch.h>
#include <sys/stat.h>

#include "facts/node.h"
#include "layer2_container/runtime_common.h"
#include "basic/hostfs.h"
#include "basic/toml.h"

/*
 * How containerd loads its configuration (containerd cmd/containerd/server/config/config.go,
 * LoadConfigWithPlugins, resolveImports, mergeConfig), which this file reproduces:
 * - A queue starts with the main file (/etc/containerd/config.toml, or --config). Each file is
 *   loaded once (a path already loaded is skipped, so import cycles end), merged into the result,
 *   then its `imports` are appended to the queue: breadth first, in the order written.
 * - An import is cleaned (filepath.Clean); a relative one is joined to the directory of the file
 *   that imports it; one containing '*' is a glob (filepath.Glob: sorted, no match is no error),
 *   any other is opened as is, and a missing one stops containerd from loading its config.
 * - A drop-in may not have a higher `version` than the main file (containerd 2.x refuses); an older
 *   one is migrated: v1 plugin "cri" is "io.containerd.grpc.v1.cri" in v2, whose runtime settings
 *   (containerd.runtimes, default_runtime_name, enable_cdi) are "io.containerd.cri.v1.runtime" in v3.
 * - `imports` and `version` are top-level keys: written after a [table] header they belong to that
 *   table and containerd ignores them (reported as misplaced).
 * - Merging follows containerd's own version, not the config's: containerd 1.x (1.6, 1.7:
 *   services/server/config/config.go mergeConfig) runs mergo.Merge and then copies every plugin
 *   table of the import over the result (`to.Plugins[k] = v`, "Replace entire sections instead of
 *   merging map's values"; containerd issue #5837), so the last file that has a CRI table owns all
 *   of it. containerd 2.x (cmd/containerd/server/config/config.go mergeConfig) dropped that copy:
 *   mergo merges plugin tables recursively (containerd PR #9982), so for every setting the last file
 *   that sets it wins, whatever the config's version. disabled_plugins lists append in both.
 *   containerd 1.x refuses config version 3 (ValidateV2: "unsupported config version"), so a v3
 *   main file means 2.x; otherwise, with containerd's version unknown, gpunode assumes 1.x for
 *   configs v1 and v2 and says when 2.x would merge the imports differently.
 * - The binary a runtime runs: options.BinaryName for io.containerd.runc.v1/v2 (runc's shim
 *   options), options.Runtime for io.containerd.runtime.v1.linux (containerd 1.x's v1 linux shim,
 *   runtime/linux/runctypes RuncOptions; removed in containerd 2.0, RELEASES.md).
 */

#define CTD_MAX_FILES 128
#define CTD_READ_MAX  RUNTIME_CONFIG_READ_MAX

static const char *const PLUGIN_V1 = "cri";
static const char *const PLUGIN_V2 = "io.containerd.grpc.v1.cri";
static const char *const PLUGIN_V3 = "io.containerd.cri.v1.runtime";
#define RUNTIME_LINUX_V1 "io.containerd.runtime.v1.linux"

/* Returns a malloc'd cleaned absolute path (Go's filepath.Clean on an absolute path). Never fails. */
static char *path_clean(const char *path) {
        _cleanup_free_ char *copy = xstrdup(path);
        const char *parts[256];
        size_t n = 0;
        char *save = NULL;
        for (char *t = strtok_r(copy, "/", &save); t; t = strtok_r(NULL, "/", &save)) {
                if (streq(t, ".")) continue;
                if (streq(t, "..")) {
                        if (n) n--;
                        continue;
                }
                if (n < ELEMENTSOF(parts)) parts[n++] = t;
        }
        struct buf b = { 0 };
        for (size_t i = 0; i < n; i++) buf_printf(&b, "/%s", parts[i]);
        if (!b.data) buf_puts(&b, "/");
        return b.data;
}

/* Returns a malloc'd directory part of an absolute path ("/" for "/x"). Never fails. */
static char *path_dir(const char *path) {
        const char *slash = strrchr(path, '/');
        if (!slash || slash == path) return xstrdup("/");
        return xstrndup(path, (size_t)(slash - path));
}

static bool has_meta(const char *s) {
        return strpbrk(s, "*?[\\") != NULL;
}

/* Bounds on one import glob: containerd (Go's filepath.Glob) has none, but a pattern of wildcard
 * folders follows /proc/<pid>/root back to / once per process and level; gpunode does not follow a
 * symlink into a folder already on the path, stops at these bounds, and says so. */
#define GLOB_MAX_MATCHES   1000
#define GLOB_MAX_DIR_READS 10000
#define GLOB_MAX_DEPTH     128

struct glob_state {
        char **out;
        size_t n_out;
        size_t dir_reads;
        size_t loops;              /* symlinks back into a directory on the path, not followed */
        bool capped;               /* a bound was hit: the expansion is partial */
        dev_t dev[GLOB_MAX_DEPTH]; /* directories on the current path, outermost first */
        ino_t ino[GLOB_MAX_DEPTH];
        size_t depth;
};

/* Appends to g->out the host paths matching the glob components comps[i..] below dir (whose
 * identity is on g's path stack). Stops at g's bounds, setting g->capped; never fails. */
static void glob_expand(struct glob_state *g, const char *dir, char **comps, size_t i, size_t n) {
        if (g->capped) return;
        if (i == n) {
                struct stat st;
                if (hostfs_stat(dir, &st) < 0) return;
                if (g->n_out >= GLOB_MAX_MATCHES) {
                        g->capped = true;
                        return;
                }
                g->out = xrealloc(g->out, (g->n_out + 2) * sizeof(char *));
                g->out[g->n_out++] = xstrdup(dir);
                g->out[g->n_out] = NULL;
                return;
        }
        const char *sep = streq(dir, "/") ? "" : "/";
        _cleanup_strv_free_ char **names = NULL;
        int k;
        if (!has_meta(comps[i])) {
                names = xcalloc(2, sizeof(char *));
                names[0] = xstrdup(comps[i]);
                k = 1;
        } else {
                if (g->dir_reads >= GLOB_MAX_DIR_READS) {
                        g->capped = true;
                        return;
                }
                g->dir_reads++;
                k = hostfs_list(dir, true, &names);
        }
        for (int j = 0; j < k && !g->capped; j++) {
                if (has_meta(comps[i]) && fnmatch(comps[i], names[j], 0) != 0) continue;
                _cleanup_free_ char *next = xasprintf("%s%s%s", dir, sep, names[j]);
                if (i + 1 == n) {
                        glob_expand(g, next, comps, i + 1, n);
                        continue;
                }
                /* next must be a directory to go on; one already on the path is a symlink loop */
                struct stat st;
                if (hostfs_stat(next, &st) < 0 || !S_ISDIR(st.st_mode)) continue;
                bool loop = false;
                for (size_t d = 0; d < g->depth && !loop; d++) loop = g->dev[d] == st.st_dev && g->ino[d] == st.st_ino;
                if (loop) {
                        g->loops++;
                        continue;
                }
                if (g->depth >= GLOB_MAX_DEPTH) {
                        g->capped = true;
                        return;
                }
                g->dev[g->depth] = st.st_dev;
                g->ino[g->depth++] = st.st_ino;
                glob_expand(g, next, comps, i + 1, n);
                g->depth--;
        }
}

/* Returns the sorted host paths matching an absolute glob pattern (NULL-terminated, maybe NULL);
 * a pattern matching nothing is not an error, as with Go's filepath.Glob. When the expansion was
 * cut (a bound hit, or symlink loops not followed), *ret_cut is a malloc'd sentence naming the
 * pattern, else NULL. */
static char **host_glob(const char *pattern, char **ret_cut) {
        *ret_cut = NULL;
        _cleanup_free_ char *copy = xstrdup(pattern);
        char *comps[128];
        size_t n = 0;
        char *save = NULL;
        for (char *t = strtok_r(copy, "/", &save); t && n < ELEMENTSOF(comps); t = strtok_r(NULL, "/", &save))
                comps[n++] = t;
        struct glob_state *g = xcalloc(1, sizeof *g);
        struct stat st;
        if (hostfs_stat("/", &st) == 0) {
                g->dev[0] = st.st_dev;
                g->ino[0] = st.st_ino;
                g->depth = 1;
        }
        glob_expand(g, "/", comps, 0, n);
        if (g->capped)
                *ret_cut = xasprintf(
                        "import \"%s\": gpunode stopped expanding it after %zu match(es) and %zu folder read(s) "
                        "(its limits: %d matches, %d folder reads)",
                        pattern, g->n_out, g->dir_reads, GLOB_MAX_MATCHES, GLOB_MAX_DIR_READS);
        else if (g->loops)
                *ret_cut =
                        xasprintf("import \"%s\": %zu symlink loop(s) on the way were not followed", pattern, g->loops);
        char **out = g->out;
        free(g);
        return out;
}

/* Returns the value of key in a CRI-shaped table of doc below plugins.<plugin>, or NULL. */
static const struct toml_value *plugin_table(const struct toml_value *doc, const char *plugin) {
        return toml_get_path(doc, "plugins", plugin, NULL);
}

/* Returns true when a CRI table defines a runtime whose name starts with "nvidia". */
static bool table_has_nvidia(const struct toml_value *cri) {
        const struct toml_value *rt = toml_get_path(cri, "containerd", "runtimes", NULL);
        for (size_t i = 0; i < toml_table_size(rt); i++)
                if (startswith(toml_table_key_at(rt, i), "nvidia")) return true;
        return false;
}

int containerd_parse_file(const char *path, const char *text, size_t len, struct runtime_config_file *ret,
                          struct toml_value **ret_doc) {
        *ret = (struct runtime_config_file){ .path = xstrdup(path), .mtime = -1 };
        if (ret_doc) *ret_doc = NULL;
        struct toml_value *doc = NULL;
        struct toml_error err;
        if (toml_parse(text, len, &doc, &err) < 0) {
                ret->rc = -EINVAL;
                ret->error = xasprintf("%s: line %d, column %d: %s", path, err.line, err.column, err.message);
                return -EINVAL;
        }
        int64_t v = 0;
        const struct toml_value *ver = toml_table_get(doc, "version");
        if (ver && (!toml_int(ver, &v) || v < 1 || v > 3)) {
                ret->rc = -EINVAL;
                ret->error = xasprintf("%s: `version` must be 1, 2 or 3", path);
                toml_free(doc);
                return -EINVAL;
        }
        ret->version = (int)v;
        const char *const names[] = { PLUGIN_V1, PLUGIN_V2, PLUGIN_V3 };
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (table_has_nvidia(plugin_table(doc, names[i]))) ret->mentions_nvidia = true;
        if (ret_doc)
                *ret_doc = doc;
        else
                toml_free(doc);
        return 0;
}

/* Returns the CRI tables of one file, as containerd reads them under a main file of version
 * main_version (older drop-ins migrated), legacy spellings first; their count. */
static size_t cri_tables(const struct toml_value *doc, int file_version, int main_version,
                         const struct toml_value **out) {
        int fv = file_version ? file_version : 1;
        size_t n = 0;
        const char *names[3];
        size_t k = 0;
        if (main_version <= 1) {
                names[k++] = PLUGIN_V1;
                names[k++] = PLUGIN_V2;
        } else if (main_version == 2) {
                if (fv < 2) names[k++] = PLUGIN_V1;
                names[k++] = PLUGIN_V2;
        } else {
                if (fv < 2) names[k++] = PLUGIN_V1;
                if (fv < 3) names[k++] = PLUGIN_V2;
                names[k++] = PLUGIN_V3;
        }
        for (size_t i = 0; i < k; i++) {
                const struct toml_value *t = plugin_table(doc, names[i]);
                if (toml_type_of(t) == TOML_TABLE) out[n++] = t;
        }
        return n;
}

struct ctd_loaded {
        struct toml_value **docs; /* parallel to facts->files; NULL for a file that failed */
        size_t first, last;       /* files contributing CRI settings: [first, last] */
};

/* Returns the last value at keys (NULL-terminated) over the contributing CRI tables, with the
 * file that set it in *ret_file; NULL when no file sets it. */
static const struct toml_value *cri_lookup(const struct containerd_facts *c, const struct ctd_loaded *l,
                                           const char *const *keys, const char **ret_file) {
        for (size_t i = l->last + 1; i-- > l->first;) {
                if (!l->docs[i]) continue;
                const struct toml_value *t[3];
                size_t n = cri_tables(l->docs[i], c->files[i].version, c->version, t);
                for (size_t j = n; j-- > 0;) {
                        const struct toml_value *v = toml_get_pathv(t[j], keys);
                        if (v) {
                                *ret_file = c->files[i].path;
                                return v;
                        }
                }
        }
        return NULL;
}

/* Returns a malloc'd copy of a string value, NULL when v is not a string. */
static char *string_dup(const struct toml_value *v) {
        const char *s = toml_string(v);
        return s ? utf8_sanitize(s) : NULL;
}

/* Records the first table (as a dotted path) below doc that holds an `imports` key, depth <= 4. */
static char *find_misplaced_imports(const struct toml_value *t, const char *prefix, int depth) {
        if (depth > 4) return NULL;
        for (size_t i = 0; i < toml_table_size(t); i++) {
                const struct toml_value *v = toml_table_value_at(t, i);
                if (toml_type_of(v) != TOML_TABLE) continue;
                const char *k = toml_table_key_at(t, i);
                _cleanup_free_ char *safe = utf8_sanitize(k);
                _cleanup_free_ char *name = strpbrk(safe, ". \"")
                                                    ? xasprintf("%s%s\"%s\"", prefix, *prefix ? "." : "", safe)
                                                    : xasprintf("%s%s%s", prefix, *prefix ? "." : "", safe);
                if (toml_table_get(v, "imports")) return TAKE_PTR(name);
                char *deeper = find_misplaced_imports(v, name, depth + 1);
                if (deeper) return deeper;
        }
        return NULL;
}

/* Records the first error of the containerd probe (takes msg); later ones are dropped. */
static void set_error(struct containerd_facts *c, int rc, char *msg) {
        if (c->rc == 0) {
                c->rc = rc;
                c->error = msg;
        } else {
                free(msg);
        }
}

/* Loads one file into c->files (and its doc into l). Returns the index, or -1 when the file could
 * not be read or parsed (recorded in c). */
static ssize_t load_one(struct containerd_facts *c, struct ctd_loaded *l, const char *path, const char *imported_by) {
        c->files = xrealloc(c->files, (c->n_files + 1) * sizeof *c->files);
        l->docs = xrealloc(l->docs, (c->n_files + 1) * sizeof *l->docs);
        size_t idx = c->n_files++;
        struct runtime_config_file *f = &c->files[idx];
        l->docs[idx] = NULL;
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = hostfs_read(path, CTD_READ_MAX, &text, &len);
        if (r < 0) {
                *f = (struct runtime_config_file){ .path = xstrdup(path), .rc = r, .mtime = -1 };
                f->error = imported_by ? xasprintf("%s (imported by %s): %s", path, imported_by, strerror(-r))
                                       : read_error(path, r);
                f->imported_by = imported_by ? xstrdup(imported_by) : NULL;
                set_error(c, r, xstrdup(f->error));
                return -1;
        }
        r = containerd_parse_file(path, text, len, f, &l->docs[idx]);
        f->imported_by = imported_by ? xstrdup(imported_by) : NULL;
        struct stat st;
        if (hostfs_stat(path, &st) == 0) f->mtime = st.st_mtime;
        if (r < 0) {
                set_error(c, r, xstrdup(f->error));
                return -1;
        }
        return (ssize_t)idx;
}

/* Computes the merged view: CRI owner, runtimes, default runtime, enable_cdi, disabled plugins. */
static void merge_view(struct containerd_facts *c, struct ctd_loaded *l) {
        if (c->n_files == 0) return;
        l->first = 0;
        l->last = c->n_files - 1;
        if (!c->deep_merge) {
                /* containerd 1.x: the last file with a CRI table replaces all earlier ones */
                bool found = false;
                for (size_t i = c->n_files; i-- > 0;) {
                        const struct toml_value *t[3];
                        if (l->docs[i] && cri_tables(l->docs[i], c->files[i].version, c->version, t) > 0) {
                                l->first = l->last = i;
                                c->cri_owner = xstrdup(c->files[i].path);
                                found = true;
                                break;
                        }
                }
                if (!found) return;
        }
        /* runtimes: union of names in load order */
        for (size_t i = l->first; i <= l->last; i++) {
                if (!l->docs[i]) continue;
                const struct toml_value *t[3];
                size_t n = cri_tables(l->docs[i], c->files[i].version, c->version, t);
                for (size_t j = 0; j < n; j++) {
                        const struct toml_value *rts = toml_get_path(t[j], "containerd", "runtimes", NULL);
                        for (size_t k = 0; k < toml_table_size(rts); k++) {
                                const char *name = toml_table_key_at(rts, k);
                                if (strlen(name) != toml_table_key_len_at(rts, k)) continue;
                                bool seen = false;
                                for (size_t m = 0; m < c->n_runtimes; m++) seen |= streq(c->runtimes[m].name, name);
                                if (seen || c->n_runtimes >= 64) continue;
                                c->runtimes = xrealloc(c->runtimes, (c->n_runtimes + 1) * sizeof *c->runtimes);
                                c->runtimes[c->n_runtimes++] =
                                        (struct ctd_runtime){ .name = utf8_sanitize(name), .binary_rc = BINARY_UNSET };
                        }
                }
        }
        for (size_t m = 0; m < c->n_runtimes; m++) {
                struct ctd_runtime *rt = &c->runtimes[m];
                const char *file = NULL;
                const char *k1[] = { "containerd", "runtimes", rt->name, "runtime_type", NULL };
                const struct toml_value *v = cri_lookup(c, l, k1, &file);
                if ((rt->runtime_type = string_dup(v))) rt->runtime_type_file = xstrdup(file);
                rt->binary_key = streq_ptr(rt->runtime_type, RUNTIME_LINUX_V1) ? "Runtime" : "BinaryName";
                const char *k2[] = { "containerd", "runtimes", rt->name, "options", rt->binary_key, NULL };
                v = cri_lookup(c, l, k2, &file);
                if ((rt->binary_name = string_dup(v))) {
                        rt->binary_file = xstrdup(file);
                        rt->binary_rc = rt->binary_name[0] == '/' ? runtime_binary_check(rt->binary_name) : -ENOENT;
                        if (rt->binary_name[0] != '/') {
                                /* a bare name is looked up on containerd's PATH */
                                static const char *const dirs[] = {
                                        "/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin",
                                        "/sbin",           "/bin",           NULL
                                };
                                _cleanup_free_ char *found = runtime_find_binary(rt->binary_name, dirs);
                                rt->binary_rc = found ? 0 : -ENOENT;
                        }
                }
        }
        const char *file = NULL;
        const char *kd[] = { "containerd", "default_runtime_name", NULL };
        const struct toml_value *v = cri_lookup(c, l, kd, &file);
        if ((c->default_runtime = string_dup(v))) c->default_runtime_file = xstrdup(file);
        const char *kc[] = { "enable_cdi", NULL };
        v = cri_lookup(c, l, kc, &file);
        bool b;
        if (toml_bool(v, &b)) {
                c->enable_cdi = b;
                c->enable_cdi_file = xstrdup(file);
        }
}

/* Frees what merge_view computed in c. */
static void merge_view_free(struct containerd_facts *c) {
        free(c->cri_owner);
        for (size_t i = 0; i < c->n_runtimes; i++) {
                struct ctd_runtime *r = &c->runtimes[i];
                free(r->name);
                free(r->runtime_type);
                free(r->runtime_type_file);
                free(r->binary_name);
                free(r->binary_file);
        }
        free(c->runtimes);
        free(c->default_runtime);
        free(c->default_runtime_file);
        free(c->enable_cdi_file);
        c->cri_owner = c->default_runtime = c->default_runtime_file = c->enable_cdi_file = NULL;
        c->runtimes = NULL;
        c->n_runtimes = 0;
        c->enable_cdi = -1;
}

/* Returns a malloc'd account of the nvidia runtime and the default runtime of a merged view
 * ("nvidia runtime from X, default runtime nvidia"). Never fails. */
static char *merge_outcome(const struct containerd_facts *c) {
        const struct ctd_runtime *nv = NULL;
        for (size_t i = 0; i < c->n_runtimes; i++)
                if (streq(c->runtimes[i].name, "nvidia")) nv = &c->runtimes[i];
        const char *from = nv ? (nv->binary_file ? nv->binary_file : nv->runtime_type_file) : NULL;
        return xasprintf("%s%s%s, default runtime %s", nv ? "the nvidia runtime" : "no nvidia runtime",
                         from ? " from " : "", from ? from : "", c->default_runtime ? c->default_runtime : "unset");
}

/* With containerd's version unknown: merges again under the other major's rule and, when the nvidia
 * runtime or the default runtime come out otherwise, records both outcomes in c->merge_other. */
static void merge_compare(struct containerd_facts *c, struct ctd_loaded *l) {
        struct containerd_facts alt = { .files = c->files,
                                        .n_files = c->n_files,
                                        .version = c->version,
                                        .deep_merge = !c->deep_merge,
                                        .enable_cdi = -1 };
        merge_view(&alt, l);
        _cleanup_free_ char *mine = merge_outcome(c), *other = merge_outcome(&alt);
        if (!streq(mine, other))
                c->merge_other = xasprintf("containerd 1.x's rule gives %s; containerd 2.x's gives %s",
                                           c->deep_merge ? other : mine, c->deep_merge ? mine : other);
        merge_view_free(&alt);
}

/* Adds the conf.d drop-ins that are not loaded to c->stray. */
static void find_stray(struct containerd_facts *c) {
        _cleanup_free_ char *main_dir = path_dir(c->config_path);
        _cleanup_free_ char *d1 = xasprintf("%s/conf.d", main_dir);
        const char *dirs[] = { "/etc/containerd/conf.d", "/etc/containerd/config.d", d1 };
        for (size_t d = 0; d < ELEMENTSOF(dirs); d++) {
                bool dup = false;
                for (size_t e = 0; e < d; e++) dup |= streq(dirs[e], dirs[d]);
                if (dup) continue;
                _cleanup_strv_free_ char **names = NULL;
                int n = hostfs_list(dirs[d], false, &names);
                for (int i = 0; i < n && c->n_stray < CTD_MAX_FILES; i++) {
                        size_t len = strlen(names[i]);
                        if (len < 6 || !streq(names[i] + len - 5, ".toml")) continue;
                        _cleanup_free_ char *p = xasprintf("%s/%s", dirs[d], names[i]);
                        bool loaded = false;
                        for (size_t k = 0; k < c->n_files; k++) loaded |= streq(c->files[k].path, p);
                        if (loaded) continue;
                        _cleanup_free_ char *text = NULL;
                        size_t tlen = 0;
                        c->stray = xrealloc(c->stray, (c->n_stray + 1) * sizeof *c->stray);
                        struct runtime_config_file *f = &c->stray[c->n_stray++];
                        int r = hostfs_read(p, CTD_READ_MAX, &text, &tlen);
                        if (r < 0) {
                                *f = (struct runtime_config_file){
                                        .path = xstrdup(p), .rc = r, .error = read_error(p, r), .mtime = -1
                                };
                                continue;
                        }
                        containerd_parse_file(p, text, tlen, f, NULL);
                }
        }
}

void containerd_resolve(struct containerd_facts *c) {
        struct ctd_loaded l = { 0 };
        c->enable_cdi = -1;
        char **pending = xcalloc(1, sizeof(char *));
        char **pending_by = xcalloc(1, sizeof(char *));
        size_t n_pending = 0, head = 0;
        pending[n_pending] = path_clean(c->config_path);
        pending_by[n_pending++] = NULL;
        int root_version = 0;
        while (head < n_pending && c->n_files < CTD_MAX_FILES) {
                char *path = pending[head];
                const char *by = pending_by[head];
                head++;
                bool loaded = false;
                for (size_t k = 0; k < c->n_files; k++) loaded |= streq(c->files[k].path, path);
                if (loaded) continue;
                ssize_t idx = load_one(c, &l, path, by);
                if (idx < 0) break; /* containerd stops at the first file it cannot load */
                struct runtime_config_file *f = &c->files[idx];
                if (idx == 0)
                        root_version = f->version;
                else if (root_version && f->version > root_version) {
                        set_error(c, -EINVAL,
                                  xasprintf("%s: drop-in version %d is higher than the main file's version %d "
                                            "(%s): containerd 2.x refuses to start",
                                            f->path, f->version, root_version, c->files[0].path));
                        break;
                }
                const struct toml_value *imports = toml_table_get(l.docs[idx], "imports");
                _cleanup_free_ char *dir = path_dir(f->path);
                for (size_t i = 0; i < toml_array_len(imports); i++) {
                        const char *imp = toml_string(toml_array_at(imports, i));
                        if (!imp || !*imp) continue;
                        _cleanup_free_ char *joined = imp[0] == '/' ? xstrdup(imp) : xasprintf("%s/%s", dir, imp);
                        _cleanup_free_ char *clean = path_clean(joined);
                        char **add = NULL;
                        if (strchr(clean, '*')) {
                                char *cut = NULL;
                                add = host_glob(clean, &cut);
                                if (cut && !c->imports_cut)
                                        c->imports_cut = cut;
                                else
                                        free(cut);
                        } else {
                                add = xcalloc(2, sizeof(char *));
                                add[0] = TAKE_PTR(clean);
                        }
                        for (size_t a = 0; add && add[a]; a++) {
                                if (n_pending >= 4 * CTD_MAX_FILES) {
                                        free(add[a]);
                                        continue;
                                }
                                pending = xrealloc(pending, (n_pending + 1) * sizeof(char *));
                                pending_by = xrealloc(pending_by, (n_pending + 1) * sizeof(char *));
                                pending[n_pending] = add[a];
                                pending_by[n_pending++] = xstrdup(f->path);
                        }
                        free(add);
                }
        }
        for (size_t i = 0; i < n_pending; i++) free(pending[i]), free(pending_by[i]);
        free(pending);
        free(pending_by);

        c->version = c->n_files && c->files[0].version ? c->files[0].version : 1;
        c->cri_plugin = c->version >= 3 ? PLUGIN_V3 : c->version == 2 ? PLUGIN_V2 : PLUGIN_V1;
        if (c->major >= 2 || c->version >= 3)
                c->deep_merge = true;
        else if (c->major == 0)
                c->merge_assumed = true;
        if (c->major == 1 && c->version >= 3)
                set_error(c, -EINVAL,
                          xasprintf("%s: config version %d, but containerd %d.%d reads versions 1 and 2 only: it "
                                    "refuses to start (\"unsupported config version\")",
                                    c->config_path, c->version, c->major, c->minor));
        for (size_t i = 0; i < c->n_files && !c->misplaced_imports; i++)
                if (l.docs[i]) c->misplaced_imports = find_misplaced_imports(l.docs[i], "", 0);
        for (size_t i = 0; i < c->n_files; i++) {
                const struct toml_value *dis = toml_table_get(l.docs[i], "disabled_plugins");
                for (size_t k = 0; k < toml_array_len(dis); k++) {
                        const char *s = toml_string(toml_array_at(dis, k));
                        if (s && (streq(s, PLUGIN_V1) || streq(s, PLUGIN_V2) || streq(s, PLUGIN_V3)))
                                c->cri_disabled = true;
                }
        }
        if (c->rc == 0) merge_view(c, &l);
        if (c->rc == 0 && c->merge_assumed && c->n_files > 1) merge_compare(c, &l);
        for (size_t i = 0; i < c->n_files; i++) toml_free(l.docs[i]);
        free(l.docs);
        find_stray(c);
}

/*
 * Finds containerd's version from the package that installed its binary: dpkg's file list of the
 * package (/var/lib/dpkg/info/<package>.list) names the binary, its stanza in /var/lib/dpkg/status
 * gives the version (Debian's and Ubuntu's `containerd`, Docker's `containerd.io`). The binary embeds
 * its version too, but reading it would put a 40-60 MB file into every `gpunode collect` snapshot
 * (which holds what the probes read) and gpunode runs nothing on the host; a binary no package owns
 * (a release tarball in /usr/local/bin, k3s's, an RPM host) is "cannot tell". dpkg is the status
 * file probe_all read once. Fills c's version fields; never fails.
 */
static void containerd_version(const struct dpkg_status *dpkg, struct containerd_facts *c) {
        if (!c->binary) {
                c->version_from = xstrdup("cannot tell: no containerd binary found");
                return;
        }
        static const char *const packages[] = { "containerd.io", "containerd" };
        for (size_t i = 0; i < ELEMENTSOF(packages); i++) {
                _cleanup_free_ char *list_path = xasprintf("/var/lib/dpkg/info/%s.list", packages[i]);
                _cleanup_free_ char *list = NULL;
                size_t len = 0;
                if (hostfs_read(list_path, 4u << 20, &list, &len) < 0) continue;
                bool owns = false;
                /* usrmerge: dpkg may list /bin/containerd for /usr/bin/containerd and the other way round */
                const char *alt = startswith(c->binary, "/usr") ? c->binary + 4 : NULL;
                for (char *save = NULL, *line = strtok_r(list, "\n", &save); line && !owns;
                     line = strtok_r(NULL, "\n", &save))
                        owns = streq(line, c->binary) || (alt && streq(line, alt));
                if (!owns) continue;
                if (dpkg->rc < 0) {
                        c->version_from = xasprintf("cannot tell: package %s owns %s, but " DPKG_STATUS_PATH ": %s",
                                                    packages[i], c->binary, strerror(-dpkg->rc));
                        return;
                }
                const struct dpkg_package *pkg = dpkg_status_installed(dpkg, packages[i]);
                if (!pkg || containerd_parse_version(pkg->version, &c->major, &c->minor) < 0) {
                        c->version_from = xasprintf(
                                "cannot tell: package %s owns %s, but dpkg's status %s", packages[i], c->binary,
                                pkg ? "has a version gpunode cannot read" : "lists it as not installed");
                        c->version_text = pkg ? utf8_sanitize(pkg->version) : NULL;
                        return;
                }
                c->version_text = utf8_sanitize(pkg->version);
                c->version_from = xasprintf("dpkg: package %s %s owns %s", packages[i], c->version_text, c->binary);
                return;
        }
        c->version_from = xasprintf("cannot tell: no dpkg package lists %s (installed from a tarball, or an RPM host)",
                                    c->binary);
}

void probe_containerd(const struct dpkg_status *dpkg, struct containerd_facts *ret) {
        *ret = (struct containerd_facts){ .enable_cdi = -1 };
        static const char *const dirs[] = {
                "/usr/bin", "/usr/local/bin", "/bin", "/usr/sbin", "/usr/local/sbin", NULL
        };
        ret->binary = runtime_find_binary("containerd", dirs);
        runtime_find_process("containerd", &ret->process);
        if (ret->process.config_arg && ret->process.config_arg[0] == '/') {
                ret->config_path = path_clean(ret->process.config_arg);
                ret->config_path_from = xasprintf("--config of containerd (pid %d)", ret->process.pid);
        } else {
                ret->config_path = xstrdup("/etc/containerd/config.toml");
                ret->config_path_from = xstrdup("default path");
        }
        /* Only a config that does not exist means built-in defaults: one that cannot be reached (a
         * symlink loop, no permission) is a config containerd cannot load. */
        struct stat st;
        int config_rc = hostfs_stat(ret->config_path, &st);
        bool config = config_rc != -ENOENT && config_rc != -ENOTDIR;
        ret->present = ret->binary || ret->process.pid || config;
        if (!ret->present) return;
        containerd_version(dpkg, ret);
        if (!config && !ret->process.config_arg) {
                /* containerd without a config file runs on built-in defaults: no nvidia runtime */
                ret->version = 3;
                ret->cri_plugin = PLUGIN_V3;
                ret->rc = -ENOENT;
                ret->error =
                        xasprintf("%s does not exist: containerd runs with its built-in defaults", ret->config_path);
                find_stray(ret);
                return;
        }
        containerd_resolve(ret);
}

void containerd_facts_free(struct containerd_facts *f) {
        free(f->binary);
        runtime_process_free(&f->process);
        free(f->config_path);
        free(f->config_path_from);
        free(f->error);
        for (size_t i = 0; i < f->n_files; i++) runtime_config_file_free(&f->files[i]);
        free(f->files);
        for (size_t i = 0; i < f->n_stray; i++) runtime_config_file_free(&f->stray[i]);
        free(f->stray);
        free(f->misplaced_imports);
        free(f->imports_cut);
        merge_view_free(f);
        free(f->version_text);
        free(f->version_from);
        free(f->merge_other);
        *f = (struct containerd_facts){ 0 };
}
