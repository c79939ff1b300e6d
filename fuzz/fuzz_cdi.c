/* fuzz_cdi.c: libFuzzer target for the CDI spec parser (as YAML and as JSON) and the driver-version matcher. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "facts/node.h"
#include "facts/layer2_container.h"

char *cdi_path_driver_version(const char *path);

/* Returns LeakSanitizer's suppressions: libfyaml 0.7.12 leaks a scalar's text buffer in some
 * escapes (see fuzz_kubeconfig.c); that is the library's bug, not this parser's. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libfyaml.so\n"; }

/* Returns 0 always: libFuzzer's contract; crashes and sanitizer reports are the findings. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > 1 << 20) return 0;
        for (int json = 0; json < 2; json++) {
                struct cdi_spec s;
                int r = cdi_parse_spec("/etc/cdi/fuzz", (const char *)data, size, json, &s);
                if ((r < 0) != (s.error != NULL)) abort();
                if (r == 0 && !s.kind) abort();
                cdi_spec_free(&s);
        }
        char *str = strndup((const char *)data, size);
        if (!str) return 0;
        free(cdi_path_driver_version(str));
        free(str);
        return 0;
}
