/* fuzz_kube_objects.c: libFuzzer target for the Node and PodList extraction and the pod judgement. */
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "kube/kube_objects.h"

/* Returns 0 always: libFuzzer's contract; crashes and sanitizer reports are the findings. The
 * input is JSON (as the API server sends it); each document is read both as a Node and as a
 * PodList, and every pod is judged. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        json_t *doc = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
        if (!doc) return 0;
        struct kube_node_info node = {0};
        if (kube_node_info_parse(doc, &node) == 0) kube_node_info_free(&node);
        struct kube_pod_info *pods = NULL;
        size_t n = 0;
        if (kube_pod_list_parse(doc, &pods, &n) == 0) {
                for (size_t i = 0; i < n; i++) {
                        char *text = NULL;
                        enum kube_pod_health h = kube_pod_judge(&pods[i], &text);
                        if (h > KUBE_POD_FAIL || !text) abort(); /* every judgement explains itself */
                        free(text);
                        (void)kube_kv_get(pods[i].labels, pods[i].n_labels, "app");
                }
                kube_pod_info_free(pods, n);
        }
        const char *q = json_string_value(doc);
        int64_t v;
        if (q) (void)kube_quantity_int(q, &v);
        json_decref(doc);
        return 0;
}
