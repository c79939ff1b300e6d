/* nvml_evidence.h: NVML's facts as check evidence, shared by the layer 1 checks. */
#pragma once

#include "engine/check.h"
#include "facts/node.h"
#include "nvml/nvml_facts.h"

/* Returns NVML's facts when nvmlInit succeeded, else NULL (not loaded, or init failed). */
const struct nvml_facts *nvml_initialised(const struct node_facts *facts);
/* Returns a label for a GPU in evidence, "GPU 3 (0000:18:00.0, GPU-...)" (malloc'd; aborts on OOM). */
char *nvml_gpu_label(const struct nvml_gpu_facts *g);

/* A container holding a GPU (pointers into facts->kube->podres, valid while the facts are). */
struct gpu_holder {
        const char *namespace, *pod, *container;
};

/* Returns true when device_id, as a device plugin names what it hands out, is the GPU or a part of
 * it: its UUID (uuid, or g's when uuid is NULL), a time-sliced or MPS replica "<uuid>::<n>", its
 * index ("3", or "3:1" for a MIG device under index naming; index < 0: unknown), one of g's MIG
 * devices' UUIDs, or an old-style "MIG-<gpu uuid>/<gi>/<ci>". g may be NULL. Case-insensitive. */
bool gpu_device_id_matches(const char *device_id, int index, const char *uuid, const struct nvml_gpu_facts *g);
/* Returns how many distinct containers hold the GPU (as gpu_device_id_matches, nvidia.com/
 * resources only) with them in *ret (malloc'd, NULL when none); 0 without a pod-resources answer. */
size_t gpu_holders(const struct node_facts *facts, int index, const char *uuid, const struct nvml_gpu_facts *g,
                   struct gpu_holder **ret);
/* Adds to f a line per container holding the GPU labelled label: "<label> is held by ns/pod
 * (container c): <meaning>"; "no pod holds it" when the kubelet answered none; why it cannot tell
 * when the kubelet did not answer; nothing on a node without the kubelet's socket. */
void gpu_holders_evidence_as(const struct node_facts *facts, const char *label, int index, const char *uuid,
                             const struct nvml_gpu_facts *g, const char *meaning, struct finding *f);
/* gpu_holders_evidence_as for an NVML GPU with its label, meaning "that job is dead". */
void gpu_holders_evidence(const struct node_facts *facts, const struct nvml_gpu_facts *g, struct finding *f);
