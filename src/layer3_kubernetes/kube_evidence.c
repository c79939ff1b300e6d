/* kube_evidence.c: the API's view of the node as check evidence, shared by the layer 3 and 4 checks. */
#include "layer3_kubernetes/kube_evidence.h"
#include "nvml/nvml_facts.h"

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
                finding_skip(f, "the pods on %s could not be listed: %s", a->node_name,
                             a->pods_error ? a->pods_error : "not asked");
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
                if (h == KUBE_POD_FAIL && ret_first && !*ret_first)
                        *ret_first = xasprintf("%s/%s: %s", p->namespace, p->name, text);
        }
        *ret_n = n;
        return worst;
}

void kube_validations_evidence(const struct kubelet_facts *k, struct finding *f) {
        if (k->validations_rc < 0) return;
        static const char *const files[] = { "driver-ready", "toolkit-ready", "cuda-ready", "plugin-ready" };
        struct buf present = { 0 }, missing = { 0 };
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                bool found = false;
                for (size_t j = 0; j < k->n_validations; j++) found |= streq(k->validations[j], files[i]);
                struct buf *b = found ? &present : &missing;
                buf_printf(b, "%s%s", b->len ? ", " : "", files[i]);
        }
        finding_evidence(f, "%s: present: %s; missing: %s", NVIDIA_VALIDATIONS_DIR,
                         present.data ? present.data : "none", missing.data ? missing.data : "none");
        buf_free(&present);
        buf_free(&missing);
}

bool kube_rests_on_mig_manager_if_mig(const struct node_facts *facts, const char *dep) {
        if (!streq(dep, "mig-manager.state")) return true;
        const struct nvml_facts *n = facts->nvml.facts;
        if (!n || n->init_rc != NVML_SUCCESS) return false;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                if (g->mig_rc == NVML_SUCCESS && (g->mig_current == 1 || g->mig_pending == 1)) return true;
        }
        return false;
}
