/* nvml_evidence.c: NVML's facts as check evidence, shared by the layer 1 checks. */
#include "layer1_hardware/nvml_evidence.h"
#include "facts/layer3_kubernetes.h"

#include <strings.h>

/* Returns NVML's facts when it initialised, else NULL. */
const struct nvml_facts *nvml_initialised(const struct node_facts *facts) {
        const struct nvml_facts *n = facts->nvml.facts;
        return n && n->init_rc == NVML_SUCCESS ? n : NULL;
}

/* Returns a label for a GPU in evidence: "GPU 3 (0000:18:00.0, GPU-...)". */
char *nvml_gpu_label(const struct nvml_gpu_facts *g) {
        return xasprintf("GPU %u (%s%s%s)", g->index, g->pci_rc == NVML_SUCCESS ? g->pci_bus_id_legacy : "?",
                         g->uuid_rc == NVML_SUCCESS ? ", " : "", g->uuid_rc == NVML_SUCCESS ? g->uuid : "");
}

/* Returns true when s[0..n) is one or more decimal digits with value v. */
static bool decimal_is(const char *s, size_t n, unsigned v) {
        if (n == 0 || n > 9) return false;
        unsigned x = 0;
        for (size_t i = 0; i < n; i++) {
                if (s[i] < '0' || s[i] > '9') return false;
                x = x * 10 + (unsigned)(s[i] - '0');
        }
        return x == v;
}

/* Returns true when id[0..n) equals uuid (ASCII case ignored); false for an empty uuid. */
static bool uuid_is(const char *id, size_t n, const char *uuid) {
        return uuid && *uuid && strlen(uuid) == n && strncasecmp(id, uuid, n) == 0;
}

bool gpu_device_id_matches(const char *device_id, int index, const char *uuid, const struct nvml_gpu_facts *g) {
        if (!device_id) return false;
        if (!uuid && g && g->uuid_rc == NVML_SUCCESS) uuid = g->uuid;
        /* "<id>::<n>": replica n of a shared GPU (time-slicing, MPS) */
        const char *sep = strstr(device_id, "::");
        size_t n = sep ? (size_t)(sep - device_id) : strlen(device_id);
        if (uuid_is(device_id, n, uuid)) return true;
        for (unsigned i = 0; g && i < g->n_mig; i++)
                if (g->mig[i].uuid_rc == NVML_SUCCESS && uuid_is(device_id, n, g->mig[i].uuid)) return true;
        /* drivers before R470 named MIG devices "MIG-GPU-<uuid>/<gi>/<ci>" */
        const char *slash = memchr(device_id, '/', n);
        if (uuid && *uuid && n > 4 && strncasecmp(device_id, "MIG-", 4) == 0 && slash &&
            uuid_is(device_id + 4, (size_t)(slash - device_id - 4), uuid))
                return true;
        if (index < 0) return false;
        /* index naming (deviceIDStrategy=index): "3", and "3:1" for MIG device 1 of GPU 3 */
        const char *colon = memchr(device_id, ':', n);
        if (colon) {
                size_t left = (size_t)(colon - device_id), right = n - left - 1;
                return decimal_is(device_id, left, (unsigned)index) && right > 0 && right <= 9 &&
                       strspn(colon + 1, "0123456789") >= right;
        }
        return decimal_is(device_id, n, (unsigned)index);
}

size_t gpu_holders(const struct node_facts *facts, int index, const char *uuid, const struct nvml_gpu_facts *g,
                   struct gpu_holder **ret) {
        *ret = NULL;
        if (!facts->kube || facts->kube->podres.rc < 0) return 0;
        const struct podres_facts *p = &facts->kube->podres;
        size_t n = 0;
        for (size_t i = 0; i < p->n_holders; i++) {
                const struct podres_holder *h = &p->holders[i];
                if (!startswith(h->resource_name, "nvidia.com/") || !gpu_device_id_matches(h->device_id, index, uuid, g))
                        continue;
                bool seen = false;
                for (size_t k = 0; k < n && !seen; k++)
                        seen = streq((*ret)[k].namespace, h->namespace) && streq((*ret)[k].pod, h->pod) &&
                               streq((*ret)[k].container, h->container);
                if (seen) continue;
                *ret = xrealloc(*ret, (n + 1) * sizeof **ret);
                (*ret)[n++] = (struct gpu_holder){h->namespace, h->pod, h->container};
        }
        return n;
}

void gpu_holders_evidence_as(const struct node_facts *facts, const char *label, int index, const char *uuid,
                             const struct nvml_gpu_facts *g, const char *meaning, struct finding *f) {
        if (!facts->kube) return;
        const struct podres_facts *p = &facts->kube->podres;
        /* no socket: not a Kubernetes node; -ENOMEDIUM (kube/net_replay.h's NET_NOT_RECORDED): a
         * snapshot collected before gpunode recorded the call */
        if (p->rc == -ENOENT || p->rc == -ENOMEDIUM) return;
        if (p->rc < 0) {
                finding_evidence(f, "%s: which pods hold it is unknown: %s", label, p->error ? p->error : strerror(-p->rc));
                return;
        }
        _cleanup_free_ struct gpu_holder *h = NULL;
        size_t n = gpu_holders(facts, index, uuid, g, &h);
        /* without a UUID only index naming could match: silence is not "no pod" then */
        bool named = (uuid && *uuid) || (g && g->uuid_rc == NVML_SUCCESS);
        if (n == 0 && named) finding_evidence(f, "%s is held by no pod (the kubelet's pod-resources List)", label);
        for (size_t i = 0; i < n; i++)
                finding_evidence(f, "%s is held by %s/%s (container %s): %s", label, h[i].namespace, h[i].pod,
                                 h[i].container, meaning);
}

void gpu_holders_evidence(const struct node_facts *facts, const struct nvml_gpu_facts *g, struct finding *f) {
        _cleanup_free_ char *label = nvml_gpu_label(g);
        gpu_holders_evidence_as(facts, label, (int)g->index, NULL, g, "that job is dead", f);
}
