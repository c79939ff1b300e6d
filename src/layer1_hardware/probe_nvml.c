/* probe_nvml.c: loads NVML with dlopen and gathers its facts, bounded by a timeout. */
#include "facts/node.h"
#include "nvml/nvml_lib.h"
#include "nvml/nvml_probe.h"
#include "basic/hostfs.h"

#include <unistd.h>

#define NVML_SONAME "libnvidia-ml.so.1"

/* Returns 1 when this process shares the PID namespace of the host under the root, 0 when it does
 * not, -1 when it cannot tell: the host's /proc/self names the reader's pid as the host sees it. */
static int host_pid_namespace(void) {
        _cleanup_free_ char *self = NULL;
        if (hostfs_readlink_basename("/proc/self", &self) < 0) return -1;
        char *end;
        unsigned long v = strtoul(self, &end, 10);
        if (end == self || *end) return -1;
        return v == (unsigned long)getpid();
}

void probe_nvml(const char *library, unsigned timeout_ms, struct nvml_state *ret) {
        probe_nvml_scope(library, timeout_ms, NVML_PROBE_ALL, ret);
}

void probe_nvml_scope(const char *library, unsigned timeout_ms, int scope, struct nvml_state *ret) {
        *ret = (struct nvml_state){ .library = xstrdup(library ? library : NVML_SONAME) };
        struct nvml_lib *lib = NULL;
        char *error = NULL;
        int r = nvml_lib_open(library, &lib, &error);
        if (r < 0) {
                ret->load_rc = r;
                ret->load_error = error ? error : xasprintf("cannot load %s: %s", ret->library, strerror(-r));
                return;
        }
        free(error);
        r = nvml_probe_run_scope(lib, timeout_ms, (enum nvml_probe_scope)scope, &ret->facts);
        if (r == 0) ret->facts->caller_pid_namespace = host_pid_namespace();
        if (r < 0) {
                ret->load_rc = r;
                ret->load_error = xasprintf("cannot start the NVML probe thread: %s", strerror(-r));
        }
        nvml_lib_unref(lib);
}

void nvml_state_free(struct nvml_state *f) {
        nvml_facts_free(f->facts);
        free(f->load_error);
        free(f->library);
        *f = (struct nvml_state){ 0 };
}
