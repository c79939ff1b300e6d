/* gpus.c: the report's list of GPUs and the pods holding them, from the facts. */
#include "diagnose/gpus.h"
#include "layer1_hardware/nvml_evidence.h"

void report_add_gpus(struct report *r, const struct node_facts *facts) {
        const struct nvml_facts *n = nvml_initialised(facts);
        if (!n || n->n_gpus == 0) return;
        r->gpus = xcalloc(n->n_gpus, sizeof *r->gpus);
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                struct report_gpu *o = &r->gpus[r->n_gpus++];
                o->index = g->index;
                if (g->uuid_rc == NVML_SUCCESS) o->uuid = xstrdup(g->uuid);
                if (g->pci_rc == NVML_SUCCESS) o->pci_bus_id = xstrdup(g->pci_bus_id_legacy);
                if (g->name_rc == NVML_SUCCESS) o->name = xstrdup(g->name);
                const struct gpu_pods *pods = gpu_pods_of(facts, g);
                const struct gpu_holder *h = pods ? pods->holders : NULL;
                o->n_pods = pods ? pods->n_holders : 0;
                if (o->n_pods) o->pods = xcalloc(o->n_pods, sizeof *o->pods);
                for (size_t p = 0; p < o->n_pods; p++)
                        o->pods[p] = (struct report_pod){ xstrdup(h[p].namespace), xstrdup(h[p].pod),
                                                          xstrdup(h[p].container) };
        }
}
