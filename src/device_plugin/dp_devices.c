/* dp_devices.c: NVML's facts and the config turned into resources and device IDs as NVIDIA's plugin names them. */
#include "device_plugin/dp_devices.h"
#include "basic/hostfs.h"
#include "basic/util.h"
#include "kube/kube_checkpoint.h"

#include <ctype.h>
#include <limits.h>

/* Returns resource "name" of inv, added (with its socket) when missing. */
static struct dp_resource *resource_get(struct dp_inventory *inv, const char *name) {
        for (size_t i = 0; i < inv->n_resources; i++)
                if (streq(inv->resources[i].name, name)) return &inv->resources[i];
        inv->resources = xrealloc(inv->resources, (inv->n_resources + 1) * sizeof *inv->resources);
        struct dp_resource *r = &inv->resources[inv->n_resources++];
        *r = (struct dp_resource){ .name = xstrdup(name) };
        const char *shortname = startswith(name, "nvidia.com/");
        r->endpoint = xasprintf(DP_SOCKET_PREFIX "%s.sock", shortname ? shortname : name);
        r->socket = xasprintf(DP_KUBELET_DIR "/%s", r->endpoint);
        return r;
}

/* Returns a malloc'd copy of a NULL-terminated list (NULL stays NULL). */
static char **strv_copy(char *const *v) {
        if (!v) return NULL;
        size_t n = 0;
        while (v[n]) n++;
        char **c = xcalloc(n + 1, sizeof *c);
        for (size_t i = 0; i < n; i++) c[i] = xstrdup(v[i]);
        return c;
}

/* Appends a device to r, with a copy of its device nodes. */
static void device_add(struct dp_resource *r, const char *id, const char *visible, const char *uuid, size_t gpu, int gi,
                       bool replicated, unsigned replica, char *const *nodes) {
        r->devices = xrealloc(r->devices, (r->n_devices + 1) * sizeof *r->devices);
        r->devices[r->n_devices++] = (struct dp_device){ .id = xstrdup(id),
                                                         .visible = xstrdup(visible),
                                                         .uuid = xstrdup(uuid),
                                                         .gpu = gpu,
                                                         .gi = gi,
                                                         .replicated = replicated,
                                                         .replica = replica,
                                                         .nodes = strv_copy(nodes) };
        if (replicated) r->replicated = true;
}

int dp_mig_minors_parse(const char *text, size_t len, struct dp_mig_minor **ret, size_t *ret_n, size_t *ret_skipped) {
        struct dp_mig_minor *v = NULL;
        size_t n = 0, skipped = 0;
        for (size_t i = 0; i < len;) {
                size_t e = i;
                while (e < len && text[e] != '\n') e++;
                size_t l = e - i;
                char line[128];
                i = e + 1;
                if (l == 0) continue;
                if (l >= sizeof line) {
                        skipped++;
                        continue;
                }
                memcpy(line, text + (e - l), l);
                line[l] = 0;
                if (startswith(line, "config ") || startswith(line, "monitor ")) continue;
                unsigned gpu, gi, ci, minor;
                int k = -1;
                struct dp_mig_minor m;
                if (sscanf(line, "gpu%u/gi%u/ci%u/access %u%n", &gpu, &gi, &ci, &minor, &k) == 4 && k == (int)l &&
                    ci <= 0xffff)
                        m = (struct dp_mig_minor){ .gpu = gpu, .gi = gi, .ci = (int)ci, .minor = minor };
                else if ((k = -1, sscanf(line, "gpu%u/gi%u/access %u%n", &gpu, &gi, &minor, &k)) == 3 && k == (int)l)
                        m = (struct dp_mig_minor){ .gpu = gpu, .gi = gi, .ci = -1, .minor = minor };
                else {
                        skipped++;
                        continue;
                }
                v = xrealloc(v, (n + 1) * sizeof *v);
                v[n++] = m;
        }
        *ret = v;
        *ret_n = n;
        if (ret_skipped) *ret_skipped = skipped;
        return 0;
}

/* Returns the capability minor of (gpu minor, gi, ci) in the table, or -1. */
static long cap_minor(const struct dp_mig_minor *v, size_t n, unsigned gpu, unsigned gi, int ci) {
        for (size_t i = 0; i < n; i++)
                if (v[i].gpu == gpu && v[i].gi == gi && v[i].ci == ci) return v[i].minor;
        return -1;
}

/* Returns the GPU's NUMA node from sysfs, or -1 (none, unknown). */
static int numa_node(const char *pci_bus_id) {
        _cleanup_free_ char *path = xasprintf("/sys/bus/pci/devices/%s/numa_node", pci_bus_id);
        _cleanup_free_ char *line = NULL;
        int64_t v;
        if (hostfs_read_line(path, &line) < 0 || parse_i64(line, &v) < 0 || v < 0 || v > 1024) return -1;
        return (int)v;
}

/* A device before time-slicing: what it is called and which resource it belongs to. */
struct base {
        char *resource;
        char *uuid;
        char *visible;
        size_t gpu;
        int gi;         /* DP_GI_NONE, a MIG device's GPU instance id, DP_GI_UNKNOWN */
        char *index;    /* "0", "0:1": for a devices list */
        char *nodes[4]; /* its device nodes, NULL-terminated */
};

/* Returns true when the replicated entry rr selects base device b (the k-th of its resource). */
static bool selected(const struct dp_replicated *rr, const struct base *b, size_t k) {
        if (rr->all) return true;
        if (rr->count) return k < rr->count;
        for (size_t i = 0; i < rr->n_devices; i++)
                if (streq(rr->devices[i], b->uuid) || streq(rr->devices[i], b->index)) return true;
        return false;
}

/* Returns the resource name of a MIG profile: "nvidia.com/mig-1g.10gb" ('+' becomes '.'). */
static char *mig_resource(const char *profile) {
        char *s = xasprintf("nvidia.com/mig-%s", profile);
        for (char *p = s; *p; p++)
                if (*p == '+') *p = '.';
        return s;
}

int dp_inventory_build(const struct nvml_facts *f, const struct dp_config *cfg, struct dp_inventory **ret,
                       char **ret_error) {
        if (!f || f->init_rc != NVML_SUCCESS || f->n_gpus == 0)
                return errorf(ret_error, -ENODEV, "NVML found no GPU (%s)",
                              !f                           ? "no facts"
                              : f->init_rc != NVML_SUCCESS ? nvml_return_name(f->init_rc)
                                                           : "device count 0");
        struct dp_inventory *inv = xcalloc(1, sizeof *inv);
        struct base *bases = NULL;
        size_t n_bases = 0;
        int r = 0;
        inv->gpus = xcalloc(f->n_gpus, sizeof *inv->gpus);
        struct dp_mig_minor *minors = NULL;
        size_t n_minors = 0;
        bool minors_read = false;
        static const char *const controls[] = { "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                                                "/dev/nvidia-modeset" };
        inv->control_nodes = xcalloc(ELEMENTSOF(controls) + 1, sizeof *inv->control_nodes);
        for (size_t i = 0, k = 0; i < ELEMENTSOF(controls); i++)
                if (hostfs_exists(controls[i])) inv->control_nodes[k++] = xstrdup(controls[i]);

        /* MIG single: every GPU in MIG mode with MIG devices of one profile, or none in MIG mode. */
        bool any_mig = false;
        char single_profile[32] = "";
        for (unsigned i = 0; i < f->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &f->gpus[i];
                bool mig = g->mig_rc == NVML_SUCCESS && g->mig_current == 1;
                any_mig |= mig;
        }
        for (unsigned i = 0; i < f->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &f->gpus[i];
                if (g->uuid_rc != NVML_SUCCESS) continue; /* a GPU without UUID cannot be named to the kubelet */
                struct dp_gpu *o = &inv->gpus[inv->n_gpus];
                o->index = g->index;
                o->minor = g->minor_number.rc == NVML_SUCCESS && g->minor_number.value < 4096
                                   ? (int)g->minor_number.value
                                   : -1;
                snprintf(o->uuid, sizeof o->uuid, "%s", g->uuid);
                o->numa = -1;
                if (g->pci_rc == NVML_SUCCESS) {
                        snprintf(o->pci_bus_id, sizeof o->pci_bus_id, "%s", g->pci_bus_id_legacy);
                        for (char *p = o->pci_bus_id; *p; p++) *p = (char)tolower((unsigned char)*p);
                        o->numa = numa_node(o->pci_bus_id);
                }
                size_t gi = inv->n_gpus++;
                bool mig = g->mig_rc == NVML_SUCCESS && g->mig_current == 1;
                char idx[16];
                snprintf(idx, sizeof idx, "%u", g->index);
                if (cfg->mig_strategy == DP_MIG_NONE || !mig) {
                        if (cfg->mig_strategy == DP_MIG_SINGLE && any_mig) {
                                r = errorf(
                                        ret_error, -EINVAL,
                                        "migStrategy single: GPU %u (%s) has MIG mode off while other GPUs have it on; "
                                        "single needs every GPU in MIG mode with one profile (use mixed)",
                                        g->index, g->uuid);
                                goto fail;
                        }
                        bases = xrealloc(bases, (n_bases + 1) * sizeof *bases);
                        bases[n_bases++] = (struct base){ .resource = xstrdup("nvidia.com/gpu"),
                                                          .uuid = xstrdup(g->uuid),
                                                          .visible = xstrdup(idx),
                                                          .gpu = gi,
                                                          .gi = DP_GI_NONE,
                                                          .index = xstrdup(idx) };
                        if (o->minor >= 0) bases[n_bases - 1].nodes[0] = xasprintf("/dev/nvidia%d", o->minor);
                        continue;
                }
                for (unsigned m = 0; m < g->n_mig; m++) {
                        const struct nvml_mig_facts *mf = &g->mig[m];
                        if (mf->uuid_rc != NVML_SUCCESS) continue;
                        char prof[32];
                        snprintf(prof, sizeof prof, "%s", mf->profile);
                        if (!*prof &&
                            (mf->attributes_rc != NVML_SUCCESS ||
                             nvml_mig_name_from_attributes(&mf->attributes, g->memory_total, prof, sizeof prof) < 0)) {
                                r = errorf(ret_error, -EINVAL, "MIG device %s on GPU %u: its profile cannot be told",
                                           mf->uuid, g->index);
                                goto fail;
                        }
                        if (cfg->mig_strategy == DP_MIG_SINGLE) {
                                if (*single_profile && !streq(single_profile, prof)) {
                                        r = errorf(ret_error, -EINVAL,
                                                   "migStrategy single: MIG devices of profiles %s and %s; single "
                                                   "needs one "
                                                   "profile on every GPU (use mixed)",
                                                   single_profile, prof);
                                        goto fail;
                                }
                                snprintf(single_profile, sizeof single_profile, "%s", prof);
                        }
                        char midx[32];
                        snprintf(midx, sizeof midx, "%u:%u", g->index, mf->index);
                        bases = xrealloc(bases, (n_bases + 1) * sizeof *bases);
                        bases[n_bases++] =
                                (struct base){ .resource = cfg->mig_strategy == DP_MIG_SINGLE
                                                                   ? xstrdup("nvidia.com/gpu")
                                                                   : mig_resource(prof),
                                               .uuid = xstrdup(mf->uuid),
                                               .visible = xstrdup(midx),
                                               .gpu = gi,
                                               .gi = mf->gi_rc == NVML_SUCCESS && mf->gi_id <= INT_MAX ? (int)mf->gi_id
                                                                                                       : DP_GI_UNKNOWN,
                                               .index = xstrdup(midx) };
                        /* its parent's node and its GPU and compute instances' capability nodes, as NVIDIA's plugin
                         * passes them */
                        char **nodes = bases[n_bases - 1].nodes;
                        size_t k = 0;
                        if (o->minor >= 0) {
                                nodes[k++] = xasprintf("/dev/nvidia%d", o->minor);
                                if (!minors_read) {
                                        _cleanup_free_ char *text = NULL;
                                        size_t tl;
                                        if (hostfs_read(DP_MIG_MINORS_FILE, 1 << 20, &text, &tl) == 0)
                                                dp_mig_minors_parse(text, tl, &minors, &n_minors, NULL);
                                        minors_read = true;
                                }
                                long gcap = mf->gi_rc == NVML_SUCCESS
                                                    ? cap_minor(minors, n_minors, (unsigned)o->minor, mf->gi_id, -1)
                                                    : -1;
                                long ccap = mf->gi_rc == NVML_SUCCESS && mf->ci_rc == NVML_SUCCESS
                                                    ? cap_minor(minors, n_minors, (unsigned)o->minor, mf->gi_id,
                                                                (int)mf->ci_id)
                                                    : -1;
                                if (gcap >= 0) nodes[k++] = xasprintf("/dev/nvidia-caps/nvidia-cap%ld", gcap);
                                if (ccap >= 0) nodes[k++] = xasprintf("/dev/nvidia-caps/nvidia-cap%ld", ccap);
                        }
                }
        }
        if (inv->n_gpus == 0) {
                r = errorf(ret_error, -ENODEV, "NVML named no GPU's UUID");
                goto fail;
        }

        /* Time-slicing: each selected device becomes replicas "<uuid>::<n>" under the advertised name. */
        size_t *seen = xcalloc(cfg->n_resources + 1, sizeof *seen);
        for (size_t b = 0; b < n_bases; b++) {
                const struct base *bs = &bases[b];
                const struct dp_replicated *rr = NULL;
                size_t ri = 0;
                for (size_t i = 0; i < cfg->n_resources; i++)
                        if (streq(cfg->resources[i].name, bs->resource)) {
                                rr = &cfg->resources[i];
                                ri = i;
                        }
                if (rr && selected(rr, bs, seen[ri]++)) {
                        struct dp_resource *res = resource_get(inv, dp_replicated_advertised(rr));
                        for (unsigned k = 0; k < rr->replicas; k++) {
                                _cleanup_free_ char *id = xasprintf("%s::%u", bs->uuid, k);
                                device_add(res, id, cfg->id_index ? bs->index : bs->uuid, bs->uuid, bs->gpu, bs->gi,
                                           true, k, bs->nodes);
                        }
                } else {
                        struct dp_resource *res = resource_get(inv, bs->resource);
                        device_add(res, bs->uuid, cfg->id_index ? bs->index : bs->uuid, bs->uuid, bs->gpu, bs->gi,
                                   false, 0, bs->nodes);
                }
        }
        free(seen);
        /* Always offer nvidia.com/gpu, even empty (mixed strategy on an all-MIG node), as NVIDIA does. */
        if (cfg->mig_strategy != DP_MIG_MIXED || !any_mig) resource_get(inv, "nvidia.com/gpu");
fail:
        for (size_t b = 0; b < n_bases; b++) {
                free(bases[b].resource);
                free(bases[b].uuid);
                free(bases[b].visible);
                free(bases[b].index);
                for (size_t k = 0; bases[b].nodes[k]; k++) free(bases[b].nodes[k]);
        }
        free(bases);
        free(minors);
        if (r < 0) {
                dp_inventory_free(inv);
                return r;
        }
        *ret = inv;
        return 0;
}

int dp_inventory_from_checkpoint(struct dp_inventory **ret) {
        struct dp_inventory *inv = xcalloc(1, sizeof *inv);
        inv->from_checkpoint = true;
        _cleanup_free_ char *text = NULL;
        size_t len;
        struct kube_checkpoint *cp = NULL;
        if (hostfs_read(KUBELET_CHECKPOINT_FILE, KUBE_CHECKPOINT_MAX_SIZE, &text, &len) == 0 &&
            kube_checkpoint_parse(text, len, &cp, NULL) == 0) {
                for (size_t i = 0; i < cp->n_resources; i++) {
                        const struct kube_checkpoint_resource *kr = &cp->resources[i];
                        if (!startswith(kr->name, "nvidia.com/")) continue;
                        struct dp_resource *res = resource_get(inv, kr->name);
                        for (size_t d = 0; d < kr->n_devices; d++) {
                                const char *id = kr->devices[d];
                                size_t bl = kube_device_id_base_len(id);
                                _cleanup_free_ char *uuid = xstrndup(id, bl);
                                size_t g;
                                for (g = 0; g < inv->n_gpus; g++)
                                        if (streq(inv->gpus[g].uuid, uuid)) break;
                                if (g == inv->n_gpus) {
                                        inv->gpus = xrealloc(inv->gpus, (inv->n_gpus + 1) * sizeof *inv->gpus);
                                        struct dp_gpu *o = &inv->gpus[inv->n_gpus++];
                                        *o = (struct dp_gpu){ .index = (unsigned)g, .numa = -1, .minor = -1 };
                                        snprintf(o->uuid, sizeof o->uuid, "%s", uuid);
                                }
                                /* a checkpoint's MIG device is its own GPU here: an Xid on it is on that GPU */
                                device_add(res, id, uuid, uuid, g, DP_GI_NONE, bl != strlen(id), 0, NULL);
                        }
                }
                kube_checkpoint_free(cp);
        }
        if (!inv->n_resources) resource_get(inv, "nvidia.com/gpu");
        *ret = inv;
        return 0;
}

void dp_inventory_free(struct dp_inventory *inv) {
        if (!inv) return;
        for (size_t i = 0; i < inv->n_resources; i++) {
                struct dp_resource *r = &inv->resources[i];
                for (size_t d = 0; d < r->n_devices; d++) {
                        free(r->devices[d].id);
                        free(r->devices[d].visible);
                        free(r->devices[d].uuid);
                        strv_free(r->devices[d].nodes);
                }
                free(r->devices);
                free(r->name);
                free(r->socket);
                free(r->endpoint);
        }
        free(inv->resources);
        free(inv->gpus);
        strv_free(inv->control_nodes);
        free(inv);
}

const struct dp_device *dp_resource_find(const struct dp_resource *r, const char *id) {
        for (size_t i = 0; i < r->n_devices; i++)
                if (streq(r->devices[i].id, id)) return &r->devices[i];
        return NULL;
}

bool dp_inventory_same(const struct dp_inventory *a, const struct dp_inventory *b) {
        if (a->n_resources != b->n_resources || a->from_checkpoint != b->from_checkpoint) return false;
        for (size_t i = 0; i < a->n_resources; i++) {
                const struct dp_resource *x = &a->resources[i], *y = &b->resources[i];
                if (!streq(x->name, y->name) || x->n_devices != y->n_devices) return false;
                for (size_t d = 0; d < x->n_devices; d++)
                        if (!streq(x->devices[d].id, y->devices[d].id)) return false;
        }
        return true;
}
