/* nvml_probe.c: a worker thread asks NVML for every fact gpunode needs; the caller waits a bounded time. */
#include "nvml/nvml_probe.h"

#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <time.h>

#include "basic/util.h"

/* A sanity bound on nvmlDeviceGetCount: no node has more GPUs than this. */
#define NVML_PROBE_MAX_GPUS 1024

/* Probe workers that timed out and are still inside NVML. */
static unsigned abandoned_workers;

/*
 * State shared by the caller and the worker. The worker fills w (its own) without the lock and,
 * before every NVML call, copies w into pub under the lock, with the name of the call it is about
 * to make. The caller only reads pub, under the lock. The last of the two to leave frees it.
 */
struct probe_state {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        int refs;       /* under lock: 2 while both caller and worker hold it */
        bool done;      /* under lock: the worker finished */
        bool abandoned; /* under lock: the caller gave up waiting */
        struct nvml_facts pub; /* under lock; pub.gpus has room for pub_cap records */
        unsigned pub_cap;
        char call[64]; /* under lock: the call in progress */
        int call_gpu;

        struct nvml_lib *lib; /* worker's reference */
        struct nvml_facts w;  /* worker only */
};

/* Frees the shared state. Returns nothing; never fails. */
static void probe_state_free(struct probe_state *st) {
        pthread_mutex_destroy(&st->lock);
        pthread_cond_destroy(&st->cond);
        free(st->pub.gpus);
        free(st->w.gpus);
        free(st);
}

/* Drops one reference under the lock. Returns nothing; the last reference frees st. */
static void probe_state_unref_locked(struct probe_state *st) {
        bool last = --st->refs == 0;
        pthread_mutex_unlock(&st->lock);
        if (last) probe_state_free(st);
}

/* Copies the worker's facts into pub. Caller holds the lock. Returns nothing; never fails. */
static void publish_locked(struct probe_state *st) {
        struct nvml_gpu_facts *gpus = st->pub.gpus;
        st->pub = st->w;
        st->pub.gpus = gpus;
        st->pub.library_path = NULL;
        if (st->w.n_gpus > 0) {
                if (!st->pub.gpus) {
                        st->pub_cap = st->w.device_count;
                        st->pub.gpus = xcalloc(st->pub_cap, sizeof *st->pub.gpus);
                }
                memcpy(st->pub.gpus, st->w.gpus, st->w.n_gpus * sizeof *st->w.gpus);
        }
}

/* Publishes progress and names the call about to be made. Returns false when the caller gave up. */
static bool step(struct probe_state *st, const char *call, int gpu) {
        pthread_mutex_lock(&st->lock);
        publish_locked(st);
        snprintf(st->call, sizeof st->call, "%s", call);
        st->call_gpu = gpu;
        bool go_on = !st->abandoned;
        pthread_mutex_unlock(&st->lock);
        return go_on;
}

/* Returns the fact { rc, value } for an unsigned result. */
static struct nvml_fact_u64 fact(nvmlReturn_t rc, uint64_t v) {
        return (struct nvml_fact_u64){ .rc = rc, .value = rc == NVML_SUCCESS ? v : 0 };
}

/* Returns a field value as an unsigned number, whatever its type (negative values clamp to 0). */
static uint64_t field_u64(const nvmlFieldValue_t *v) {
        switch (v->valueType) {
        case NVML_VALUE_TYPE_DOUBLE: return v->value.dVal > 0 ? (uint64_t)v->value.dVal : 0;
        case NVML_VALUE_TYPE_UNSIGNED_INT: return v->value.uiVal;
        case NVML_VALUE_TYPE_UNSIGNED_LONG: return v->value.ulVal;
        case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: return v->value.ullVal;
        case NVML_VALUE_TYPE_SIGNED_LONG_LONG: return v->value.sllVal > 0 ? (uint64_t)v->value.sllVal : 0;
        case NVML_VALUE_TYPE_SIGNED_INT: return v->value.siVal > 0 ? (uint64_t)v->value.siVal : 0;
        case NVML_VALUE_TYPE_UNSIGNED_SHORT: return v->value.usVal;
        default: return v->value.ullVal;
        }
}

/* Sets every fact of g to NVML_FACT_NOT_QUERIED. Returns nothing. */
static void gpu_facts_init(struct nvml_gpu_facts *g, unsigned index) {
        memset(g, 0, sizeof *g);
        g->index = index;
        g->handle_rc = g->name_rc = g->uuid_rc = g->pci_rc = g->memory_rc = g->cc_rc = g->mig_rc =
                g->fabric_rc = g->ecc_mode_rc = g->remapped_rows_rc = g->field_values_rc =
                        g->utilization_rc = g->mig_max_rc = g->mig_devices_rc = NVML_FACT_NOT_QUERIED;
        struct nvml_fact_u64 *u[] = {
                &g->minor_number, &g->persistence_mode, &g->ecc_volatile_corrected,
                &g->ecc_volatile_uncorrected, &g->ecc_aggregate_corrected, &g->ecc_aggregate_uncorrected,
                &g->recovery_action, &g->memory_temperature, &g->temperature, &g->power_mw, &g->energy_mj,
                &g->clock_sm_mhz, &g->clock_mem_mhz, &g->pcie_replay, &g->clocks_event_reasons,
        };
        for (size_t i = 0; i < ELEMENTSOF(u); i++) u[i]->rc = NVML_FACT_NOT_QUERIED;
}

/* Formats a 16-byte fabric cluster UUID as 8-4-4-4-12 hex. Returns nothing. */
static void format_uuid(const unsigned char b[16], char out[37]) {
        snprintf(out, 37,
                 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                 b[14], b[15]);
}


int nvml_mig_profile_name(unsigned gi_profile, unsigned ci_profile, uint64_t mig_memory_mb, uint64_t gpu_memory_bytes,
                          char *buf, size_t size) {
        /* go-nvlib pkg/nvlib/device/mig_profile.go NewMigProfile and String. */
        unsigned g, c;
        const char *suffix = "";
        if (size > 0) buf[0] = 0;
        switch (gi_profile) {
        case NVML_GPU_INSTANCE_PROFILE_1_SLICE: g = 1; break;
        case NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1: g = 1; suffix = "+me"; break;
        case NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2: g = 1; break;
        case NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX: g = 1; suffix = "+gfx"; break;
        case NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME: g = 1; suffix = "-me"; break;
        case NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME: g = 1; suffix = "+me.all"; break;
        case NVML_GPU_INSTANCE_PROFILE_2_SLICE: g = 2; break;
        case NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1: g = 2; suffix = "+me"; break;
        case NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX: g = 2; suffix = "+gfx"; break;
        case NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME: g = 2; suffix = "-me"; break;
        case NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME: g = 2; suffix = "+me.all"; break;
        case NVML_GPU_INSTANCE_PROFILE_3_SLICE: g = 3; break;
        case NVML_GPU_INSTANCE_PROFILE_4_SLICE: g = 4; break;
        case NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX: g = 4; suffix = "+gfx"; break;
        case NVML_GPU_INSTANCE_PROFILE_6_SLICE: g = 6; break;
        case NVML_GPU_INSTANCE_PROFILE_7_SLICE: g = 7; break;
        case NVML_GPU_INSTANCE_PROFILE_8_SLICE: g = 8; break;
        default: return -EINVAL; /* go-nvlib: "invalid GPU Instance Profile ID" (3_SLICE_GFX included) */
        }
        switch (ci_profile) {
        case NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE:
        case NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1: c = 1; break;
        case NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE: c = 2; break;
        case NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE: c = 3; break;
        case NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE: c = 4; break;
        case NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE: c = 6; break;
        case NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE:
        case NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE_NVL: c = 7; break;
        case NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE: c = 8; break;
        default: return -EINVAL;
        }
        struct nvml_mig_attributes a = {.gi_slices = g, .ci_slices = c, .memory_mb = mig_memory_mb};
        char base[24];
        int r = nvml_mig_name_from_attributes(&a, gpu_memory_bytes, base, sizeof base);
        if (r < 0) return r;
        snprintf(buf, size, "%s%s", base, suffix);
        return 0;
}

int nvml_mig_name_from_attributes(const struct nvml_mig_attributes *a, uint64_t gpu_memory_bytes, char *buf, size_t size) {
        if (size > 0) buf[0] = 0;
        if (gpu_memory_bytes == 0 || a->gi_slices == 0 || a->ci_slices == 0) return -EINVAL;
        /* go-nvlib getMigMemorySizeGB, in the same float64 arithmetic. */
        const double one_mb = 1024.0 * 1024.0;
        const uint64_t one_gb = 1024ULL * 1024 * 1024;
        double frac = ((double)a->memory_mb * one_mb) / (double)gpu_memory_bytes;
        frac = ceil(frac * 8) / 8;
        double total_gb = (double)((gpu_memory_bytes + one_gb - 1) / one_gb);
        unsigned long long gb = (unsigned long long)round(frac * total_gb);
        if (a->ci_slices == a->gi_slices)
                snprintf(buf, size, "%ug.%llugb", a->gi_slices, gb);
        else
                snprintf(buf, size, "%uc.%ug.%llugb", a->ci_slices, a->gi_slices, gb);
        return 0;
}

/* Reads one MIG device's memory: nvmlDeviceGetMemoryInfo_v2, else the v1 call. Returns an nvmlReturn_t. */
static nvmlReturn_t mig_memory(struct nvml_lib *lib, nvmlDevice_t mdev, struct nvml_mig_facts *m) {
        nvmlReturn_t rc = NVML_ERROR_FUNCTION_NOT_FOUND;
        if (lib->nvmlDeviceGetMemoryInfo_v2) {
                nvmlMemory_v2_t v = { .version = nvmlMemory_v2 };
                rc = lib->nvmlDeviceGetMemoryInfo_v2(mdev, &v);
                if (rc == NVML_SUCCESS) {
                        m->memory_total = v.total;
                        m->memory_used = v.used;
                        m->memory_free = v.free;
                }
        }
        if (rc == NVML_ERROR_FUNCTION_NOT_FOUND || rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) {
                nvmlMemory_t v = { 0 };
                rc = lib->nvmlDeviceGetMemoryInfo ? lib->nvmlDeviceGetMemoryInfo(mdev, &v) : NVML_ERROR_NOT_SUPPORTED;
                if (rc == NVML_SUCCESS) {
                        m->memory_total = v.total;
                        m->memory_used = v.used;
                        m->memory_free = v.free;
                }
        }
        return rc;
}

#define NS NVML_ERROR_NOT_SUPPORTED
#define STEP(name)                                           \
        do {                                                 \
                if (!step(st, (name), (int)g->index)) return false; \
        } while (0)

/* GPU instance profile ids by NVML_GPU_INSTANCE_PROFILE_* index, asked once per GPU. */
struct gi_profile_table {
        bool asked;
        int rc; /* an error other than "not supported"/"invalid argument" ends the lookup, as in go-nvlib */
        bool valid[NVML_GPU_INSTANCE_PROFILE_COUNT];
        unsigned id[NVML_GPU_INSTANCE_PROFILE_COUNT];
};

/* Resolves m's GPU and compute instance profiles the way go-nvlib's MigDevice.GetProfile does; sets
 * m->profile_rc, gi_profile, ci_profile and profile. Returns false when the caller gave up meanwhile. */
static bool probe_mig_profile(struct probe_state *st, struct nvml_gpu_facts *g, nvmlDevice_t dev, nvmlDevice_t mdev,
                              struct nvml_mig_facts *m, struct gi_profile_table *t) {
        struct nvml_lib *lib = st->lib;
        nvmlReturn_t rc;

        STEP("nvmlDeviceGetDeviceHandleFromMigDeviceHandle");
        nvmlDevice_t parent = NULL;
        rc = lib->nvmlDeviceGetDeviceHandleFromMigDeviceHandle
                     ? lib->nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mdev, &parent) : NS;
        if (rc == NVML_SUCCESS && parent != dev) rc = NVML_ERROR_UNKNOWN;
        int first = rc != NVML_SUCCESS ? (int)rc
                    : g->memory_rc != NVML_SUCCESS ? g->memory_rc
                    : m->attributes_rc != NVML_SUCCESS ? m->attributes_rc
                    : m->gi_rc != NVML_SUCCESS ? m->gi_rc
                    : m->ci_rc;
        if (first != NVML_SUCCESS) {
                m->profile_rc = first;
                return true;
        }

        STEP("nvmlDeviceGetGpuInstanceById");
        nvmlGpuInstance_t gi = NULL;
        rc = lib->nvmlDeviceGetGpuInstanceById ? lib->nvmlDeviceGetGpuInstanceById(dev, m->gi_id, &gi) : NS;
        nvmlComputeInstance_t ci = NULL;
        if (rc == NVML_SUCCESS) {
                STEP("nvmlGpuInstanceGetComputeInstanceById");
                rc = lib->nvmlGpuInstanceGetComputeInstanceById
                             ? lib->nvmlGpuInstanceGetComputeInstanceById(gi, m->ci_id, &ci) : NS;
        }
        nvmlGpuInstanceInfo_t gii;
        memset(&gii, 0, sizeof gii);
        if (rc == NVML_SUCCESS) {
                STEP("nvmlGpuInstanceGetInfo");
                rc = lib->nvmlGpuInstanceGetInfo ? lib->nvmlGpuInstanceGetInfo(gi, &gii) : NS;
        }
        nvmlComputeInstanceInfo_t cii;
        memset(&cii, 0, sizeof cii);
        if (rc == NVML_SUCCESS) {
                STEP("nvmlComputeInstanceGetInfo");
                rc = lib->nvmlComputeInstanceGetInfo ? lib->nvmlComputeInstanceGetInfo(ci, &cii) : NS;
        }
        if (rc == NVML_SUCCESS && !t->asked) {
                t->asked = true;
                t->rc = NVML_SUCCESS;
                for (unsigned i = 0; i < NVML_GPU_INSTANCE_PROFILE_COUNT && t->rc == NVML_SUCCESS; i++) {
                        STEP("nvmlDeviceGetGpuInstanceProfileInfo");
                        nvmlGpuInstanceProfileInfo_t pi;
                        memset(&pi, 0, sizeof pi);
                        nvmlReturn_t r = lib->nvmlDeviceGetGpuInstanceProfileInfo
                                                 ? lib->nvmlDeviceGetGpuInstanceProfileInfo(dev, i, &pi) : NS;
                        if (r == NVML_SUCCESS) {
                                t->valid[i] = true;
                                t->id[i] = pi.id;
                        } else if (r != NS && r != NVML_ERROR_INVALID_ARGUMENT) {
                                t->rc = r;
                        }
                }
        }
        if (rc == NVML_SUCCESS) rc = t->rc;
        if (rc != NVML_SUCCESS) {
                m->profile_rc = rc;
                return true;
        }
        for (unsigned i = 0; i < NVML_GPU_INSTANCE_PROFILE_COUNT; i++) {
                if (!t->valid[i] || t->id[i] != gii.profileId) continue;
                for (unsigned j = 0; j < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; j++)
                        for (unsigned k = 0; k < NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT; k++) {
                                STEP("nvmlGpuInstanceGetComputeInstanceProfileInfo");
                                nvmlComputeInstanceProfileInfo_t cp;
                                memset(&cp, 0, sizeof cp);
                                rc = lib->nvmlGpuInstanceGetComputeInstanceProfileInfo
                                             ? lib->nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, j, k, &cp) : NS;
                                if (rc == NS || rc == NVML_ERROR_INVALID_ARGUMENT) continue;
                                if (rc != NVML_SUCCESS) {
                                        m->profile_rc = rc;
                                        return true;
                                }
                                if (cp.id != cii.profileId) continue;
                                m->profile_rc = NVML_SUCCESS;
                                m->gi_profile = i;
                                m->ci_profile = j;
                                nvml_mig_profile_name(i, j, m->attributes.memory_mb, g->memory_total, m->profile,
                                                      sizeof m->profile);
                                return true;
                        }
        }
        m->profile_rc = NVML_ERROR_NOT_FOUND; /* go-nvlib: "no matching profile IDs found" */
        return true;
}

/* Enumerates the MIG devices of a GPU with MIG mode enabled, as go-nvlib's VisitMigDevices does.
 * Returns false when the caller gave up meanwhile. */
static bool probe_mig_devices(struct probe_state *st, struct nvml_gpu_facts *g, nvmlDevice_t dev) {
        struct nvml_lib *lib = st->lib;
        nvmlReturn_t rc;
        struct gi_profile_table table = { 0 };

        STEP("nvmlDeviceGetMaxMigDeviceCount");
        unsigned max = 0;
        g->mig_max_rc = lib->nvmlDeviceGetMaxMigDeviceCount ? lib->nvmlDeviceGetMaxMigDeviceCount(dev, &max) : NS;
        if (g->mig_max_rc != NVML_SUCCESS) return true;
        g->mig_max = max;
        g->mig_devices_rc = NVML_SUCCESS;
        for (unsigned i = 0; i < max && i < NVML_MAX_MIG_DEVICES; i++) {
                STEP("nvmlDeviceGetMigDeviceHandleByIndex");
                nvmlDevice_t mdev = NULL;
                rc = lib->nvmlDeviceGetMigDeviceHandleByIndex ? lib->nvmlDeviceGetMigDeviceHandleByIndex(dev, i, &mdev) : NS;
                if (rc == NVML_ERROR_NOT_FOUND) continue;
                if (rc != NVML_SUCCESS) {
                        g->mig_devices_rc = rc;
                        return true;
                }
                struct nvml_mig_facts *m = &g->mig[g->n_mig++];
                memset(m, 0, sizeof *m);
                m->index = i;
                m->uuid_rc = m->gi_rc = m->ci_rc = m->attributes_rc = m->memory_rc = m->profile_rc = NVML_FACT_NOT_QUERIED;

                STEP("nvmlDeviceGetUUID");
                m->uuid_rc = lib->nvmlDeviceGetUUID ? lib->nvmlDeviceGetUUID(mdev, m->uuid, sizeof m->uuid) : NS;
                if (m->uuid_rc != NVML_SUCCESS) m->uuid[0] = 0;
                STEP("nvmlDeviceGetGpuInstanceId");
                unsigned id = 0;
                m->gi_rc = lib->nvmlDeviceGetGpuInstanceId ? lib->nvmlDeviceGetGpuInstanceId(mdev, &id) : NS;
                m->gi_id = m->gi_rc == NVML_SUCCESS ? id : 0;
                STEP("nvmlDeviceGetComputeInstanceId");
                id = 0;
                m->ci_rc = lib->nvmlDeviceGetComputeInstanceId ? lib->nvmlDeviceGetComputeInstanceId(mdev, &id) : NS;
                m->ci_id = m->ci_rc == NVML_SUCCESS ? id : 0;
                STEP("nvmlDeviceGetAttributes");
                nvmlDeviceAttributes_t a;
                memset(&a, 0, sizeof a);
                m->attributes_rc = lib->nvmlDeviceGetAttributes ? lib->nvmlDeviceGetAttributes(mdev, &a) : NS;
                if (m->attributes_rc == NVML_SUCCESS)
                        m->attributes = (struct nvml_mig_attributes){
                                .multiprocessors = a.multiprocessorCount, .copy_engines = a.sharedCopyEngineCount,
                                .decoders = a.sharedDecoderCount, .encoders = a.sharedEncoderCount,
                                .jpegs = a.sharedJpegCount, .ofas = a.sharedOfaCount,
                                .gi_slices = a.gpuInstanceSliceCount, .ci_slices = a.computeInstanceSliceCount,
                                .memory_mb = a.memorySizeMB,
                        };
                STEP("nvmlDeviceGetMemoryInfo");
                m->memory_rc = mig_memory(lib, mdev, m);
                if (!probe_mig_profile(st, g, dev, mdev, m, &table)) return false;
        }
        return true;
}

/* Asks NVML for every fact of GPU g->index. Returns false when the caller gave up meanwhile. */
static bool probe_gpu(struct probe_state *st, struct nvml_gpu_facts *g) {
        struct nvml_lib *lib = st->lib;
        nvmlDevice_t dev = NULL;
        nvmlReturn_t rc;

        STEP("nvmlDeviceGetHandleByIndex");
        g->handle_rc = lib->nvmlDeviceGetHandleByIndex(g->index, &dev);
        if (g->handle_rc != NVML_SUCCESS) return true;

        STEP("nvmlDeviceGetName");
        g->name_rc = lib->nvmlDeviceGetName ? lib->nvmlDeviceGetName(dev, g->name, sizeof g->name) : NS;
        if (g->name_rc != NVML_SUCCESS) g->name[0] = 0;

        STEP("nvmlDeviceGetUUID");
        g->uuid_rc = lib->nvmlDeviceGetUUID ? lib->nvmlDeviceGetUUID(dev, g->uuid, sizeof g->uuid) : NS;
        if (g->uuid_rc != NVML_SUCCESS) g->uuid[0] = 0;

        STEP("nvmlDeviceGetMinorNumber");
        unsigned minor = 0;
        rc = lib->nvmlDeviceGetMinorNumber ? lib->nvmlDeviceGetMinorNumber(dev, &minor) : NS;
        g->minor_number = fact(rc, minor);

        STEP("nvmlDeviceGetPciInfo");
        nvmlPciInfo_t pci = { 0 };
        g->pci_rc = lib->nvmlDeviceGetPciInfo ? lib->nvmlDeviceGetPciInfo(dev, &pci) : NS;
        if (g->pci_rc == NVML_SUCCESS) {
                snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%.*s", (int)sizeof pci.busId - 1, pci.busId);
                snprintf(g->pci_bus_id_legacy, sizeof g->pci_bus_id_legacy, "%.*s",
                         (int)sizeof pci.busIdLegacy - 1, pci.busIdLegacy);
                g->pci_domain = pci.domain;
                g->pci_bus = pci.bus;
                g->pci_device = pci.device;
                g->pci_device_id = pci.pciDeviceId;
                g->pci_subsystem_id = pci.pciSubSystemId;
        }

        STEP("nvmlDeviceGetMemoryInfo");
        rc = NVML_ERROR_FUNCTION_NOT_FOUND;
        if (lib->nvmlDeviceGetMemoryInfo_v2) {
                nvmlMemory_v2_t m = { .version = nvmlMemory_v2 };
                rc = lib->nvmlDeviceGetMemoryInfo_v2(dev, &m);
                if (rc == NVML_SUCCESS) {
                        g->memory_version = 2;
                        g->memory_total = m.total;
                        g->memory_used = m.used;
                        g->memory_free = m.free;
                        g->memory_reserved = m.reserved;
                }
        }
        if (rc == NVML_ERROR_FUNCTION_NOT_FOUND || rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) {
                nvmlMemory_t m = { 0 };
                rc = lib->nvmlDeviceGetMemoryInfo ? lib->nvmlDeviceGetMemoryInfo(dev, &m) : NS;
                if (rc == NVML_SUCCESS) {
                        g->memory_version = 1;
                        g->memory_total = m.total;
                        g->memory_used = m.used;
                        g->memory_free = m.free;
                }
        }
        g->memory_rc = rc;

        STEP("nvmlDeviceGetCudaComputeCapability");
        int major = 0, minor_cc = 0;
        g->cc_rc = lib->nvmlDeviceGetCudaComputeCapability
                           ? lib->nvmlDeviceGetCudaComputeCapability(dev, &major, &minor_cc) : NS;
        if (g->cc_rc == NVML_SUCCESS) {
                g->cc_major = major;
                g->cc_minor = minor_cc;
        }

        STEP("nvmlDeviceGetMigMode");
        unsigned cur = 0, pend = 0;
        g->mig_rc = lib->nvmlDeviceGetMigMode ? lib->nvmlDeviceGetMigMode(dev, &cur, &pend) : NS;
        if (g->mig_rc == NVML_SUCCESS) {
                g->mig_current = cur;
                g->mig_pending = pend;
        }
        if (g->mig_rc == NVML_SUCCESS && g->mig_current == NVML_DEVICE_MIG_ENABLE && !probe_mig_devices(st, g, dev))
                return false;

        STEP("nvmlDeviceGetPersistenceMode");
        nvmlEnableState_t pm = NVML_FEATURE_DISABLED;
        rc = lib->nvmlDeviceGetPersistenceMode ? lib->nvmlDeviceGetPersistenceMode(dev, &pm) : NS;
        g->persistence_mode = fact(rc, (uint64_t)pm);

        STEP("nvmlDeviceGetGpuFabricInfo");
        nvmlGpuFabricInfoV_t fi;
        memset(&fi, 0, sizeof fi);
        rc = NVML_ERROR_FUNCTION_NOT_FOUND;
        if (lib->nvmlDeviceGetGpuFabricInfoV) {
                fi.version = nvmlGpuFabricInfo_v3;
                g->fabric_version = 3;
                rc = lib->nvmlDeviceGetGpuFabricInfoV(dev, &fi);
                if (rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) {
                        /* Older drivers know only v2, a prefix of v3: the buffer is large enough. */
                        memset(&fi, 0, sizeof fi);
                        fi.version = nvmlGpuFabricInfo_v2;
                        g->fabric_version = 2;
                        rc = lib->nvmlDeviceGetGpuFabricInfoV(dev, &fi);
                }
        }
        if (rc == NVML_ERROR_FUNCTION_NOT_FOUND && lib->nvmlDeviceGetGpuFabricInfo) {
                nvmlGpuFabricInfo_t f1;
                memset(&f1, 0, sizeof f1);
                rc = lib->nvmlDeviceGetGpuFabricInfo(dev, &f1);
                g->fabric_version = 1;
                memcpy(fi.clusterUuid, f1.clusterUuid, sizeof fi.clusterUuid);
                fi.status = f1.status;
                fi.cliqueId = f1.cliqueId;
                fi.state = f1.state;
        } else if (rc == NVML_ERROR_FUNCTION_NOT_FOUND) {
                rc = NS;
        }
        g->fabric_rc = rc;
        if (rc == NVML_SUCCESS) {
                g->fabric_state = fi.state;
                g->fabric_status = fi.status;
                format_uuid(fi.clusterUuid, g->fabric_cluster_uuid);
                g->fabric_clique_id = fi.cliqueId;
                g->fabric_health_mask = g->fabric_version >= 2 ? fi.healthMask : 0;
        } else {
                g->fabric_version = 0;
        }

        STEP("nvmlDeviceGetEccMode");
        nvmlEnableState_t ec = NVML_FEATURE_DISABLED, ep = NVML_FEATURE_DISABLED;
        g->ecc_mode_rc = lib->nvmlDeviceGetEccMode ? lib->nvmlDeviceGetEccMode(dev, &ec, &ep) : NS;
        if (g->ecc_mode_rc == NVML_SUCCESS) {
                g->ecc_mode_current = ec;
                g->ecc_mode_pending = ep;
        }

        struct {
                nvmlMemoryErrorType_t type;
                nvmlEccCounterType_t counter;
                struct nvml_fact_u64 *out;
        } ecc[] = {
                { NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &g->ecc_volatile_uncorrected },
                { NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC, &g->ecc_aggregate_uncorrected },
                { NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &g->ecc_volatile_corrected },
                { NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC, &g->ecc_aggregate_corrected },
        };
        for (size_t i = 0; i < ELEMENTSOF(ecc); i++) {
                STEP("nvmlDeviceGetTotalEccErrors");
                unsigned long long n = 0;
                rc = lib->nvmlDeviceGetTotalEccErrors
                             ? lib->nvmlDeviceGetTotalEccErrors(dev, ecc[i].type, ecc[i].counter, &n) : NS;
                *ecc[i].out = fact(rc, n);
        }

        STEP("nvmlDeviceGetRemappedRows");
        unsigned corr = 0, unc = 0, pending = 0, failure = 0;
        g->remapped_rows_rc = lib->nvmlDeviceGetRemappedRows
                                      ? lib->nvmlDeviceGetRemappedRows(dev, &corr, &unc, &pending, &failure) : NS;
        if (g->remapped_rows_rc == NVML_SUCCESS) {
                g->remapped_correctable = corr;
                g->remapped_uncorrectable = unc;
                g->remapped_pending = pending != 0;
                g->remapped_failure = failure != 0;
        }

        STEP("nvmlDeviceGetFieldValues");
        nvmlFieldValue_t fv[2];
        memset(fv, 0, sizeof fv);
        fv[0].fieldId = NVML_FI_DEV_GET_GPU_RECOVERY_ACTION;
        fv[1].fieldId = NVML_FI_DEV_MEMORY_TEMP;
        g->field_values_rc = lib->nvmlDeviceGetFieldValues
                                     ? lib->nvmlDeviceGetFieldValues(dev, (int)ELEMENTSOF(fv), fv) : NS;
        struct nvml_fact_u64 *fout[] = { &g->recovery_action, &g->memory_temperature };
        for (size_t i = 0; i < ELEMENTSOF(fv); i++)
                *fout[i] = g->field_values_rc != NVML_SUCCESS
                                   ? fact(g->field_values_rc, 0)
                                   : fact(fv[i].nvmlReturn, fv[i].nvmlReturn == NVML_SUCCESS ? field_u64(&fv[i]) : 0);

        STEP("nvmlDeviceGetTemperature");
        rc = NVML_ERROR_FUNCTION_NOT_FOUND;
        if (lib->nvmlDeviceGetTemperatureV) {
                nvmlTemperature_t t = { .version = nvmlTemperature_v1, .sensorType = NVML_TEMPERATURE_GPU };
                rc = lib->nvmlDeviceGetTemperatureV(dev, &t);
                g->temperature = fact(rc, t.temperature > 0 ? (uint64_t)t.temperature : 0);
        }
        if (rc == NVML_ERROR_FUNCTION_NOT_FOUND || rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) {
                unsigned t = 0;
                rc = lib->nvmlDeviceGetTemperature ? lib->nvmlDeviceGetTemperature(dev, NVML_TEMPERATURE_GPU, &t) : NS;
                g->temperature = fact(rc, t);
        }

        STEP("nvmlDeviceGetPowerUsage");
        unsigned mw = 0;
        rc = lib->nvmlDeviceGetPowerUsage ? lib->nvmlDeviceGetPowerUsage(dev, &mw) : NS;
        g->power_mw = fact(rc, mw);

        STEP("nvmlDeviceGetTotalEnergyConsumption");
        unsigned long long mj = 0;
        rc = lib->nvmlDeviceGetTotalEnergyConsumption ? lib->nvmlDeviceGetTotalEnergyConsumption(dev, &mj) : NS;
        g->energy_mj = fact(rc, mj);

        STEP("nvmlDeviceGetUtilizationRates");
        nvmlUtilization_t u = { 0 };
        g->utilization_rc = lib->nvmlDeviceGetUtilizationRates ? lib->nvmlDeviceGetUtilizationRates(dev, &u) : NS;
        if (g->utilization_rc == NVML_SUCCESS) {
                g->utilization_gpu = u.gpu;
                g->utilization_memory = u.memory;
        }

        struct {
                nvmlClockType_t type;
                struct nvml_fact_u64 *out;
        } clk[] = { { NVML_CLOCK_SM, &g->clock_sm_mhz }, { NVML_CLOCK_MEM, &g->clock_mem_mhz } };
        for (size_t i = 0; i < ELEMENTSOF(clk); i++) {
                STEP("nvmlDeviceGetClockInfo");
                unsigned mhz = 0;
                rc = lib->nvmlDeviceGetClockInfo ? lib->nvmlDeviceGetClockInfo(dev, clk[i].type, &mhz) : NS;
                *clk[i].out = fact(rc, mhz);
        }

        STEP("nvmlDeviceGetPcieReplayCounter");
        unsigned replay = 0;
        rc = lib->nvmlDeviceGetPcieReplayCounter ? lib->nvmlDeviceGetPcieReplayCounter(dev, &replay) : NS;
        g->pcie_replay = fact(rc, replay);

        STEP("nvmlDeviceGetCurrentClocksEventReasons");
        unsigned long long reasons = 0;
        rc = lib->nvmlDeviceGetCurrentClocksEventReasons ? lib->nvmlDeviceGetCurrentClocksEventReasons(dev, &reasons)
                                                         : NS;
        g->clocks_event_reasons = fact(rc, reasons);
        return true;
}

#undef STEP
#define STEP(name)                                  \
        do {                                        \
                if (!step(st, (name), -1)) goto out; \
        } while (0)

/* The worker: gathers into st->w, then leaves. Returns NULL; frees st if the caller already left. */
static void *probe_worker(void *arg) {
        struct probe_state *st = arg;
        struct nvml_lib *lib = st->lib;
        struct nvml_facts *w = &st->w;
        bool initialized = false;

        STEP("nvmlInit");
        w->init_rc = lib->nvmlInit();
        if (w->init_rc != NVML_SUCCESS) {
                const char *e = lib->nvmlErrorString ? lib->nvmlErrorString(w->init_rc) : NULL;
                snprintf(w->init_error, sizeof w->init_error, "%s", e ? e : "");
                goto out;
        }
        initialized = true;

        STEP("nvmlSystemGetDriverVersion");
        w->driver_version_rc = lib->nvmlSystemGetDriverVersion
                                       ? lib->nvmlSystemGetDriverVersion(w->driver_version, sizeof w->driver_version) : NS;
        if (w->driver_version_rc != NVML_SUCCESS) w->driver_version[0] = 0;

        STEP("nvmlSystemGetNVMLVersion");
        w->nvml_version_rc = lib->nvmlSystemGetNVMLVersion
                                     ? lib->nvmlSystemGetNVMLVersion(w->nvml_version, sizeof w->nvml_version) : NS;
        if (w->nvml_version_rc != NVML_SUCCESS) w->nvml_version[0] = 0;

        STEP("nvmlSystemGetCudaDriverVersion");
        int cuda = 0;
        nvmlReturn_t rc = lib->nvmlSystemGetCudaDriverVersion ? lib->nvmlSystemGetCudaDriverVersion(&cuda) : NS;
        w->cuda_driver_version = fact(rc, cuda > 0 ? (uint64_t)cuda : 0);

        STEP("nvmlDeviceGetCount");
        unsigned count = 0;
        w->device_count_rc = lib->nvmlDeviceGetCount(&count);
        if (w->device_count_rc == NVML_SUCCESS) {
                w->device_count = count > NVML_PROBE_MAX_GPUS ? NVML_PROBE_MAX_GPUS : count;
                if (w->device_count > 0) w->gpus = xcalloc(w->device_count, sizeof *w->gpus);
                for (unsigned i = 0; i < w->device_count; i++) {
                        gpu_facts_init(&w->gpus[i], i);
                        w->n_gpus = i + 1;
                        if (!probe_gpu(st, &w->gpus[i])) goto out;
                        w->gpus[i].complete = true;
                }
        }

out:
        if (initialized) {
                step(st, "nvmlShutdown", -1);
                lib->nvmlShutdown();
        }

        pthread_mutex_lock(&st->lock);
        publish_locked(st);
        st->done = true;
        bool was_abandoned = st->abandoned;
        pthread_cond_broadcast(&st->cond);
        st->lib = NULL;
        probe_state_unref_locked(st);
        nvml_lib_unref(lib);
        if (was_abandoned) __atomic_sub_fetch(&abandoned_workers, 1, __ATOMIC_ACQ_REL);
        return NULL;
}

unsigned nvml_probe_abandoned_workers(void) {
        return __atomic_load_n(&abandoned_workers, __ATOMIC_ACQUIRE);
}

/* Returns a malloc'd copy of the published facts. Caller holds the lock. */
static struct nvml_facts *copy_published_locked(struct probe_state *st) {
        struct nvml_facts *f = xmalloc(sizeof *f);
        *f = st->pub;
        f->library_path = NULL;
        f->gpus = NULL;
        if (f->n_gpus > 0) {
                f->gpus = xcalloc(f->n_gpus, sizeof *f->gpus);
                memcpy(f->gpus, st->pub.gpus, f->n_gpus * sizeof *f->gpus);
        }
        return f;
}

int nvml_probe_run(struct nvml_lib *lib, unsigned timeout_ms, struct nvml_facts **ret) {
        struct probe_state *st = xcalloc(1, sizeof *st);
        pthread_condattr_t ca;
        int r;

        pthread_mutex_init(&st->lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&st->cond, &ca);
        pthread_condattr_destroy(&ca);
        st->refs = 2;
        st->call_gpu = -1;
        st->w.init_rc = st->w.driver_version_rc = st->w.nvml_version_rc = st->w.device_count_rc =
                NVML_FACT_NOT_QUERIED;
        st->w.cuda_driver_version.rc = NVML_FACT_NOT_QUERIED;
        st->w.blocked_gpu = -1;
        st->pub = st->w;
        st->lib = nvml_lib_ref(lib);

        pthread_t thread;
        r = pthread_create(&thread, NULL, probe_worker, st);
        if (r != 0) {
                nvml_lib_unref(st->lib);
                probe_state_free(st);
                return -r;
        }

        struct timespec deadline;
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_sec += timeout_ms / 1000;
        deadline.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
                deadline.tv_sec++;
                deadline.tv_nsec -= 1000000000L;
        }

        pthread_mutex_lock(&st->lock);
        while (!st->done) {
                r = pthread_cond_timedwait(&st->cond, &st->lock, &deadline);
                if (r == ETIMEDOUT) break;
        }
        struct nvml_facts *f = copy_published_locked(st);
        f->timeout_ms = timeout_ms;
        if (!st->done) {
                f->timed_out = true;
                snprintf(f->blocked_call, sizeof f->blocked_call, "%s", st->call);
                f->blocked_gpu = st->call_gpu;
                if (st->call_gpu >= 0)
                        snprintf(f->timeout_message, sizeof f->timeout_message,
                                 "%s on GPU %d did not return within %u ms", st->call, st->call_gpu, timeout_ms);
                else
                        snprintf(f->timeout_message, sizeof f->timeout_message,
                                 "%s did not return within %u ms", st->call, timeout_ms);
                st->abandoned = true;
                __atomic_add_fetch(&abandoned_workers, 1, __ATOMIC_ACQ_REL);
        }
        bool done = st->done;
        probe_state_unref_locked(st);
        /* A finished worker is joined (it is only returning); a stuck one is left to end on its own. */
        if (done)
                pthread_join(thread, NULL);
        else
                pthread_detach(thread);

        f->library_path = xstrdup(lib->path);
        *ret = f;
        return 0;
}

struct nvml_facts *nvml_facts_free(struct nvml_facts *f) {
        if (!f) return NULL;
        free(f->library_path);
        free(f->gpus);
        free(f);
        return NULL;
}

/* Records rc under errors[call] when it is an error the fake must replay (not success, not
 * "not supported", which the fake answers for a missing key, not "never asked"). Returns nothing. */
static void put_error(json_t *errors, const char *call, int rc) {
        if (rc == NVML_SUCCESS || rc == NS || rc == NVML_FACT_NOT_QUERIED) return;
        json_object_set_new(errors, call, json_integer(rc));
}

/* Returns the first error rc among facts that put_error would record, or NVML_SUCCESS. */
static int first_error(const struct nvml_fact_u64 *const *v, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (v[i]->rc != NVML_SUCCESS && v[i]->rc != NS && v[i]->rc != NVML_FACT_NOT_QUERIED) return v[i]->rc;
        return NVML_SUCCESS;
}

/* Sets obj[key] to the fact's value when it succeeded. Returns nothing. */
static void put_u64(json_t *obj, const char *key, const struct nvml_fact_u64 *v) {
        if (v->rc == NVML_SUCCESS) json_object_set_new(obj, key, json_integer((json_int_t)v->value));
}

/* Returns the JSON description of one MIG device (a new reference). */
static json_t *mig_to_json(const struct nvml_gpu_facts *g, const struct nvml_mig_facts *m) {
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
                                              (json_int_t)a->copy_engines, "shared_decoder_count", (json_int_t)a->decoders,
                                              "shared_encoder_count", (json_int_t)a->encoders, "shared_jpeg_count",
                                              (json_int_t)a->jpegs, "shared_ofa_count", (json_int_t)a->ofas,
                                              "gpu_instance_slice_count", (json_int_t)a->gi_slices,
                                              "compute_instance_slice_count", (json_int_t)a->ci_slices, "memory_size_mb",
                                              (json_int_t)a->memory_mb));
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
                int derived = g->memory_rc != NVML_SUCCESS ? g->memory_rc
                              : m->attributes_rc != NVML_SUCCESS ? m->attributes_rc
                              : m->gi_rc != NVML_SUCCESS ? m->gi_rc
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

/* Returns the JSON description of one GPU (a new reference). */
static json_t *gpu_to_json(const struct nvml_gpu_facts *g) {
        json_t *o = json_object(), *errors = json_object();

        put_error(errors, "nvmlDeviceGetHandleByIndex", g->handle_rc);
        if (g->name_rc == NVML_SUCCESS) json_object_set_new(o, "name", json_string(g->name));
        put_error(errors, "nvmlDeviceGetName", g->name_rc);
        if (g->uuid_rc == NVML_SUCCESS) json_object_set_new(o, "uuid", json_string(g->uuid));
        put_error(errors, "nvmlDeviceGetUUID", g->uuid_rc);
        put_u64(o, "minor_number", &g->minor_number);
        put_error(errors, "nvmlDeviceGetMinorNumber", g->minor_number.rc);

        if (g->pci_rc == NVML_SUCCESS) {
                json_object_set_new(o, "pci_bus_id", json_string(g->pci_bus_id));
                json_object_set_new(o, "pci_device_id", json_sprintf("0x%08X", g->pci_device_id));
                json_object_set_new(o, "pci_subsystem_id", json_sprintf("0x%08X", g->pci_subsystem_id));
        }
        put_error(errors, "nvmlDeviceGetPciInfo", g->pci_rc);

        if (g->memory_rc == NVML_SUCCESS) {
                json_t *m = json_pack("{s:I,s:I,s:I}", "total", (json_int_t)g->memory_total, "used",
                                      (json_int_t)g->memory_used, "free", (json_int_t)g->memory_free);
                if (g->memory_version == 2)
                        json_object_set_new(m, "reserved", json_integer((json_int_t)g->memory_reserved));
                json_object_set_new(o, "memory", m);
        }
        put_error(errors, "nvmlDeviceGetMemoryInfo", g->memory_rc);

        if (g->cc_rc == NVML_SUCCESS)
                json_object_set_new(o, "compute_capability", json_pack("[i,i]", g->cc_major, g->cc_minor));
        put_error(errors, "nvmlDeviceGetCudaComputeCapability", g->cc_rc);

        if (g->mig_rc == NVML_SUCCESS)
                json_object_set_new(o, "mig_mode",
                                    json_pack("{s:i,s:i}", "current", (int)g->mig_current, "pending", (int)g->mig_pending));
        else if (g->mig_rc == NS)
                json_object_set_new(o, "mig_mode", json_null());
        put_error(errors, "nvmlDeviceGetMigMode", g->mig_rc);
        if (g->mig_max_rc == NVML_SUCCESS) json_object_set_new(o, "mig_max_devices", json_integer(g->mig_max));
        /* The fake answers these two without a key of their own: "not supported" is an injected error here. */
        put_error(errors, "nvmlDeviceGetMaxMigDeviceCount", g->mig_max_rc);
        if (g->mig_max_rc == NS) json_object_set_new(errors, "nvmlDeviceGetMaxMigDeviceCount", json_integer(NS));
        put_error(errors, "nvmlDeviceGetMigDeviceHandleByIndex", g->mig_devices_rc);
        if (g->mig_devices_rc == NS) json_object_set_new(errors, "nvmlDeviceGetMigDeviceHandleByIndex", json_integer(NS));
        if (g->n_mig > 0) {
                /* One entry per index up to the last device found; null answers NVML_ERROR_NOT_FOUND. */
                json_t *migs = json_array();
                for (unsigned i = 0, k = 0; k < g->n_mig; i++) {
                        if (g->mig[k].index == i)
                                json_array_append_new(migs, mig_to_json(g, &g->mig[k++]));
                        else
                                json_array_append_new(migs, json_null());
                }
                json_object_set_new(o, "mig_devices", migs);
        }

        put_u64(o, "persistence_mode", &g->persistence_mode);
        put_error(errors, "nvmlDeviceGetPersistenceMode", g->persistence_mode.rc);

        if (g->fabric_rc == NVML_SUCCESS)
                json_object_set_new(o, "fabric",
                                    json_pack("{s:i,s:i,s:s,s:I,s:I}", "state", (int)g->fabric_state, "status",
                                              g->fabric_status, "cluster_uuid", g->fabric_cluster_uuid, "clique_id",
                                              (json_int_t)g->fabric_clique_id, "health_mask",
                                              (json_int_t)g->fabric_health_mask));
        else if (g->fabric_rc == NS)
                json_object_set_new(o, "fabric", json_null());
        put_error(errors, "nvmlDeviceGetGpuFabricInfo", g->fabric_rc);

        json_t *ecc = json_object();
        if (g->ecc_mode_rc == NVML_SUCCESS) {
                json_object_set_new(ecc, "mode_current", json_integer(g->ecc_mode_current));
                json_object_set_new(ecc, "mode_pending", json_integer(g->ecc_mode_pending));
        }
        put_error(errors, "nvmlDeviceGetEccMode", g->ecc_mode_rc);
        put_u64(ecc, "volatile_corrected", &g->ecc_volatile_corrected);
        put_u64(ecc, "volatile_uncorrected", &g->ecc_volatile_uncorrected);
        put_u64(ecc, "aggregate_corrected", &g->ecc_aggregate_corrected);
        put_u64(ecc, "aggregate_uncorrected", &g->ecc_aggregate_uncorrected);
        const struct nvml_fact_u64 *eccv[] = { &g->ecc_volatile_corrected, &g->ecc_volatile_uncorrected,
                                               &g->ecc_aggregate_corrected, &g->ecc_aggregate_uncorrected };
        put_error(errors, "nvmlDeviceGetTotalEccErrors", first_error(eccv, ELEMENTSOF(eccv)));
        if (json_object_size(ecc) > 0)
                json_object_set_new(o, "ecc", ecc);
        else
                json_decref(ecc);

        if (g->remapped_rows_rc == NVML_SUCCESS)
                json_object_set_new(o, "remapped_rows",
                                    json_pack("{s:I,s:I,s:b,s:b}", "correctable", (json_int_t)g->remapped_correctable,
                                              "uncorrectable", (json_int_t)g->remapped_uncorrectable, "pending",
                                              g->remapped_pending, "failure", g->remapped_failure));
        put_error(errors, "nvmlDeviceGetRemappedRows", g->remapped_rows_rc);

        put_error(errors, "nvmlDeviceGetFieldValues", g->field_values_rc);
        if (g->field_values_rc == NVML_SUCCESS) {
                put_u64(o, "recovery_action", &g->recovery_action);
                put_u64(o, "memory_temperature", &g->memory_temperature);
        }

        put_u64(o, "temperature", &g->temperature);
        put_error(errors, "nvmlDeviceGetTemperature", g->temperature.rc);
        put_u64(o, "power_mw", &g->power_mw);
        put_error(errors, "nvmlDeviceGetPowerUsage", g->power_mw.rc);
        put_u64(o, "energy_mj", &g->energy_mj);
        put_error(errors, "nvmlDeviceGetTotalEnergyConsumption", g->energy_mj.rc);

        if (g->utilization_rc == NVML_SUCCESS)
                json_object_set_new(o, "utilization",
                                    json_pack("{s:i,s:i}", "gpu", (int)g->utilization_gpu, "memory",
                                              (int)g->utilization_memory));
        put_error(errors, "nvmlDeviceGetUtilizationRates", g->utilization_rc);

        json_t *clocks = json_object();
        put_u64(clocks, "sm", &g->clock_sm_mhz);
        put_u64(clocks, "mem", &g->clock_mem_mhz);
        const struct nvml_fact_u64 *clkv[] = { &g->clock_sm_mhz, &g->clock_mem_mhz };
        put_error(errors, "nvmlDeviceGetClockInfo", first_error(clkv, ELEMENTSOF(clkv)));
        if (json_object_size(clocks) > 0)
                json_object_set_new(o, "clocks", clocks);
        else
                json_decref(clocks);

        put_u64(o, "pcie_replay", &g->pcie_replay);
        put_error(errors, "nvmlDeviceGetPcieReplayCounter", g->pcie_replay.rc);
        put_u64(o, "clocks_event_reasons", &g->clocks_event_reasons);
        put_error(errors, "nvmlDeviceGetCurrentClocksEventReasons", g->clocks_event_reasons.rc);

        if (json_object_size(errors) > 0)
                json_object_set_new(o, "errors", errors);
        else
                json_decref(errors);
        return o;
}

int nvml_facts_to_json(const struct nvml_facts *f, char **ret) {
        json_t *root = json_object(), *errors = json_object(), *gpus = json_array();

        if (f->init_rc != NVML_SUCCESS && f->init_rc != NVML_FACT_NOT_QUERIED)
                json_object_set_new(root, "init_error", json_integer(f->init_rc));
        if (f->driver_version_rc == NVML_SUCCESS)
                json_object_set_new(root, "driver_version", json_string(f->driver_version));
        put_error(errors, "nvmlSystemGetDriverVersion", f->driver_version_rc);
        if (f->nvml_version_rc == NVML_SUCCESS)
                json_object_set_new(root, "nvml_version", json_string(f->nvml_version));
        put_error(errors, "nvmlSystemGetNVMLVersion", f->nvml_version_rc);
        put_u64(root, "cuda_driver_version", &f->cuda_driver_version);
        put_error(errors, "nvmlSystemGetCudaDriverVersion", f->cuda_driver_version.rc);
        put_error(errors, "nvmlDeviceGetCount", f->device_count_rc);
        if (json_object_size(errors) > 0)
                json_object_set_new(root, "errors", errors);
        else
                json_decref(errors);

        for (unsigned i = 0; i < f->n_gpus; i++)
                json_array_append_new(gpus, gpu_to_json(&f->gpus[i]));
        json_object_set_new(root, "gpus", gpus);

        char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        json_decref(root);
        if (!s) return -ENOMEM;
        /* jansson's allocator is malloc unless the program changed it; hand out a plain malloc'd copy. */
        *ret = xstrdup(s);
        free(s);
        return 0;
}
