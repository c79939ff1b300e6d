/* fuzz_checkpoint.c: libFuzzer target for the kubelet device manager checkpoint parser. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kube/kube_checkpoint.h"

/* Returns 0 always: libFuzzer's contract; crashes and sanitizer reports are the findings. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct kube_checkpoint *c = NULL;
        char *err = NULL;
        int r = kube_checkpoint_parse((const char *)data, size, &c, &err);
        if (r == 0) {
                if (!c || err) abort();
                for (size_t i = 0; i < c->n_resources; i++) {
                        if (!c->resources[i].name) abort();
                        for (size_t d = 0; d < c->resources[i].n_devices; d++)
                                if (kube_device_id_base_len(c->resources[i].devices[d]) > strlen(c->resources[i].devices[d])) abort();
                        if (kube_checkpoint_find(c, c->resources[i].name) == NULL) abort();
                }
                for (size_t i = 0; i < c->n_entries; i++)
                        if (!c->entries[i].resource) abort();
        } else if (c || !err) {
                abort(); /* every failure explains itself and returns nothing */
        }
        kube_checkpoint_free(c);
        free(err);
        return 0;
}
