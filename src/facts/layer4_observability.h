/* layer4_observability.h: layer 4 facts: the DCGM exporter's and the node exporter's metrics pages as
 * fetched from this node, and the probe that fetches them. */
#pragma once

#include "basic/promtext.h"

struct kube_facts;
struct kube_probe_options;
struct kube_pod_info;

#define DCGM_EXPORTER_PORT 9400
#define NODE_EXPORTER_PORT 9100

/* One metrics endpoint as fetched. */
struct metrics_endpoint {
        char *url;      /* NULL: not attempted (see skip_reason) */
        char *found_by; /* "--dcgm-url", "pod gpu-operator/nvidia-dcgm-exporter-x", "default port" */
        char *skip_reason;
        int rc; /* http_fetch's result */
        char *error;
        long http_code;
        int parse_rc; /* promtext result when rc == 0 */
        struct promtext_error parse_error;
        struct promtext_gpu_summary summary;
};

struct metrics_facts {
        struct metrics_endpoint dcgm, node_exporter;
};

/* Fetches the DCGM and node exporter pages: from the URLs in opts, else the exporters' pods on this
 * node (from kube's pod list), else the default ports on a Kubernetes node. Never fails: each
 * endpoint records its own error. Returns the facts (free with metrics_facts_free). */
struct metrics_facts *probe_metrics(const struct kube_probe_options *opts, const struct kube_facts *kube);
void metrics_facts_free(struct metrics_facts *m);

/* Returns the DCGM/node-exporter URL for a pod ("http://10.0.0.5:9400/metrics", malloc'd), or NULL without a pod IP. */
char *metrics_url_for_pod(const struct kube_pod_info *p, int port);
