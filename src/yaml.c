/* yaml.c: one place that runs libfyaml (loaded on first use) with its diagnostics collected. */
#include "yaml.h"
#include "dl_fyaml.h"
#include "util.h"

int yaml_parse(const char *text, size_t len, struct fy_document **ret, char **ret_error) {
        *ret = NULL;
        int r = dl_fyaml_open(ret_error);
        if (r < 0) return r;
        size_t bad = utf8_valid_prefix(text, len);
        if (bad < len) {
                size_t line = 1;
                for (size_t i = 0; i < bad; i++) line += text[i] == '\n';
                *ret_error = xasprintf("invalid UTF-8 at line %zu (byte %zu)", line, bad + 1);
                return -EINVAL;
        }
        struct fy_diag_cfg dcfg;
        fy_diag_cfg_default(&dcfg);
        dcfg.fp = NULL;
        dcfg.output_fn = NULL;
        dcfg.level = FYET_ERROR;
        dcfg.colorize = false;
        struct fy_diag *diag = fy_diag_create(&dcfg);
        if (!diag) {
                *ret_error = xstrdup("cannot create the YAML parser");
                return -ENOMEM;
        }
        fy_diag_set_collect_errors(diag, true);
        struct fy_parse_cfg pcfg = {.flags = FYPCF_QUIET | FYPCF_COLLECT_DIAG | FYPCF_JSON_NONE, .diag = diag};
        struct fy_document *doc = fy_document_build_from_string(&pcfg, text, len);
        if (!doc || fy_diag_got_error(diag)) {
                void *it = NULL;
                struct fy_diag_error *e = fy_diag_errors_iterate(diag, &it);
                if (e && e->msg) *ret_error = xasprintf("invalid YAML at line %d, column %d: %s", e->line + 1, e->column + 1, e->msg);
                else *ret_error = xstrdup("invalid YAML");
                fy_document_destroy(doc);
                fy_diag_destroy(diag);
                return -EINVAL;
        }
        fy_diag_destroy(diag);
        *ret = doc;
        return 0;
}
