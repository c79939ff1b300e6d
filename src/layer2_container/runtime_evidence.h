/* runtime_evidence.h: helpers shared by the layer 2 checks. */
#pragma once

#include "engine/check.h"
#include "facts/node.h"

/* Returns true, having set f to skip with the reason, when the host has no container runtime at all
 * (no containerd, CRI-O or Docker config, binary or process); false otherwise, f untouched. */
bool runtime_skip_if_absent(const struct node_facts *facts, struct finding *f);
