/* nvml_facts_json.c: NVML facts from a fake-NVML JSON description (answering as the probe would through the
 * fake), and their inverse, the facts written as such a description; scalar facts row by row of NVML_GPU_FACTS. */
#include "nvml/nvml_facts_json.h"

#include <jansson.h>

#include "basic/util.h"

/* Upper bound on GPUs taken from a description (the probe's own bound). */
#define MAX_GPUS 1024

#define NS NVML_ERROR_NOT_SUPPORTED

/* Reads obj[key] as an unsigned number (integer, boolean, or a whole "0x.."/decimal string), as the
 * fake does. Returns true and *ret, or false when absent or not a number. */
static bool get_u64(const json_t *obj, const char *key, uint64_t *ret) {
        json_t *v = json_object_get(obj, key);
        if (json_is_integer(v)) {
                *ret = (uint64_t)json_integer_value(v);
                return true;
        }
        if (json_is_boolean(v)) {
                *ret = json_is_true(v);
                return true;
        }
        if (json_is_string(v)) {
                const char *s = json_string_value(v);
                char *end;
                errno = 0;
                unsigned long long x = strtoull(s, &end, 0);
                if (end == s || *end) return false;
                *ret = x;
                return true;
        }
        return false;
}

/* Returns the fact for an unsigned int answer obj[key]: NOT_SUPPORTED when absent. */
static struct nvml_fact_u64 answer_uint(const json_t *obj, const char *key) {
        uint64_t v;
        if (!get_u64(obj, key, &v)) return (struct nvml_fact_u64){ .rc = NS };
        return (struct nvml_fact_u64){ .rc = NVML_SUCCESS, .value = (unsigned)v };
}

/* Returns the fact for an unsigned long long answer obj[key]. */
static struct nvml_fact_u64 answer_ull(const json_t *obj, const char *key) {
        uint64_t v;
        if (!get_u64(obj, key, &v)) return (struct nvml_fact_u64){ .rc = NS };
        return (struct nvml_fact_u64){ .rc = NVML_SUCCESS, .value = v };
}

/* Returns the code errors[call] of obj injects, or NVML_SUCCESS. */
static int injected(const json_t *obj, const char *call) {
        json_t *e = json_object_get(json_object_get(obj, "errors"), call);
        return json_is_integer(e) ? (int)json_integer_value(e) : NVML_SUCCESS;
}

/* Returns the code a call on this GPU's handle starts with: lost, injected, or success. */
static int dev_rc(const json_t *g, const char *call) {
        if (json_is_true(json_object_get(g, "lost"))) return NVML_ERROR_GPU_IS_LOST;
        return injected(g, call);
}

/* Copies obj[key] into buf as the fake's put_string does. Returns an nvmlReturn_t. */
static int put_string(const json_t *obj, const char *key, char *buf, size_t size) {
        const char *s = json_string_value(json_object_get(obj, key));
        if (!s) return NS;
        if (strlen(s) + 1 > size) return NVML_ERROR_INSUFFICIENT_SIZE;
        memcpy(buf, s, strlen(s) + 1);
        return NVML_SUCCESS;
}

/* Returns a fact with the first rc unless it is success, then the answer. */
static struct nvml_fact_u64 rc_or(int rc, struct nvml_fact_u64 answer) {
        return rc != NVML_SUCCESS ? (struct nvml_fact_u64){ .rc = rc } : answer;
}

/* Parses a UUID's 32 hex digits (other characters skipped) and writes it 8-4-4-4-12, as the fake
 * and the probe together do. Returns nothing. */
static void fabric_uuid(const char *s, char out[37]) {
        unsigned char b[16] = { 0 };
        unsigned n = 0;
        for (; s && *s && n < 32; s++) {
                int v;
                if (*s >= '0' && *s <= '9')
                        v = *s - '0';
                else if (*s >= 'a' && *s <= 'f')
                        v = *s - 'a' + 10;
                else if (*s >= 'A' && *s <= 'F')
                        v = *s - 'A' + 10;
                else
                        continue;
                b[n / 2] |= (unsigned char)(n % 2 ? v : v << 4);
                n++;
        }
        snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
                 b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* Returns entry m of the GPU's "mig_devices" when it is an object, else NULL (the fake: NOT_FOUND). */
static const json_t *mig_entry(const json_t *gj, size_t m) {
        const json_t *e = json_array_get(json_object_get(gj, "mig_devices"), m);
        return json_is_object(e) ? e : NULL;
}

/* Returns the first "mig_devices" entry of GPU instance gi (and compute instance ci unless ci < 0) that
 * injects an error into `call` (when call) or carries `key` (when key); NULL when none does. The fake
 * answers a call on a GPU or compute instance from the first MIG device of that instance that says
 * something about it, so that facts written back per MIG device load again to the same facts. */
static const json_t *mig_find(const json_t *gj, unsigned gi, long ci, const char *call, const char *key) {
        for (size_t m = 0; m < NVML_MAX_MIG_DEVICES; m++) {
                const json_t *e = mig_entry(gj, m);
                uint64_t v;
                if (!e || !get_u64(e, "gi", &v) || v != gi) continue;
                if (ci >= 0 && (!get_u64(e, "ci", &v) || v != (uint64_t)ci)) continue;
                if (call && json_object_get(json_object_get(e, "errors"), call)) return e;
                if (key && json_object_get(e, key)) return e;
        }
        return NULL;
}

/* Returns the error a call on GPU instance gi (compute instance ci unless ci < 0) answers, or NVML_SUCCESS. */
static int instance_rc(const json_t *gj, unsigned gi, long ci, const char *call) {
        const json_t *e = mig_find(gj, gi, ci, call, NULL);
        return e ? injected(e, call) : NVML_SUCCESS;
}

/* Resolves a MIG device's profile as the probe does through the fake. Returns the nvmlReturn_t for
 * profile_rc and fills m's gi_profile, ci_profile and profile on success. */
static int mig_profile_from_json(const json_t *gj, const json_t *e, const struct nvml_gpu_facts *g,
                                 struct nvml_mig_facts *m) {
        int rc = injected(e, "nvmlDeviceGetDeviceHandleFromMigDeviceHandle");
        if (rc == NVML_SUCCESS) rc = g->memory_rc;
        if (rc == NVML_SUCCESS) rc = m->attributes_rc;
        if (rc == NVML_SUCCESS) rc = m->gi_rc;
        if (rc == NVML_SUCCESS) rc = m->ci_rc;
        if (rc != NVML_SUCCESS) return rc;
        if ((rc = instance_rc(gj, m->gi_id, -1, "nvmlDeviceGetGpuInstanceById")) != NVML_SUCCESS) return rc;
        if ((rc = instance_rc(gj, m->gi_id, -1, "nvmlGpuInstanceGetComputeInstanceById")) != NVML_SUCCESS) return rc;
        if ((rc = instance_rc(gj, m->gi_id, -1, "nvmlGpuInstanceGetInfo")) != NVML_SUCCESS) return rc;
        uint64_t gp, cp;
        const json_t *gie = mig_find(gj, m->gi_id, -1, NULL, "gi_profile");
        if (!gie || !get_u64(gie, "gi_profile", &gp)) return NS;
        if ((rc = instance_rc(gj, m->gi_id, m->ci_id, "nvmlComputeInstanceGetInfo")) != NVML_SUCCESS) return rc;
        const json_t *cie = mig_find(gj, m->gi_id, m->ci_id, NULL, "ci_profile");
        if (!cie || !get_u64(cie, "ci_profile", &cp)) return NS;
        rc = dev_rc(gj, "nvmlDeviceGetGpuInstanceProfileInfo");
        if (rc == NS || rc == NVML_ERROR_INVALID_ARGUMENT) return NVML_ERROR_NOT_FOUND;
        if (rc != NVML_SUCCESS) return rc;
        if (gp >= NVML_GPU_INSTANCE_PROFILE_COUNT) return NVML_ERROR_NOT_FOUND;
        rc = instance_rc(gj, m->gi_id, -1, "nvmlGpuInstanceGetComputeInstanceProfileInfo");
        if (rc == NS || rc == NVML_ERROR_INVALID_ARGUMENT) return NVML_ERROR_NOT_FOUND;
        if (rc != NVML_SUCCESS) return rc;
        if (cp >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT) return NVML_ERROR_NOT_FOUND;
        m->gi_profile = (unsigned)gp;
        m->ci_profile = (unsigned)cp;
        nvml_mig_profile_name(m->gi_profile, m->ci_profile, m->attributes.memory_mb, g->memory_total, m->profile,
                              sizeof m->profile);
        return NVML_SUCCESS;
}

/* Fills g's MIG devices from the description, as the probe enumerates them through the fake. Returns nothing. */
static void mig_devices_from_json(const json_t *gj, struct nvml_gpu_facts *g) {
        int rc;
        uint64_t max = 7, v;
        g->mig_max_rc = dev_rc(gj, "nvmlDeviceGetMaxMigDeviceCount");
        if (g->mig_max_rc != NVML_SUCCESS) return;
        get_u64(gj, "mig_max_devices", &max);
        g->mig_max = (unsigned)max;
        g->mig_devices_rc = NVML_SUCCESS;
        for (unsigned i = 0; i < g->mig_max && i < NVML_MAX_MIG_DEVICES; i++) {
                rc = dev_rc(gj, "nvmlDeviceGetMigDeviceHandleByIndex");
                if (rc != NVML_SUCCESS) {
                        g->mig_devices_rc = rc;
                        return;
                }
                const json_t *e = mig_entry(gj, i);
                if (!e) continue;
                struct nvml_mig_facts *m = &g->mig[g->n_mig++];
                memset(m, 0, sizeof *m);
                m->index = i;
                rc = injected(e, "nvmlDeviceGetUUID");
                m->uuid_rc = rc ? rc : put_string(e, "uuid", m->uuid, sizeof m->uuid);
                if (m->uuid_rc != NVML_SUCCESS) memset(m->uuid, 0, sizeof m->uuid);
                struct nvml_fact_u64 f = rc_or(injected(e, "nvmlDeviceGetGpuInstanceId"), answer_uint(e, "gi"));
                m->gi_rc = f.rc;
                m->gi_id = (unsigned)f.value;
                f = rc_or(injected(e, "nvmlDeviceGetComputeInstanceId"), answer_uint(e, "ci"));
                m->ci_rc = f.rc;
                m->ci_id = (unsigned)f.value;
                rc = injected(e, "nvmlDeviceGetAttributes");
                const json_t *a = json_object_get(e, "attributes");
                if (rc == NVML_SUCCESS && !json_is_object(a)) rc = NS;
                if (rc == NVML_SUCCESS) {
                        struct nvml_mig_attributes *t = &m->attributes;
                        t->multiprocessors = (unsigned)answer_uint(a, "multiprocessor_count").value;
                        t->copy_engines = (unsigned)answer_uint(a, "shared_copy_engine_count").value;
                        t->decoders = (unsigned)answer_uint(a, "shared_decoder_count").value;
                        t->encoders = (unsigned)answer_uint(a, "shared_encoder_count").value;
                        t->jpegs = (unsigned)answer_uint(a, "shared_jpeg_count").value;
                        t->ofas = (unsigned)answer_uint(a, "shared_ofa_count").value;
                        t->gi_slices = (unsigned)answer_uint(a, "gpu_instance_slice_count").value;
                        t->ci_slices = (unsigned)answer_uint(a, "compute_instance_slice_count").value;
                        t->memory_mb = answer_ull(a, "memory_size_mb").value;
                }
                m->attributes_rc = rc;
                rc = injected(e, "nvmlDeviceGetMemoryInfo");
                const json_t *mem = json_object_get(e, "memory");
                if (rc == NVML_SUCCESS && !json_is_object(mem)) rc = NS;
                if (rc == NVML_SUCCESS) {
                        if (get_u64(mem, "total", &v)) m->memory_total = v;
                        if (get_u64(mem, "used", &v)) m->memory_used = v;
                        if (get_u64(mem, "free", &v)) m->memory_free = v;
                }
                m->memory_rc = rc;
                m->profile_rc = mig_profile_from_json(gj, e, g, m);
        }
}

/* Sets a fact member by member (the probe does the same, so padding compares equal). Returns nothing. */
static void set_fact(struct nvml_fact_u64 *f, struct nvml_fact_u64 v) {
        f->rc = v.rc;
        f->value = v.rc == NVML_SUCCESS ? v.value : 0;
}

/* Reads a running-processes answer as the probe asks it (room for 2 * NVML_MAX_PROCESSES): the
 * count into *ret_n, the first entries into out (when not NULL). Returns an nvmlReturn_t. */
static int process_list_from_json(const json_t *gj, const char *key, const char *count_key, unsigned *ret_n,
                                  struct nvml_process_facts *out) {
        const json_t *a = json_object_get(gj, key);
        if (!json_is_array(a)) return NS;
        uint64_t extra = 0, v;
        get_u64(gj, count_key, &extra);
        uint64_t n = json_array_size(a);
        if (extra > n) n = extra;
        *ret_n = (unsigned)n;
        if (n > 2 * NVML_MAX_PROCESSES) return NVML_ERROR_INSUFFICIENT_SIZE;
        for (unsigned i = 0; out && i < n && i < NVML_MAX_PROCESSES; i++) {
                const json_t *p = json_array_get(a, i);
                out[i].pid = get_u64(p, "pid", &v) ? (unsigned)v : 0;
                out[i].used_memory = get_u64(p, "used_memory", &v) ? v : 0;
                out[i].gi = get_u64(p, "gi", &v) ? (unsigned)v : 0xFFFFFFFFu;
                out[i].ci = get_u64(p, "ci", &v) ? (unsigned)v : 0xFFFFFFFFu;
        }
        return NVML_SUCCESS;
}

/* The NVLink error counters' keys, in nvmlNvLinkErrorCounter_t order. */
static const char *const link_counter_keys[NVML_LINK_COUNTERS] = { "replay", "recovery", "crc_flit", "crc_data" };

/* Returns the answer to the n-th nvmlDeviceGetCurrentClocksEventReasons call on a GPU: a number
 * answers every call, an array the n-th element (the last one from then on). */
static struct nvml_fact_u64 reasons_answer(const json_t *gj, size_t n) {
        const json_t *a = json_object_get(gj, "clocks_event_reasons");
        if (!json_is_array(a)) return answer_ull(gj, "clocks_event_reasons");
        size_t len = json_array_size(a);
        const json_t *v = len ? json_array_get(a, n < len ? n : len - 1) : NULL;
        if (!json_is_integer(v)) return (struct nvml_fact_u64){ .rc = NS };
        return (struct nvml_fact_u64){ .rc = NVML_SUCCESS, .value = (uint64_t)json_integer_value(v) };
}

/* Records rc under errors[call] when it is an error the fake must replay (not success, not
 * "not supported", which the fake answers for a missing key, not "never asked"). Returns nothing. */
static void put_error(json_t *errors, const char *call, int rc) {
        if (rc == NVML_SUCCESS || rc == NS || rc == NVML_FACT_NOT_QUERIED) return;
        json_object_set_new(errors, call, json_integer(rc));
}

/* Sets obj[key] to the fact's value when it succeeded. Returns nothing. */
static void put_u64(json_t *obj, const char *key, const struct nvml_fact_u64 *v) {
        if (v->rc == NVML_SUCCESS) json_object_set_new(obj, key, json_integer((json_int_t)v->value));
}

/* Returns the JSON description of one MIG device (a new reference). */
static json_t *mig_device_to_json(const struct nvml_gpu_facts *g, const struct nvml_mig_facts *m) {
        json_t *o = json_object(), *errors = json_object();
        if (m->uuid_rc == NVML_SUCCESS) json_object_set_new(o, "uuid", json_string(m->uuid));
        put_error(errors, "nvmlDeviceGetUUID", m->uuid_rc);
        if (m->gi_rc == NVML_SUCCESS) json_object_set_new(o, "gi", json_integer(m->gi_id));
        put_error(errors, "nvmlDeviceGetGpuInstanceId", m->gi_rc);
        if (m->ci_rc == NVML_SUCCESS) json_object_set_new(o, "ci", json_integer(m->ci_id));
        put_error(errors, "nvmlDeviceGetComputeInstanceId", m->ci_rc);
        if (m->attributes_rc == NVML_SUCCESS) {
                const struct nvml_mig_attributes *a = &m->attributes;
                json_object_set_new(o, "attributes",
                                    json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "multiprocessor_count",
                                              (json_int_t)a->multiprocessors, "shared_copy_engine_count",
                                              (json_int_t)a->copy_engines, "shared_decoder_count",
                                              (json_int_t)a->decoders, "shared_encoder_count", (json_int_t)a->encoders,
                                              "shared_jpeg_count", (json_int_t)a->jpegs, "shared_ofa_count",
                                              (json_int_t)a->ofas, "gpu_instance_slice_count", (json_int_t)a->gi_slices,
                                              "compute_instance_slice_count", (json_int_t)a->ci_slices,
                                              "memory_size_mb", (json_int_t)a->memory_mb));
        }
        put_error(errors, "nvmlDeviceGetAttributes", m->attributes_rc);
        if (m->memory_rc == NVML_SUCCESS)
                json_object_set_new(o, "memory",
                                    json_pack("{s:I,s:I,s:I}", "total", (json_int_t)m->memory_total, "used",
                                              (json_int_t)m->memory_used, "free", (json_int_t)m->memory_free));
        put_error(errors, "nvmlDeviceGetMemoryInfo", m->memory_rc);
        if (m->profile_rc == NVML_SUCCESS) {
                json_object_set_new(o, "gi_profile", json_integer(m->gi_profile));
                json_object_set_new(o, "ci_profile", json_integer(m->ci_profile));
        } else {
                /* The reader derives the failure from earlier facts first (the GPU's memory, the
                 * attributes, the instance ids), as the probe does; otherwise it replays through an
                 * error of the lookup's first call, which is this MIG device's own (the GPU and compute
                 * instance calls are shared with the other MIG devices of the instance). */
                int derived = g->memory_rc != NVML_SUCCESS       ? g->memory_rc
                              : m->attributes_rc != NVML_SUCCESS ? m->attributes_rc
                              : m->gi_rc != NVML_SUCCESS         ? m->gi_rc
                                                                 : m->ci_rc;
                if ((derived == NVML_SUCCESS || derived != m->profile_rc) && m->profile_rc != NVML_FACT_NOT_QUERIED)
                        json_object_set_new(errors, "nvmlDeviceGetDeviceHandleFromMigDeviceHandle",
                                            json_integer(m->profile_rc));
        }
        if (json_object_size(errors) > 0)
                json_object_set_new(o, "errors", errors);
        else
                json_decref(errors);
        return o;
}

/* ---- the hand-written parts of a GPU's description, in NVML_GPU_FACTS and NVML_HEALTH_FACTS order ----
 * Each HOOK(name) of those lists is name_to_json, which writes g into the GPU's object o and its
 * errors, and name_from_json, which fills g from the GPU's description gj (d: the whole description)
 * as the probe asks through the fake. */

/* Returns o[name], the object holding a group of values, added to o (empty) when missing. */
static json_t *group(json_t *o, const char *name) {
        json_t *v = json_object_get(o, name);
        if (!v) {
                v = json_object();
                json_object_set_new(o, name, v);
        }
        return v;
}

/* Writes name and UUID. Returns nothing. */
static void identity_to_json(const struct nvml_gpu_facts *g, json_t *o, json_t *errors) {
        if (g->name_rc == NVML_SUCCESS) json_object_set_new(o, "name", json_string(g->name));
        put_error(errors, "nvmlDeviceGetName", g->name_rc);
        if (g->uuid_rc == NVML_SUCCESS) json_object_set_new(o, "uuid", json_string(g->uuid));
        put_error(errors, "nvmlDeviceGetUUID", g->uuid_rc);
}

/* Reads name and UUID. Returns nothing. */
static void identity_from_json(const json_t *d, const json_t *gj, struct nvml_gpu_facts *g) {
        int rc = dev_rc(gj, "nvmlDeviceGetName");
        g->name_rc = rc ? rc : put_string(gj, "name", g->name, sizeof g->name);
        if (g->name_rc != NVML_SUCCESS) memset(g->name, 0, sizeof g->name);
        rc = dev_rc(gj, "nvmlDeviceGetUUID");
        g->uuid_rc = rc ? rc : put_string(gj, "uuid", g->uuid, sizeof g->uuid);
        if (g->uuid_rc != NVML_SUCCESS) memset(g->uuid, 0, sizeof g->uuid);
}

/* Writes the PCI address and ids. Returns nothing. */
static void pci_to_json(const struct nvml_gpu_facts *g, json_t *o, json_t *errors) {
        if (g->pci_rc == NVML_SUCCESS) {
                json_object_set_new(o, "pci_bus_id", json_string(g->pci_bus_id));
                json_object_set_new(o, "pci_device_id", json_sprintf("0x%08X", g->pci_device_id));
                json_object_set_new(o, "pci_subsystem_id", json_sprintf("0x%08X", g->pci_subsystem_id));
        }
        put_error(errors, "nvmlDeviceGetPciInfo", g->pci_rc);
}

/* Reads the PCI address and ids. Returns nothing. */
static void pci_from_json(const json_t *d, const json_t *gj, struct nvml_gpu_facts *g) {
        int rc = dev_rc(gj, "nvmlDeviceGetPciInfo");
        if (rc == NVML_SUCCESS) {
                const char *full = json_string_value(json_object_get(gj, "pci_bus_id"));
                /* NVML's busId holds 31 characters: parse what fits, so that facts written back
                 * with nvml_facts_to_json load to the same facts. */
                char id[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
                unsigned dom, bus, dev, fn;
                if (full) snprintf(id, sizeof id, "%s", full);
                if (!full || sscanf(id, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4) {
                        rc = NS;
                } else {
                        uint64_t did = 0, sid = 0;
                        get_u64(gj, "pci_device_id", &did);
                        get_u64(gj, "pci_subsystem_id", &sid);
                        snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%s", id);
                        snprintf(g->pci_bus_id_legacy, sizeof g->pci_bus_id_legacy, NVML_DEVICE_PCI_BUS_ID_LEGACY_FMT,
                                 dom & 0xffff, bus, dev);
                        g->pci_domain = dom;
                        g->pci_bus = bus;
                        g->pci_device = dev;
                        g->pci_device_id = (uint32_t)did;
                        g->pci_subsystem_id = (uint32_t)sid;
                }
        }
        g->pci_rc = rc;
}

/* Writes the memory sizes. Returns nothing. */
static void memory_to_json(const struct nvml_gpu_facts *g, json_t *o, json_t *errors) {
        if (g->memory_rc == NVML_SUCCESS) {
                json_t *m = json_pack("{s:I,s:I,s:I}", "total", (json_int_t)g->memory_total, "used",
                                      (json_int_t)g->memory_used, "free", (json_int_t)g->memory_free);
                if (g->memory_version == 2)
                        json_object_set_new(m, "reserved", json_integer((json_int_t)g->memory_reserved));
                json_object_set_new(o, "memory", m);
        }
        put_error(errors, "nvmlDeviceGetMemoryInfo", g->memory_rc);
}

/* Reads the memory sizes: the probe asks nvmlDeviceGetMemoryInfo_v2 first; the fake answers it with
 * "reserved". Returns nothing. */
static void memory_from_json(const json_t *d, const json_t *gj, struct nvml_gpu_facts *g) {
        int rc = dev_rc(gj, "nvmlDeviceGetMemoryInfo");
        if (rc == NVML_SUCCESS) {
                const json_t *m = json_object_get(gj, "memory");
                if (!json_is_object(m)) {
                        rc = NS;
                } else {
                        uint64_t v;
                        g->memory_version = 2;
                        if (get_u64(m, "total", &v)) g->memory_total = v;
                        if (get_u64(m, "used", &v)) g->memory_used = v;
                        if (get_u64(m, "free", &v)) g->memory_free = v;
                        if (get_u64(m, "reserved", &v)) g->memory_reserved = v;
                }
        }
        g->memory_rc = rc;
}

/* Writes the CUDA compute capability. Returns nothing. */
static void compute_capability_to_json(const struct nvml_gpu_facts *g, json_t *o, json_t *errors) {
        if (g->cc_rc == NVML_SUCCESS)
                json_object_set_new(o, "compute_capability", json_pack("[i,i]", g->cc_major, g->cc_minor));
        put_error(errors, "nvmlDeviceGetCudaComputeCapability", g->cc_rc);
}

/* Reads the CUDA compute capability. Returns nothing. */
static void compute_capability_from_json(const json_t *d, const json_t *gj, struct nvml_gpu_facts *g) {
        int rc = dev_rc(gj, "nvmlDeviceGetCudaComputeCapability");
        if (rc == NVML_SUCCESS) {
                const json_t *cc = json_object_get(gj, "compute_capability");
                if (json_array_size(cc) != 2) {
                        rc = NS;
                } else {
                        g->cc_major = (int)json_integer_value(json_array_get(cc, 0));
                        g->cc_minor = (int)json_integer_value(json_array_get(cc, 1));
                }
        }
        g->cc_rc = rc;
}

/* Writes MIG mode and the MIG devices. Returns nothing. */
static void mig_to_json(const struct nvml_gpu_facts *g, json_t *o, json_t *errors) {
        if (g->mig_rc == NVML_SUCCESS)
                json_object_set_new(
                        o, "mig_mode",
                        json_pack("{s:i,s:i}", "current", (int)g->mig_current, "pending", (int)g->mig_pending));
        else if (g->mig_rc == NS)
                json_object_set_new(o, "mig_mode", json_null());
        put_error(errors, "nvmlDeviceGetMigMode", g->mig_rc);
        if (g->mig_max_rc == NVML_SUCCESS) json_object_set_new(o, "mig_max_devices", json_integer(g->mig_max));
        /* The fake answers these two without a key of their own: "not supported" is an injected error here. */
        put_error(errors, "nvmlDeviceGetMaxMigDeviceCount", g->mig_max_rc);
        if (g->mig_max_rc == NS) json_object_set_new(errors, "nvmlDeviceGetMaxMigDeviceCount", json_integer(NS));
        put_error(errors, "nvmlDeviceGetMigDeviceHandleByIndex", g->mig_devices_rc);
        if (g->mig_devices_rc == NS)
                json_object_set_new(errors, "nvmlDeviceGetMigDeviceHandleByIndex", json_integer(NS));
        if (g->n_mig > 0) {
                /* One entry per index up to the last device found; null answers NVML_ERROR_NOT_FOUND. */
                json_t *migs = json_array();
                for (unsigned i = 0, k = 0; k < g->n_mig; i++) {
                        if (g->mig[k].index == i)
                                json_array_append_new(migs, mig_device_to_json(g, &g->mig[k++]));
                        else
                                json_array_append_new(migs, json_null());
                }
                json_object_set_new(o, "mig_devices", migs);
        }
}

/* Reads MIG mode, then the MIG devices when it is enabled. Returns nothing. */
static void mig_from_json(const json_t *d, const json_t *gj, struct nvml_gpu_facts *g) {
        int rc = dev_rc(gj, "nvmlDeviceGetMigMode");
        if (rc == NVML_SUCCESS) {
                const json_t *m = json_object_get(gj, "mig_mode");
                if (!json_is_object(m)) {
                        rc = NS;
                } else {
                        struct nvml_fact_u64 c = answer_uint(m, "current"), p = answer_uint(m, "pending");
                        g->mig_current = c.rc == NVML_SUCCESS ? (unsigned)c.value : 0;
                        g->mig_pending = p.rc == NVML_SUCCESS ? (unsigned)p.value : g->mig_current;
                }
        }
        g->mig_rc = rc;
        if (g->mig_rc == NVML_SUCCESS && g->mig_current == NVML_DEVICE_MIG_ENABLE) mig_devices_from_json(gj, g);
}

/* Writes the fabric state. Returns nothing. */
static void fabric_to_json(const struct nvml_gpu_facts *g, json_t *o, json_t *errors) {
        if (g->fabric_rc == NVML_SUCCESS)
                json_object_set_new(o, "fabric",
                                    json_pack("{s:i,s:i,s:s,s:I,s:I}", "state", (int)g->fabric_state, "status",
                                              g->fabric_status, "cluster_uuid", g->fabric_cluster_uuid, "clique_id",
                                              (json_int_t)g->fabric_clique_id, "health_mask",
                                              (json_int_t)g->fabric_health_mask));
        else if (g->fabric_rc == NS)
                json_object_set_new(o, "fabric", json_null());
        put_error(errors, "nvmlDeviceGetGpuFabricInfo", g->fabric_rc);
}

/* Reads the fabric state (the version the description's fabric_info_max_version allows). Returns nothing. */
static void fabric_from_json(const json_t *d, const json_t *gj, struct nvml_gpu_facts *g) {
        int rc = dev_rc(gj, "nvmlDeviceGetGpuFabricInfo");
        if (rc == NVML_SUCCESS) {
                const json_t *f = json_object_get(gj, "fabric");
                uint64_t maxv = 3;
                get_u64(d, "fabric_info_max_version", &maxv);
                if (!json_is_object(f)) {
                        rc = NS;
                } else {
                        struct nvml_fact_u64 st = answer_uint(f, "status"), cl = answer_uint(f, "clique_id"),
                                             sa = answer_uint(f, "state"), he = answer_uint(f, "health_mask");
                        g->fabric_version = maxv >= 3 ? 3 : 2;
                        fabric_uuid(json_string_value(json_object_get(f, "cluster_uuid")), g->fabric_cluster_uuid);
                        g->fabric_status = st.rc == NVML_SUCCESS ? (int)st.value : NVML_SUCCESS;
                        g->fabric_clique_id = cl.rc == NVML_SUCCESS ? (unsigned)cl.value : 0;
                        g->fabric_state = sa.rc == NVML_SUCCESS ? (unsigned)sa.value : 0;
                        g->fabric_health_mask = he.rc == NVML_SUCCESS ? (unsigned)he.value : 0;
                }
        }
        g->fabric_rc = rc;
}

/* Writes the ECC mode, first in "ecc" (the error counters follow it there). Returns nothing. */
static void ecc_mode_to_json(const struct nvml_gpu_facts *g, json_t *o, json_t *errors) {
        json_t *ecc = group(o, "ecc");
        if (g->ecc_mode_rc == NVML_SUCCESS) {
                json_object_set_new(ecc, "mode_current", json_integer(g->ecc_mode_current));
                json_object_set_new(ecc, "mode_pending", json_integer(g->ecc_mode_pending));
        }
        put_error(errors, "nvmlDeviceGetEccMode", g->ecc_mode_rc);
}

/* Reads the ECC mode. Returns nothing. */
static void ecc_mode_from_json(const json_t *d, const json_t *gj, struct nvml_gpu_facts *g) {
        const json_t *ecc = json_object_get(gj, "ecc");
        int rc = dev_rc(gj, "nvmlDeviceGetEccMode");
        if (rc == NVML_SUCCESS) {
                struct nvml_fact_u64 c = answer_uint(ecc, "mode_current"), p = answer_uint(ecc, "mode_pending");
                if (c.rc != NVML_SUCCESS) {
                        rc = NS;
                } else {
                        g->ecc_mode_current = c.value != 0;
                        g->ecc_mode_pending = (p.rc == NVML_SUCCESS ? p.value : c.value) != 0;
                }
        }
        g->ecc_mode_rc = rc;
}

/* Writes the remapped rows. Returns nothing. */
static void remapped_rows_to_json(const struct nvml_gpu_facts *g, json_t *o, json_t *errors) {
        if (g->remapped_rows_rc == NVML_SUCCESS)
                json_object_set_new(o, "remapped_rows",
                                    json_pack("{s:I,s:I,s:b,s:b}", "correctable", (json_int_t)g->remapped_correctable,
                                              "uncorrectable", (json_int_t)g->remapped_uncorrectable, "pending",
                                              g->remapped_pending, "failure", g->remapped_failure));
        put_error(errors, "nvmlDeviceGetRemappedRows", g->remapped_rows_rc);
}

/* Reads the remapped rows. Returns nothing. */
static void remapped_rows_from_json(const json_t *d, const json_t *gj, struct nvml_gpu_facts *g) {
        int rc = dev_rc(gj, "nvmlDeviceGetRemappedRows");
        if (rc == NVML_SUCCESS) {
                const json_t *r = json_object_get(gj, "remapped_rows");
                if (!json_is_object(r)) {
                        rc = NS;
                } else {
                        struct nvml_fact_u64 c = answer_uint(r, "correctable"), u = answer_uint(r, "uncorrectable"),
                                             p = answer_uint(r, "pending"), f = answer_uint(r, "failure");
                        g->remapped_correctable = (unsigned)c.value;
                        g->remapped_uncorrectable = (unsigned)u.value;
                        g->remapped_pending = p.value != 0;
                        g->remapped_failure = f.value != 0;
                }
        }
        g->remapped_rows_rc = rc;
}

/* Writes the field values call and, when it answered, its values. Returns nothing. */
static void field_values_to_json(const struct nvml_gpu_facts *g, json_t *o, json_t *errors) {
        put_error(errors, "nvmlDeviceGetFieldValues", g->field_values_rc);
        if (g->field_values_rc == NVML_SUCCESS) {
                put_u64(o, "recovery_action", &g->recovery_action);
                put_u64(o, "memory_temperature", &g->memory_temperature);
        }
}

/* Reads the field values: a key of their own, else the description's "fields" by field id. Returns nothing. */
static void field_values_from_json(const json_t *d, const json_t *gj, struct nvml_gpu_facts *g) {
        int rc = dev_rc(gj, "nvmlDeviceGetFieldValues");
        g->field_values_rc = rc;
        if (rc != NVML_SUCCESS) {
                set_fact(&g->recovery_action, (struct nvml_fact_u64){ .rc = rc });
                set_fact(&g->memory_temperature, (struct nvml_fact_u64){ .rc = rc });
                return;
        }
        const json_t *fields = json_object_get(gj, "fields");
        /* The fake answers these keys as unsigned int; read them whole (as nvml_facts_to_json
         * writes them) so that a round trip keeps values beyond 32 bits. */
        struct nvml_fact_u64 ra = answer_ull(gj, "recovery_action");
        set_fact(&g->recovery_action, ra.rc == NVML_SUCCESS ? ra : answer_ull(fields, "230"));
        struct nvml_fact_u64 mt = answer_ull(gj, "memory_temperature");
        set_fact(&g->memory_temperature, mt.rc == NVML_SUCCESS ? mt : answer_ull(fields, "82"));
}

/* Writes the utilization rates. Returns nothing. */
static void utilization_to_json(const struct nvml_gpu_facts *g, json_t *o, json_t *errors) {
        if (g->utilization_rc == NVML_SUCCESS)
                json_object_set_new(
                        o, "utilization",
                        json_pack("{s:i,s:i}", "gpu", (int)g->utilization_gpu, "memory", (int)g->utilization_memory));
        put_error(errors, "nvmlDeviceGetUtilizationRates", g->utilization_rc);
}

/* Reads the utilization rates. Returns nothing. */
static void utilization_from_json(const json_t *d, const json_t *gj, struct nvml_gpu_facts *g) {
        int rc = dev_rc(gj, "nvmlDeviceGetUtilizationRates");
        if (rc == NVML_SUCCESS) {
                const json_t *u = json_object_get(gj, "utilization");
                if (!json_is_object(u)) {
                        rc = NS;
                } else {
                        g->utilization_gpu = (unsigned)answer_uint(u, "gpu").value;
                        g->utilization_memory = (unsigned)answer_uint(u, "memory").value;
                }
        }
        g->utilization_rc = rc;
}

/* Writes both readings of the clock event reasons: one number, or a pair when they differ. Returns nothing. */
static void clocks_event_reasons_to_json(const struct nvml_gpu_facts *g, json_t *o, json_t *errors) {
        const struct nvml_fact_u64 *again = &g->health.clocks_event_reasons_again;
        if (g->clocks_event_reasons.rc == NVML_SUCCESS && again->rc == NVML_SUCCESS &&
            again->value != g->clocks_event_reasons.value)
                /* Two readings that differ: the fake answers them in turn. */
                json_object_set_new(
                        o, "clocks_event_reasons",
                        json_pack("[I,I]", (json_int_t)g->clocks_event_reasons.value, (json_int_t)again->value));
        else
                put_u64(o, "clocks_event_reasons", &g->clocks_event_reasons);
        put_error(errors, "nvmlDeviceGetCurrentClocksEventReasons", g->clocks_event_reasons.rc);
}

/* Reads both readings of the clock event reasons. Returns nothing. */
static void clocks_event_reasons_from_json(const json_t *d, const json_t *gj, struct nvml_gpu_facts *g) {
        set_fact(&g->clocks_event_reasons,
                 rc_or(dev_rc(gj, "nvmlDeviceGetCurrentClocksEventReasons"), reasons_answer(gj, 0)));
        set_fact(&g->health.clocks_event_reasons_again,
                 rc_or(dev_rc(gj, "nvmlDeviceGetCurrentClocksEventReasons"), reasons_answer(gj, 1)));
}

/* Writes the NVLinks. The walk ends where a link did not answer: NOT_SUPPORTED on link 0 is no
 * "nvlinks" at all, INVALID_ARGUMENT the array's end, another code a last entry {"error": code}.
 * NOT_SUPPORTED past link 0 (a library built for more links than the GPU has: 36 against an H100's
 * 18) is such a last entry too, so a replay sees the links the live walk saw. Returns nothing. */
static void nvlinks_to_json(const struct nvml_gpu_facts *g, json_t *o, json_t *errors) {
        const struct nvml_health_facts *h = &g->health;
        if ((h->nvlink_rc == NS && h->n_links == 0) || h->nvlink_rc == NVML_FACT_NOT_QUERIED) return;
        json_t *links = json_array();
        for (unsigned l = 0; l < h->n_links && l < NVML_NVLINK_MAX_LINKS; l++) {
                const struct nvml_link_facts *k = &h->links[l];
                json_t *e = json_pack("{s:b}", "active", (int)k->active), *ce = json_object();
                for (unsigned c = 0; c < NVML_LINK_COUNTERS; c++) {
                        put_u64(e, link_counter_keys[c], &k->errors[c]);
                        put_error(ce, link_counter_keys[c], k->errors[c].rc);
                }
                if (json_object_size(ce) > 0)
                        json_object_set_new(e, "counter_errors", ce);
                else
                        json_decref(ce);
                json_array_append_new(links, e);
        }
        if (h->nvlink_rc != NVML_SUCCESS && h->nvlink_rc != NVML_ERROR_INVALID_ARGUMENT)
                json_array_append_new(links, json_pack("{s:i}", "error", h->nvlink_rc));
        json_object_set_new(o, "nvlinks", links);
}

/* Reads the NVLinks: states, and the error counters of the active ones. Returns nothing. */
static void nvlinks_from_json(const json_t *d, const json_t *gj, struct nvml_gpu_facts *g) {
        struct nvml_health_facts *h = &g->health;
        const json_t *links = json_object_get(gj, "nvlinks");
        h->nvlink_rc = NVML_SUCCESS;
        for (unsigned l = 0; l < NVML_NVLINK_MAX_LINKS; l++) {
                const json_t *e = json_array_get(links, l);
                const json_t *err = json_object_get(e, "error");
                int rc = dev_rc(gj, "nvmlDeviceGetNvLinkState");
                if (rc == NVML_SUCCESS && !json_is_array(links))
                        rc = NS;
                else if (rc == NVML_SUCCESS && !json_is_object(e))
                        rc = NVML_ERROR_INVALID_ARGUMENT;
                else if (rc == NVML_SUCCESS && json_is_integer(err))
                        rc = (int)json_integer_value(err);
                if (rc != NVML_SUCCESS) {
                        h->nvlink_rc = rc;
                        break;
                }
                struct nvml_link_facts *k = &h->links[h->n_links++];
                k->active = json_is_true(json_object_get(e, "active"));
                if (!k->active) continue;
                for (unsigned c = 0; c < NVML_LINK_COUNTERS; c++) {
                        int crc = dev_rc(gj, "nvmlDeviceGetNvLinkErrorCounter");
                        const json_t *ce = json_object_get(json_object_get(e, "counter_errors"), link_counter_keys[c]);
                        if (crc == NVML_SUCCESS && json_is_integer(ce)) crc = (int)json_integer_value(ce);
                        set_fact(&k->errors[c], rc_or(crc, answer_ull(e, link_counter_keys[c])));
                }
        }
}

/* Writes the compute processes, then how many graphics processes. Returns nothing. */
static void processes_to_json(const struct nvml_gpu_facts *g, json_t *o, json_t *errors) {
        const struct nvml_health_facts *h = &g->health;
        if (h->processes_rc == NVML_SUCCESS || h->processes_rc == NVML_ERROR_INSUFFICIENT_SIZE) {
                json_t *a = json_array();
                unsigned kept = h->processes_rc == NVML_SUCCESS ? h->n_processes : 0;
                for (unsigned i = 0; i < kept && i < NVML_MAX_PROCESSES; i++) {
                        const struct nvml_process_facts *p = &h->processes[i];
                        json_t *e = json_pack("{s:I,s:I}", "pid", (json_int_t)p->pid, "used_memory",
                                              (json_int_t)p->used_memory);
                        if (p->gi != 0xFFFFFFFFu) json_object_set_new(e, "gi", json_integer(p->gi));
                        if (p->ci != 0xFFFFFFFFu) json_object_set_new(e, "ci", json_integer(p->ci));
                        json_array_append_new(a, e);
                }
                json_object_set_new(o, "processes", a);
                if (h->n_processes > json_array_size(a))
                        json_object_set_new(o, "processes_count", json_integer(h->n_processes));
        } else {
                put_error(errors, "nvmlDeviceGetComputeRunningProcesses", h->processes_rc);
        }
        if (h->graphics_processes.rc == NVML_SUCCESS) {
                json_t *a = json_array();
                json_object_set_new(o, "graphics_processes", a);
                if (h->graphics_processes.value > 0)
                        json_object_set_new(o, "graphics_processes_count",
                                            json_integer((json_int_t)h->graphics_processes.value));
        }
        put_error(errors, "nvmlDeviceGetGraphicsRunningProcesses", h->graphics_processes.rc);
}

/* Reads the compute processes and how many graphics processes. Returns nothing. */
static void processes_from_json(const json_t *d, const json_t *gj, struct nvml_gpu_facts *g) {
        struct nvml_health_facts *h = &g->health;
        int rc = dev_rc(gj, "nvmlDeviceGetComputeRunningProcesses");
        unsigned n = 0;
        if (rc == NVML_SUCCESS) rc = process_list_from_json(gj, "processes", "processes_count", &n, h->processes);
        h->processes_rc = rc;
        if (rc == NVML_SUCCESS || rc == NVML_ERROR_INSUFFICIENT_SIZE) h->n_processes = n;

        rc = dev_rc(gj, "nvmlDeviceGetGraphicsRunningProcesses");
        n = 0;
        if (rc == NVML_SUCCESS)
                rc = process_list_from_json(gj, "graphics_processes", "graphics_processes_count", &n, NULL);
        if (rc == NVML_ERROR_INSUFFICIENT_SIZE) rc = NVML_SUCCESS;
        set_fact(&h->graphics_processes, (struct nvml_fact_u64){ .rc = rc, .value = n });
}

/* Writes the drain state; a PCI error already stops the call in the reader. Returns nothing. */
static void drain_state_to_json(const struct nvml_gpu_facts *g, json_t *o, json_t *errors) {
        put_u64(o, "drain_state", &g->health.drain_state);
        if (g->pci_rc == NVML_SUCCESS) put_error(errors, "nvmlDeviceQueryDrainState", g->health.drain_state.rc);
}

/* Reads the drain state: nvmlDeviceQueryDrainState takes the PCI address nvmlDeviceGetPciInfo gave.
 * Returns nothing. */
static void drain_state_from_json(const json_t *d, const json_t *gj, struct nvml_gpu_facts *g) {
        int rc = g->pci_rc != NVML_SUCCESS ? g->pci_rc : dev_rc(gj, "nvmlDeviceQueryDrainState");
        struct nvml_fact_u64 dr = rc_or(rc, answer_uint(gj, "drain_state"));
        if (dr.rc == NVML_SUCCESS) dr.value = dr.value != 0;
        set_fact(&g->health.drain_state, dr);
}

/* ---- the table: every row of NVML_GPU_FACTS and NVML_HEALTH_FACTS ---- */

/* A FACT row (to_json NULL: its fact at offset in struct nvml_gpu_facts) or a HOOK row. */
struct fact_row {
        size_t offset;
        enum nvml_fact_conv conv;
        const char *group, *key, *call;
        void (*to_json)(const struct nvml_gpu_facts *g, json_t *o, json_t *errors);
        void (*from_json)(const json_t *d, const json_t *gj, struct nvml_gpu_facts *g);
};

#define GPU_ROW(member, conv, group, key, call)                                                                        \
        { offsetof(struct nvml_gpu_facts, member), conv, group, key, call, NULL, NULL },
#define HEALTH_ROW(member, conv, group, key, call)                                                                     \
        { offsetof(struct nvml_gpu_facts, health.member), conv, group, key, call, NULL, NULL },
#define HOOK_ROW(name) { 0, NVML_FACT_OWN, NULL, NULL, NULL, name##_to_json, name##_from_json },
/* clang-format off */
static const struct fact_row fact_rows[] = {
        NVML_GPU_FACTS(GPU_ROW, HOOK_ROW)
        NVML_HEALTH_FACTS(HEALTH_ROW, HOOK_ROW)
};
/* clang-format on */
#undef GPU_ROW
#undef HEALTH_ROW
#undef HOOK_ROW

/* Writes one scalar fact into its group (or o) and the first error of its call. Returns nothing. */
static void fact_to_json(const struct fact_row *r, const struct nvml_fact_u64 *f, json_t *o, json_t *errors) {
        json_t *obj = r->group ? group(o, r->group) : o;
        if (f->rc == NVML_SUCCESS)
                json_object_set_new(obj, r->key,
                                    r->conv == NVML_FACT_BOOL ? json_boolean(f->value)
                                                              : json_integer((json_int_t)f->value));
        if (!json_object_get(errors, r->call)) put_error(errors, r->call, f->rc);
}

/* Reads one scalar fact as the probe asks it through the fake. Returns nothing. */
static void fact_from_json(const struct fact_row *r, const json_t *gj, struct nvml_fact_u64 *f) {
        const json_t *obj = r->group ? json_object_get(gj, r->group) : gj;
        struct nvml_fact_u64 v = rc_or(dev_rc(gj, r->call),
                                       r->conv == NVML_FACT_U64 ? answer_ull(obj, r->key) : answer_uint(obj, r->key));
        if (v.rc == NVML_SUCCESS && (r->conv == NVML_FACT_FLAG || r->conv == NVML_FACT_BOOL)) v.value = v.value != 0;
        if (v.rc == NVML_SUCCESS && r->conv == NVML_FACT_TEMP) {
                /* An int answer (nvmlTemperature_t); the probe keeps only positive values. */
                int t = (int)(unsigned)v.value;
                v.value = t > 0 ? (uint64_t)t : 0;
        }
        set_fact(f, v);
}

/* Returns the JSON description of one GPU (a new reference), row by row of the table. */
static json_t *gpu_to_json(const struct nvml_gpu_facts *g) {
        json_t *o = json_object(), *errors = json_object();
        put_error(errors, "nvmlDeviceGetHandleByIndex", g->handle_rc);
        for (size_t i = 0; i < ELEMENTSOF(fact_rows); i++) {
                const struct fact_row *r = &fact_rows[i];
                if (r->to_json)
                        r->to_json(g, o, errors);
                else if (r->conv != NVML_FACT_OWN)
                        fact_to_json(r, (const struct nvml_fact_u64 *)((const char *)g + r->offset), o, errors);
        }
        /* A group none of whose facts answered is left out. */
        for (size_t i = 0; i < ELEMENTSOF(fact_rows); i++)
                if (fact_rows[i].group && json_object_size(json_object_get(o, fact_rows[i].group)) == 0)
                        json_object_del(o, fact_rows[i].group);
        if (json_object_size(errors) > 0)
                json_object_set_new(o, "errors", errors);
        else
                json_decref(errors);
        return o;
}

/* Fills g from the GPU description gj, row by row of the table. Returns nothing. */
static void gpu_from_json(const json_t *d, const json_t *gj, struct nvml_gpu_facts *g) {
        g->complete = true;
        g->handle_rc = injected(gj, "nvmlDeviceGetHandleByIndex");
        if (g->handle_rc != NVML_SUCCESS) return;
        for (size_t i = 0; i < ELEMENTSOF(fact_rows); i++) {
                const struct fact_row *r = &fact_rows[i];
                if (r->from_json)
                        r->from_json(d, gj, g);
                else if (r->conv != NVML_FACT_OWN)
                        fact_from_json(r, gj, (struct nvml_fact_u64 *)((char *)g + r->offset));
        }
}

/* Sets *ret_error to a malloc'd sentence when ret_error is given. Returns -EINVAL. */
static int invalid(char **ret_error, char *msg) {
        if (ret_error)
                *ret_error = msg;
        else
                free(msg);
        return -EINVAL;
}

int nvml_facts_from_json(const char *json, size_t len, struct nvml_facts **ret, char **ret_error) {
        if (ret_error) *ret_error = NULL;
        if (len > NVML_FACTS_JSON_MAX_BYTES) {
                if (ret_error)
                        *ret_error = xasprintf("NVML description is %zu bytes, more than %u", len,
                                               NVML_FACTS_JSON_MAX_BYTES);
                return -EFBIG;
        }
        json_error_t jerr;
        json_t *d = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!d)
                return invalid(ret_error, xasprintf("NVML description: %s at line %d column %d", jerr.text, jerr.line,
                                                    jerr.column));
        if (!json_is_object(d)) {
                json_decref(d);
                return invalid(ret_error, xstrdup("NVML description: not a JSON object"));
        }
        /* gpus belongs to d: every refusal below says what it needs of gpus first, then releases d. */
        const json_t *gpus = json_object_get(d, "gpus");
        size_t n_gpus = json_array_size(gpus);
        char *why = NULL;
        if (gpus && !json_is_array(gpus))
                why = xstrdup("NVML description: \"gpus\" is not an array");
        else if (n_gpus > MAX_GPUS)
                why = xasprintf("NVML description: %zu GPUs, more than %d", n_gpus, MAX_GPUS);
        for (size_t i = 0; !why && i < n_gpus; i++)
                if (!json_is_object(json_array_get(gpus, i)))
                        why = xasprintf("NVML description: gpus[%zu] is not an object", i);
        if (why) {
                json_decref(d);
                return invalid(ret_error, why);
        }

        struct nvml_facts *f = xcalloc(1, sizeof *f);
        f->driver_version_rc = f->nvml_version_rc = f->device_count_rc = NVML_FACT_NOT_QUERIED;
        f->cuda_driver_version.rc = NVML_FACT_NOT_QUERIED;
        f->blocked_gpu = -1;
        f->caller_pid_namespace = -1;
        uint64_t pidns;
        if (get_u64(d, "caller_pid_namespace", &pidns) && pidns <= 1) f->caller_pid_namespace = (int)pidns;

        const json_t *ie = json_object_get(d, "init_error");
        f->init_rc = json_is_integer(ie) ? (int)json_integer_value(ie) : NVML_SUCCESS;
        if (f->init_rc != NVML_SUCCESS) {
                snprintf(f->init_error, sizeof f->init_error, "%s", nvml_error_string(f->init_rc));
                goto out;
        }
        int rc = injected(d, "nvmlSystemGetDriverVersion");
        f->driver_version_rc = rc ? rc : put_string(d, "driver_version", f->driver_version, sizeof f->driver_version);
        if (f->driver_version_rc != NVML_SUCCESS) memset(f->driver_version, 0, sizeof f->driver_version);
        rc = injected(d, "nvmlSystemGetNVMLVersion");
        f->nvml_version_rc = rc ? rc : put_string(d, "nvml_version", f->nvml_version, sizeof f->nvml_version);
        if (f->nvml_version_rc != NVML_SUCCESS) memset(f->nvml_version, 0, sizeof f->nvml_version);
        f->cuda_driver_version =
                rc_or(injected(d, "nvmlSystemGetCudaDriverVersion"), answer_uint(d, "cuda_driver_version"));
        if (f->cuda_driver_version.rc == NVML_SUCCESS) {
                int v = (int)(unsigned)f->cuda_driver_version.value;
                f->cuda_driver_version.value = v > 0 ? (uint64_t)v : 0;
        }

        f->device_count_rc = injected(d, "nvmlDeviceGetCount");
        if (f->device_count_rc == NVML_SUCCESS) {
                f->device_count = (unsigned)json_array_size(gpus);
                if (f->device_count > 0) f->gpus = xcalloc(f->device_count, sizeof *f->gpus);
                for (unsigned i = 0; i < f->device_count; i++) {
                        nvml_gpu_facts_init(&f->gpus[i], i);
                        gpu_from_json(d, json_array_get(gpus, i), &f->gpus[i]);
                }
                f->n_gpus = f->device_count;
        }
out:
        json_decref(d);
        *ret = f;
        return 0;
}

int nvml_facts_to_json(const struct nvml_facts *f, char **ret) {
        json_t *root = json_object(), *errors = json_object(), *gpus = json_array();

        if (f->init_rc != NVML_SUCCESS && f->init_rc != NVML_FACT_NOT_QUERIED)
                json_object_set_new(root, "init_error", json_integer(f->init_rc));
        if (f->driver_version_rc == NVML_SUCCESS)
                json_object_set_new(root, "driver_version", json_string(f->driver_version));
        put_error(errors, "nvmlSystemGetDriverVersion", f->driver_version_rc);
        if (f->nvml_version_rc == NVML_SUCCESS) json_object_set_new(root, "nvml_version", json_string(f->nvml_version));
        put_error(errors, "nvmlSystemGetNVMLVersion", f->nvml_version_rc);
        put_u64(root, "cuda_driver_version", &f->cuda_driver_version);
        put_error(errors, "nvmlSystemGetCudaDriverVersion", f->cuda_driver_version.rc);
        put_error(errors, "nvmlDeviceGetCount", f->device_count_rc);
        if (f->caller_pid_namespace >= 0)
                json_object_set_new(root, "caller_pid_namespace", json_integer(f->caller_pid_namespace));
        if (json_object_size(errors) > 0)
                json_object_set_new(root, "errors", errors);
        else
                json_decref(errors);

        for (unsigned i = 0; i < f->n_gpus; i++) json_array_append_new(gpus, gpu_to_json(&f->gpus[i]));
        json_object_set_new(root, "gpus", gpus);

        char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        json_decref(root);
        if (!s) return -ENOMEM;
        /* jansson's allocator is malloc unless the program changed it; hand out a plain malloc'd copy. */
        *ret = xstrdup(s);
        free(s);
        return 0;
}
