/* fuzz_ld_cache.c: libFuzzer target for the ld.so.cache parser (nvml/ld_cache.c). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "basic/ld_cache.h"

/* Touches every string the parser hands out, so a bad offset reads out of bounds under ASan. */
static int touch(const char *key, const char *value, uint32_t flags, void *userdata) {
        size_t *sum = userdata;
        *sum += strlen(key) + strlen(value) + (flags & 1u);
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        size_t sum = 0;
        char *err = NULL, *path = NULL;
        (void)ld_cache_parse(data, size, touch, &sum, &err);
        free(err);
        err = NULL;
        (void)ld_cache_find(data, size, "libnvidia-ml.so.1", 0, &path, &err);
        free(path);
        free(err);
        return 0;
}
