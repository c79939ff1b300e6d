/* fuzz_gfd_vgpu.c: libFuzzer target for GFD's vGPU detection in one PCI config space (capability chain, vGPU records). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "layer3_kubernetes/gfd_labels.h"

/* Returns 0 always: libFuzzer's contract; crashes and sanitizer reports are the findings. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > 4096) return 0;
        /* an exact-size copy, so that a read past the config space is caught */
        uint8_t *cfg = calloc(1, size ? size : 1);
        if (!cfg) abort();
        if (size) memcpy(cfg, data, size);
        bool vgpu;
        int info_rc;
        char version[16], branch[16];
        int r = gfd_vgpu_parse_config(cfg, size, &vgpu, &info_rc, version, branch);
        if (r < 0 && size >= 256) abort();
        if (r == 0 && vgpu) abort();
        if (r == 1 && (!vgpu || strlen(version) > 15 || strlen(branch) > 15)) abort();
        free(cfg);
        return 0;
}
