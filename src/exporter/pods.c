/* pods.c: pod attribution: which container holds which GPU or GPU instance, from the kubelet's pod-resources List. */
#include "exporter/exporter.h"

#include "kube/podresources.h"

/* Frees the holders of h. Returns nothing. */
static void holders_clear(struct exp_holders *h) {
        for (unsigned i = 0; i < h->n; i++) free(h->v[i].text);
        free(h->v);
        h->v = NULL;
        h->n = 0;
}

void exp_clear_holders(struct exp_sample *s) {
        for (unsigned i = 0; i < s->n_gpus; i++) {
                struct exp_gpu *g = &s->gpus[i];
                holders_clear(&g->holders);
                for (unsigned k = 0; k < EXP_MAX_GPU_INSTANCES; k++) holders_clear(&g->instances[k].holders);
        }
}

void exp_sample_clear(struct exp_sample *s) {
        exp_clear_holders(s);
        for (unsigned i = 0; i < s->n_gpus; i++) free(s->gpus[i].mig_devices);
        free(s->gpus);
        s->gpus = NULL;
        s->n_gpus = 0;
}

/* Returns true for the device plugin's resources: nvidia.com/gpu, its time-slicing rename
 * nvidia.com/gpu.shared, and the MIG strategies' nvidia.com/mig-<profile>. */
static bool nvidia_resource(const char *name) {
        return streq(name, "nvidia.com/gpu") || streq(name, "nvidia.com/gpu.shared") ||
               startswith(name, "nvidia.com/mig-");
}

/* Adds the container (labels text, split at split) to h unless it is there or h is full. Returns
 * true when added. */
static bool holders_add(struct exp_holders *h, const struct buf *labels, size_t split) {
        for (unsigned i = 0; i < h->n; i++)
                if (strcmp(h->v[i].text, labels->data) == 0) return false;
        if (h->n >= EXP_MAX_HOLDERS) return false;
        h->v = xrealloc(h->v, (h->n + 1) * sizeof *h->v);
        h->v[h->n++] = (struct exp_holder){ .text = xstrdup(labels->data), .split = split };
        return true;
}

/* Returns the GPU of s whose UUID is the n bytes at uuid, or NULL. */
static struct exp_gpu *gpu_by_uuid(struct exp_sample *s, const char *uuid, size_t n) {
        for (unsigned i = 0; i < s->n_gpus; i++)
                if (s->gpus[i].sampled && strlen(s->gpus[i].uuid) == n && memcmp(s->gpus[i].uuid, uuid, n) == 0)
                        return &s->gpus[i];
        return NULL;
}

/* Returns the index in g->instances of GPU instance gi_id, or -1. */
static int instance_by_id(const struct exp_gpu *g, unsigned long gi_id) {
        for (unsigned k = 0; k < g->n_instances; k++)
                if (g->instances[k].id == gi_id) return (int)k;
        return -1;
}

/*
 * Finds what device id id (time-slicing suffix "::N" already cut: n bytes) names in s: a GPU by
 * UUID or index, a GPU instance by MIG device UUID or "MIG-GPU-<uuid>/<gi>/<ci>". Returns the
 * holders to add to, or NULL when it names nothing sampled (or a GPU in MIG mode as a whole:
 * its series are per instance, held through their MIG devices).
 */
static struct exp_holders *holders_for(struct exp_sample *s, const char *id, size_t n) {
        if (n > 8 && memcmp(id, "MIG-GPU-", 8) == 0) {
                const char *slash = memchr(id, '/', n);
                if (!slash) return NULL;
                struct exp_gpu *g = gpu_by_uuid(s, id + 4, (size_t)(slash - id - 4));
                char *end = NULL;
                unsigned long gi_id = strtoul(slash + 1, &end, 10);
                if (!g || end == slash + 1 || (*end != '/' && end != id + n)) return NULL;
                int k = instance_by_id(g, gi_id);
                return k < 0 ? NULL : &g->instances[k].holders;
        }
        if (n > 4 && memcmp(id, "MIG-", 4) == 0) {
                for (unsigned i = 0; i < s->n_gpus; i++) {
                        struct exp_gpu *g = &s->gpus[i];
                        for (unsigned d = 0; g->sampled && d < g->n_mig_devices; d++)
                                if (strlen(g->mig_devices[d].uuid) == n && memcmp(g->mig_devices[d].uuid, id, n) == 0 &&
                                    g->mig_devices[d].instance < g->n_instances)
                                        return &g->instances[g->mig_devices[d].instance].holders;
                }
                return NULL;
        }
        struct exp_gpu *g = NULL;
        if (n > 4 && memcmp(id, "GPU-", 4) == 0) {
                g = gpu_by_uuid(s, id, n);
        } else if (n > 0 && n <= 6 && strspn(id, "0123456789") >= n) {
                unsigned long index = strtoul(id, NULL, 10);
                for (unsigned i = 0; i < s->n_gpus && !g; i++)
                        if (s->gpus[i].index == index && s->gpus[i].sampled) g = &s->gpus[i];
        }
        return g && g->n_instances == 0 ? &g->holders : NULL;
}

unsigned exp_attribute_pods(struct exp_sample *s, const struct podres_list *l) {
        exp_clear_holders(s);
        unsigned added = 0;
        struct buf labels = { 0 };
        for (size_t p = 0; l && p < l->n_pods; p++) {
                const struct podres_pod *pod = &l->pods[p];
                for (size_t c = 0; c < pod->n_containers; c++) {
                        const struct podres_container *ct = &pod->containers[c];
                        size_t split = 0;
                        labels.len = 0;
                        for (size_t d = 0; d < ct->n_devices; d++) {
                                const struct podres_devices *dev = &ct->devices[d];
                                if (!nvidia_resource(dev->resource_name)) continue;
                                for (size_t i = 0; i < dev->n_device_ids; i++) {
                                        const char *id = dev->device_ids[i];
                                        const char *replica = strstr(id, "::");
                                        struct exp_holders *h =
                                                holders_for(s, id, replica ? (size_t)(replica - id) : strlen(id));
                                        if (!h) continue;
                                        if (labels.len == 0) {
                                                /* dcgm-exporter's attribute order: keys sorted */
                                                buf_puts(&labels, ",container=\"");
                                                exp_escape_label(&labels, ct->name);
                                                buf_puts(&labels, "\"");
                                                split = labels.len;
                                                buf_puts(&labels, ",namespace=\"");
                                                exp_escape_label(&labels, pod->namespace);
                                                buf_puts(&labels, "\",pod=\"");
                                                exp_escape_label(&labels, pod->name);
                                                buf_puts(&labels, "\"");
                                        }
                                        added += holders_add(h, &labels, split);
                                }
                        }
                }
        }
        buf_free(&labels);
        return added;
}
