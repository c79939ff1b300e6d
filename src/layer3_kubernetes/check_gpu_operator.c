/* check_gpu_operator.c: layer 3, gpu-operator: the GPU Operator's pods on this node and its validations. */
#include "layer3_kubernetes/kube_evidence.h"

#include <inttypes.h>
#include <strings.h>

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
                        finding_remedy(f,
                                       "operator pods wait in Init for the validation file of the layer below "
                                       "(/run/nvidia/validations): fix that layer first (driver-ready: layer 1 driver; "
                                       "toolkit-ready: layer 2 container toolkit), then `kubectl -n %s logs <pod> -c "
                                       "<init container>`",
                                       a->operator_namespace ? a->operator_namespace : "gpu-operator");
                else
                        finding_remedy(f,
                                       "`kubectl -n %s describe pod <pod>` and `kubectl -n %s logs <pod> --previous`; "
                                       "ImagePullBackOff: the registry or the image tag; CrashLoopBackOff: the "
                                       "container's log",
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

/* Returns whether gpu-operator.pods rests on dep on this node: always on the API's access; on the driver
 * and the container runtime's nvidia runtime (what the operator's validators wait for) when operator
 * pods fail and every one of them waits in Init: such a pod waits for a status file (driver-ready,
 * toolkit-ready) of the layer below, so a failure there blocks it instead of making it a second root
 * cause. A pod failing otherwise (CrashLoopBackOff, an image that cannot be pulled) is its own fault and
 * is judged, as are pods that all run (whatever the layers below say) and a node without API access (it
 * skips). A pure function of the facts; never fails. */
static bool operator_pods_rest_on(const struct node_facts *facts, const char *dep) {
        if (streq(dep, "kubelet.api-access")) return true;
        const struct kube_api_facts *a = facts->kube ? &facts->kube->api : NULL;
        if (!a || a->rc < 0) return false;
        bool waiting = false;
        for (size_t i = 0; i < a->n_pods; i++) {
                const struct kube_pod_info *p = &a->pods[i];
                if (a->roles[i] != POD_OPERATOR) continue;
                if (a->operator_namespace_given && !streq(p->namespace, a->operator_namespace)) continue;
                _cleanup_free_ char *text = NULL;
                if (kube_pod_judge(p, &text) != KUBE_POD_FAIL) continue;
                if (!(text && startswith(text, "Init:"))) return false;
                waiting = true;
        }
        return waiting;
}

const struct check_def check_gpu_operator_pods = {
        .id = "gpu-operator.pods",
        .action = ACTION_RESTART_POD,
        .layer = 3,
        .component = "gpu-operator",
        .title = "GPU Operator pods on this node run and are Ready",
        .reads = "pods on the node labelled app=<operator component> (driver, toolkit, validator, DCGM, node status "
                 "exporter, ...), "
                 "in --operator-namespace or where they are found; /run/nvidia/validations",
        .outcomes = "pass: all Running and Ready (validators Completed); fail: CrashLoopBackOff, ImagePullBackOff, "
                    "stuck in "
                    "Init, Pending; warn: frequent restarts; skip: no operator on the node",
        .remedy = "`kubectl -n gpu-operator describe pod <pod>` and `kubectl logs <pod> --previous`; a pod stuck in "
                  "Init waits for a file in /run/nvidia/validations from the layer below: fix that layer first",
        .depends = { "kubelet.api-access", "driver.module-loaded", "container-toolkit.nvidia-runtime" },
        .rests_on = operator_pods_rest_on,
        .run = run_operator_pods,
};

/* --- gpu-operator.validations --- */

/*
 * The status files the GPU Operator's validator writes in /run/nvidia/validations (gpu-operator
 * cmd/nvidia-validator/main.go): "<component>-ready" once the validation of that component passed.
 * A component is validated on this node when a GPU Operator pod has the init container
 * "<component>-validation" (the operator validator: driver, toolkit, cuda, plugin; the driver pod:
 * mofed; the sandbox validator: vfio-pci, vgpu-manager, vgpu-devices, cc-manager; operands wait in a
 * toolkit-validation or driver-validation init container for the file), or, for the driver's extra
 * components, when the driver container's .driver-ctr-ready turns them on (GDS_ENABLED: nvidia-fs,
 * GDRCOPY_ENABLED: gdrcopy, GPU_DIRECT_RDMA_ENABLED: nvidia-peermem; validated with the driver).
 */
static const struct validation {
        const char *component;
        const char *file, *alt_file; /* vgpu-manager writes host-vgpu-manager-ready for a host driver */
        const char *feature;         /* the .driver-ctr-ready key that turns it on, NULL: an init container */
        const char *what;
} validations[] = {
        { "driver", "driver-ready", NULL, NULL, "the driver (nvidia-smi from the driver root)" },
        { "toolkit", "toolkit-ready", NULL, NULL, "the container toolkit (nvidia-smi in a container)" },
        { "cuda", "cuda-ready", NULL, NULL, "CUDA (a vectorAdd pod)" },
        { "plugin", "plugin-ready", NULL, NULL, "the device plugin (allocatable GPUs, a GPU pod)" },
        { "mofed", "mofed-ready", NULL, NULL, "the MOFED driver GPUDirect RDMA needs" },
        { "nvidia-peermem", "nvidia-peermem-ready", NULL, "GPU_DIRECT_RDMA_ENABLED",
          "nvidia-peermem (GPUDirect RDMA)" },
        { "nvidia-fs", "nvidia-fs-ready", NULL, "GDS_ENABLED", "nvidia-fs (GPUDirect Storage)" },
        { "gdrcopy", "gdrcopy-ready", NULL, "GDRCOPY_ENABLED", "the GDRCopy driver (gdrdrv)" },
        { "vfio-pci", "vfio-pci-ready", NULL, NULL, "vfio-pci binding (GPU passthrough)" },
        { "vgpu-manager", "vgpu-manager-ready", "host-vgpu-manager-ready", NULL, "the vGPU manager" },
        { "vgpu-devices", "vgpu-devices-ready", NULL, NULL, "the vGPU devices" },
        { "cc-manager", "cc-manager-ready", NULL, NULL, "the confidential computing manager" },
};

enum validation_state { VAL_NONE, VAL_RUNNING, VAL_PASSED, VAL_FAILING };

/* Returns the content of a validation file, "" for an unreadable one, NULL when it is not there. */
static const char *validation_text(const struct kubelet_facts *k, const char *name) {
        for (size_t i = 0; name && i < k->n_validations; i++)
                if (streq(k->validations[i], name))
                        return k->validation_texts && k->validation_texts[i] ? k->validation_texts[i] : "";
        return NULL;
}

/* Returns whether the feature key is true in .driver-ctr-ready's "KEY: value" (YAML) lines. */
static bool driver_feature(const char *text, const char *key) {
        size_t kl = strlen(key);
        for (const char *l = text; l && *l;) {
                while (*l == ' ' || *l == '\t') l++;
                if (strncmp(l, key, kl) == 0 && (l[kl] == ':' || l[kl] == '=')) {
                        const char *v = l + kl + 1;
                        while (*v == ' ' || *v == '\t' || *v == '"' || *v == '\'') v++;
                        return strncasecmp(v, "true", 4) == 0;
                }
                l = strchr(l, '\n');
                if (l) l++;
        }
        return false;
}

/* Finds the state of <component>-validation init containers in the GPU Operator's pods: failing when one
 * exited non-zero or restarts, passed when one completed, running when one has not finished; the pod
 * and container account in *ret_where (malloc'd). Returns VAL_NONE when no pod validates it. */
static enum validation_state init_state(const struct kube_api_facts *a, const char *component, char **ret_where) {
        _cleanup_free_ char *name = xasprintf("%s-validation", component);
        enum validation_state best = VAL_NONE;
        *ret_where = NULL;
        /* the validators' own pods first: on a tie theirs is the account */
        for (size_t i = 0; i < 2 * a->n_pods; i++) {
                const struct kube_pod_info *p = &a->pods[i % a->n_pods];
                const char *app = gpu_operator_app(p);
                size_t al = app ? strlen(app) : 0;
                bool validator = al > 10 && streq(app + al - 10, "-validator");
                if (!app || validator != (i < a->n_pods)) continue;
                for (size_t j = 0; j < p->n_containers; j++) {
                        const struct kube_container *c = &p->containers[j];
                        if (!c->init || !streq(c->name, name)) continue;
                        enum validation_state s;
                        char *where;
                        if (c->state == KUBE_STATE_TERMINATED && c->exit_code == 0) {
                                s = VAL_PASSED;
                                where = xasprintf("%s Completed in %s/%s", name, p->namespace, p->name);
                        } else if ((c->state == KUBE_STATE_TERMINATED && c->exit_code != 0) || c->restarts > 0 ||
                                   (c->has_last && c->last_exit_code != 0)) {
                                s = VAL_FAILING;
                                where = xasprintf("%s in %s/%s: %s%s%" PRId64 " restart(s)%s%s", name, p->namespace,
                                                  p->name, c->reason ? c->reason : "", c->reason ? ", " : "",
                                                  c->restarts, c->last_message || c->message ? ": " : "",
                                                  c->last_message ? c->last_message
                                                  : c->message    ? c->message
                                                                  : "");
                        } else {
                                s = VAL_RUNNING;
                                where = xasprintf("%s in %s/%s has not finished", name, p->namespace, p->name);
                        }
                        /* failing beats passed beats running: one pod failing the validation is news */
                        int rank = s == VAL_FAILING ? 3 : s == VAL_PASSED ? 2 : 1;
                        int have = best == VAL_FAILING ? 3 : best == VAL_PASSED ? 2 : best == VAL_RUNNING ? 1 : 0;
                        if (rank > have) {
                                free(*ret_where);
                                *ret_where = where;
                                best = s;
                        } else {
                                free(where);
                        }
                }
        }
        return best;
}

/* Adds the first line of a file's content as evidence text to b ("driver-ready (IS_HOST_DRIVER=true, ...)"). */
static void file_evidence(struct buf *b, const char *name, const char *text) {
        buf_printf(b, "%s%s", b->len ? ", " : "", name);
        if (!text || !*text) return;
        struct buf flat = { 0 };
        for (const char *p = text; *p && flat.len < 160; p++) {
                if (*p == '\n') {
                        if (p[1]) buf_puts(&flat, ", ");
                } else if (*p != '\r') {
                        buf_append(&flat, p, 1);
                }
        }
        buf_printf(b, " (%s)", flat.data ? flat.data : "");
        buf_free(&flat);
}

static void run_operator_validations(const struct node_facts *facts, struct finding *f) {
        const struct kube_api_facts *a = kube_api_or_skip(facts, f, true);
        if (!a) return;
        const struct kubelet_facts *k = &facts->kube->kubelet;
        bool operator= false;
        for (size_t i = 0; i < a->n_pods && !operator; i++) operator= gpu_operator_app(&a->pods[i]) != NULL;
        if (k->validations_rc == 0) {
                struct buf b = { 0 };
                for (size_t i = 0; i < k->n_validations; i++)
                        file_evidence(&b, k->validations[i], k->validation_texts ? k->validation_texts[i] : NULL);
                finding_evidence(f, "%s: %s", NVIDIA_VALIDATIONS_DIR, b.data ? b.data : "empty");
                buf_free(&b);
        } else if (k->validations_rc != -ENOENT) {
                finding_evidence(f, "%s: %s", NVIDIA_VALIDATIONS_DIR, strerror(-k->validations_rc));
        }
        if (!operator) {
                finding_skip(f, "no GPU Operator pods on this node: nothing validates its components");
                return;
        }
        if (k->validations_rc < 0 && k->validations_rc != -ENOENT) {
                finding_skip(f, "cannot tell: %s cannot be read (%s)", NVIDIA_VALIDATIONS_DIR,
                             strerror(-k->validations_rc));
                return;
        }
        const char *ctr = validation_text(k, ".driver-ctr-ready");
        struct buf ok = { 0 }, lost = { 0 }, pending = { 0 }, failing = { 0 };
        const char *first_fail = NULL;
        _cleanup_free_ char *fail_where = NULL;
        size_t judged = 0;
        char *driver_where = NULL;
        enum validation_state driver = init_state(a, "driver", &driver_where);
        for (size_t i = 0; i < ELEMENTSOF(validations); i++) {
                const struct validation *v = &validations[i];
                _cleanup_free_ char *where = NULL;
                enum validation_state s;
                if (v->feature) {
                        if (!ctr || !driver_feature(ctr, v->feature)) continue;
                        /* validated with the driver, before driver-ready is written */
                        s = driver;
                        where = s == VAL_NONE ? xasprintf(".driver-ctr-ready: %s: true", v->feature)
                                              : xasprintf(".driver-ctr-ready: %s: true; %s", v->feature, driver_where);
                        if (s == VAL_NONE && validation_text(k, "driver-ready")) s = VAL_PASSED;
                        if (s == VAL_NONE) continue;
                } else {
                        s = init_state(a, v->component, &where);
                }
                bool present = validation_text(k, v->file) || validation_text(k, v->alt_file);
                if (s == VAL_NONE)
                        continue; /* not validated on this node: not judged (its file, if any, is evidence above) */
                judged++;
                if (present) {
                        finding_evidence(f, "%s: %s; %s present", v->component, where, v->file);
                        buf_printf(&ok, "%s%s", ok.len ? ", " : "", v->component);
                } else if (s == VAL_FAILING) {
                        finding_evidence(f, "%s: %s; %s missing", v->component, where, v->file);
                        buf_printf(&failing, "%s%s", failing.len ? ", " : "", v->what);
                        if (!first_fail) {
                                first_fail = v->component;
                                fail_where = xstrdup(where);
                        }
                } else if (s == VAL_PASSED) {
                        finding_evidence(f, "%s: %s, but %s is missing", v->component, where, v->file);
                        buf_printf(&lost, "%s%s", lost.len ? ", " : "", v->file);
                } else {
                        finding_evidence(f, "%s: %s; %s missing", v->component, where, v->file);
                        buf_printf(&pending, "%s%s", pending.len ? ", " : "", v->component);
                }
        }
        free(driver_where);
        const char *ns = a->operator_namespace ? a->operator_namespace : "gpu-operator";
        if (failing.len) {
                finding_fail(f, "GPU Operator validation failing: %s", failing.data);
                finding_remedy(
                        f,
                        "`kubectl -n %s logs <pod> -c %s-validation` on this node (%s) says what failed; fix that "
                        "component (the driver: layer 1; the toolkit: layer 2) and the validator writes the file",
                        ns, first_fail, fail_where);
        } else if (lost.len) {
                finding_warn(f, "validations passed, but their status files are gone: %s", lost.data);
                finding_remedy(
                        f,
                        "%s is a tmpfs the validator fills once: after it was emptied (a reboot, a cleanup) the pods "
                        "that wait for these files stay in Init at their next start; restart the validator (`kubectl "
                        "-n "
                        "%s delete pod -l app=nvidia-operator-validator --field-selector spec.nodeName=%s`) so that it "
                        "validates again",
                        NVIDIA_VALIDATIONS_DIR, ns, a->node_name);
        } else if (pending.len) {
                finding_warn(f, "GPU Operator validation not finished: %s", pending.data);
                finding_remedy(
                        f,
                        "a validation waits for the layer below it (driver, then toolkit, then CUDA and the plugin): "
                        "`kubectl -n %s get pods -o wide --field-selector spec.nodeName=%s` and the waiting init "
                        "container's log",
                        ns, a->node_name);
        } else if (judged == 0) {
                finding_skip(f,
                             "no GPU Operator validation runs on this node (no <component>-validation init container)");
        } else {
                finding_pass(f, "%zu GPU Operator validation(s) passed, status files present: %s", judged, ok.data);
        }
        buf_free(&ok);
        buf_free(&lost);
        buf_free(&pending);
        buf_free(&failing);
}

const struct check_def check_gpu_operator_validations = {
        .id = "gpu-operator.validations",
        .layer = 3,
        .component = "gpu-operator",
        .title = "the GPU Operator's validations of this node's components passed and left their status files",
        .reads = "/run/nvidia/validations (driver-ready and its driver root, toolkit-ready, cuda-ready, plugin-ready, "
                 "mofed-ready, nvidia-peermem-ready, nvidia-fs-ready, gdrcopy-ready, vfio-pci-ready, "
                 "vgpu-manager-ready, "
                 "host-vgpu-manager-ready, vgpu-devices-ready, cc-manager-ready, workload-type, .driver-ctr-ready's "
                 "features); the <component>-validation init containers of the GPU Operator's pods on the node",
        .outcomes =
                "pass: every validated component's file present; fail: a validation failing (its init container "
                "exited non-zero or restarts) without its file; warn: a validation that passed but whose file is gone, "
                "or one not finished; skip: no GPU Operator on the node, or nothing validated (components not "
                "deployed are not judged)",
        .remedy = "`kubectl -n gpu-operator logs <validator pod> -c <component>-validation`; a file lost from "
                  "/run/nvidia/validations comes back when the validator pod is restarted",
        .depends = { "kubelet.api-access", "driver.nvml-init" },
        .run = run_operator_validations,
};
