/* runtime_evidence.h: helpers shared by the layer 2 checks. */
#pragma once

#include "engine/check.h"
#include "facts/layer2_container.h"
#include "facts/node.h"

/* Returns true, having set f to skip with the reason, when the host has no container runtime at all
 * (no containerd, CRI-O or Docker config, binary or process); false otherwise, f untouched. */
bool runtime_skip_if_absent(const struct node_facts *facts, struct finding *f);

/* Judges whether the mount holding m->path can be written (layer 2 for the runtimes' storage, layer 3
 * for the kubelet's folder; who names the writer, "containerd"). Adds evidence naming the mount, and on
 * a read-only one fails f with a remedy. Returns true when it failed f, false otherwise (f's status
 * untouched). */
bool mount_fail_if_read_only(const struct host_mount *m, const char *who, struct finding *f);
