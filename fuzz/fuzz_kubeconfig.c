/* fuzz_kubeconfig.c: libFuzzer target for the kubeconfig parser and resolver (YAML from a buffer; no files, no exec). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "kube/kubeconfig.h"

/* Returns LeakSanitizer's built-in suppressions: libfyaml 0.7.12 (Debian 12) leaks the text
 * buffer of a single-quoted scalar with four or more consecutive '' escapes (e.g. 'x''y')
 * when the text is read; that is the library's bug, not this parser's, and would stop every run. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:libfyaml.so\n"; }

/* Returns 0 always: libFuzzer's contract; crashes and sanitizer reports are the findings. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct kube_config *c = NULL;
        char *err = NULL;

        if (size > 1 << 20) return 0;
        /* files and exec plugins are refused: the parser, merging rules and base64 are what is fuzzed */
        int r = kube_config_from_yaml((const char *)data, size, "fuzz", "/nonexistent", NULL,
                                      KUBE_CONFIG_NO_EXEC | KUBE_CONFIG_NO_FILES, 100, &c, &err);
        if (r >= 0 && (!c || !c->server || !c->namespace || !c->source)) abort();
        if (r < 0 && (c || !err)) abort(); /* every failure explains itself */
        kube_config_free(c);
        free(err);

        /* and as a context other than current-context */
        c = NULL;
        err = NULL;
        r = kube_config_from_yaml((const char *)data, size, "fuzz", NULL, "a", KUBE_CONFIG_NO_EXEC | KUBE_CONFIG_NO_FILES,
                                  100, &c, &err);
        kube_config_free(c);
        free(err);

        /* the base64 decoder on its own */
        void *out;
        size_t n;
        if (kube_base64_decode((const char *)data, size, &out, &n) == 0) free(out);
        return 0;
}
