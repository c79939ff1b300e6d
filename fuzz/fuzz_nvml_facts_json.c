/* fuzz_nvml_facts_json.c: libFuzzer target for nvml_facts_from_json: load, write back, load again, free. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nvml/nvml_facts_json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct nvml_facts *f = NULL;
        char *err = NULL;
        if (nvml_facts_from_json((const char *)data, size, &f, &err) == 0) {
                /* What loads must write and load again to the same text. */
                char *a = NULL, *b = NULL;
                struct nvml_facts *g = NULL;
                if (nvml_facts_to_json(f, &a) == 0 && nvml_facts_from_json(a, strlen(a), &g, NULL) == 0 &&
                    nvml_facts_to_json(g, &b) == 0 && strcmp(a, b) != 0)
                        abort();
                free(a);
                free(b);
                nvml_facts_free(g);
        } else if (!err) {
                abort(); /* a refusal always says why */
        }
        nvml_facts_free(f);
        free(err);
        return 0;
}
