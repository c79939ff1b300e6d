/* probe_metrics.c: fetches the DCGM exporter's and the node exporter's /metrics from this node. */
#include "basic/util.h"
#include "facts/layer3_kubernetes.h"
#include "facts/layer4_observability.h"
#include "kube/http_fetch.h"
#include "kube/net_replay.h"

char *metrics_url_for_pod(const struct kube_pod_info *p, int port) {
        if (!p->pod_ip || !*p->pod_ip) return NULL;
        bool v6 = strchr(p->pod_ip, ':') != NULL;
        return xasprintf("http://%s%s%s:%d/metrics", v6 ? "[" : "", p->pod_ip, v6 ? "]" : "", port);
}

/* Returns the first pod of role on the node, or NULL. */
static const struct kube_pod_info *pod_with_role(const struct kube_api_facts *a, enum kube_pod_role role) {
        for (size_t i = 0; i < a->n_pods; i++)
                if (a->roles[i] == role) return &a->pods[i];
        return NULL;
}

/* Chooses the endpoint's URL (flag; the pod on this node at the port it declares, else port; localhost:port) and
 * fetches it. */
static void probe_endpoint(const char *flag, const char *flag_name, enum kube_pod_role role, int port, bool k8s_node,
                           const struct kube_api_facts *a, unsigned timeout_ms, struct metrics_endpoint *ep) {
        const struct kube_pod_info *pod = pod_with_role(a, role);
        if (flag && *flag) {
                ep->url = xstrdup(flag);
                ep->found_by = xstrdup(flag_name);
        } else if (pod && (ep->url = metrics_url_for_pod(pod, pod->metrics_port ? pod->metrics_port : port))) {
                ep->found_by = xasprintf("pod %s/%s%s", pod->namespace, pod->name,
                                         pod->metrics_port ? ", the port it declares" : "");
        } else if (k8s_node) {
                ep->url = xasprintf("http://localhost:%d/metrics", port);
                ep->found_by = xstrdup("default port");
        } else {
                ep->skip_reason =
                        xstrdup("not a Kubernetes node (no cluster access, no kubelet device-plugins folder)");
                return;
        }
        char *body = NULL;
        size_t len = 0;
        ep->rc = http_fetch(ep->url, timeout_ms, HTTP_FETCH_MAX_BODY, &body, &len, &ep->http_code, &ep->error);
        if (ep->rc == NET_NOT_RECORDED) {
                /* check --snapshot: the node never fetched this page; nothing to judge */
                ep->skip_reason = TAKE_PTR(ep->error);
                free(ep->url);
                ep->url = NULL;
                return;
        }
        if (ep->rc < 0) return;
        ep->parse_rc = promtext_gpu_summary_parse(body, len, &ep->summary, &ep->parse_error);
        free(body);
}

struct metrics_facts *probe_metrics(const struct kube_probe_options *opts, const struct kube_facts *kube) {
        struct metrics_facts *m = xcalloc(1, sizeof *m);
        bool k8s_node = kube->api.rc == 0 || kube->kubelet.dp_rc == 0;
        unsigned t = opts->timeout_ms ? opts->timeout_ms : KUBE_DEFAULT_TIMEOUT_MS;
        probe_endpoint(opts->dcgm_url, "--dcgm-url", POD_DCGM_EXPORTER, DCGM_EXPORTER_PORT, k8s_node, &kube->api, t,
                       &m->dcgm);
        probe_endpoint(opts->node_exporter_url, "--node-exporter-url", POD_NODE_EXPORTER, NODE_EXPORTER_PORT, k8s_node,
                       &kube->api, t, &m->node_exporter);
        return m;
}

void metrics_facts_free(struct metrics_facts *m) {
        if (!m) return;
        struct metrics_endpoint *eps[] = { &m->dcgm, &m->node_exporter };
        for (size_t i = 0; i < ELEMENTSOF(eps); i++) {
                free(eps[i]->url);
                free(eps[i]->found_by);
                free(eps[i]->skip_reason);
                free(eps[i]->error);
                promtext_gpu_summary_free(&eps[i]->summary);
        }
        free(m);
}
