/* metrics_evidence.h: the metrics endpoints and agent pods as check evidence, shared by the layer 4 checks. */
#pragma once

#include "facts/layer4_observability.h"
#include "layer3_kubernetes/kube_evidence.h"

/* Adds the endpoint's URL and how it was found as evidence. Returns nothing. */
void metrics_endpoint_evidence(const struct metrics_endpoint *ep, struct finding *f);
/* Returns true, having set f to skip with the reason, when the endpoint was not fetched (NULL: the
 * probes did not run; no URL: nothing to fetch on this node); false otherwise, f untouched. */
bool metrics_endpoint_skip(const struct metrics_endpoint *ep, struct finding *f);
/* Returns the API facts when the node's pods were listed, else NULL (f is left alone). */
const struct kube_api_facts *metrics_pods_known(const struct node_facts *facts);
/* Judges the agent pods of one role on the node (a logging agent, a telemetry collector) into f:
 * fail when one is not running, warn when one restarts often; absent_warn makes absence a warning,
 * else a skip. Skips with the reason when the API or the pod list is not there. Returns nothing. */
void metrics_agent_pods_judge(const struct node_facts *facts, struct finding *f, enum kube_pod_role role,
                              const char *what, const char *examples, bool absent_warn);
