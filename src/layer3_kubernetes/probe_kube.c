/* probe_kube.c: asks the Kubernetes API about this node, its pods and its CSINode. */
#include "facts/node.h"
#include "facts/layer3_kubernetes.h"
#include "kube/kube_client.h"
#include "kube/net_replay.h"

/* GPU Operator DaemonSets and validator pods (reference/gpu-operator.md), by their app label. */
static const char *const operator_apps[] = {
        "nvidia-driver-daemonset",
        "nvidia-container-toolkit-daemonset",
        "nvidia-device-plugin-daemonset",
        "nvidia-device-plugin-mps-control-daemon",
        "gpu-feature-discovery",
        "nvidia-dcgm",
        "nvidia-dcgm-exporter",
        "nvidia-mig-manager",
        "nvidia-node-status-exporter",
        "nvidia-operator-validator",
        "nvidia-cuda-validator",
        "nvidia-sandbox-validator",
        "nvidia-vfio-manager",
        "nvidia-vgpu-manager-daemonset",
        "nvidia-vgpu-device-manager",
        "nvidia-cc-manager",
        "nvidia-kata-manager",
};

/* Returns true when s contains any of the words. */
static bool contains_any(const char *s, const char *const *words, size_t n) {
        for (size_t i = 0; s && i < n; i++)
                if (strstr(s, words[i])) return true;
        return false;
}

const char *gpu_operator_app(const struct kube_pod_info *p) {
        const char *app = kube_kv_get(p->labels, p->n_labels, "app");
        for (size_t i = 0; app && i < ELEMENTSOF(operator_apps); i++)
                if (streq(app, operator_apps[i])) return operator_apps[i];
        return NULL;
}

enum kube_pod_role kube_pod_role_of(const struct kube_pod_info *p) {
        const char *app = kube_kv_get(p->labels, p->n_labels, "app");
        const char *name = kube_kv_get(p->labels, p->n_labels, "app.kubernetes.io/name");
        const char *comp = kube_kv_get(p->labels, p->n_labels, "app.kubernetes.io/component");
        const char *op = gpu_operator_app(p);
        if (streq_ptr(op, "nvidia-device-plugin-daemonset") || streq_ptr(name, "nvidia-device-plugin") ||
            streq_ptr(kube_kv_get(p->labels, p->n_labels, "name"), "nvidia-device-plugin-ds") ||
            /* gpunode's own plugin: its DaemonSet, or the agent's run with --device-plugin */
            streq_ptr(kube_kv_get(p->labels, p->n_labels, "gpunode.io/device-plugin"), "true"))
                return POD_DEVICE_PLUGIN;
        if (streq_ptr(op, "gpu-feature-discovery") || streq_ptr(name, "gpu-feature-discovery")) return POD_GFD;
        if (streq_ptr(op, "nvidia-mig-manager")) return POD_MIG_MANAGER;
        if (streq_ptr(op, "nvidia-dcgm-exporter") || streq_ptr(name, "dcgm-exporter")) return POD_DCGM_EXPORTER;
        if (op) return POD_OPERATOR;
        /* Network Operator: MOFED driver pods (app=mofed-<os>), RDMA shared device plugin */
        if ((app && (startswith(app, "mofed") || streq(app, "rdma-shared-dp"))) || startswith(p->name, "mofed-") ||
            kube_kv_get(p->labels, p->n_labels, "nvidia.com/ofed-driver"))
                return POD_NETWORK_OPERATOR;
        static const char *const node_exporters[] = { "node-exporter" };
        if (contains_any(name, node_exporters, 1) || contains_any(app, node_exporters, 1)) return POD_NODE_EXPORTER;
        static const char *const otel[] = { "opentelemetry-collector", "otel-collector", "otel-agent" };
        if (contains_any(name, otel, 3) || contains_any(app, otel, 3) || contains_any(comp, otel, 3) ||
            contains_any(p->name, otel, 3))
                return POD_OTEL_AGENT;
        static const char *const logging[] = { "fluent-bit", "fluentbit", "fluentd",      "promtail",
                                               "vector",     "filebeat",  "grafana-alloy" };
        if (contains_any(name, logging, 7) || contains_any(app, logging, 7) || contains_any(p->name, logging, 7))
                return POD_LOGGING_AGENT;
        return POD_OTHER;
}

/* Records a failed request's error on the API facts; a timeout stops further requests. */
static void note_failure(struct kube_api_facts *a, int r) {
        if (r == -ETIMEDOUT) a->timed_out = true;
}

/* Finds the operator namespace among the pods (the given one wins), and gives each pod its role. */
static void classify_pods(struct kube_api_facts *a) {
        a->roles = xcalloc(a->n_pods ? a->n_pods : 1, sizeof *a->roles);
        for (size_t i = 0; i < a->n_pods; i++) {
                a->roles[i] = kube_pod_role_of(&a->pods[i]);
                if (!a->operator_namespace && gpu_operator_app(&a->pods[i]))
                        a->operator_namespace = xstrdup(a->pods[i].namespace);
        }
}

/* Loads the configuration and sets up a client for the API server, as kubectl would find it; the
 * outcome is recorded for check --snapshot. Returns 0 and *ret, or -errno with a->rc and a->error. */
static int live_client(const struct kube_probe_options *opts, struct kube_api_facts *a, struct kube_client **ret) {
        _cleanup_kube_config_ struct kube_config *cfg = NULL;
        char *err = NULL;
        int r = kube_config_load(opts->kubeconfig, a->timeout_ms, &cfg, &err);
        /* A failing exec credential plugin is its own class: the remedy is the plugin, not RBAC. */
        if (r < 0 && r != -ENOENT && r != -EPERM && err && strstr(err, "exec plugin")) r = -ENOEXEC;
        if (r < 0) {
                a->rc = r;
                a->error =
                        r == -ENOENT
                                ? xstrdup("no Kubernetes configuration: not in a pod with a service account, no "
                                          "--kubeconfig, $KUBECONFIG or ~/.kube/config")
                                : xasprintf("cannot load the Kubernetes configuration: %s", err ? err : strerror(-r));
                free(err);
                net_record_setup(a->rc, a->error, NULL, NULL);
                return r;
        }
        a->server = xstrdup(cfg->server);
        a->source = xstrdup(cfg->source ? cfg->source : "?");
        r = kube_client_new(cfg, a->timeout_ms, ret, &err);
        if (r < 0) {
                a->rc = r;
                a->error = xasprintf("cannot set up a client for %s: %s", cfg->server, err ? err : strerror(-r));
                free(err);
        }
        net_record_setup(r, a->error, a->server, a->source);
        return r;
}

/* check --snapshot: sets up an offline client answering what the node's API answered, with the
 * server and configuration source recorded there. Returns 0 and *ret, or -errno with a->rc and
 * a->error (-ENOENT: the snapshot holds no API answers). */
static int replay_client(struct kube_api_facts *a, struct kube_client **ret) {
        char *err = NULL;
        int r = net_replay_setup(&a->server, &a->source, &err);
        if (r == NET_NOT_RECORDED) r = -ENOENT;
        if (r == 0 && (r = kube_client_new_offline(a->server, a->timeout_ms, ret)) < 0)
                err = xstrdup("the snapshot names no API server");
        if (r < 0) {
                a->rc = r;
                a->error = err;
        }
        return r;
}

/* Asks the API server (or, in check --snapshot, the answers it gave on the node); fills a. */
static void probe_api(const struct kube_probe_options *opts, const char *hostname, struct kube_api_facts *a) {
        a->timeout_ms = opts->timeout_ms ? opts->timeout_ms : KUBE_DEFAULT_TIMEOUT_MS;
        a->node_name = xstrdup(opts->node_name && *opts->node_name ? opts->node_name : hostname ? hostname : "unknown");
        a->node_rc = a->pods_rc = a->csinode_rc = -ENODATA;
        if (opts->operator_namespace && *opts->operator_namespace) {
                a->operator_namespace = xstrdup(opts->operator_namespace);
                a->operator_namespace_given = true;
        }
        if (opts->no_api) {
                a->rc = -ENOENT;
                a->error = xstrdup("the API is not asked in offline analysis");
                return;
        }
        _cleanup_kube_client_ struct kube_client *c = NULL;
        if (net_replaying() ? replay_client(a, &c) < 0 : live_client(opts, a, &c) < 0) return;

        json_t *j = NULL;
        int r = kube_get_node(c, a->node_name, &j, &a->node_error);
        if (r == NET_NOT_RECORDED) {
                /* check --snapshot for another node than the one collected, or an old snapshot */
                a->rc = -ENOENT;
                a->error = xstrdup(a->node_error);
                return;
        }
        a->node_rc = r;
        if (r == 0) {
                if (kube_node_info_parse(j, &a->node) < 0) {
                        a->node_rc = -EBADMSG;
                        a->node_error = xasprintf("the API's answer for node %s is not a Node", a->node_name);
                }
                json_decref(j);
        }
        /* The API answered when it said anything at all (404 and 403 are answers too). */
        if (r < 0 && r != -ENOENT && r != -EPERM) {
                a->rc = r;
                /* curl's own words for a refused connection carry a timing; say it plainly */
                a->error = r == -ECONNREFUSED
                                   ? xasprintf("GET %s/api/v1/nodes/%s: connection refused", a->server, a->node_name)
                                   : xstrdup(a->node_error);
                note_failure(a, r);
                return;
        }

        /* Every pod on this node, in all namespaces: the operator's, the exporters', the agents'. */
        j = NULL;
        r = kube_list_pods(c, a->node_name, NULL, NULL, &j, &a->pods_error);
        if (r == -EPERM && a->operator_namespace) {
                /* no cluster-wide list: the operator's namespace is enough for layer 3 */
                free(a->pods_error);
                a->pods_error = NULL;
                r = kube_list_pods(c, a->node_name, a->operator_namespace, NULL, &j, &a->pods_error);
        }
        a->pods_rc = r;
        note_failure(a, r);
        if (r == 0) {
                if (kube_pod_list_parse(j, &a->pods, &a->n_pods) < 0) {
                        a->pods_rc = -EBADMSG;
                        a->pods_error = xasprintf("the API's pod list for node %s is not a PodList", a->node_name);
                }
                json_decref(j);
                classify_pods(a);
        }
        if (a->timed_out) return;

        /* CSI drivers the cluster expects on this node. */
        j = NULL;
        _cleanup_free_ char *path = xasprintf("/apis/storage.k8s.io/v1/csinodes/%s", a->node_name);
        char *csierr = NULL;
        r = kube_get(c, path, &j, &csierr);
        free(csierr);
        a->csinode_rc = r;
        note_failure(a, r);
        if (r == 0) {
                size_t i;
                const json_t *d;
                json_array_foreach(json_object_get(json_object_get(j, "spec"), "drivers"), i, d) {
                        const char *name = json_string_value(json_object_get(d, "name"));
                        if (!name) continue;
                        a->csi_drivers = xrealloc(a->csi_drivers, (a->n_csi_drivers + 1) * sizeof(char *));
                        a->csi_drivers[a->n_csi_drivers++] = xstrdup(name);
                }
                json_decref(j);
        }
}

struct kube_facts *probe_kube(const struct kube_probe_options *opts, const char *hostname) {
        struct kube_facts *k = xcalloc(1, sizeof *k);
        probe_kubelet(&k->kubelet);
        probe_api(opts, hostname, &k->api);
        probe_podresources(opts, &k->podres);
        return k;
}
