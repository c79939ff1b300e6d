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
