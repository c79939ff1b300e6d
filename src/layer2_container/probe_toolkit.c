/* probe_toolkit.c: the NVIDIA Container Toolkit: its binaries, its config.toml, the GPU Operator's validation files. */
#include <sys/stat.h>

#include "facts/node.h"
#include "layer2_container/runtime_common.h"
#include "basic/hostfs.h"
#include "basic/toml.h"

#define TOOLKIT_OPERATOR_DIR "/usr/local/nvidia/toolkit"

void probe_toolkit(struct toolkit_facts *ret) {
        *ret = (struct toolkit_facts){
                .names = { "nvidia-container-runtime", "nvidia-container-cli", "nvidia-ctk", "nvidia-cdi-hook" },
        };
        static const char *const dirs[] = { "/usr/bin", "/usr/local/bin", TOOLKIT_OPERATOR_DIR, NULL };
        for (size_t i = 0; i < TOOLKIT_N_BINARIES; i++) ret->paths[i] = runtime_find_binary(ret->names[i], dirs);
        ret->operator_dir = hostfs_exists(TOOLKIT_OPERATOR_DIR);

        static const char *const configs[] = { "/etc/nvidia-container-runtime/config.toml",
                                               TOOLKIT_OPERATOR_DIR "/.config/nvidia-container-runtime/config.toml" };
        ret->config = (struct runtime_config_file){ .rc = -ENOENT, .mtime = -1 };
        for (size_t i = 0; i < ELEMENTSOF(configs); i++) {
                _cleanup_free_ char *text = NULL;
                size_t len = 0;
                int r = hostfs_read(configs[i], 1u << 20, &text, &len);
                if (r == -ENOENT) continue;
                ret->config.path = xstrdup(configs[i]);
                ret->config.rc = r;
                struct stat st;
                if (hostfs_stat(configs[i], &st) == 0) ret->config.mtime = st.st_mtime;
                if (r < 0) {
                        ret->config.error = read_error(configs[i], r);
                        break;
                }
                _cleanup_toml_ struct toml_value *doc = NULL;
                struct toml_error err;
                if (toml_parse(text, len, &doc, &err) < 0) {
                        ret->config.rc = -EINVAL;
                        ret->config.error =
                                xasprintf("%s: line %d, column %d: %s", configs[i], err.line, err.column, err.message);
                        break;
                }
                const char *mode = toml_string(toml_get_path(doc, "nvidia-container-runtime", "mode", NULL));
                if (mode) ret->mode = utf8_sanitize(mode);
                break;
        }

        _cleanup_strv_free_ char **names = NULL;
        int n = hostfs_list("/run/nvidia/validations", true, &names);
        for (int i = 0; i < n && i < 64; i++) {
                ret->validations = xrealloc(ret->validations, (ret->n_validations + 1) * sizeof(char *));
                ret->validations[ret->n_validations++] = utf8_sanitize(names[i]);
        }
}

void toolkit_facts_free(struct toolkit_facts *f) {
        for (size_t i = 0; i < TOOLKIT_N_BINARIES; i++) free(f->paths[i]);
        runtime_config_file_free(&f->config);
        free(f->mode);
        for (size_t i = 0; i < f->n_validations; i++) free(f->validations[i]);
        free(f->validations);
        *f = (struct toolkit_facts){ 0 };
}
