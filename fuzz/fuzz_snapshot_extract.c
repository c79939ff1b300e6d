/* fuzz_snapshot_extract.c: libFuzzer target for the snapshot extractor: archive bytes in, extracted into a fresh temporary folder, removed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "snapshot/snapshot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char base[] = "/tmp/gpunode-fuzz-XXXXXX";
        if (!mkdtemp(base)) abort();
        char out[64], canary[64];
        snprintf(out, sizeof out, "%s/out", base);
        snprintf(canary, sizeof canary, "%s/outside", base);
        if (mkdir(out, 0700) < 0 || mkdir(canary, 0700) < 0) abort();
        /* Small limits keep each run fast; the logic is the same as with the defaults. */
        struct snapshot_limits lim = {.member_max = 1 << 20, .total_max = 4 << 20, .members_max = 2000};
        char *err = NULL;
        int r = snapshot_extract_memory(data, size, out, &lim, &err);
        if (r < 0 && !err) abort();
        free(err);
        /* Nothing may appear beside out: "outside" stays empty, base holds out and outside only. */
        if (rmdir(canary) < 0) abort();
        if (snapshot_remove_dir(out) < 0) abort();
        if (rmdir(base) < 0) abort();
        return 0;
}
