/* kube_evidence.h: the API's view of the node as check evidence, shared by the layer 3 and 4 checks. */
#pragma once

#include "engine/check.h"
#include "facts/node.h"
#include "facts/layer3_kubernetes.h"

/* Returns the API facts when the API answered and the node object was read, else NULL after
 * setting f to skip with the reason. need_pods: the pod list must have been read too. */
const struct kube_api_facts *kube_api_or_skip(const struct node_facts *facts, struct finding *f, bool need_pods);

/* Adds "ns/name: <state>" evidence for each pod of role; returns the worst judgement (KUBE_POD_OK
 * when none) and the number of pods in *ret_n; *ret_first (may be NULL) gets the first failing
 * pod's account (malloc'd) or NULL. */
enum kube_pod_health kube_pods_evidence(const struct kube_api_facts *a, enum kube_pod_role role, struct finding *f,
                                        size_t *ret_n, char **ret_first);

/* Returns the first pod of role on the node, or NULL. */
const struct kube_pod_info *kube_pod_find(const struct kube_api_facts *a, enum kube_pod_role role);

/* Returns the node label value, or NULL. */
const char *kube_node_label(const struct kube_api_facts *a, const char *key);

/* Adds evidence on the GPU Operator's validation files (/run/nvidia/validations). */
void kube_validations_evidence(const struct kubelet_facts *k, struct finding *f);

/* A check_def rests_on for the device plugin's and GFD's checks: they rest on every dependency, and on
 * mig-manager.state only where MIG is enabled (on a GPU now, or after its next reset): a failed MIG
 * reconfiguration makes the plugin crash-loop and GFD write <model>-MIG-INVALID, while a node without
 * MIG does not depend on the MIG manager. Returns whether the check rests on dep. */
bool kube_rests_on_mig_manager_if_mig(const struct node_facts *facts, const char *dep);
