/* check_kubelet.c: layer 3 from the Kubernetes API: API access, node readiness, GPU and Network Operator pods, GFD labels, MIG state. */
#include "layer3_kubernetes/kube_evidence.h"
#include "layer3_kubernetes/gfd_labels.h"
#include "nvml/nvml_lib.h"
#include "nvml/nvml_probe.h"

#include <inttypes.h>

const struct kube_api_facts *kube_api_or_skip(const struct node_facts *facts, struct finding *f, bool need_pods) {
        const struct kube_api_facts *a = facts->kube ? &facts->kube->api : NULL;
        if (!a) {
                finding_skip(f, "the Kubernetes probes did not run");
                return NULL;
        }
        if (a->rc == -ENOENT) {
                finding_skip(f, "no cluster access (see kubelet.api-access)");
                return NULL;
        }
        if (a->rc < 0) {
                finding_skip(f, "the Kubernetes API did not answer (see kubelet.api-access)");
                return NULL;
        }
        if (a->node_rc < 0) {
                finding_skip(f, "the node object %s could not be read (see kubelet.api-access)", a->node_name);
                return NULL;
        }
        if (need_pods && a->pods_rc < 0) {
                finding_skip(f, "the pods on %s could not be listed: %s", a->node_name, a->pods_error ? a->pods_error : "not asked");
                return NULL;
        }
        return a;
}

const struct kube_pod_info *kube_pod_find(const struct kube_api_facts *a, enum kube_pod_role role) {
        for (size_t i = 0; i < a->n_pods; i++)
                if (a->roles[i] == role) return &a->pods[i];
        return NULL;
}

const char *kube_node_label(const struct kube_api_facts *a, const char *key) {
        return a->node_rc == 0 ? kube_kv_get(a->node.labels, a->node.n_labels, key) : NULL;
}

enum kube_pod_health kube_pods_evidence(const struct kube_api_facts *a, enum kube_pod_role role, struct finding *f,
                                        size_t *ret_n, char **ret_first) {
        enum kube_pod_health worst = KUBE_POD_OK;
        size_t n = 0;
        if (ret_first) *ret_first = NULL;
        for (size_t i = 0; i < a->n_pods; i++) {
                const struct kube_pod_info *p = &a->pods[i];
                if (a->roles[i] != role) continue;
                if (role == POD_OPERATOR && a->operator_namespace_given && !streq(p->namespace, a->operator_namespace))
                        continue;
                n++;
                _cleanup_free_ char *text = NULL;
                enum kube_pod_health h = kube_pod_judge(p, &text);
                finding_evidence(f, "pod %s/%s: %s", p->namespace, p->name, text);
                if (h > worst) worst = h;
                if (h == KUBE_POD_FAIL && ret_first && !*ret_first) *ret_first = xasprintf("%s/%s: %s", p->namespace, p->name, text);
        }
        *ret_n = n;
        return worst;
}

void kube_validations_evidence(const struct kubelet_facts *k, struct finding *f) {
        if (k->validations_rc < 0) return;
        static const char *const files[] = {"driver-ready", "toolkit-ready", "cuda-ready", "plugin-ready"};
        struct buf present = {0}, missing = {0};
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                bool found = false;
                for (size_t j = 0; j < k->n_validations; j++) found |= streq(k->validations[j], files[i]);
                struct buf *b = found ? &present : &missing;
                buf_printf(b, "%s%s", b->len ? ", " : "", files[i]);
        }
        finding_evidence(f, "%s: present: %s; missing: %s", NVIDIA_VALIDATIONS_DIR, present.data ? present.data : "none",
                         missing.data ? missing.data : "none");
        buf_free(&present);
        buf_free(&missing);
}

/* --- kubelet.api-access --- */

static void run_api_access(const struct node_facts *facts, struct finding *f) {
        const struct kube_api_facts *a = facts->kube ? &facts->kube->api : NULL;
        if (!a) {
                finding_skip(f, "the Kubernetes probes did not run");
                return;
        }
        if (a->source) finding_evidence(f, "configuration: %s; server: %s", a->source, a->server ? a->server : "?");
        if (a->rc == -ENOENT) {
                finding_skip(f, "no cluster access: %s", a->error);
                return;
        }
        if (a->rc == -ECONNREFUSED || a->rc == -EHOSTUNREACH) {
                finding_evidence(f, "%s", a->error);
                finding_skip(f, "the API server %s cannot be reached: Kubernetes checks are skipped", a->server ? a->server : "?");
                return;
        }
        if (a->rc < 0) {
                finding_evidence(f, "%s", a->error);
                if (a->timed_out) {
                        finding_warn(f, "the API server did not answer within %u ms: Kubernetes checks are skipped", a->timeout_ms);
                        finding_remedy(f, "check the API server's health and the network path from this node (`kubectl get --raw /readyz`); "
                                          "raise --timeout for a slow control plane");
                } else {
                        finding_warn(f, "the Kubernetes API refused gpunode: Kubernetes checks are skipped");
                        finding_remedy(f, "check the credentials (the service account's token, the kubeconfig's user) and that "
                                          "gpunode's ClusterRole allows get on nodes and list on pods");
                }
                return;
        }
        if (a->node_rc == -ENOENT) {
                finding_warn(f, "node %s is not registered with the API server", a->node_name);
                finding_remedy(f, "pass the node's Kubernetes name with --node (or $NODE_NAME from the downward API); if the name is "
                                  "right, the kubelet never registered: `journalctl -u kubelet`");
                return;
        }
        if (a->node_rc < 0 || a->pods_rc < 0) {
                if (a->node_error) finding_evidence(f, "%s", a->node_error);
                if (a->pods_error) finding_evidence(f, "%s", a->pods_error);
                if (a->timed_out)
                        finding_warn(f, "the API server stopped answering within %u ms: some Kubernetes checks are skipped", a->timeout_ms);
                else
                        finding_warn(f, "the API server answered, but the node or its pods could not be read");
                finding_remedy(f, "give gpunode's service account get on nodes and list on pods (a ClusterRole), and check the "
                                  "API server's health");
                return;
        }
        finding_pass(f, "the API server answered: node %s, %zu pod(s) on it", a->node_name, a->n_pods);
}

/* --- kubelet.node-ready --- */

static void run_node_ready(const struct node_facts *facts, struct finding *f) {
        const struct kube_api_facts *a = kube_api_or_skip(facts, f, false);
        if (!a) return;
        const struct kube_node_info *n = &a->node;
        if (n->kubelet_version) finding_evidence(f, "kubelet %s", n->kubelet_version);
        if (n->unschedulable) finding_evidence(f, "the node is cordoned (spec.unschedulable)");
        if (n->ready == 1) {
                finding_pass(f, "node %s is Ready%s", n->name, n->unschedulable ? " (cordoned)" : "");
                return;
        }
        finding_evidence(f, "Ready condition: %s%s%s%s", n->ready == 0 ? "False" : "Unknown", n->ready_reason ? " (" : "",
                         n->ready_reason ? n->ready_reason : "", n->ready_reason ? ")" : "");
        if (n->ready_message) finding_evidence(f, "message: %s", n->ready_message);
        if (n->ready == 0)
                finding_fail(f, "node %s is NotReady: %s", n->name, n->ready_reason ? n->ready_reason : "no reason given");
        else
                finding_fail(f, "node %s has no Ready status: the kubelet stopped posting it", n->name);
        finding_remedy(f, "look at the kubelet on the node: `systemctl status kubelet`, `journalctl -u kubelet -n 200`; a "
                          "container runtime or CNI failure shows there");
}

/* --- gpu-operator.pods, network-operator.pods --- */

static void run_operator_pods(const struct node_facts *facts, struct finding *f) {
        const struct kube_api_facts *a = kube_api_or_skip(facts, f, true);
        if (!a) return;
        size_t n;
        _cleanup_free_ char *first = NULL;
        enum kube_pod_health h = kube_pods_evidence(a, POD_OPERATOR, f, &n, &first);
        if (n == 0) {
                if (kube_node_label(a, "nvidia.com/gpu.deploy.operator-validator") && !a->operator_namespace_given)
                        finding_evidence(f, "the node carries nvidia.com/gpu.deploy.* labels");
                finding_skip(f, "no GPU Operator pods on this node%s%s", a->operator_namespace ? " in " : "",
                             a->operator_namespace ? a->operator_namespace : "");
                return;
        }
        kube_validations_evidence(&facts->kube->kubelet, f);
        if (h == KUBE_POD_FAIL) {
                finding_fail(f, "GPU Operator pod not running: %s", first);
                if (strstr(first, "Init:"))
                        finding_remedy(f, "operator pods wait in Init for the validation file of the layer below "
                                          "(/run/nvidia/validations): fix that layer first (driver-ready: layer 1 driver; "
                                          "toolkit-ready: layer 2 container toolkit), then `kubectl -n %s logs <pod> -c <init container>`",
                                       a->operator_namespace ? a->operator_namespace : "gpu-operator");
                else
                        finding_remedy(f, "`kubectl -n %s describe pod <pod>` and `kubectl -n %s logs <pod> --previous`; "
                                          "ImagePullBackOff: the registry or the image tag; CrashLoopBackOff: the container's log",
                                       a->operator_namespace ? a->operator_namespace : "gpu-operator",
                                       a->operator_namespace ? a->operator_namespace : "gpu-operator");
        } else if (h == KUBE_POD_WARN) {
                finding_warn(f, "GPU Operator pods run but restart often (%d or more restarts)", KUBE_RESTARTS_WARN);
                finding_remedy(f, "`kubectl -n %s logs <pod> --previous` shows why the last run ended",
                               a->operator_namespace ? a->operator_namespace : "gpu-operator");
        } else {
                finding_pass(f, "%zu GPU Operator pod(s) in %s Running and Ready (or Completed)", n,
                             a->operator_namespace ? a->operator_namespace : "?");
        }
}

static void run_network_operator_pods(const struct node_facts *facts, struct finding *f) {
        const struct kube_api_facts *a = kube_api_or_skip(facts, f, true);
        if (!a) return;
        size_t n;
        _cleanup_free_ char *first = NULL;
        enum kube_pod_health h = kube_pods_evidence(a, POD_NETWORK_OPERATOR, f, &n, &first);
        if (n == 0) {
                finding_skip(f, "no Network Operator pods (MOFED, RDMA shared device plugin) on this node");
        } else if (h == KUBE_POD_FAIL) {
                finding_fail(f, "Network Operator pod not running: %s", first);
                finding_remedy(f, "`kubectl describe pod` and `kubectl logs --previous` on it; a MOFED driver pod that fails "
                                  "usually cannot build or load mlx5 for this kernel (see the rdma checks of layer 1)");
        } else if (h == KUBE_POD_WARN) {
                finding_warn(f, "Network Operator pods run but restart often");
                finding_remedy(f, "`kubectl logs --previous` on the restarting pod");
        } else {
                finding_pass(f, "%zu Network Operator pod(s) Running and Ready", n);
        }
}

/* --- device-plugin.pod --- */

static void run_device_plugin_pod(const struct node_facts *facts, struct finding *f) {
        const struct kube_api_facts *a = kube_api_or_skip(facts, f, true);
        if (!a) return;
        size_t n;
        _cleanup_free_ char *first = NULL;
        enum kube_pod_health h = kube_pods_evidence(a, POD_DEVICE_PLUGIN, f, &n, &first);
        const struct kube_pod_info *p = kube_pod_find(a, POD_DEVICE_PLUGIN);
        if (n == 0) {
                if (streq_ptr(kube_node_label(a, "nvidia.com/gpu.deploy.device-plugin"), "true")) {
                        finding_fail(f, "the node is labelled nvidia.com/gpu.deploy.device-plugin=true but no device plugin pod runs on it");
                        finding_remedy(f, "`kubectl -n %s get ds nvidia-device-plugin-daemonset` and `kubectl describe node %s`: "
                                          "taints or resource pressure keep the DaemonSet's pod off the node",
                                       a->operator_namespace ? a->operator_namespace : "gpu-operator", a->node_name);
                } else {
                        finding_skip(f, "no NVIDIA device plugin pod on this node (installed outside Kubernetes, or not at all: "
                                        "see device-plugin.allocatable)");
                }
                return;
        }
        if (h == KUBE_POD_FAIL) {
                kube_validations_evidence(&facts->kube->kubelet, f);
                finding_fail(f, "the NVIDIA device plugin is not running: %s", first);
                finding_remedy(f, "`kubectl -n %s logs %s --previous`: NVML errors there point to the driver (layer 1), "
                                  "\"could not load NVML\" or a missing /dev/nvidia* to the container toolkit (layer 2), a bad "
                                  "ConfigMap (time-slicing, MIG strategy) to the plugin's config",
                               p->namespace, p->name);
        } else if (h == KUBE_POD_WARN) {
                finding_warn(f, "the NVIDIA device plugin restarts often");
                finding_remedy(f, "`kubectl -n %s logs %s --previous` shows why it stopped", p->namespace, p->name);
        } else {
                finding_pass(f, "device plugin pod %s/%s Running and Ready", p->namespace, p->name);
        }
}

/* --- gfd.labels --- */

/* Returns the GFD product label for an NVML name: characters outside [A-Za-z0-9-_. ] dropped,
 * whitespace runs as one '-' (malloc'd). */
static char *gfd_sanitize(const char *name) {
        struct buf b = {0};
        bool space = false;
        for (const char *p = name; *p; p++) {
                char c = *p;
                if (c == ' ' || c == '\t') {
                        space = b.len > 0;
                        continue;
                }
                if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.'))
                        continue;
                if (space) buf_puts(&b, "-");
                space = false;
                buf_append(&b, &c, 1);
        }
        return b.data ? b.data : xstrdup("");
}

/* Compares one label with the value NVML implies; adds evidence for a mismatch. Returns 1 on a
 * mismatch, 0 when equal or absent. */
static int compare_label(const struct kube_api_facts *a, const char *key, const char *want, struct finding *f) {
        const char *have = kube_node_label(a, key);
        if (!have || !want || streq(have, want)) return 0;
        finding_evidence(f, "%s=%s, but NVML says %s", key, have, want);
        return 1;
}

static void run_gfd_labels(const struct node_facts *facts, struct finding *f) {
        const struct kube_api_facts *a = kube_api_or_skip(facts, f, false);
        if (!a) return;
        const struct nvml_facts *n = facts->nvml.facts;
        if (!n || n->init_rc != NVML_SUCCESS || n->n_gpus == 0) {
                finding_skip(f, "NVML did not report GPUs to compare the labels with");
                return;
        }
        const struct kube_pod_info *pod = kube_pod_find(a, POD_GFD);
        const char *product = kube_node_label(a, "nvidia.com/gpu.product");
        if (!product) {
                if (pod || streq_ptr(kube_node_label(a, "nvidia.com/gpu.deploy.gpu-feature-discovery"), "true")) {
                        size_t np;
                        kube_pods_evidence(a, POD_GFD, f, &np, NULL);
                        finding_fail(f, "GPU feature discovery is deployed but the node has no nvidia.com/gpu.* labels");
                        finding_remedy(f, "check the gpu-feature-discovery pod's log and Node Feature Discovery (nfd-worker, "
                                          "nfd-master): GFD writes %s, NFD turns it into labels",
                                       "/etc/kubernetes/node-feature-discovery/features.d/gfd");
                } else {
                        finding_skip(f, "GPU feature discovery is not deployed (no nvidia.com/gpu.product label, no GFD pod)");
                }
                return;
        }
        const struct nvml_gpu_facts *g = &n->gpus[0];
        int hard = 0, soft = 0;

        /* product: sanitized name; "-SHARED" with replicas; "<model>-MIG-<profile>" with MIG single */
        _cleanup_free_ char *want_product = g->name_rc == NVML_SUCCESS ? gfd_sanitize(g->name) : NULL;
        if (want_product) {
                _cleanup_free_ char *shared = xasprintf("%s-SHARED", want_product);
                _cleanup_free_ char *mig = xasprintf("%s-MIG-", want_product);
                if (!streq(product, want_product) && !streq(product, shared) && !startswith(product, mig)) {
                        finding_evidence(f, "nvidia.com/gpu.product=%s, but NVML says %s", product, want_product);
                        hard++;
                }
        }
        /* MIG single strategy (product <model>-MIG-<profile>): count and memory are the MIG devices' */
        size_t plen = strlen(product);
        bool mig_single = want_product && strstr(product, "-MIG-") &&
                          !(plen >= strlen("-MIG-INVALID") && streq(product + plen - strlen("-MIG-INVALID"), "-MIG-INVALID"));
        _cleanup_free_ char *count = NULL, *mem = NULL;
        if (mig_single) {
                unsigned migs = 0;
                bool known = true;
                const struct nvml_mig_facts *first = NULL;
                for (unsigned i = 0; i < n->n_gpus; i++) {
                        const struct nvml_gpu_facts *gi = &n->gpus[i];
                        if (gi->mig_rc != NVML_SUCCESS || gi->mig_current != 1) continue;
                        if (gi->mig_max_rc != NVML_SUCCESS || gi->mig_devices_rc != NVML_SUCCESS) known = false;
                        migs += gi->n_mig;
                        if (!first && gi->n_mig > 0) first = &gi->mig[0];
                }
                if (known) count = xasprintf("%u", migs);
                if (known && first && first->attributes_rc == NVML_SUCCESS)
                        mem = xasprintf("%" PRIu64, first->attributes.memory_mb);
        } else {
                count = xasprintf("%u", n->device_count);
                mem = g->memory_rc == NVML_SUCCESS ? xasprintf("%" PRIu64, g->memory_total >> 20) : NULL;
        }
        hard += compare_label(a, "nvidia.com/gpu.count", count, f);
        hard += compare_label(a, "nvidia.com/gpu.memory", mem, f);
        if (g->cc_rc == NVML_SUCCESS) {
                _cleanup_free_ char *maj = xasprintf("%d", g->cc_major), *min = xasprintf("%d", g->cc_minor);
                hard += compare_label(a, "nvidia.com/gpu.compute.major", maj, f);
                hard += compare_label(a, "nvidia.com/gpu.compute.minor", min, f);
                hard += compare_label(a, "nvidia.com/gpu.family", gfd_arch_family(g->cc_major, g->cc_minor), f);
        }
        bool mig_capable = false;
        for (unsigned i = 0; i < n->n_gpus; i++) mig_capable |= n->gpus[i].mig_rc == NVML_SUCCESS;
        hard += compare_label(a, "nvidia.com/mig.capable", mig_capable ? "true" : "false", f);

        if (n->driver_version_rc == NVML_SUCCESS) {
                char parts[3][32] = {"", "", ""};
                sscanf(n->driver_version, "%31[^.].%31[^.].%31s", parts[0], parts[1], parts[2]);
                soft += compare_label(a, "nvidia.com/cuda.driver-version.full", n->driver_version, f);
                soft += compare_label(a, "nvidia.com/cuda.driver-version.major", parts[0], f);
                soft += compare_label(a, "nvidia.com/cuda.driver-version.minor", parts[1], f);
                soft += compare_label(a, "nvidia.com/cuda.driver-version.revision", parts[2], f);
                soft += compare_label(a, "nvidia.com/cuda.driver.major", parts[0], f);
                soft += compare_label(a, "nvidia.com/cuda.driver.minor", parts[1], f);
                soft += compare_label(a, "nvidia.com/cuda.driver.rev", parts[2], f);
        }
        if (n->cuda_driver_version.rc == NVML_SUCCESS) {
                unsigned v = (unsigned)n->cuda_driver_version.value;
                _cleanup_free_ char *full = xasprintf("%u.%u", v / 1000, (v % 1000) / 10);
                _cleanup_free_ char *maj = xasprintf("%u", v / 1000), *min = xasprintf("%u", (v % 1000) / 10);
                soft += compare_label(a, "nvidia.com/cuda.runtime-version.full", full, f);
                soft += compare_label(a, "nvidia.com/cuda.runtime-version.major", maj, f);
                soft += compare_label(a, "nvidia.com/cuda.runtime-version.minor", min, f);
                soft += compare_label(a, "nvidia.com/cuda.runtime.major", maj, f);
                soft += compare_label(a, "nvidia.com/cuda.runtime.minor", min, f);
        }
        const char *ts = kube_node_label(a, "nvidia.com/gfd.timestamp");
        if (ts) finding_evidence(f, "nvidia.com/gfd.timestamp=%s", ts);
        size_t np = 0;
        enum kube_pod_health h = pod ? kube_pods_evidence(a, POD_GFD, f, &np, NULL) : KUBE_POD_OK;
        const char *why = h == KUBE_POD_FAIL ? ": the GFD pod is not running, so nothing refreshes them"
                                             : ": GFD has not relabelled the node since";
        if (hard) {
                finding_fail(f, "%d GPU feature label(s) contradict the GPUs NVML sees%s", hard + soft,
                             h == KUBE_POD_FAIL ? why : "");
                finding_remedy(f, "workloads select nodes by these labels: restart the gpu-feature-discovery pod on this node "
                                  "(`kubectl -n %s delete pod -l app=gpu-feature-discovery --field-selector spec.nodeName=%s`) "
                                  "and check its log and NFD's",
                               pod ? pod->namespace : "gpu-operator", a->node_name);
        } else if (soft) {
                finding_warn(f, "%d driver/CUDA version label(s) are from another driver than the one loaded%s", soft,
                             h == KUBE_POD_FAIL ? why : ": GFD has not relabelled the node since the driver changed");
                finding_remedy(f, "restart the gpu-feature-discovery pod on this node (`kubectl -n %s delete pod -l "
                                  "app=gpu-feature-discovery --field-selector spec.nodeName=%s`); if it keeps the old values, "
                                  "remove the stale NFD feature file or NodeFeature object",
                               pod ? pod->namespace : "gpu-operator", a->node_name);
        } else if (h == KUBE_POD_FAIL) {
                finding_warn(f, "the labels match NVML, but the GFD pod is not running: they will not follow changes");
                finding_remedy(f, "`kubectl -n %s logs %s --previous`", pod->namespace, pod->name);
        } else {
                finding_pass(f, "GFD labels match NVML: %s, %u GPU(s), driver %s", product, n->device_count,
                             n->driver_version_rc == NVML_SUCCESS ? n->driver_version : "?");
        }
}

/* --- mig-manager.state --- */

/* Writes a MIG device's GFD resource name into buf: the exact profile, else one approximated from its
 * attributes (the profile lookup needs privileges). Returns false when neither is known. */
static bool mig_device_name(const struct nvml_gpu_facts *g, const struct nvml_mig_facts *m, char *buf, size_t size) {
        if (gfd_mig_name(m, buf, size) == 0) return true;
        return m->attributes_rc == NVML_SUCCESS && g->memory_rc == NVML_SUCCESS &&
               nvml_mig_name_from_attributes(&m->attributes, g->memory_total, buf, size) == 0;
}

/* Adds evidence "GPU i: n MIG device(s): 3g.40gb, 1g.10gb x2" for a MIG-enabled GPU. Returns the number
 * of its MIG devices whose name is not `only` (every device counts when only is NULL or nothing is known),
 * or -1 when the MIG devices could not be listed. */
static int mig_devices_evidence(const struct nvml_gpu_facts *g, const char *only, struct finding *f) {
        if (g->mig_max_rc != NVML_SUCCESS || g->mig_devices_rc != NVML_SUCCESS) {
                int rc = g->mig_max_rc != NVML_SUCCESS ? g->mig_max_rc : g->mig_devices_rc;
                finding_evidence(f, "GPU %u: MIG devices could not be listed: %s", g->index, nvml_return_name(rc));
                return -1;
        }
        struct buf b = {0};
        int other = 0;
        bool done[NVML_MAX_MIG_DEVICES] = {false};
        for (unsigned i = 0; i < g->n_mig; i++) {
                if (done[i]) continue;
                char name[40];
                if (!mig_device_name(g, &g->mig[i], name, sizeof name)) snprintf(name, sizeof name, "unknown profile");
                unsigned n = 0;
                for (unsigned j = i; j < g->n_mig; j++) {
                        char other_name[40];
                        if (!mig_device_name(g, &g->mig[j], other_name, sizeof other_name))
                                snprintf(other_name, sizeof other_name, "unknown profile");
                        if (streq(name, other_name)) {
                                done[j] = true;
                                n++;
                        }
                }
                if (only && !streq(name, only)) other += (int)n;
                buf_printf(&b, "%s%s", b.len ? ", " : "", name);
                if (n > 1) buf_printf(&b, " x%u", n);
        }
        finding_evidence(f, "GPU %u: %u MIG device(s)%s%s", g->index, g->n_mig, b.len ? ": " : "", b.data ? b.data : "");
        buf_free(&b);
        return other;
}

static void run_mig_state(const struct node_facts *facts, struct finding *f) {
        const struct nvml_facts *n = facts->nvml.facts;
        if (!n || n->init_rc != NVML_SUCCESS) {
                finding_skip(f, "NVML did not initialise");
                return;
        }
        unsigned capable = 0, enabled = 0, pending = 0;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                if (g->mig_rc != NVML_SUCCESS) continue;
                capable++;
                if (g->mig_current == 1) enabled++;
                if (g->mig_pending != g->mig_current) {
                        pending++;
                        finding_evidence(f, "GPU %u: MIG mode %s now, %s after the next GPU reset", g->index,
                                         g->mig_current ? "enabled" : "disabled", g->mig_pending ? "enabled" : "disabled");
                }
        }
        if (capable == 0) {
                finding_skip(f, "no MIG-capable GPU");
                return;
        }
        const struct kube_api_facts *a = kube_api_or_skip(facts, f, false);
        if (!a) return;
        const char *config = kube_node_label(a, "nvidia.com/mig.config");
        const char *state = kube_node_label(a, "nvidia.com/mig.config.state");
        finding_evidence(f, "NVML: MIG enabled on %u of %u capable GPU(s); nvidia.com/mig.config=%s, nvidia.com/mig.config.state=%s",
                         enabled, capable, config ? config : "(none)", state ? state : "(none)");
        size_t np = 0;
        enum kube_pod_health h = kube_pods_evidence(a, POD_MIG_MANAGER, f, &np, NULL);
        if (!config) {
                finding_skip(f, "the MIG manager is not in use (no nvidia.com/mig.config label)%s",
                             enabled ? "; MIG is configured outside Kubernetes" : "");
                return;
        }
        const char *remedy_logs = "`kubectl -n gpu-operator logs -l app=nvidia-mig-manager` on this node; MIG mode changes need "
                                  "idle GPUs (no GPU pods, no nvidia-persistenced/DCGM holding them) and sometimes a reboot";
        /* MIG devices against the config: "all-<profile>" (mig-parted's names, '+' as '.', e.g. all-1g.10gb.me)
         * wants that profile only on every GPU; all-enabled wants MIG mode only; other layouts (all-balanced,
         * custom) at least one MIG device per MIG-enabled GPU. */
        const char *want = startswith(config, "all-") && strchr(config + 4, 'g') && strstr(config + 4, "gb") ? config + 4 : NULL;
        unsigned wrong = 0, empty = 0, total_mig = 0;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                if (g->mig_rc != NVML_SUCCESS || g->mig_current != 1) continue;
                int other = mig_devices_evidence(g, want, f);
                if (other < 0) continue;
                total_mig += g->n_mig;
                if (other > 0) wrong++;
                if (g->n_mig == 0) empty++;
        }
        bool devices_checked = !streq(config, "all-disabled") && !streq(config, "all-enabled") && enabled > 0 &&
                               (!state || streq(state, "success"));
        if (streq_ptr(state, "failed")) {
                finding_fail(f, "the MIG manager failed to apply %s", config);
                finding_remedy(f, "%s", remedy_logs);
        } else if (state && (streq(state, "pending") || streq(state, "rebooting"))) {
                finding_warn(f, "MIG configuration %s is still %s", config, state);
                finding_remedy(f, "%s", remedy_logs);
        } else if (streq(config, "all-disabled") && enabled > 0) {
                finding_fail(f, "mig.config is all-disabled but MIG is enabled on %u GPU(s)", enabled);
                finding_remedy(f, "%s", remedy_logs);
        } else if (!streq(config, "all-disabled") && enabled == 0) {
                finding_fail(f, "mig.config is %s but no GPU has MIG enabled", config);
                finding_remedy(f, "%s", remedy_logs);
        } else if (devices_checked && want && wrong) {
                finding_fail(f, "mig.config is %s but %u GPU(s) have MIG devices of another profile", config, wrong);
                finding_remedy(f, "the MIG manager reported success for a layout NVML does not show: relabel the node with "
                                  "the config again (`kubectl label node %s nvidia.com/mig.config=%s --overwrite`) and read "
                                  "%s", a->node_name, config, remedy_logs);
        } else if (devices_checked && empty) {
                finding_fail(f, "mig.config is %s but %u MIG-enabled GPU(s) have no MIG devices: nothing to advertise", config,
                             empty);
                finding_remedy(f, "the GPU instances were destroyed after the MIG manager applied %s (a reset, or "
                                  "`nvidia-smi mig -dci/-dgi`): relabel the node to apply it again and read %s", config,
                               remedy_logs);
        } else if (pending) {
                finding_warn(f, "MIG mode changes wait for a GPU reset on %u GPU(s)", pending);
                finding_remedy(f, "drain the GPUs and reset them (`nvidia-smi -r`), or reboot the node");
        } else if (h == KUBE_POD_FAIL) {
                finding_warn(f, "MIG state matches %s, but the MIG manager pod is not running", config);
                finding_remedy(f, "%s", remedy_logs);
        } else {
                if (enabled)
                        finding_pass(f, "MIG configuration %s applied (%s): MIG enabled on %u of %u capable GPU(s), %u MIG device(s)",
                                     config, state ? state : "no state label", enabled, capable, total_mig);
                else
                        finding_pass(f, "MIG configuration %s applied (%s): MIG enabled on %u of %u capable GPU(s)", config,
                                     state ? state : "no state label", enabled, capable);
        }
}

const struct check_def check_kubelet_api_access = {
        .id = "kubelet.api-access", .layer = 3, .component = "kubelet",
        .title = "the Kubernetes API answers and knows this node",
        .reads = "kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config) or the pod's service account; GET /api/v1/nodes/<node>, "
                 "GET /api/v1/pods?fieldSelector=spec.nodeName=<node>, each bounded by --timeout",
        .outcomes = "pass: node and pods read; skip: no configuration or the API server cannot be reached (every API check "
                    "skips); warn: the API timed out, refused the credentials, or does not know the node",
        .remedy = "give gpunode credentials (the pod's service account, or --kubeconfig) allowed to get nodes and list pods and csinodes; check the API server's health (`kubectl get --raw /readyz`); raise --timeout for a slow control plane",
        .run = run_api_access,
};

const struct check_def check_kubelet_node_ready = {
        .id = "kubelet.node-ready", .layer = 3, .component = "kubelet",
        .title = "the node is Ready",
        .reads = "the node's Ready condition, spec.unschedulable, the kubelet version",
        .outcomes = "pass: Ready; fail: NotReady or Unknown (the kubelet stopped reporting)",
        .remedy = "`systemctl status kubelet` and `journalctl -u kubelet -n 200` on the node; a container runtime or CNI failure shows there",
        .depends = {"kubelet.api-access"},
        .run = run_node_ready,
};

const struct check_def check_gpu_operator_pods = {
        .id = "gpu-operator.pods", .layer = 3, .component = "gpu-operator",
        .title = "GPU Operator pods on this node run and are Ready",
        .reads = "pods on the node labelled app=<operator component> (driver, toolkit, validator, DCGM, node status exporter, ...), "
                 "in --operator-namespace or where they are found; /run/nvidia/validations",
        .outcomes = "pass: all Running and Ready (validators Completed); fail: CrashLoopBackOff, ImagePullBackOff, stuck in "
                    "Init, Pending; warn: frequent restarts; skip: no operator on the node",
        .remedy = "`kubectl -n gpu-operator describe pod <pod>` and `kubectl logs <pod> --previous`; a pod stuck in Init waits for a file in /run/nvidia/validations from the layer below: fix that layer first",
        .depends = {"kubelet.api-access"},
        .run = run_operator_pods,
};

const struct check_def check_network_operator_pods = {
        .id = "network-operator.pods", .layer = 3, .component = "network-operator",
        .title = "Network Operator pods on this node run and are Ready",
        .reads = "pods on the node: MOFED driver (mofed-*), RDMA shared device plugin",
        .outcomes = "pass: Running and Ready; fail: not running; warn: frequent restarts; skip: not installed",
        .remedy = "`kubectl describe pod` and `kubectl logs --previous` on the failing pod; a MOFED pod that fails usually cannot build or load mlx5 for this kernel",
        .depends = {"kubelet.api-access"},
        .run = run_network_operator_pods,
};

const struct check_def check_device_plugin_pod = {
        .id = "device-plugin.pod", .layer = 3, .component = "device-plugin",
        .title = "the NVIDIA device plugin pod on this node runs",
        .reads = "the device plugin pod (app=nvidia-device-plugin-daemonset or the Helm chart's labels): phase, Ready, "
                 "container states, restarts, init containers",
        .outcomes = "pass: Running and Ready; fail: CrashLoopBackOff, ImagePullBackOff, Init, or labelled for it with no pod; "
                    "warn: frequent restarts; skip: no pod (the plugin may run outside Kubernetes)",
        .remedy = "`kubectl logs --previous` on the device plugin pod: NVML errors point to the driver (layer 1), missing libraries or device nodes to the container toolkit (layer 2), a bad ConfigMap to the plugin's config",
        .depends = {"kubelet.api-access", "driver.nvml-init"},
        .run = run_device_plugin_pod,
};

const struct check_def check_gfd_labels = {
        .id = "gfd.labels", .layer = 3, .component = "gfd",
        .title = "GPU feature discovery labels agree with NVML",
        .reads = "node labels nvidia.com/gpu.product, .count, .memory, .family, .compute.*, nvidia.com/cuda.driver-version.*, "
                 "nvidia.com/cuda.runtime-version.*, nvidia.com/mig.capable; NVML's name, count, memory, versions",
        .outcomes = "pass: consistent; fail: product, count, memory, compute capability or mig.capable contradict NVML, or "
                    "GFD is deployed without labels; warn: driver/CUDA version labels from another driver; skip: GFD not deployed",
        .remedy = "restart the gpu-feature-discovery pod on this node and check its log and Node Feature Discovery's (nfd-worker, nfd-master)",
        .depends = {"kubelet.api-access", "driver.nvml-init", "driver.gpu-count"},
        .run = run_gfd_labels,
};

const struct check_def check_mig_manager_state = {
        .id = "mig-manager.state", .layer = 3, .component = "mig-manager",
        .title = "MIG mode matches the MIG manager's configuration",
        .reads = "NVML's current and pending MIG mode and MIG devices (profiles) per GPU; labels nvidia.com/mig.config and "
                 "nvidia.com/mig.config.state; the mig-manager pod",
        .outcomes = "pass: applied; fail: state failed, or mode or MIG devices contradict the config (all-<profile> with other "
                    "profiles, MIG-enabled GPUs without MIG devices); warn: pending, or a reset is needed; "
                    "skip: no MIG-capable GPU, or the MIG manager is not used",
        .remedy = "read the nvidia-mig-manager pod's log; MIG changes need idle GPUs (no GPU pods, no DCGM or persistenced holding them) and sometimes a reboot",
        .depends = {"kubelet.api-access", "driver.nvml-init"},
        .run = run_mig_state,
};
