/* fuzz_crio.c: libFuzzer target for CRI-O config files applied in sequence (crio.conf, then a drop-in). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "facts/node.h"
#include "facts/layer2_container.h"
#include "basic/util.h"

/* Returns 0 always: libFuzzer's contract; crashes and sanitizer reports are the findings. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > 1 << 20) return 0;
        struct crio_facts c = {0};
        for (int i = 0; i < 2; i++) {
                struct runtime_config_file f = {.path = xstrdup(i ? "/etc/crio/crio.conf.d/99-nvidia.conf" : "/etc/crio/crio.conf")};
                int r = crio_apply_file(&c, &f, (const char *)data, size);
                if ((r < 0) != (f.error != NULL)) abort();
                runtime_config_file_free(&f);
        }
        crio_facts_free(&c);
        return 0;
}
