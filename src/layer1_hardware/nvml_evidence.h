/* nvml_evidence.h: NVML's facts as check evidence, shared by the layer 1 checks. */
#pragma once

#include "engine/check.h"
#include "facts/node.h"
#include "nvml/nvml_facts.h"

/* Returns NVML's facts when nvmlInit succeeded, else NULL (not loaded, or init failed). */
const struct nvml_facts *nvml_initialised(const struct node_facts *facts);
/* Returns a label for a GPU in evidence, "GPU 3 (0000:18:00.0, GPU-...)" (malloc'd; aborts on OOM). */
char *nvml_gpu_label(const struct nvml_gpu_facts *g);

/* Returns the containers holding an NVML GPU (g a member of facts->nvml.facts->gpus) from the node-level
 * join, or NULL when the kubelet gave no answer. */
const struct gpu_pods *gpu_pods_of(const struct node_facts *facts, const struct nvml_gpu_facts *g);
/* Returns the containers holding a GPU only the kernel log knows, by the UUID it logged, or NULL when
 * the kubelet gave no answer. */
const struct gpu_pods *gpu_pods_of_uuid(const struct node_facts *facts, const char *uuid);
/* Adds to f a line per container holding the GPU labelled label (pods, from gpu_pods_of or
 * gpu_pods_of_uuid; NULL: none known): "<label> is held by ns/pod (container c): <meaning>"; "no pod
 * holds it" when the kubelet answered none; why it cannot tell when the kubelet did not answer;
 * nothing on a node without the kubelet's socket. */
void gpu_holders_evidence_as(const struct node_facts *facts, const char *label, const struct gpu_pods *pods,
                             const char *meaning, struct finding *f);
/* gpu_holders_evidence_as for an NVML GPU with its label, meaning "that job is dead". */
void gpu_holders_evidence(const struct node_facts *facts, const struct nvml_gpu_facts *g, struct finding *f);

/* Adds NVML GPU g to f's GPUs (its index, UUID and "0000:18:00.0" bus id where NVML gave them). Returns
 * the entry. */
struct finding_gpu *nvml_finding_gpu(const struct nvml_gpu_facts *g, struct finding *f);
