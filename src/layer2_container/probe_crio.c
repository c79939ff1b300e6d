/* probe_crio.c: CRI-O: its binary, its process, crio.conf and its drop-ins as CRI-O merges them. */

#include "facts/node.h"
#include "layer2_container/runtime_common.h"
#include "basic/hostfs.h"
#include "basic/toml.h"

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
        int r = hostfs_read(path, RUNTIME_CONFIG_READ_MAX, &text, &len);
        if (r == -ENOENT) return;
        c->files = xrealloc(c->files, (c->n_files + 1) * sizeof *c->files);
        struct runtime_config_file *f = &c->files[c->n_files++];
        *f = (struct runtime_config_file){ .path = xstrdup(path), .mtime = -1 };
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
        *ret = (struct crio_facts){ .nvidia_path_rc = BINARY_UNSET };
        ret->binary = runtime_find_binary("crio", runtime_bin_dirs);
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
                _cleanup_free_ char *found = runtime_find_binary(ret->nvidia_path, runtime_bin_dirs);
                ret->nvidia_path_rc = found                        ? 0
                                      : ret->nvidia_path[0] == '/' ? runtime_binary_check(ret->nvidia_path)
                                                                   : -ENOENT;
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
        *f = (struct crio_facts){ 0 };
}
