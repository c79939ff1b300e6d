/* fuzz_dp_config.c: libFuzzer target for NVIDIA's device plugin config (YAML, JSON) and mig-minors. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dpconfig/dp_config.h"
#include "device_plugin/dp_devices.h"

/* libfyaml 0.7.12's own leak (see fuzz_kubeconfig.c). */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) {
        return "leak:libfyaml.so\n";
}

/* Checks what a parse accepted: names set, replicas in range. Aborts otherwise. */
static void check(const struct dp_config *c) {
        for (size_t i = 0; i < c->n_resources; i++) {
                const struct dp_replicated *r = &c->resources[i];
                if (!r->name || r->replicas < 2 || r->replicas > DP_MAX_REPLICAS || !dp_replicated_advertised(r))
                        abort();
                for (size_t k = 0; k < r->n_devices; k++)
                        if (!r->devices[k]) abort();
        }
        if (c->n_resources > DP_MAX_CONFIG_RESOURCES) abort();
}

/* Returns 0 always: libFuzzer's contract; crashes and sanitizer reports are the findings. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > 1 << 16) return 0;
        struct dp_config c;
        char *err = NULL;
        dp_config_init(&c);
        int r = dp_config_parse((const char *)data, size, 0, &c, &err);
        if (r == 0) check(&c);
        if (r < 0 && !err) abort(); /* every refusal says why */
        if (r == 0 && c.sharing == DP_SHARING_MPS) abort(); /* the plugin never takes MPS */
        size_t n = c.n_resources;
        free(err);
        dp_config_done(&c);

        /* GFD's labels (MPS read): what the plugin takes, they take the same way; what they refuse, it refuses */
        err = NULL;
        dp_config_init(&c);
        int rm = dp_config_parse((const char *)data, size, DP_CONFIG_MPS, &c, &err);
        if (rm == 0) check(&c);
        if (rm < 0 && !err) abort();
        if (r == 0 && (rm != 0 || c.n_resources != n)) abort();
        if (rm < 0 && r == 0) abort();
        if (r < 0 && rm == 0 && c.sharing != DP_SHARING_MPS) abort();
        free(err);
        dp_config_done(&c);

        /* the same bytes as JSON, straight into the tree reader (no child) */
        json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
        if (j) {
                err = NULL;
                dp_config_init(&c);
                if (dp_config_from_json(j, DP_CONFIG_MPS, &c, &err) == 0) check(&c);
                free(err);
                dp_config_done(&c);
                json_decref(j);
        }
        /* the same bytes as /proc/driver/nvidia-caps/mig-minors */
        struct dp_mig_minor *mm = NULL;
        size_t nm = 0, skipped = 0;
        dp_mig_minors_parse((const char *)data, size, &mm, &nm, &skipped);
        if (nm + skipped > size) abort();
        free(mm);
        /* and the strategy list parser */
        char *s = strndup((const char *)data, size > 256 ? 256 : size);
        (void)dp_list_strategy_parse(s);
        free(s);
        return 0;
}
