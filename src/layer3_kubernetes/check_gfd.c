/* check_gfd.c: layer 3, gfd: the nvidia.com/gpu.* labels on the node agree with what NVML says. */
#include "layer3_kubernetes/kube_evidence.h"
#include "layer3_kubernetes/gfd_labels.h"
#include "nvml/nvml_facts.h"

#include <inttypes.h>

/* --- gfd.labels --- */

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
                        finding_fail(f,
                                     "GPU feature discovery is deployed but the node has no nvidia.com/gpu.* labels");
                        finding_remedy(
                                f,
                                "check the gpu-feature-discovery pod's log and Node Feature Discovery (nfd-worker, "
                                "nfd-master): GFD writes %s, NFD turns it into labels",
                                "/etc/kubernetes/node-feature-discovery/features.d/gfd");
                } else {
                        finding_skip(
                                f,
                                "GPU feature discovery is not deployed (no nvidia.com/gpu.product label, no GFD pod)");
                }
                return;
        }
        const struct nvml_gpu_facts *g = &n->gpus[0];
        int hard = 0, soft = 0;

        /* product: sanitized name; "-SHARED" with replicas; "<model>-MIG-<profile>" with MIG single */
        _cleanup_free_ char *want_product = g->name_rc == NVML_SUCCESS ? gfd_sanitise(g->name) : NULL;
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
        bool mig_single =
                want_product && strstr(product, "-MIG-") &&
                !(plen >= strlen("-MIG-INVALID") && streq(product + plen - strlen("-MIG-INVALID"), "-MIG-INVALID"));
        _cleanup_free_ char *count = NULL, *mem = NULL;
        /* GFD's invalid-strategy labels: count and memory 0, when the single strategy's MIG layout does not fit */
        bool mig_invalid = want_product && !mig_single && strstr(product, "-MIG-INVALID");
        int invalid_expected = mig_invalid ? gfd_mig_single_invalid(n) : 0;
        if (mig_invalid && invalid_expected == 0) {
                finding_evidence(f, "nvidia.com/gpu.product=%s, but NVML's MIG devices fit the single strategy",
                                 product);
                hard++;
        }
        if (mig_invalid) {
                if (invalid_expected == 1) {
                        count = xstrdup("0");
                        mem = xstrdup("0");
                }
        } else if (mig_single) {
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
        /* gpu.mode from the PCI classes, as `gpunode labels` writes it; not judged where gpunode cannot
         * read them either */
        const char *mode = gfd_gpu_mode(facts);
        hard += compare_label(a, "nvidia.com/gpu.mode", streq(mode, "unknown") ? NULL : mode, f);
        /* gpu.clique: a label where GFD writes none (an all-zero cluster UUID: no multi-node NVLink, which
         * older GFDs labelled anyway) or another clique steers IMEX/ComputeDomain workloads wrong; its
         * absence is no mismatch (GFD before v0.15 has no clique label) */
        char clique[64];
        const char *have_clique = kube_node_label(a, "nvidia.com/gpu.clique");
        bool clique_known = gfd_clique(n, clique, sizeof clique) == 0;
        if (have_clique && !clique_known) {
                finding_evidence(
                        f,
                        "nvidia.com/gpu.clique=%s, but NVML shows no GPU in a multi-node NVLink clique (no fabric "
                        "with a cluster UUID other than all zero): GFD writes no clique label",
                        have_clique);
                hard++;
        } else if (have_clique) {
                hard += compare_label(a, "nvidia.com/gpu.clique", clique, f);
        }

        if (n->driver_version_rc == NVML_SUCCESS) {
                char parts[3][32] = { "", "", "" };
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
                finding_remedy(
                        f,
                        "workloads select nodes by these labels: restart the gpu-feature-discovery pod on this node "
                        "(`kubectl -n %s delete pod -l app=gpu-feature-discovery --field-selector spec.nodeName=%s`) "
                        "and check its log and NFD's",
                        pod ? pod->namespace : "gpu-operator", a->node_name);
        } else if (invalid_expected == 1) {
                finding_warn(f,
                             "GFD labels the GPUs %s: the MIG layout does not fit the single MIG strategy (a GPU "
                             "without MIG "
                             "mode or without MIG devices, or more than one profile), so nvidia.com/gpu has nothing to "
                             "offer",
                             product);
                finding_remedy(f,
                               "make the layout uniform (one profile on every GPU, e.g. `kubectl label node %s "
                               "nvidia.com/mig.config=all-1g.10gb --overwrite` with the MIG manager) or use the mixed "
                               "strategy; see mig-manager.state",
                               a->node_name);
        } else if (soft) {
                finding_warn(f, "%d driver/CUDA version label(s) are from another driver than the one loaded%s", soft,
                             h == KUBE_POD_FAIL ? why : ": GFD has not relabelled the node since the driver changed");
                finding_remedy(
                        f,
                        "restart the gpu-feature-discovery pod on this node (`kubectl -n %s delete pod -l "
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

const struct check_def check_gfd_labels = {
        .id = "gfd.labels",
        .action = ACTION_RESTART_POD,
        .layer = 3,
        .component = "gfd",
        .title = "GPU feature discovery labels agree with NVML",
        .reads = "node labels nvidia.com/gpu.product, .count, .memory, .family, .compute.*, .mode, .clique, "
                 "nvidia.com/cuda.driver-version.*, nvidia.com/cuda.runtime-version.*, nvidia.com/mig.capable; NVML's "
                 "name, "
                 "count, memory, versions, fabric cluster UUID and clique; the GPUs' PCI classes",
        .outcomes = "pass: consistent; fail: product, count, memory, compute capability, mode, clique or mig.capable "
                    "contradict NVML, or "
                    "GFD is deployed without labels; warn: driver/CUDA version labels from another driver; skip: GFD "
                    "not deployed",
        .remedy = "restart the gpu-feature-discovery pod on this node and check its log and Node Feature Discovery's "
                  "(nfd-worker, nfd-master)",
        .depends = { "kubelet.api-access", "driver.nvml-init", "driver.gpu-count", "mig-manager.state" },
        .rests_on = kube_rests_on_mig_manager_if_mig,
        .run = run_gfd_labels,
};
