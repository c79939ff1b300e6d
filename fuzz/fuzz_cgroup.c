/* fuzz_cgroup.c: libFuzzer target for the /proc/<pid>/cgroup and /proc/<pid>/stat parsers
 * (layer1_hardware/cgroup.c). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "layer1_hardware/cgroup.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *pod = NULL, *container = NULL;
        (void)cgroup_pod_container((const char *)data, size, &pod, &container);
        free(pod);
        free(container);
        char comm[PROC_COMM_MAX];
        int st = proc_stat_state((const char *)data, size, comm);
        if (st != -EINVAL && (st < 'A' || st > 'z' || strlen(comm) >= PROC_COMM_MAX)) abort();
        for (const char *p = comm; st != -EINVAL && *p; p++)
                if ((unsigned char)*p < ' ' || (unsigned char)*p >= 0x7f) abort();
        return 0;
}
