/* nvml_evidence.h: NVML's facts as check evidence, shared by the layer 1 checks. */
#pragma once

#include "facts/node.h"
#include "nvml/nvml_probe.h"

/* Returns NVML's facts when nvmlInit succeeded, else NULL (not loaded, or init failed). */
const struct nvml_facts *nvml_initialised(const struct node_facts *facts);
/* Returns a label for a GPU in evidence, "GPU 3 (0000:18:00.0, GPU-...)" (malloc'd; aborts on OOM). */
char *nvml_gpu_label(const struct nvml_gpu_facts *g);
