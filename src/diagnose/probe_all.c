/* probe_all.c: runs every probe into one node_facts, computes the node-level facts (the joins several
 * layers need) from the layers' facts, and frees it all. */
#include "facts/node.h"
#include "facts/layer2_container.h"
#include "facts/layer3_kubernetes.h"
#include "facts/layer4_observability.h"
#include "layer1_hardware/kmsg.h"
#include "nvml/nvml_probe.h"

#include <strings.h>

/* Returns true when s[0..n) is one or more decimal digits with value v. */
static bool decimal_is(const char *s, size_t n, unsigned v) {
        if (n == 0 || n > 9) return false;
        unsigned x = 0;
        for (size_t i = 0; i < n; i++) {
                if (s[i] < '0' || s[i] > '9') return false;
                x = x * 10 + (unsigned)(s[i] - '0');
        }
        return x == v;
}

/* Returns true when id[0..n) equals uuid (ASCII case ignored); false for an empty uuid. */
static bool uuid_is(const char *id, size_t n, const char *uuid) {
        return uuid && *uuid && strlen(uuid) == n && strncasecmp(id, uuid, n) == 0;
}

/* Returns whether device_id names the GPU (see node.h). */
bool gpu_device_id_matches(const char *device_id, int index, const char *uuid, const struct nvml_gpu_facts *g) {
        if (!device_id) return false;
        if (!uuid && g && g->uuid_rc == NVML_SUCCESS) uuid = g->uuid;
        /* "<id>::<n>": replica n of a shared GPU (time-slicing, MPS) */
        const char *sep = strstr(device_id, "::");
        size_t n = sep ? (size_t)(sep - device_id) : strlen(device_id);
        if (uuid_is(device_id, n, uuid)) return true;
        for (unsigned i = 0; g && i < g->n_mig; i++)
                if (g->mig[i].uuid_rc == NVML_SUCCESS && uuid_is(device_id, n, g->mig[i].uuid)) return true;
        /* drivers before R470 named MIG devices "MIG-GPU-<uuid>/<gi>/<ci>" */
        const char *slash = memchr(device_id, '/', n);
        if (uuid && *uuid && n > 4 && strncasecmp(device_id, "MIG-", 4) == 0 && slash &&
            uuid_is(device_id + 4, (size_t)(slash - device_id - 4), uuid))
                return true;
        if (index < 0) return false;
        /* index naming (deviceIDStrategy=index): "3", and "3:1" for MIG device 1 of GPU 3 */
        const char *colon = memchr(device_id, ':', n);
        if (colon) {
                size_t left = (size_t)(colon - device_id), right = n - left - 1;
                return decimal_is(device_id, left, (unsigned)index) && right > 0 && right <= 9 &&
                       strspn(colon + 1, "0123456789") >= right;
        }
        return decimal_is(device_id, n, (unsigned)index);
}

/* Fills ret with the distinct containers the pod-resources answer p says hold the GPU (as
 * gpu_device_id_matches, nvidia.com/ resources only; index, uuid and g as there). Never fails. */
static void gpu_pods_match(const struct podres_facts *p, int index, const char *uuid, const struct nvml_gpu_facts *g,
                           struct gpu_pods *ret) {
        ret->named = (uuid && *uuid) || (g && g->uuid_rc == NVML_SUCCESS);
        for (size_t i = 0; i < p->n_holders; i++) {
                const struct podres_holder *h = &p->holders[i];
                if (!startswith(h->resource_name, "nvidia.com/") ||
                    !gpu_device_id_matches(h->device_id, index, uuid, g))
                        continue;
                bool seen = false;
                for (size_t k = 0; k < ret->n_holders && !seen; k++)
                        seen = streq(ret->holders[k].namespace, h->namespace) && streq(ret->holders[k].pod, h->pod) &&
                               streq(ret->holders[k].container, h->container);
                if (seen) continue;
                ret->holders = xrealloc(ret->holders, (ret->n_holders + 1) * sizeof *ret->holders);
                ret->holders[ret->n_holders++] =
                        (struct gpu_holder){ xstrdup(h->namespace), xstrdup(h->pod), xstrdup(h->container) };
        }
}

/* Frees one GPU's holders. */
static void gpu_pods_done(struct gpu_pods *p) {
        for (size_t i = 0; i < p->n_holders; i++) {
                free(p->holders[i].namespace);
                free(p->holders[i].pod);
                free(p->holders[i].container);
        }
        free(p->holders);
        free(p->uuid);
}

/* Frees the join and zeroes it. */
static void gpu_pod_join_free(struct gpu_pod_join *j) {
        for (size_t i = 0; i < j->n_nvml; i++) gpu_pods_done(&j->nvml[i]);
        for (size_t i = 0; i < j->n_logged; i++) gpu_pods_done(&j->logged[i]);
        free(j->nvml);
        free(j->logged);
        free(j->error);
        *j = (struct gpu_pod_join){ 0 };
}

/* Joins the kubelet's pod-resources answer with NVML's GPUs and the kernel log's into ret. Never fails. */
static void gpu_pod_join(const struct node_facts *f, struct gpu_pod_join *ret) {
        *ret = (struct gpu_pod_join){ .rc = -ENOENT };
        if (!f->kube) return;
        const struct podres_facts *p = &f->kube->podres;
        ret->rc = p->rc;
        if (p->rc < 0) {
                ret->error = p->error ? xstrdup(p->error) : NULL;
                return;
        }
        const struct nvml_facts *n = f->nvml.facts;
        if (n && n->n_gpus) {
                ret->nvml = xcalloc(n->n_gpus, sizeof *ret->nvml);
                for (unsigned i = 0; i < n->n_gpus; i++)
                        gpu_pods_match(p, (int)n->gpus[i].index, NULL, &n->gpus[i], &ret->nvml[ret->n_nvml++]);
        }
        const struct kmsg_summary *sum = f->kmsg.scan ? kmsg_scan_summary(f->kmsg.scan) : NULL;
        for (size_t i = 0; sum && i < sum->n_gpus; i++) {
                const char *uuid = sum->gpus[i]->uuid;
                bool seen = !uuid[0];
                for (size_t k = 0; k < ret->n_logged && !seen; k++) seen = streq(ret->logged[k].uuid, uuid);
                if (seen) continue;
                ret->logged = xrealloc(ret->logged, (ret->n_logged + 1) * sizeof *ret->logged);
                struct gpu_pods *e = &ret->logged[ret->n_logged++];
                *e = (struct gpu_pods){ .uuid = xstrdup(uuid) };
                gpu_pods_match(p, -1, uuid, NULL, e);
        }
}

/* Frees the pods and zeroes them. */
static void node_pods_free(struct node_pods *p) {
        for (size_t i = 0; i < p->n_pods; i++) {
                free(p->pods[i].namespace);
                free(p->pods[i].name);
                free(p->pods[i].runtime_class);
        }
        free(p->pods);
        *p = (struct node_pods){ 0 };
}

/* Copies what the container runtime's checks need of the API's pods on this node into ret. Never fails. */
static void node_pods_join(const struct node_facts *f, struct node_pods *ret) {
        const struct kube_facts *k = f->kube;
        *ret = (struct node_pods){ .api_rc = -ENOENT };
        if (!k) return;
        const struct kube_api_facts *a = &k->api;
        ret->kubernetes = k->kubelet.dp_rc != -ENOENT || a->rc == 0;
        ret->api_rc = a->rc;
        ret->list_rc = a->node_rc < 0 ? a->node_rc : a->pods_rc < 0 ? a->pods_rc : 0;
        if (ret->api_rc < 0 || ret->list_rc < 0 || a->n_pods == 0) return;
        ret->pods = xcalloc(a->n_pods, sizeof *ret->pods);
        for (size_t i = 0; i < a->n_pods; i++) {
                const struct kube_pod_info *pod = &a->pods[i];
                ret->pods[ret->n_pods++] = (struct node_pod){
                        .namespace = pod->namespace ? xstrdup(pod->namespace) : NULL,
                        .name = pod->name ? xstrdup(pod->name) : NULL,
                        .runtime_class = pod->runtime_class ? xstrdup(pod->runtime_class) : NULL,
                        .requests_gpu = pod->requests_gpu,
                };
        }
}

void node_facts_join_free(struct node_facts *f) {
        gpu_pod_join_free(&f->gpu_pods);
        node_pods_free(&f->pods);
}

void node_facts_join(struct node_facts *f) {
        node_facts_join_free(f);
        gpu_pod_join(f, &f->gpu_pods);
        node_pods_join(f, &f->pods);
}

void probe_all(const struct probe_options *opts, struct node_facts *ret) {
        *ret = (struct node_facts){ 0 };
        ret->hostname = probe_hostname();
        dpkg_status_read(&ret->dpkg); /* read once: the fabric manager and containerd probes ask it */
        probe_pci(&ret->pci);
        probe_modules(&ret->modules);
        probe_driver(&ret->driver);
        probe_secureboot(&ret->secureboot);
        probe_kmsg(opts->kmsg_file, &ret->kmsg);
        if (opts->kmsg_label) {
                /* A replayed log reads as the node's own source (/dev/kmsg or the file named there). */
                free(ret->kmsg.source);
                ret->kmsg.source = xstrdup(opts->kmsg_label);
                /* a snapshot of the kmsg device is the log of the boot its /proc/stat names */
                if (streq(opts->kmsg_label, "/dev/kmsg")) ret->kmsg.boot_time = probe_boot_time();
                if (ret->kmsg.error) {
                        free(ret->kmsg.error);
                        ret->kmsg.error = read_error(opts->kmsg_label, ret->kmsg.rc);
                }
        }
        probe_processes(&ret->processes);
        probe_fabric_manager(&ret->dpkg, &ret->fabric_manager);
        /* NVML only when the kernel module is there: dlopen of a half-installed driver can hang
         * or abort, and without the module it can only fail. */
        if (module_loaded(&ret->modules, "nvidia") && opts->nvml_replay)
                probe_nvml_replay(opts->nvml_library, opts->nvml_facts, opts->nvml_load_rc, opts->nvml_load_error,
                                  &ret->nvml);
        else if (module_loaded(&ret->modules, "nvidia"))
                probe_nvml(opts->nvml_library, opts->nvml_timeout_ms, &ret->nvml);
        else
                ret->nvml = (struct nvml_state){
                        .load_rc = -ENODEV, .load_error = xstrdup("not loaded: the nvidia kernel module is not loaded")
                };
        probe_gpu_processes(&ret->nvml, &ret->gpu_processes);
        probe_rdma(&ret->rdma);
        probe_sriov(&ret->sriov);
        ret->runtime = probe_runtime(&ret->dpkg);
        ret->expect_gpus = opts->expect_gpus;
        if (opts->kube) {
                ret->kube = probe_kube(opts->kube, ret->hostname);
                ret->metrics = probe_metrics(opts->kube, ret->kube);
        }
        node_facts_join(ret);
}

void node_facts_free(struct node_facts *f) {
        free(f->hostname);
        pci_facts_free(&f->pci);
        module_facts_free(&f->modules);
        driver_facts_free(&f->driver);
        secureboot_facts_free(&f->secureboot);
        kmsg_facts_free(&f->kmsg);
        nvml_state_free(&f->nvml);
        gpu_process_facts_free(&f->gpu_processes);
        process_facts_free(&f->processes);
        rdma_facts_free(&f->rdma);
        sriov_facts_free(&f->sriov);
        fabric_manager_facts_free(&f->fabric_manager);
        dpkg_status_free(&f->dpkg);
        runtime_facts_free(f->runtime);
        kube_facts_free(f->kube);
        metrics_facts_free(f->metrics);
        node_facts_join_free(f);
        *f = (struct node_facts){ 0 };
}
