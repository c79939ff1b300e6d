/* nvml_gpu_probe.c: the questions the NVML probe's worker asks of one GPU and its MIG devices. */
#include "nvml/nvml_probe_internal.h"

#include "basic/util.h"

/* Returns the fact { rc, value } for an unsigned result. */
struct nvml_fact_u64 nvml_fact(nvmlReturn_t rc, uint64_t v) {
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
void nvml_gpu_facts_init(struct nvml_gpu_facts *g, unsigned index) {
        memset(g, 0, sizeof *g);
        g->index = index;
        g->handle_rc = g->name_rc = g->uuid_rc = g->pci_rc = g->memory_rc = g->cc_rc = g->mig_rc = g->fabric_rc =
                g->ecc_mode_rc = g->remapped_rows_rc = g->field_values_rc = g->utilization_rc = g->mig_max_rc =
                        g->mig_devices_rc = NVML_FACT_NOT_QUERIED;
#define NOT_QUERIED(member, ...) g->member.rc = NVML_FACT_NOT_QUERIED;
        NVML_GPU_FACTS(NOT_QUERIED, NVML_FACT_NO_HOOK)
#undef NOT_QUERIED
        nvml_health_facts_init(&g->health);
}

/* Formats a 16-byte fabric cluster UUID as 8-4-4-4-12 hex. Returns nothing. */
static void format_uuid(const unsigned char b[16], char out[37]) {
        snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2],
                 b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
}

/* Reads one MIG device's memory: nvmlDeviceGetMemoryInfo_v2, else the v1 call. Returns an nvmlReturn_t. */
static nvmlReturn_t mig_memory(struct nvml_lib *lib, nvmlDevice_t mdev, struct nvml_mig_facts *m) {
        nvmlMemory_v2_t v;
        nvmlReturn_t rc = nvml_memory_info(lib, mdev, &v, NULL);
        if (rc == NVML_SUCCESS) {
                m->memory_total = v.total;
                m->memory_used = v.used;
                m->memory_free = v.free;
        }
        return rc;
}

#define STEP(name)                                                                                                     \
        do {                                                                                                           \
                if (!nvml_probe_step(st, (name), (int)g->index)) return false;                                         \
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
                     ? lib->nvmlDeviceGetDeviceHandleFromMigDeviceHandle(mdev, &parent)
                     : NS;
        if (rc == NVML_SUCCESS && parent != dev) rc = NVML_ERROR_UNKNOWN;
        int first = rc != NVML_SUCCESS                 ? (int)rc
                    : g->memory_rc != NVML_SUCCESS     ? g->memory_rc
                    : m->attributes_rc != NVML_SUCCESS ? m->attributes_rc
                    : m->gi_rc != NVML_SUCCESS         ? m->gi_rc
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
                             ? lib->nvmlGpuInstanceGetComputeInstanceById(gi, m->ci_id, &ci)
                             : NS;
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
                                                 ? lib->nvmlDeviceGetGpuInstanceProfileInfo(dev, i, &pi)
                                                 : NS;
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
                                             ? lib->nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, j, k, &cp)
                                             : NS;
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
                rc = lib->nvmlDeviceGetMigDeviceHandleByIndex ? lib->nvmlDeviceGetMigDeviceHandleByIndex(dev, i, &mdev)
                                                              : NS;
                if (rc == NVML_ERROR_NOT_FOUND) continue;
                if (rc != NVML_SUCCESS) {
                        g->mig_devices_rc = rc;
                        return true;
                }
                struct nvml_mig_facts *m = &g->mig[g->n_mig++];
                memset(m, 0, sizeof *m);
                m->index = i;
                m->uuid_rc = m->gi_rc = m->ci_rc = m->attributes_rc = m->memory_rc = m->profile_rc =
                        NVML_FACT_NOT_QUERIED;

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
                                .multiprocessors = a.multiprocessorCount,
                                .copy_engines = a.sharedCopyEngineCount,
                                .decoders = a.sharedDecoderCount,
                                .encoders = a.sharedEncoderCount,
                                .jpegs = a.sharedJpegCount,
                                .ofas = a.sharedOfaCount,
                                .gi_slices = a.gpuInstanceSliceCount,
                                .ci_slices = a.computeInstanceSliceCount,
                                .memory_mb = a.memorySizeMB,
                        };
                STEP("nvmlDeviceGetMemoryInfo");
                m->memory_rc = mig_memory(lib, mdev, m);
                if (!probe_mig_profile(st, g, dev, mdev, m, &table)) return false;
        }
        return true;
}

/* Asks NVML for every fact of GPU g->index. Returns false when the caller gave up meanwhile. */
bool nvml_probe_gpu(struct probe_state *st, struct nvml_gpu_facts *g) {
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
        g->minor_number = nvml_fact(rc, minor);

        STEP("nvmlDeviceGetPciInfo");
        nvmlPciInfo_t pci = { 0 };
        g->pci_rc = lib->nvmlDeviceGetPciInfo ? lib->nvmlDeviceGetPciInfo(dev, &pci) : NS;
        if (g->pci_rc == NVML_SUCCESS) {
                snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%.*s", (int)sizeof pci.busId - 1, pci.busId);
                snprintf(g->pci_bus_id_legacy, sizeof g->pci_bus_id_legacy, "%.*s", (int)sizeof pci.busIdLegacy - 1,
                         pci.busIdLegacy);
                g->pci_domain = pci.domain;
                g->pci_bus = pci.bus;
                g->pci_device = pci.device;
                g->pci_device_id = pci.pciDeviceId;
                g->pci_subsystem_id = pci.pciSubSystemId;
        }

        STEP("nvmlDeviceGetMemoryInfo");
        nvmlMemory_v2_t mem;
        int mem_version = 0;
        rc = nvml_memory_info(lib, dev, &mem, &mem_version);
        if (rc == NVML_SUCCESS) {
                g->memory_version = mem_version;
                g->memory_total = mem.total;
                g->memory_used = mem.used;
                g->memory_free = mem.free;
                if (mem_version == 2) g->memory_reserved = mem.reserved;
        }
        g->memory_rc = rc;

        STEP("nvmlDeviceGetCudaComputeCapability");
        int major = 0, minor_cc = 0;
        g->cc_rc = lib->nvmlDeviceGetCudaComputeCapability
                           ? lib->nvmlDeviceGetCudaComputeCapability(dev, &major, &minor_cc)
                           : NS;
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

        if (st->scope != NVML_PROBE_LABELS) {
                STEP("nvmlDeviceGetPersistenceMode");
                nvmlEnableState_t pm = NVML_FEATURE_DISABLED;
                rc = lib->nvmlDeviceGetPersistenceMode ? lib->nvmlDeviceGetPersistenceMode(dev, &pm) : NS;
                g->persistence_mode = nvml_fact(rc, (uint64_t)pm);
        }

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
        /* GFD's labels need nothing below. */
        if (st->scope == NVML_PROBE_LABELS) return true;

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
                             ? lib->nvmlDeviceGetTotalEccErrors(dev, ecc[i].type, ecc[i].counter, &n)
                             : NS;
                *ecc[i].out = nvml_fact(rc, n);
        }

        STEP("nvmlDeviceGetRemappedRows");
        unsigned corr = 0, unc = 0, pending = 0, failure = 0;
        g->remapped_rows_rc = lib->nvmlDeviceGetRemappedRows
                                      ? lib->nvmlDeviceGetRemappedRows(dev, &corr, &unc, &pending, &failure)
                                      : NS;
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
        g->field_values_rc =
                lib->nvmlDeviceGetFieldValues ? lib->nvmlDeviceGetFieldValues(dev, (int)ELEMENTSOF(fv), fv) : NS;
        struct nvml_fact_u64 *fout[] = { &g->recovery_action, &g->memory_temperature };
        for (size_t i = 0; i < ELEMENTSOF(fv); i++)
                *fout[i] =
                        g->field_values_rc != NVML_SUCCESS
                                ? nvml_fact(g->field_values_rc, 0)
                                : nvml_fact(fv[i].nvmlReturn, fv[i].nvmlReturn == NVML_SUCCESS ? field_u64(&fv[i]) : 0);

        STEP("nvmlDeviceGetTemperature");
        rc = NVML_ERROR_FUNCTION_NOT_FOUND;
        if (lib->nvmlDeviceGetTemperatureV) {
                nvmlTemperature_t t = { .version = nvmlTemperature_v1, .sensorType = NVML_TEMPERATURE_GPU };
                rc = lib->nvmlDeviceGetTemperatureV(dev, &t);
                g->temperature = nvml_fact(rc, t.temperature > 0 ? (uint64_t)t.temperature : 0);
        }
        if (rc == NVML_ERROR_FUNCTION_NOT_FOUND || rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) {
                unsigned t = 0;
                rc = lib->nvmlDeviceGetTemperature ? lib->nvmlDeviceGetTemperature(dev, NVML_TEMPERATURE_GPU, &t) : NS;
                g->temperature = nvml_fact(rc, t);
        }

        STEP("nvmlDeviceGetPowerUsage");
        unsigned mw = 0;
        rc = lib->nvmlDeviceGetPowerUsage ? lib->nvmlDeviceGetPowerUsage(dev, &mw) : NS;
        g->power_mw = nvml_fact(rc, mw);

        STEP("nvmlDeviceGetTotalEnergyConsumption");
        unsigned long long mj = 0;
        rc = lib->nvmlDeviceGetTotalEnergyConsumption ? lib->nvmlDeviceGetTotalEnergyConsumption(dev, &mj) : NS;
        g->energy_mj = nvml_fact(rc, mj);

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
                *clk[i].out = nvml_fact(rc, mhz);
        }

        STEP("nvmlDeviceGetPcieReplayCounter");
        unsigned replay = 0;
        rc = lib->nvmlDeviceGetPcieReplayCounter ? lib->nvmlDeviceGetPcieReplayCounter(dev, &replay) : NS;
        g->pcie_replay = nvml_fact(rc, replay);

        STEP("nvmlDeviceGetCurrentClocksEventReasons");
        unsigned long long reasons = 0;
        rc = lib->nvmlDeviceGetCurrentClocksEventReasons ? lib->nvmlDeviceGetCurrentClocksEventReasons(dev, &reasons)
                                                         : NS;
        g->clocks_event_reasons = nvml_fact(rc, reasons);
        return nvml_probe_gpu_health(st, g, dev);
}

#undef STEP
