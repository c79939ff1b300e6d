/* gpus.h: the report's list of GPUs and the pods holding them, from the facts. */
#pragma once

#include "engine/check.h"
#include "facts/node.h"

/* Fills r->gpus from NVML's GPUs (none when NVML did not initialise), each with the containers the
 * kubelet's pod-resources List says hold it (by UUID, index, replica and MIG UUIDs). Never fails. */
void report_add_gpus(struct report *r, const struct node_facts *facts);
