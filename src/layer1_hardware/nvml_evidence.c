/* nvml_evidence.c: NVML's facts as check evidence, shared by the layer 1 checks. */
#include "layer1_hardware/nvml_evidence.h"

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

/* Returns the join's entry for NVML's GPU g, or NULL (see nvml_evidence.h). */
const struct gpu_pods *gpu_pods_of(const struct node_facts *facts, const struct nvml_gpu_facts *g) {
        const struct nvml_facts *n = facts->nvml.facts;
        for (size_t i = 0; n && i < facts->gpu_pods.n_nvml && i < n->n_gpus; i++)
                if (&n->gpus[i] == g) return &facts->gpu_pods.nvml[i];
        return NULL;
}

/* Returns the join's entry for a GPU the kernel log names by uuid, or NULL (see nvml_evidence.h). */
const struct gpu_pods *gpu_pods_of_uuid(const struct node_facts *facts, const char *uuid) {
        for (size_t i = 0; uuid && i < facts->gpu_pods.n_logged; i++)
                if (streq(facts->gpu_pods.logged[i].uuid, uuid)) return &facts->gpu_pods.logged[i];
        return NULL;
}

/* Adds the GPU's holders to f as evidence (see nvml_evidence.h). Never fails. */
void gpu_holders_evidence_as(const struct node_facts *facts, const char *label, const struct gpu_pods *pods,
                             const char *meaning, struct finding *f) {
        const struct gpu_pod_join *j = &facts->gpu_pods;
        /* no socket: not a Kubernetes node; -ENOMEDIUM (kube/net_replay.h's NET_NOT_RECORDED): a
         * snapshot collected before gpunode recorded the call */
        if (j->rc == -ENOENT || j->rc == -ENOMEDIUM) return;
        if (j->rc < 0) {
                finding_evidence(f, "%s: which pods hold it is unknown: %s", label,
                                 j->error ? j->error : strerror(-j->rc));
                return;
        }
        size_t n = pods ? pods->n_holders : 0;
        if (n == 0 && pods && pods->named)
                finding_evidence(f, "%s is held by no pod (the kubelet's pod-resources List)", label);
        for (size_t i = 0; i < n; i++)
                finding_evidence(f, "%s is held by %s/%s (container %s): %s", label, pods->holders[i].namespace,
                                 pods->holders[i].pod, pods->holders[i].container, meaning);
}

/* Adds NVML's GPU g's holders to f as evidence. Never fails. */
void gpu_holders_evidence(const struct node_facts *facts, const struct nvml_gpu_facts *g, struct finding *f) {
        _cleanup_free_ char *label = nvml_gpu_label(g);
        gpu_holders_evidence_as(facts, label, gpu_pods_of(facts, g), "that job is dead", f);
}

struct finding_gpu *nvml_finding_gpu(const struct nvml_gpu_facts *g, struct finding *f) {
        return finding_gpu(f, (int)g->index, g->uuid_rc == NVML_SUCCESS ? g->uuid : NULL,
                           g->pci_rc == NVML_SUCCESS ? g->pci_bus_id_legacy : NULL);
}
