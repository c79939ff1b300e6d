/* runtime_evidence.c: helpers shared by the layer 2 checks. */
#include "layer2_container/runtime_evidence.h"
#include "facts/layer2_container.h"

bool runtime_skip_if_absent(const struct node_facts *facts, struct finding *f) {
        const struct runtime_facts *r = facts->runtime;
        if (r && (r->containerd.present || r->crio.present || r->docker.present)) return false;
        finding_skip(f,
                     "no container runtime on this host: no containerd, CRI-O or Docker (config, binary or process)");
        return true;
}
