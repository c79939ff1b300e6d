/* gfd_labels.c: GFD-compatible labels (NVIDIA k8s-device-plugin internal/lm) computed from NVML and PCI facts. */
#include "layer3_kubernetes/gfd_labels.h"

#include <stdarg.h>
#include <strings.h>

#include "nvml/nvml_facts_json.h"

char *gfd_sanitise(const char *s) {
        /* GFD: regexp [^A-Za-z0-9-_. ] removed (whole runes), then strings.Fields joined by "-";
         * after the removal the only whitespace left is ' '. */
        struct buf kept = { 0 };
        for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
                bool ok = (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
                          *p == '-' || *p == '_' || *p == '.' || *p == ' ';
                if (ok) buf_append(&kept, (const char *)p, 1);
        }
        struct buf out = { 0 };
        bool pending_dash = false;
        for (size_t i = 0; i < kept.len; i++) {
                if (kept.data[i] == ' ') {
                        pending_dash = out.len > 0;
                        continue;
                }
                if (pending_dash) buf_append(&out, "-", 1);
                pending_dash = false;
                buf_append(&out, kept.data + i, 1);
        }
        buf_free(&kept);
        if (!out.data) buf_append(&out, "", 0);
        return out.data;
}

const char *gfd_arch_family(int major, int minor) {
        switch (major) {
        case 1: return "tesla";
        case 2: return "fermi";
        case 3: return "kepler";
        case 5: return "maxwell";
        case 6: return "pascal";
        case 7: return minor < 5 ? "volta" : "turing";
        case 8: return minor < 9 ? "ampere" : "ada-lovelace";
        case 9: return "hopper";
        case 10:
        case 12: return "blackwell";
        case 13: return "rubin";
        default: return "undefined";
        }
}

/* Sets key to value (replacing an earlier value). Returns nothing. */
static void label_put(struct label_set *s, const char *key, const char *value) {
        for (size_t i = 0; i < s->n; i++)
                if (streq(s->v[i].key, key)) {
                        free(s->v[i].value);
                        s->v[i].value = xstrdup(value);
                        return;
                }
        s->v = xrealloc(s->v, (s->n + 1) * sizeof *s->v);
        s->v[s->n++] = (struct label){ xstrdup(key), xstrdup(value) };
}

/* label_put with a printf value. Returns nothing. */
_printf_(3, 4) static void label_putf(struct label_set *s, const char *key, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        char *v = xvasprintf(fmt, ap);
        va_end(ap);
        label_put(s, key, v);
        free(v);
}

/* Orders labels by key. */
static int cmp_label(const void *a, const void *b) {
        return strcmp(((const struct label *)a)->key, ((const struct label *)b)->key);
}

void label_set_free(struct label_set *s) {
        for (size_t i = 0; i < s->n; i++) {
                free(s->v[i].key);
                free(s->v[i].value);
        }
        free(s->v);
        *s = (struct label_set){ 0 };
}

char *label_set_format(const struct label_set *s) {
        struct buf b = { 0 };
        for (size_t i = 0; i < s->n; i++) buf_printf(&b, "%s=%s\n", s->v[i].key, s->v[i].value);
        if (!b.data) buf_append(&b, "", 0);
        return b.data;
}

/* Returns the PCI class of the function at the GPU's NVML bus id, or 0 when NVML gave no bus id or no
 * PCI function there was read (GFD's GetPCIClass fails then). */
static uint32_t gpu_class(const struct node_facts *f, const struct nvml_gpu_facts *g) {
        for (size_t i = 0; g->pci_rc == NVML_SUCCESS && i < f->pci.n_gpus; i++)
                if (strcasecmp(f->pci.gpus[i].address, g->pci_bus_id_legacy) == 0) return f->pci.gpus[i].class_code;
        return 0;
}

const char *gfd_gpu_mode(const struct node_facts *facts) {
        /* internal/lm/nvml.go newGPUModeLabeler: every device's class (an error: "unknown"); more than one
         * class: "unknown"; else 0x030000 graphics, 0x030200 compute, others unknown. */
        const struct nvml_facts *n = facts->nvml.facts;
        if (!n || n->n_gpus == 0) return "unknown";
        uint32_t first = 0;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                uint32_t cls = gpu_class(facts, &n->gpus[i]);
                if (cls == 0 || (i > 0 && cls != first)) return "unknown";
                first = cls;
        }
        return first == 0x030000 ? "graphics" : first == 0x030200 ? "compute" : "unknown";
}

/* Returns true when the GPU has MIG mode enabled. */
static bool mig_enabled(const struct nvml_gpu_facts *g) {
        return g->mig_rc == NVML_SUCCESS && g->mig_current == 1;
}

/* Sets *ret_error and returns r. */
_printf_(3, 4) static int label_fail(char **ret_error, int r, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        char *v = xvasprintf(fmt, ap);
        va_end(ap);
        *ret_error = v;
        return r;
}

/* Adds the version labels (driver split on '.', CUDA driver API version). Returns 0 or -errno. */
static int version_labels(const struct nvml_facts *n, struct label_set *s, char **ret_error) {
        if (n->driver_version_rc != NVML_SUCCESS)
                return label_fail(ret_error, -EIO, "error getting driver version: %s",
                                  nvml_error_string(n->driver_version_rc));
        const char *v = n->driver_version;
        const char *d1 = strchr(v, '.');
        const char *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
        if (!d1 || (d2 && strchr(d2 + 1, '.')))
                return label_fail(ret_error, -EINVAL,
                                  "error getting driver version: Version \"%s\" does not match format \"X.Y[.Z]\"", v);
        _cleanup_free_ char *major = xstrndup(v, (size_t)(d1 - v));
        _cleanup_free_ char *minor = d2 ? xstrndup(d1 + 1, (size_t)(d2 - d1 - 1)) : xstrdup(d1 + 1);
        const char *rev = d2 ? d2 + 1 : "";
        if (n->cuda_driver_version.rc != NVML_SUCCESS)
                return label_fail(ret_error, -EIO, "error getting cuda driver version: %s",
                                  nvml_error_string(n->cuda_driver_version.rc));
        unsigned cv = (unsigned)n->cuda_driver_version.value, cmaj = cv / 1000, cmin = cv % 1000 / 10;
        label_put(s, "nvidia.com/cuda.driver.major", major);
        label_put(s, "nvidia.com/cuda.driver.minor", minor);
        label_put(s, "nvidia.com/cuda.driver.rev", rev);
        label_putf(s, "nvidia.com/cuda.runtime.major", "%u", cmaj);
        label_putf(s, "nvidia.com/cuda.runtime.minor", "%u", cmin);
        label_put(s, "nvidia.com/cuda.driver-version.major", major);
        label_put(s, "nvidia.com/cuda.driver-version.minor", minor);
        label_put(s, "nvidia.com/cuda.driver-version.revision", rev);
        label_put(s, "nvidia.com/cuda.driver-version.full", v);
        label_putf(s, "nvidia.com/cuda.runtime-version.major", "%u", cmaj);
        label_putf(s, "nvidia.com/cuda.runtime-version.minor", "%u", cmin);
        label_putf(s, "nvidia.com/cuda.runtime-version.full", "%u.%u", cmaj, cmin);
        return 0;
}

int gfd_clique(const struct nvml_facts *n, char *buf, size_t size) {
        /* internal/lm/imex.go getFabricIDs over go-nvlib's IsFabricAttached: state completed, status
         * success, a cluster UUID that is not all zero (non-MNNVL NVSwitch systems, e.g. HGX H100,
         * report exactly that); more than one UUID or clique among them: no label. */
        static const char zero[] = "00000000-0000-0000-0000-000000000000";
        const char *uuid = NULL;
        unsigned clique = 0;
        if (size > 0) buf[0] = 0;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                bool attached = g->fabric_rc == NVML_SUCCESS && g->fabric_state == NVML_GPU_FABRIC_STATE_COMPLETED &&
                                g->fabric_status == NVML_SUCCESS && g->fabric_cluster_uuid[0] &&
                                strcasecmp(g->fabric_cluster_uuid, zero) != 0;
                if (!attached) continue;
                if (uuid && (!streq(uuid, g->fabric_cluster_uuid) || clique != g->fabric_clique_id)) return -ENOENT;
                uuid = g->fabric_cluster_uuid;
                clique = g->fabric_clique_id;
        }
        if (!uuid) return -ENOENT;
        snprintf(buf, size, "%s.%u", uuid, clique);
        return 0;
}

int gfd_vgpu_labels(const struct label_options *o, struct label_set *s, char **ret_error) {
        /* internal/lm/vgpu.go: a vGPU list that cannot be read writes no labels; a vGPU without its
         * host driver record fails the labels. */
        const struct gfd_vgpu_facts *v = o->vgpu;
        if (!v || v->rc < 0) return 0;
        if (v->info_rc < 0)
                return label_fail(ret_error, -EIO,
                                  "error getting vGPU device info: cannot find driver version record in "
                                  "vendor specific capability");
        label_put(s, "nvidia.com/vgpu.present", v->n_vgpus > 0 ? "true" : "false");
        if (v->n_vgpus > 0) {
                label_put(s, "nvidia.com/vgpu.host-driver-version", v->host_driver_version);
                label_put(s, "nvidia.com/vgpu.host-driver-branch", v->host_driver_branch);
        }
        return 0;
}

/* Adds the nvidia.com/gpu.* resource labels: product, count, replicas, sharing, memory, architecture. */
static void resource_labels(const struct nvml_facts *n, const struct label_options *o, struct label_set *ls) {
        /* The full-GPU resource: GFD keys its labelers by product name; full GPUs override MIG-enabled
         * ones of the same name. With mixed products (rare) GFD's pick is map order; here the
         * lowest-index full GPU's product wins, else the lowest-index GPU's. */
        const struct nvml_gpu_facts *pick = NULL;
        for (unsigned i = 0; i < n->n_gpus && !pick; i++)
                if (!mig_enabled(&n->gpus[i])) pick = &n->gpus[i];
        bool pick_full = pick != NULL;
        if (!pick) pick = &n->gpus[0];
        unsigned count = 0;
        for (unsigned i = 0; i < n->n_gpus; i++)
                if (streq(n->gpus[i].name, pick->name)) count++;
        /* Sharing applies to full GPUs only (MIG-enabled ones are labelled without sharing: replicas 0). */
        unsigned replicas = !pick_full ? 0 : o->sharing != SHARING_NONE && o->replicas > 0 ? o->replicas : 1;
        bool shared = pick_full && o->sharing != SHARING_NONE && o->replicas > 1;
        _cleanup_free_ char *product = gfd_sanitise(pick->name);
        if (*product)
                label_putf(ls, "nvidia.com/gpu.product", "%s%s", product, shared && !o->renamed ? "-SHARED" : "");
        else
                label_put(ls, "nvidia.com/gpu.product", "");
        label_putf(ls, "nvidia.com/gpu.count", "%u", count);
        label_putf(ls, "nvidia.com/gpu.replicas", "%u", replicas);
        label_put(ls, "nvidia.com/gpu.sharing-strategy",
                  !shared                     ? "none"
                  : o->sharing == SHARING_MPS ? "mps"
                                              : "time-slicing");
        uint64_t mib = pick->memory_rc == NVML_SUCCESS ? pick->memory_total / (1024 * 1024) : 0;
        if (mib) label_putf(ls, "nvidia.com/gpu.memory", "%llu", (unsigned long long)mib);
        if (pick->cc_major != 0) {
                label_put(ls, "nvidia.com/gpu.family", gfd_arch_family(pick->cc_major, pick->cc_minor));
                label_putf(ls, "nvidia.com/gpu.compute.major", "%d", pick->cc_major);
                label_putf(ls, "nvidia.com/gpu.compute.minor", "%d", pick->cc_minor);
        }
}

int gfd_mig_name(const struct nvml_mig_facts *m, char *buf, size_t size) {
        if (size > 0) buf[0] = 0;
        if (m->profile_rc != NVML_SUCCESS || !m->profile[0]) return -EINVAL;
        snprintf(buf, size, "%s", m->profile);
        for (char *p = buf; *p; p++)
                if (*p == '+') *p = '.';
        return 0;
}

int gfd_mig_single_invalid(const struct nvml_facts *n) {
        bool any_enabled = false, any_disabled = false, any_empty = false;
        char first[40] = "";
        bool mixed = false;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                if (!mig_enabled(g)) {
                        any_disabled = true;
                        continue;
                }
                any_enabled = true;
                if (g->mig_max_rc != NVML_SUCCESS || g->mig_devices_rc != NVML_SUCCESS) return -EIO;
                any_empty |= g->n_mig == 0;
                for (unsigned j = 0; j < g->n_mig; j++) {
                        char name[40];
                        if (gfd_mig_name(&g->mig[j], name, sizeof name) < 0) return -EIO;
                        if (!first[0])
                                snprintf(first, sizeof first, "%s", name);
                        else
                                mixed |= !streq(first, name);
                }
        }
        if (!any_enabled) return 0;
        return any_disabled || any_empty || mixed;
}

/* One MIG resource: its name, how many MIG devices carry it, and the first of them (GFD labels its
 * attributes) with its parent GPU. */
struct mig_resource {
        char name[40];
        unsigned count;
        const struct nvml_mig_facts *first;
        const struct nvml_gpu_facts *parent;
};

/* Adds GFD's labels of one MIG resource under `resource` (nvidia.com/gpu or nvidia.com/mig-<name>):
 * product, count, replicas, sharing strategy (internal/lm/resource.go NewMIGResourceLabeler) and the
 * device attributes (internal/resource/nvml-mig-device.go GetAttributes). Returns nothing. */
static void mig_resource_put(struct label_set *s, const char *resource, const struct mig_resource *m, unsigned replicas,
                             const char *strategy, bool shared_suffix) {
        _cleanup_free_ char *model = gfd_sanitise(m->parent->name), *profile = gfd_sanitise(m->name);
        const struct nvml_mig_attributes *a = &m->first->attributes;
        struct {
                const char *suffix;
                unsigned long long v;
        } nums[] = {
                { "count", m->count },
                { "replicas", replicas },
                { "memory", a->memory_mb },
                { "multiprocessors", a->multiprocessors },
                { "slices.gi", a->gi_slices },
                { "slices.ci", a->ci_slices },
                { "engines.copy", a->copy_engines },
                { "engines.decoder", a->decoders },
                { "engines.encoder", a->encoders },
                { "engines.jpeg", a->jpegs },
                { "engines.ofa", a->ofas },
        };
        _cleanup_free_ char *key = xasprintf("%s.product", resource);
        label_putf(s, key, "%s-MIG-%s%s", model, profile, shared_suffix ? "-SHARED" : "");
        free(key);
        key = xasprintf("%s.sharing-strategy", resource);
        label_put(s, key, strategy);
        for (size_t i = 0; i < ELEMENTSOF(nums); i++) {
                free(key);
                key = xasprintf("%s.%s", resource, nums[i].suffix);
                label_putf(s, key, "%llu", nums[i].v);
        }
}

/*
 * Adds the labels of MIG strategy single or mixed on a node with MIG enabled (internal/lm/mig-strategy.go):
 * single: every GPU MIG-enabled with MIG devices of one profile, labelled as nvidia.com/gpu (product
 * <model>-MIG-<profile>, count of MIG devices, the MIG device's memory and attributes), else the
 * <model>-MIG-INVALID labels; mixed: nvidia.com/mig-<profile>.* per profile. Returns 0, or -EIO with
 * *ret_error when a MIG device or its profile could not be read (GFD fails then too).
 */
static int mig_labels(const struct nvml_facts *n, const struct label_options *o, struct label_set *s,
                      char **ret_error) {
        const struct nvml_gpu_facts *first_enabled = NULL;
        bool any_disabled = false, any_empty = false;
        size_t total = 0;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                if (!mig_enabled(g)) {
                        any_disabled = true;
                        continue;
                }
                if (!first_enabled) first_enabled = g;
                if (g->mig_max_rc != NVML_SUCCESS || g->mig_devices_rc != NVML_SUCCESS)
                        return label_fail(
                                ret_error, -EIO, "error getting MIG devices of GPU %u: %s", i,
                                nvml_error_string(g->mig_max_rc != NVML_SUCCESS ? g->mig_max_rc : g->mig_devices_rc));
                any_empty |= g->n_mig == 0;
                total += g->n_mig;
        }
        if (o->mig_strategy == MIG_STRATEGY_SINGLE && (any_empty || any_disabled)) goto invalid;

        struct mig_resource *res = total ? xcalloc(total, sizeof *res) : NULL;
        size_t n_res = 0;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                if (!mig_enabled(g)) continue;
                for (unsigned j = 0; j < g->n_mig; j++) {
                        const struct nvml_mig_facts *m = &g->mig[j];
                        char name[40];
                        if (gfd_mig_name(m, name, sizeof name) < 0 || m->attributes_rc != NVML_SUCCESS) {
                                free(res);
                                int rc = m->profile_rc != NVML_SUCCESS ? m->profile_rc : m->attributes_rc;
                                if (rc == NVML_SUCCESS)
                                        return label_fail(ret_error, -EIO,
                                                          "unable to get MIG device name of GPU %u MIG device %u: "
                                                          "invalid GPU Instance Profile ID: %u",
                                                          i, m->index, m->gi_profile);
                                return label_fail(ret_error, -EIO,
                                                  "unable to get MIG device name of GPU %u MIG device %u: %s", i,
                                                  m->index,
                                                  rc == NVML_ERROR_NOT_FOUND ? "no matching profile IDs found"
                                                                             : nvml_error_string(rc));
                        }
                        size_t k = 0;
                        while (k < n_res && !streq(res[k].name, name)) k++;
                        if (k == n_res) {
                                snprintf(res[k].name, sizeof res[k].name, "%s", name);
                                res[k].first = m;
                                res[k].parent = g;
                                n_res++;
                        }
                        res[k].count++;
                }
        }
        if (o->mig_strategy == MIG_STRATEGY_SINGLE) {
                if (n_res != 1) {
                        free(res);
                        goto invalid;
                }
                bool shared = o->sharing != SHARING_NONE && o->replicas > 1;
                unsigned replicas = o->sharing != SHARING_NONE && o->replicas > 0 ? o->replicas : 1;
                mig_resource_put(s, "nvidia.com/gpu", &res[0], replicas,
                                 !shared                     ? "none"
                                 : o->sharing == SHARING_MPS ? "mps"
                                                             : "time-slicing",
                                 shared && !o->renamed);
        } else {
                for (size_t k = 0; k < n_res; k++) {
                        _cleanup_free_ char *resource = xasprintf("nvidia.com/mig-%s", res[k].name);
                        mig_resource_put(s, resource, &res[k], 1, "none", false);
                }
        }
        free(res);
        return 0;

invalid:;
        /* newInvalidMigStrategyLabeler: product, count, replicas, sharing-strategy, memory. */
        _cleanup_free_ char *model = gfd_sanitise(first_enabled->name);
        label_putf(s, "nvidia.com/gpu.product", "%s-MIG-INVALID", model);
        label_put(s, "nvidia.com/gpu.count", "0");
        label_put(s, "nvidia.com/gpu.replicas", "0");
        label_put(s, "nvidia.com/gpu.sharing-strategy", "");
        label_put(s, "nvidia.com/gpu.memory", "0");
        return 0;
}

int gfd_labels(const struct node_facts *facts, const struct label_options *o, struct label_set *ret, char **ret_error) {
        struct label_set s = { 0 };
        const struct nvml_facts *n = facts->nvml.facts;
        *ret_error = NULL;
        if (!n)
                return label_fail(ret_error, -ENODEV, "failed to initialize NVML: %s",
                                  facts->nvml.load_error ? facts->nvml.load_error : "not loaded");
        if (n->timed_out) return label_fail(ret_error, -EIO, "NVML did not answer: %s", n->timeout_message);
        if (n->init_rc != NVML_SUCCESS)
                return label_fail(ret_error, -ENODEV, "failed to initialize NVML: %s",
                                  n->init_error[0] ? n->init_error : nvml_error_string(n->init_rc));
        if (n->device_count_rc != NVML_SUCCESS)
                return label_fail(ret_error, -EIO, "error getting devices: %s", nvml_error_string(n->device_count_rc));
        if (o->timestamp) label_putf(&s, "nvidia.com/gfd.timestamp", "%lld", (long long)o->now);
        int r;
        if (n->n_gpus == 0) goto done;

        bool any_mig_enabled = false, mig_capable = false;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                if (g->handle_rc != NVML_SUCCESS || g->name_rc != NVML_SUCCESS) {
                        r = label_fail(ret_error, -EIO, "error getting device name of GPU %u: %s", i,
                                       nvml_error_string(g->handle_rc != NVML_SUCCESS ? g->handle_rc : g->name_rc));
                        goto fail;
                }
                if (g->mig_rc != NVML_SUCCESS && g->mig_rc != NVML_ERROR_NOT_SUPPORTED) {
                        r = label_fail(ret_error, -EIO, "error getting mig capability of GPU %u: %s", i,
                                       nvml_error_string(g->mig_rc));
                        goto fail;
                }
                /* internal/lm/imex.go: a fabric query that fails (not "not supported") fails GFD's IMEX
                 * labeler, and with it the labels */
                if (g->fabric_rc != NVML_SUCCESS && g->fabric_rc != NVML_ERROR_NOT_SUPPORTED &&
                    g->fabric_rc != NVML_FACT_NOT_QUERIED) {
                        r = label_fail(ret_error, -EIO,
                                       "error creating IMEX labeler: error checking imex capability: error "
                                       "getting GPU Fabric Info of GPU %u: %s",
                                       i, nvml_error_string(g->fabric_rc));
                        goto fail;
                }
                if (g->cc_rc != NVML_SUCCESS) {
                        r = label_fail(ret_error, -EIO, "failed to determine CUDA compute capability of GPU %u: %s", i,
                                       nvml_error_string(g->cc_rc));
                        goto fail;
                }
                mig_capable |= g->mig_rc == NVML_SUCCESS;
                any_mig_enabled |= mig_enabled(g);
        }
        if (o->sharing == SHARING_MPS && any_mig_enabled) {
                r = label_fail(ret_error, -EOPNOTSUPP,
                               "failed to check MPS-capable: MPS sharing is not supported for mig devices");
                goto fail;
        }
        /* machine type, versions, MIG capability, sharing */
        if (o->machine_type) {
                _cleanup_free_ char *m = xstrdup(o->machine_type);
                char *b = m;
                while (*b == ' ' || *b == '\t' || *b == '\n' || *b == '\r' || *b == '\v' || *b == '\f') b++;
                strstrip_right(b);
                _cleanup_free_ char *san = gfd_sanitise(b);
                label_put(&s, "nvidia.com/gpu.machine", san);
        } else {
                label_put(&s, "nvidia.com/gpu.machine", "unknown");
        }
        r = version_labels(n, &s, ret_error);
        if (r < 0) goto fail;
        label_put(&s, "nvidia.com/mig.capable", mig_capable ? "true" : "false");
        label_put(&s, "nvidia.com/mps.capable", o->sharing == SHARING_MPS ? "true" : "false");

        resource_labels(n, o, &s);
        if (o->mig_strategy != MIG_STRATEGY_NONE) {
                label_put(&s, "nvidia.com/mig.strategy", o->mig_strategy == MIG_STRATEGY_SINGLE ? "single" : "mixed");
                if (any_mig_enabled) {
                        r = mig_labels(n, o, &s, ret_error);
                        if (r < 0) goto fail;
                }
        }

        label_put(&s, "nvidia.com/gpu.mode", gfd_gpu_mode(facts));
        char clique[64];
        if (gfd_clique(n, clique, sizeof clique) == 0) label_put(&s, "nvidia.com/gpu.clique", clique);
done:
        r = gfd_vgpu_labels(o, &s, ret_error);
        if (r < 0) goto fail;
        qsort(s.v, s.n, sizeof *s.v, cmp_label);
        *ret = s;
        return 0;
fail:
        label_set_free(&s);
        return r;
}
