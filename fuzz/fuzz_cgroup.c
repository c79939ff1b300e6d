/* fuzz_cgroup.c: libFuzzer target for the /proc/<pid>/cgroup parser (layer1_hardware/cgroup.c). */
#include <stdint.h>
#include <stdlib.h>

#include "layer1_hardware/cgroup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *pod = NULL, *container = NULL;
        (void)cgroup_pod_container((const char *)data, size, &pod, &container);
        free(pod);
        free(container);
        return 0;
}
