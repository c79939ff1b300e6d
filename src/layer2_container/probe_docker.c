/* probe_docker.c: Docker: dockerd, its process and daemon.json's runtimes. */
#include <jansson.h>

#include "facts/node.h"
#include "layer2_container/runtime_common.h"
#include "basic/hostfs.h"

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
        *ret = (struct docker_facts){ .nvidia_path_rc = BINARY_UNSET };
        ret->binary = runtime_find_binary("dockerd", runtime_bin_dirs);
        runtime_find_process("dockerd", &ret->process);
        ret->file = (struct runtime_config_file){ .path = xstrdup(path), .mtime = -1 };
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = hostfs_read(path, RUNTIME_CONFIG_READ_MAX, &text, &len);
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
                ret->nvidia_resolved = runtime_find_binary(ret->nvidia_path ? ret->nvidia_path : "", runtime_bin_dirs);
                ret->nvidia_path_rc = ret->nvidia_resolved ? 0
                                      : ret->nvidia_path && ret->nvidia_path[0] == '/'
                                              ? runtime_binary_check(ret->nvidia_path)
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
        *f = (struct docker_facts){ 0 };
}
