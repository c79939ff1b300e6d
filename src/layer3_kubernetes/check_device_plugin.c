/* check_device_plugin.c: layer 3, device-plugin: its pod, its registration with the kubelet, nvidia.com/gpu
 * allocatable. */
#include "layer3_kubernetes/kube_evidence.h"
#include "layer3_kubernetes/gfd_labels.h"
#include "nvml/nvml_facts.h"

#include <inttypes.h>

#define GPU_RESOURCE "nvidia.com/gpu"

/* Returns true when a device id (without its replica suffix) is the UUID. */
static bool id_is(const char *id, const char *uuid) {
        size_t n = kube_device_id_base_len(id);
        return strlen(uuid) == n && strncmp(id, uuid, n) == 0;
}

/* Judges device-plugin.registered (the NVIDIA device plugin is registered with the kubelet for every
 * GPU) from the facts into f; never fails: what it cannot read, it says. */
static void run_dp_registered(const struct node_facts *facts, struct finding *f) {
        const struct kubelet_facts *k = facts->kube ? &facts->kube->kubelet : NULL;
        if (!k || k->dp_rc == -ENOENT) {
                finding_skip(f,
                             "no %s folder: not a Kubernetes node (or the host's /var/lib/kubelet is not under --root)",
                             KUBELET_DEVICE_PLUGINS_DIR);
                return;
        }
        if (k->dp_rc < 0) {
                finding_skip(f, "%s", k->dp_error);
                return;
        }
        const struct nvml_facts *n = facts->nvml.facts;
        struct buf socks = { 0 };
        const char *nvidia_sock = NULL;
        for (size_t i = 0; i < k->n_plugin_sockets; i++) {
                buf_printf(&socks, "%s%s", socks.len ? ", " : "", k->plugin_sockets[i]);
                /* NVIDIA's plugin (nvidia-gpu.sock) or gpunode's (gpunode device-plugin: gpunode-nvidia-gpu.sock) */
                if ((startswith(k->plugin_sockets[i], "nvidia") ||
                     startswith(k->plugin_sockets[i], "gpunode-nvidia-")) &&
                    !nvidia_sock)
                        nvidia_sock = k->plugin_sockets[i];
        }
        finding_evidence(f, "%s: kubelet.sock %s; plugin sockets: %s", KUBELET_DEVICE_PLUGINS_DIR,
                         k->kubelet_sock ? "present" : "missing", socks.data ? socks.data : "none");
        buf_free(&socks);
        if (!k->kubelet_sock) {
                finding_fail(
                        f, "the kubelet's registration socket kubelet.sock is missing: no device plugin can register");
                finding_remedy(
                        f, "the kubelet is not running or was started without the device manager: `systemctl status "
                           "kubelet`; once it runs, restart the device plugin pod so that it registers again");
                return;
        }
        if (!nvidia_sock) {
                finding_fail(f, "no NVIDIA device plugin socket (nvidia-*.sock): the plugin is not running or did not "
                                "register");
                finding_remedy(f,
                               "restart the device plugin pod on this node (the kubelet deletes plugin sockets when it "
                               "restarts, and a plugin must then register again) and check its log for NVML errors");
                return;
        }

        /* The checkpoint's RegisteredDevices against the GPUs NVML sees. */
        if (k->checkpoint_rc == -ENOENT) {
                finding_pass(f,
                             "the NVIDIA device plugin is registered (%s); no checkpoint yet (written at the first "
                             "allocation)",
                             nvidia_sock);
                return;
        }
        if (k->checkpoint_rc < 0) {
                finding_evidence(f, "%s", k->checkpoint_error ? k->checkpoint_error : "checkpoint unreadable");
                finding_warn(f, "the NVIDIA device plugin is registered, but the kubelet's checkpoint cannot be read");
                finding_remedy(f,
                               "a corrupt %s makes the kubelet fail allocations: stop the kubelet, move the file away, "
                               "start the kubelet",
                               KUBELET_CHECKPOINT_FILE);
                return;
        }
        const struct kube_checkpoint *cp = k->checkpoint;
        const struct kube_checkpoint_resource *res = kube_checkpoint_find(cp, GPU_RESOURCE);
        size_t n_mig_ids = 0;
        for (size_t i = 0; i < cp->n_resources; i++)
                if (startswith(cp->resources[i].name, "nvidia.com/mig-")) n_mig_ids += cp->resources[i].n_devices;
        finding_evidence(f, "checkpoint (%s DeviceIDs): %zu %s device ID(s), %zu MIG device ID(s), %zu allocation(s)",
                         cp->numa_keyed ? "NUMA-keyed"
                         : cp->flat     ? "flat"
                                        : "no",
                         res ? res->n_devices : 0, GPU_RESOURCE, n_mig_ids, cp->n_entries);
        if (!n || n->init_rc != NVML_SUCCESS) {
                finding_pass(f, "the NVIDIA device plugin is registered (%s)", nvidia_sock);
                return;
        }
        unsigned missing = 0, stale = 0, whole = 0;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                if (g->uuid_rc != NVML_SUCCESS) continue;
                if (g->mig_rc == NVML_SUCCESS && g->mig_current == 1) continue; /* advertised as MIG devices */
                whole++;
                bool found = false;
                for (size_t d = 0; res && d < res->n_devices && !found; d++) found = id_is(res->devices[d], g->uuid);
                if (!found) {
                        missing++;
                        finding_evidence(f, "GPU %u (%s) is not among the registered %s devices", g->index, g->uuid,
                                         GPU_RESOURCE);
                }
        }
        for (size_t d = 0; res && d < res->n_devices; d++) {
                if (!startswith(res->devices[d], "GPU-")) continue;
                bool found = false;
                for (unsigned i = 0; i < n->n_gpus && !found; i++)
                        found = n->gpus[i].uuid_rc == NVML_SUCCESS && id_is(res->devices[d], n->gpus[i].uuid);
                for (size_t e = 0; e < d && !found; e++) /* replicas of one GPU: count it once */
                        found = kube_device_id_base_len(res->devices[e]) == kube_device_id_base_len(res->devices[d]) &&
                                strncmp(res->devices[e], res->devices[d], kube_device_id_base_len(res->devices[d])) ==
                                        0;
                if (!found) {
                        stale++;
                        finding_evidence(f, "registered device %s is not a GPU NVML sees", res->devices[d]);
                }
        }
        if (missing) {
                finding_fail(f, "%u of %u GPU(s) NVML sees are not advertised by the device plugin", missing, whole);
                finding_remedy(
                        f, "restart the device plugin pod on this node and read its log: a GPU it cannot open through "
                           "NVML, or one excluded by its config, is left out");
        } else if (stale) {
                finding_warn(f, "the kubelet holds %u device ID(s) of GPUs that are no longer here", stale);
                finding_remedy(
                        f,
                        "a GPU was replaced or its UUID changed: restart the device plugin pod so that the kubelet's "
                        "list is refreshed; pods bound to the old IDs must be recreated");
        } else {
                finding_pass(f, "the NVIDIA device plugin is registered (%s) and advertises all %u GPU(s) NVML sees",
                             nvidia_sock, whole);
        }
}

/* Returns an integer resource of the node's capacity or allocatable, or -1 when absent or odd. */
static int64_t resource(const struct kube_kv *kv, size_t n, const char *key) {
        int64_t v;
        const char *s = kube_kv_get(kv, n, key);
        return s && kube_quantity_int(s, &v) == 0 ? v : -1;
}

/* Judges device-plugin.allocatable (nvidia.com/gpu allocatable matches the GPUs NVML sees) from the
 * facts into f; never fails: what it cannot read, it says. */
static void run_dp_allocatable(const struct node_facts *facts, struct finding *f) {
        const struct kube_api_facts *a = kube_api_or_skip(facts, f, false);
        if (!a) return;
        const struct nvml_facts *n = facts->nvml.facts;
        if (!n || n->init_rc != NVML_SUCCESS) {
                finding_skip(f, "NVML did not initialise");
                return;
        }
        const struct kube_node_info *node = &a->node;
        int64_t cap = resource(node->capacity, node->n_capacity, GPU_RESOURCE);
        int64_t alloc = resource(node->allocatable, node->n_allocatable, GPU_RESOURCE);
        int64_t mig_alloc = 0;
        for (size_t i = 0; i < node->n_allocatable; i++)
                if (startswith(node->allocatable[i].key, "nvidia.com/mig-")) {
                        int64_t v;
                        if (kube_quantity_int(node->allocatable[i].value, &v) == 0) mig_alloc += v;
                        finding_evidence(f, "allocatable %s: %s", node->allocatable[i].key, node->allocatable[i].value);
                }
        unsigned whole = 0, mig = 0;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                if (g->mig_rc == NVML_SUCCESS && g->mig_current == 1)
                        mig++;
                else
                        whole++;
        }
        if (n->n_gpus < n->device_count) whole += n->device_count - n->n_gpus;
        int64_t replicas = 1;
        const char *rl = kube_node_label(a, "nvidia.com/gpu.replicas");
        if (rl && (kube_quantity_int(rl, &replicas) < 0 || replicas < 1)) replicas = 1;
        const char *strategy = kube_node_label(a, "nvidia.com/mig.strategy");
        const char *sharing = kube_node_label(a, "nvidia.com/gpu.sharing-strategy");
        finding_evidence(f,
                         "capacity %s: %s, allocatable: %s; NVML: %u GPU(s), %u in MIG mode; replicas %" PRId64
                         ", sharing %s, MIG strategy %s",
                         GPU_RESOURCE, kube_kv_get(node->capacity, node->n_capacity, GPU_RESOURCE) ?: "(none)",
                         kube_kv_get(node->allocatable, node->n_allocatable, GPU_RESOURCE) ?: "(none)", whole + mig,
                         mig, replicas, sharing ? sharing : "(no label)", strategy ? strategy : "(no label)");

        int64_t expect = (int64_t)whole * replicas;
        bool mig_single = mig > 0 && streq_ptr(strategy, "single");
        /* The MIG devices NVML lists, by GFD resource name (known: every MIG-enabled GPU listed them). */
        bool mig_known = mig > 0;
        unsigned mig_devices = 0;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                if (g->mig_rc != NVML_SUCCESS || g->mig_current != 1) continue;
                if (g->mig_max_rc != NVML_SUCCESS || g->mig_devices_rc != NVML_SUCCESS) mig_known = false;
                mig_devices += g->n_mig;
        }
        if (mig_single && mig_known) {
                /* single strategy: every MIG device is one nvidia.com/gpu (times time-slicing replicas) */
                int64_t want = (int64_t)mig_devices * replicas;
                finding_evidence(f, "NVML: %u MIG device(s) on %u MIG-enabled GPU(s)", mig_devices, mig);
                if (alloc < want) {
                        finding_fail(f,
                                     "MIG (single strategy): %s allocatable is %" PRId64
                                     " but NVML lists %u MIG device(s)%s",
                                     GPU_RESOURCE, alloc < 0 ? 0 : alloc, mig_devices,
                                     replicas > 1 ? " (times replicas)" : "");
                        finding_remedy(
                                f, "the device plugin advertises only MIG devices it can use: check mig-manager.state "
                                   "(the layout must be one profile on every GPU for the single strategy) and the "
                                   "device plugin's log");
                } else if (alloc > want) {
                        finding_warn(f,
                                     "MIG (single strategy): %s allocatable is %" PRId64
                                     ", more than the %u MIG device(s) "
                                     "NVML lists",
                                     GPU_RESOURCE, alloc, mig_devices);
                        finding_remedy(
                                f,
                                "the MIG layout changed under a running device plugin: restart its pod on this node");
                } else {
                        finding_pass(f,
                                     "%s allocatable %" PRId64
                                     " matches the %u MIG device(s) NVML lists (single strategy)",
                                     GPU_RESOURCE, alloc, mig_devices);
                }
                return;
        }
        if (mig_single) {
                /* single strategy, MIG devices not listed: at least something must be advertised */
                if (alloc <= 0) {
                        finding_fail(f, "MIG (single strategy) is enabled on %u GPU(s) but %s allocatable is %s", mig,
                                     GPU_RESOURCE, alloc < 0 ? "missing" : "0");
                        finding_remedy(
                                f, "check the MIG manager (mig-manager.state) and the device plugin's log: with no MIG "
                                   "devices created the plugin advertises nothing");
                } else {
                        finding_pass(f, "%s allocatable %" PRId64 " with MIG (single strategy) on %u GPU(s)",
                                     GPU_RESOURCE, alloc, mig);
                }
                return;
        }
        if (mig > 0 && mig_alloc == 0 && (!mig_known || mig_devices > 0)) {
                finding_fail(f, "MIG is enabled on %u GPU(s) but the node offers no nvidia.com/mig-* resource", mig);
                finding_remedy(
                        f,
                        "the device plugin's MIG strategy must be mixed (or single) for MIG devices to be advertised; "
                        "check mig-manager.state and the plugin's log");
                return;
        }
        if (mig > 0 && mig_known) {
                /* mixed strategy: nvidia.com/mig-<profile> per profile against the MIG devices NVML lists */
                unsigned short_res = 0, extra_res = 0;
                char(*names)[40] = mig_devices ? xcalloc(mig_devices, sizeof *names) : NULL;
                unsigned *counts = mig_devices ? xcalloc(mig_devices, sizeof *counts) : NULL;
                unsigned n_names = 0, unnamed = 0;
                for (unsigned i = 0; i < n->n_gpus; i++) {
                        const struct nvml_gpu_facts *g = &n->gpus[i];
                        if (g->mig_rc != NVML_SUCCESS || g->mig_current != 1) continue;
                        for (unsigned j = 0; j < g->n_mig; j++) {
                                char name[40];
                                if (gfd_mig_name(&g->mig[j], name, sizeof name) < 0 &&
                                    (g->mig[j].attributes_rc != NVML_SUCCESS || g->memory_rc != NVML_SUCCESS ||
                                     nvml_mig_name_from_attributes(&g->mig[j].attributes, g->memory_total, name,
                                                                   sizeof name) < 0)) {
                                        unnamed++;
                                        continue;
                                }
                                unsigned k = 0;
                                while (k < n_names && !streq(names[k], name)) k++;
                                if (k == n_names) snprintf(names[n_names++], sizeof names[0], "%s", name);
                                counts[k]++;
                        }
                }
                for (unsigned k = 0; k < n_names; k++) {
                        _cleanup_free_ char *key = xasprintf("nvidia.com/mig-%s", names[k]);
                        int64_t have = resource(node->allocatable, node->n_allocatable, key);
                        if (have < (int64_t)counts[k]) {
                                finding_evidence(f, "%s: allocatable %" PRId64 ", NVML lists %u MIG device(s)", key,
                                                 have < 0 ? 0 : have, counts[k]);
                                short_res++;
                        } else if (have > (int64_t)counts[k]) {
                                finding_evidence(f, "%s: allocatable %" PRId64 ", NVML lists only %u", key, have,
                                                 counts[k]);
                                extra_res++;
                        }
                }
                for (size_t i = 0; i < node->n_allocatable; i++) {
                        const char *key = node->allocatable[i].key;
                        if (!startswith(key, "nvidia.com/mig-")) continue;
                        bool found = false;
                        for (unsigned k = 0; k < n_names && !found; k++)
                                found = streq(key + strlen("nvidia.com/mig-"), names[k]);
                        int64_t v;
                        if (!found && !unnamed && kube_quantity_int(node->allocatable[i].value, &v) == 0 && v > 0) {
                                finding_evidence(
                                        f, "%s: allocatable %" PRId64 ", but NVML lists no MIG device of that profile",
                                        key, v);
                                extra_res++;
                        }
                }
                free(names);
                free(counts);
                if (short_res) {
                        finding_fail(f,
                                     "%u MIG resource(s) offer fewer devices than NVML lists: pods asking for them "
                                     "stay Pending",
                                     short_res);
                        finding_remedy(
                                f, "the device plugin must run with the mixed MIG strategy and see the current layout: "
                                   "restart its pod on this node after the MIG manager finished (mig-manager.state), "
                                   "and read its log");
                        return;
                }
                if (extra_res) {
                        finding_warn(
                                f,
                                "%u MIG resource(s) offer devices NVML does not list: the layout changed under the "
                                "device plugin",
                                extra_res);
                        finding_remedy(f, "restart the device plugin pod on this node so that it advertises the "
                                          "current MIG layout");
                        return;
                }
        }
        if (expect > 0 && (alloc < 0 || cap < 0)) {
                finding_fail(f, "%s is missing from the node's %s while NVML sees %u GPU(s): GPU pods stay Pending",
                             GPU_RESOURCE, cap < 0 ? "capacity" : "allocatable", whole);
                finding_remedy(f,
                               "the device plugin never registered with this kubelet: see device-plugin.pod and "
                               "device-plugin.registered, then `kubectl describe node %s`",
                               a->node_name);
                return;
        }
        if (alloc < expect) {
                if (cap > alloc)
                        finding_evidence(f,
                                         "capacity %" PRId64 " > allocatable %" PRId64
                                         ": the device plugin reports %" PRId64 " device(s) Unhealthy",
                                         cap, alloc, cap - alloc);
                finding_fail(f,
                             "%s allocatable is %" PRId64 " but NVML sees %u working GPU(s)%s: GPU pods stay Pending",
                             GPU_RESOURCE, alloc, whole, replicas > 1 ? " (times replicas)" : "");
                finding_remedy(
                        f,
                        "when capacity is right but allocatable low, the device plugin marked GPUs Unhealthy (an Xid "
                        "event it saw, or an NVML error): read its log (`kubectl logs` on the device plugin pod) and "
                        "restart it once the GPUs are healthy; otherwise restart the plugin and check its "
                        "registration");
                return;
        }
        if (alloc > expect && expect > 0) {
                finding_warn(f, "%s allocatable is %" PRId64 ", more than the %" PRId64 " NVML's GPUs account for",
                             GPU_RESOURCE, alloc, expect);
                finding_remedy(
                        f,
                        "time-slicing without the nvidia.com/gpu.replicas label, or stale devices: compare the device "
                        "plugin's config with GFD's labels");
                return;
        }
        if (expect == 0 && mig == 0) {
                finding_skip(f, "NVML sees no GPU to advertise");
                return;
        }
        if (mig)
                finding_pass(f, "%s allocatable %" PRId64 ", MIG devices %" PRId64 ", matching NVML", GPU_RESOURCE,
                             alloc < 0 ? 0 : alloc, mig_alloc);
        else
                finding_pass(f, "%s allocatable %" PRId64 " matches the %u GPU(s) NVML sees%s", GPU_RESOURCE, alloc,
                             whole, replicas > 1 ? " times replicas" : "");
}

const struct check_def check_device_plugin_registered = {
        .id = "device-plugin.registered",
        .action = ACTION_RESTART_POD,
        .layer = 3,
        .component = "device-plugin",
        .title = "the NVIDIA device plugin is registered with the kubelet for every GPU",
        .reads = "/var/lib/kubelet/device-plugins: kubelet.sock, nvidia-*.sock, kubelet_internal_checkpoint "
                 "(RegisteredDevices, both DeviceIDs formats) against NVML's GPU UUIDs",
        .outcomes = "pass: registered, every GPU advertised; fail: no kubelet.sock, no NVIDIA socket, or GPUs NVML "
                    "sees not "
                    "advertised; warn: stale device IDs or an unreadable checkpoint; skip: not a Kubernetes node",
        .remedy = "restart the device plugin pod on this node so that it registers again (a kubelet restart removes "
                  "plugin sockets); make sure the kubelet runs",
        .depends = { "driver.nvml-init", "driver.gpu-count", "mig-manager.state", "device-plugin.pod" },
        .rests_on = kube_rests_on_mig_manager_if_mig,
        .run = run_dp_registered,
};

const struct check_def check_device_plugin_allocatable = {
        .id = "device-plugin.allocatable",
        .layer = 3,
        .component = "device-plugin",
        .title = "nvidia.com/gpu allocatable matches the GPUs NVML sees",
        .reads = "the node's capacity and allocatable nvidia.com/gpu and nvidia.com/mig-*, labels "
                 "nvidia.com/gpu.replicas, "
                 "nvidia.com/mig.strategy; NVML's GPUs and MIG modes",
        .outcomes = "pass: equal (times time-slicing replicas; MIG devices accounted for); fail: missing or fewer "
                    "(Unhealthy "
                    "devices, plugin not registered); warn: more than NVML accounts for",
        .remedy = "compare `kubectl describe node` with nvidia-smi: a missing resource means the plugin never "
                  "registered, a low allocatable means it marked GPUs Unhealthy (its log says why)",
        .depends = { "driver.nvml-init", "driver.gpu-count", "mig-manager.state", "device-plugin.pod",
                     "device-plugin.registered" },
        .rests_on = kube_rests_on_mig_manager_if_mig,
        .run = run_dp_allocatable,
};

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
                        finding_fail(f, "the node is labelled nvidia.com/gpu.deploy.device-plugin=true but no device "
                                        "plugin pod runs on it");
                        finding_remedy(
                                f,
                                "`kubectl -n %s get ds nvidia-device-plugin-daemonset` and `kubectl describe node %s`: "
                                "taints or resource pressure keep the DaemonSet's pod off the node",
                                a->operator_namespace ? a->operator_namespace : "gpu-operator", a->node_name);
                } else {
                        finding_skip(f, "no NVIDIA device plugin pod on this node (installed outside Kubernetes, or "
                                        "not at all: "
                                        "see device-plugin.allocatable)");
                }
                return;
        }
        if (h == KUBE_POD_FAIL) {
                kube_validations_evidence(&facts->kube->kubelet, f);
                finding_fail(f, "the NVIDIA device plugin is not running: %s", first);
                finding_remedy(
                        f,
                        "`kubectl -n %s logs %s --previous`: NVML errors there point to the driver (layer 1), "
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

const struct check_def check_device_plugin_pod = {
        .id = "device-plugin.pod",
        .action = ACTION_RESTART_POD,
        .layer = 3,
        .component = "device-plugin",
        .title = "the NVIDIA device plugin pod on this node runs",
        .reads = "the device plugin pod (app=nvidia-device-plugin-daemonset or the Helm chart's labels): phase, Ready, "
                 "container states, restarts, init containers",
        .outcomes = "pass: Running and Ready; fail: CrashLoopBackOff, ImagePullBackOff, Init, or labelled for it with "
                    "no pod; "
                    "warn: frequent restarts; skip: no pod (the plugin may run outside Kubernetes)",
        .remedy = "`kubectl logs --previous` on the device plugin pod: NVML errors point to the driver (layer 1), "
                  "missing libraries or device nodes to the container toolkit (layer 2), a bad ConfigMap to the "
                  "plugin's config",
        .depends = { "kubelet.api-access", "driver.nvml-init", "mig-manager.state" },
        .rests_on = kube_rests_on_mig_manager_if_mig,
        .run = run_device_plugin_pod,
};
