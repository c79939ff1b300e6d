/* sampler.c: the exporter's NVML sampler worker: reads every GPU, renders and publishes the page, noting each call for
 * the watchdog. */
#include "exporter/exporter_internal.h"

#include "kube/podresources.h"
#include "nvml/nvml_facts.h"

bool exp_call_begin(struct worker_arg *w, enum exp_call call, int gpu) {
        struct exporter *e = w->e;
        pthread_mutex_lock(&e->lock);
        bool current = w->gen == e->gen && !e->stop;
        if (current) {
                e->in_call = true;
                e->call = call;
                e->call_gpu = gpu;
                e->call_since = now_mono();
        }
        pthread_mutex_unlock(&e->lock);
        return current;
}

bool exp_call_end(struct worker_arg *w, enum exp_call call, int rc) {
        struct exporter *e = w->e;
        pthread_mutex_lock(&e->lock);
        bool current = w->gen == e->gen;
        if (current) e->in_call = false;
        if (rc != NVML_SUCCESS && rc != NVML_ERROR_NOT_SUPPORTED) e->stats.nvml_errors[call]++;
        pthread_mutex_unlock(&e->lock);
        return current;
}

/* Returns true for return codes after which NVML must be shut down and initialised again. */
static bool rc_needs_reinit(int rc) {
        return rc == NVML_ERROR_UNINITIALIZED || rc == NVML_ERROR_DRIVER_NOT_LOADED ||
               rc == NVML_ERROR_LIB_RM_VERSION_MISMATCH || rc == NVML_ERROR_UNKNOWN;
}

/* Records a per-GPU failure in g. Returns nothing. */
static void gpu_problem(struct exp_gpu *g, enum exp_call call, int rc) {
        g->sampled = false;
        if (rc == NVML_ERROR_GPU_IS_LOST)
                snprintf(g->problem, sizeof g->problem, "GPU is lost (NVML_ERROR_GPU_IS_LOST from %s)",
                         exp_call_name(call));
        else
                snprintf(g->problem, sizeof g->problem, "%s: %s", exp_call_name(call), nvml_return_name(rc));
}

/* Sets metric m of g. Returns nothing. */
static void set_value(struct exp_gpu *g, enum exp_metric m, double v) {
        g->has[m] = true;
        g->value[m] = v;
}

/* GPU slices of each NVML_GPU_INSTANCE_PROFILE_* index (the compute instance spanning the whole GPU
 * instance names it: "3g.40gb", not "1c.3g.40gb"). */
static const unsigned gi_profile_slices[NVML_GPU_INSTANCE_PROFILE_COUNT] = {
        1, 2, 3, 4, 7, 8, 6, 1, 2, 1, 1, 2, 4, 1, 2, 1, 2, 3,
};

/* Returns the NVML_COMPUTE_INSTANCE_PROFILE_* index of a compute instance of `slices` slices, or -1. */
static int ci_profile_for_slices(unsigned slices) {
        switch (slices) {
        case 1: return NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE;
        case 2: return NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE;
        case 3: return NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE;
        case 4: return NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE;
        case 6: return NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE;
        case 7: return NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE;
        case 8: return NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE;
        default: return -1;
        }
}

/*
 * Names GPU instance gi_id of GPU dev (MIG device mdev belongs to it) as go-nvlib names profiles: the
 * profile found through nvmlDeviceGetGpuInstanceById, nvmlGpuInstanceGetInfo and the profile table;
 * when that lookup is refused (it needs privileges), from the MIG device's attributes alone (without a
 * +me/-me suffix). Returns 0 with the name in buf ("" when neither worked), or -ECANCELED when the
 * worker was abandoned.
 */
static int gpu_instance_profile(struct worker_arg *w, struct nvml_lib *lib, unsigned i, nvmlDevice_t dev,
                                nvmlDevice_t mdev, unsigned gi_id, uint64_t mig_memory_mb, uint64_t gpu_memory,
                                char *buf, size_t size) {
        const nvmlReturn_t NS = NVML_ERROR_NOT_SUPPORTED;
        nvmlReturn_t rc;
        buf[0] = 0;
        nvmlDeviceAttributes_t a;
        memset(&a, 0, sizeof a);
        NVCALL(w, CALL_ATTRIBUTES, (int)i, rc,
               lib->nvmlDeviceGetAttributes ? lib->nvmlDeviceGetAttributes(mdev, &a) : NS);
        bool have_attributes = rc == NVML_SUCCESS;
        if (have_attributes && a.memorySizeMB) mig_memory_mb = a.memorySizeMB;

        nvmlGpuInstance_t gi = NULL;
        NVCALL(w, CALL_GPU_INSTANCE_BY_ID, (int)i, rc,
               lib->nvmlDeviceGetGpuInstanceById ? lib->nvmlDeviceGetGpuInstanceById(dev, gi_id, &gi) : NS);
        nvmlGpuInstanceInfo_t gii;
        memset(&gii, 0, sizeof gii);
        if (rc == NVML_SUCCESS)
                NVCALL(w, CALL_GPU_INSTANCE_INFO, (int)i, rc,
                       lib->nvmlGpuInstanceGetInfo ? lib->nvmlGpuInstanceGetInfo(gi, &gii) : NS);
        for (unsigned p = 0; rc == NVML_SUCCESS && p < NVML_GPU_INSTANCE_PROFILE_COUNT; p++) {
                nvmlGpuInstanceProfileInfo_t pi;
                memset(&pi, 0, sizeof pi);
                nvmlReturn_t prc;
                NVCALL(w, CALL_GPU_INSTANCE_PROFILE_INFO, (int)i, prc,
                       lib->nvmlDeviceGetGpuInstanceProfileInfo ? lib->nvmlDeviceGetGpuInstanceProfileInfo(dev, p, &pi)
                                                                : NS);
                if (prc != NVML_SUCCESS || pi.id != gii.profileId) continue;
                int ci = ci_profile_for_slices(gi_profile_slices[p]);
                if (ci >= 0 && nvml_mig_profile_name(p, (unsigned)ci, mig_memory_mb, gpu_memory, buf, size) == 0)
                        return 0;
                break;
        }
        if (have_attributes) {
                struct nvml_mig_attributes ma = { .gi_slices = a.gpuInstanceSliceCount,
                                                  .ci_slices = a.gpuInstanceSliceCount,
                                                  .memory_mb = mig_memory_mb };
                if (nvml_mig_name_from_attributes(&ma, gpu_memory, buf, size) < 0) buf[0] = 0;
        }
        return 0;
}

/* Notes MIG device uuid of GPU instance instance (an index into g->instances) in g, for pod
 * attribution. Returns nothing; never fails. */
static void add_mig_device(struct exp_gpu *g, const char *uuid, unsigned instance) {
        if (g->n_mig_devices >= 64) return;
        g->mig_devices = xrealloc(g->mig_devices, (g->n_mig_devices + 1) * sizeof *g->mig_devices);
        struct exp_mig_device *d = &g->mig_devices[g->n_mig_devices++];
        snprintf(d->uuid, sizeof d->uuid, "%s", uuid);
        d->instance = instance;
}

/*
 * On a GPU in MIG mode, reads its GPU instances into g->instances: each instance's id, profile name and
 * framebuffer (from the first MIG device of the instance: its compute instances share the memory).
 * Nothing when MIG mode is off or the MIG devices cannot be listed (the GPU is then reported as a
 * whole, as dcgm-exporter does with no GPU instance). Returns 0, or -ECANCELED when the worker was abandoned.
 */
static int sample_gpu_instances(struct worker_arg *w, struct nvml_lib *lib, struct exp_gpu *g, nvmlDevice_t dev,
                                uint64_t gpu_memory) {
        struct exporter *e = w->e;
        const nvmlReturn_t NS = NVML_ERROR_NOT_SUPPORTED;
        unsigned i = g->index;
        nvmlReturn_t rc;
        unsigned cur = 0, pend = 0, max = 0;
        bool attribution = e->o.kubernetes; /* set at the start, never changed */
        NVCALL(w, CALL_MIG_MODE, (int)i, rc,
               lib->nvmlDeviceGetMigMode ? lib->nvmlDeviceGetMigMode(dev, &cur, &pend) : NS);
        if (rc != NVML_SUCCESS || cur != NVML_DEVICE_MIG_ENABLE) return 0;
        NVCALL(w, CALL_MIG_MAX_COUNT, (int)i, rc,
               lib->nvmlDeviceGetMaxMigDeviceCount ? lib->nvmlDeviceGetMaxMigDeviceCount(dev, &max) : NS);
        if (rc != NVML_SUCCESS) return 0;
        unsigned n = 0;
        for (unsigned k = 0; k < max && k < 64; k++) {
                nvmlDevice_t mdev = NULL;
                NVCALL(w, CALL_MIG_HANDLE, (int)i, rc,
                       lib->nvmlDeviceGetMigDeviceHandleByIndex
                               ? lib->nvmlDeviceGetMigDeviceHandleByIndex(dev, k, &mdev)
                               : NS);
                if (rc == NVML_ERROR_NOT_FOUND) continue;
                if (rc != NVML_SUCCESS) {
                        n = 0; /* a partial list would hide instances: report the GPU whole */
                        g->n_mig_devices = 0;
                        break;
                }
                unsigned gi_id = 0;
                NVCALL(w, CALL_GPU_INSTANCE_ID, (int)i, rc,
                       lib->nvmlDeviceGetGpuInstanceId ? lib->nvmlDeviceGetGpuInstanceId(mdev, &gi_id) : NS);
                if (rc != NVML_SUCCESS) continue;
                int seen = -1;
                for (unsigned j = 0; j < n && seen < 0; j++)
                        if (g->instances[j].id == gi_id) seen = (int)j;
                if (seen >= 0 && attribution) {
                        /* another compute instance of the same GPU instance: a container may hold it */
                        char other[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "";
                        NVCALL(w, CALL_UUID, (int)i, rc,
                               lib->nvmlDeviceGetUUID ? lib->nvmlDeviceGetUUID(mdev, other, sizeof other) : NS);
                        if (rc == NVML_SUCCESS) add_mig_device(g, other, (unsigned)seen);
                }
                if (seen >= 0 || n == EXP_MAX_GPU_INSTANCES) continue;
                struct exp_gpu_instance *gi = &g->instances[n++];
                memset(gi, 0, sizeof *gi);
                gi->id = gi_id;

                uint64_t mig_total = 0;
                rc = NVML_ERROR_FUNCTION_NOT_FOUND;
                if (lib->nvmlDeviceGetMemoryInfo_v2) {
                        nvmlMemory_v2_t m = { .version = nvmlMemory_v2 };
                        NVCALL(w, CALL_MEMORY_INFO, (int)i, rc, lib->nvmlDeviceGetMemoryInfo_v2(mdev, &m));
                        if (rc == NVML_SUCCESS) {
                                mig_total = m.total;
                                gi->has_fb = gi->has_fb_reserved = true;
                                gi->fb_free = (double)(m.free >> 20);
                                gi->fb_used = (double)(m.used >> 20);
                                gi->fb_reserved = (double)(m.reserved >> 20);
                        }
                }
                if ((rc == NVML_ERROR_FUNCTION_NOT_FOUND || rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) &&
                    lib->nvmlDeviceGetMemoryInfo) {
                        nvmlMemory_t m = { 0 };
                        NVCALL(w, CALL_MEMORY_INFO, (int)i, rc, lib->nvmlDeviceGetMemoryInfo(mdev, &m));
                        if (rc == NVML_SUCCESS) {
                                mig_total = m.total;
                                gi->has_fb = true;
                                gi->fb_free = (double)(m.free >> 20);
                                gi->fb_used = (double)(m.used >> 20);
                        }
                }

                /* The profile name: known from an earlier sample by the MIG device's UUID, else looked up. */
                char mig_uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = "";
                NVCALL(w, CALL_UUID, (int)i, rc,
                       lib->nvmlDeviceGetUUID ? lib->nvmlDeviceGetUUID(mdev, mig_uuid, sizeof mig_uuid) : NS);
                if (rc != NVML_SUCCESS) mig_uuid[0] = 0;
                if (mig_uuid[0] && attribution) add_mig_device(g, mig_uuid, n - 1);
                bool known = false;
                pthread_mutex_lock(&e->lock);
                struct known_gpu *kg = &e->known[i];
                for (unsigned j = 0; mig_uuid[0] && j < kg->n_profiles && !known; j++)
                        if (kg->profiles[j].gi_id == gi_id && strcmp(kg->profiles[j].mig_uuid, mig_uuid) == 0) {
                                memcpy(gi->profile, kg->profiles[j].profile, sizeof gi->profile);
                                known = true;
                        }
                pthread_mutex_unlock(&e->lock);
                if (known) continue;
                int r = gpu_instance_profile(w, lib, i, dev, mdev, gi_id, mig_total >> 20, gpu_memory, gi->profile,
                                             sizeof gi->profile);
                if (r < 0) return r;
                if (!mig_uuid[0] || !gi->profile[0]) continue; /* not kept: asked again next sample */
                pthread_mutex_lock(&e->lock);
                struct known_profile *kp = &kg->profiles[kg->next_profile];
                kg->next_profile = (kg->next_profile + 1) % EXP_MAX_GPU_INSTANCES;
                if (kg->n_profiles < EXP_MAX_GPU_INSTANCES) kg->n_profiles++;
                memcpy(kp->mig_uuid, mig_uuid, sizeof kp->mig_uuid);
                kp->gi_id = gi_id;
                memcpy(kp->profile, gi->profile, sizeof kp->profile);
                pthread_mutex_unlock(&e->lock);
        }
        g->n_instances = n;
        return 0;
}

/* Returns true when the collectors CSV names opt-in metric m (no CSV: opt-in metrics are not served). */
static bool wanted(const struct exporter *e, enum exp_metric m) {
        return e->o.counters.filtered && e->o.counters.enabled[m];
}

/*
 * Reads the opt-in series the collectors CSV names (clock event reasons, violation times, PCIe link,
 * NVLink error totals) of GPU g through dev. Returns 0, or -ECANCELED when the worker was abandoned.
 */
static int sample_opt_in(struct worker_arg *w, struct nvml_lib *lib, struct exp_gpu *g, nvmlDevice_t dev) {
        struct exporter *e = w->e;
        unsigned i = g->index, u = 0;
        unsigned long long ull = 0;
        nvmlReturn_t rc;
        const nvmlReturn_t NS = NVML_ERROR_NOT_SUPPORTED;

        if (wanted(e, EXP_CLOCK_THROTTLE_REASONS)) {
                NVCALL(w, CALL_CLOCK_REASONS, (int)i, rc,
                       lib->nvmlDeviceGetCurrentClocksEventReasons
                               ? lib->nvmlDeviceGetCurrentClocksEventReasons(dev, &ull)
                               : NS);
                if (rc == NVML_SUCCESS) set_value(g, EXP_CLOCK_THROTTLE_REASONS, (double)ull);
        }
        static const struct {
                enum exp_metric m;
                nvmlPerfPolicyType_t policy;
        } viol[] = { { EXP_POWER_VIOLATION, NVML_PERF_POLICY_POWER },
                     { EXP_THERMAL_VIOLATION, NVML_PERF_POLICY_THERMAL } };
        for (size_t k = 0; k < ELEMENTSOF(viol); k++) {
                if (!wanted(e, viol[k].m)) continue;
                nvmlViolationTime_t t = { 0 };
                NVCALL(w, CALL_VIOLATION_STATUS, (int)i, rc,
                       lib->nvmlDeviceGetViolationStatus ? lib->nvmlDeviceGetViolationStatus(dev, viol[k].policy, &t)
                                                         : NS);
                if (rc == NVML_SUCCESS) set_value(g, viol[k].m, (double)(t.violationTime / 1000)); /* ns -> DCGM's us */
        }
        if (wanted(e, EXP_PCIE_LINK_GEN)) {
                NVCALL(w, CALL_PCIE_LINK_GEN, (int)i, rc,
                       lib->nvmlDeviceGetCurrPcieLinkGeneration ? lib->nvmlDeviceGetCurrPcieLinkGeneration(dev, &u)
                                                                : NS);
                if (rc == NVML_SUCCESS) set_value(g, EXP_PCIE_LINK_GEN, u);
        }
        if (wanted(e, EXP_PCIE_LINK_WIDTH)) {
                NVCALL(w, CALL_PCIE_LINK_WIDTH, (int)i, rc,
                       lib->nvmlDeviceGetCurrPcieLinkWidth ? lib->nvmlDeviceGetCurrPcieLinkWidth(dev, &u) : NS);
                if (rc == NVML_SUCCESS) set_value(g, EXP_PCIE_LINK_WIDTH, u);
        }
        /* The NVLink totals are NVML fields summing every link, as DCGM reads them. */
        static const struct {
                enum exp_metric m;
                unsigned field;
        } links[] = {
                { EXP_NVLINK_CRC_FLIT_ERRORS, NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL },
                { EXP_NVLINK_CRC_DATA_ERRORS, NVML_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL },
                { EXP_NVLINK_REPLAY_ERRORS, NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL },
                { EXP_NVLINK_RECOVERY_ERRORS, NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL },
        };
        nvmlFieldValue_t fv[ELEMENTSOF(links)];
        enum exp_metric fm[ELEMENTSOF(links)];
        int n = 0;
        memset(fv, 0, sizeof fv);
        for (size_t k = 0; k < ELEMENTSOF(links); k++)
                if (wanted(e, links[k].m)) {
                        fm[n] = links[k].m;
                        fv[n++].fieldId = links[k].field;
                }
        if (n > 0) {
                NVCALL(w, CALL_FIELD_VALUES, (int)i, rc,
                       lib->nvmlDeviceGetFieldValues ? lib->nvmlDeviceGetFieldValues(dev, n, fv) : NS);
                for (int k = 0; rc == NVML_SUCCESS && k < n; k++)
                        if (fv[k].nvmlReturn == NVML_SUCCESS)
                                set_value(g, fm[k],
                                          fv[k].valueType == NVML_VALUE_TYPE_UNSIGNED_INT ? (double)fv[k].value.uiVal
                                                                                          : (double)fv[k].value.ullVal);
        }
        return 0;
}

/*
 * Reads every series of GPU g->index. Returns 0 (also when the GPU failed: g says why), -ECANCELED
 * when the worker was abandoned, or -ENODEV when the driver went away (NVML must be initialised again).
 */
static int sample_gpu(struct worker_arg *w, struct nvml_lib *lib, struct exp_gpu *g) {
        struct exporter *e = w->e;
        unsigned i = g->index;
        nvmlDevice_t dev = NULL;
        nvmlReturn_t rc;
        const nvmlReturn_t NS = NVML_ERROR_NOT_SUPPORTED;

        NVCALL(w, CALL_HANDLE, (int)i, rc, lib->nvmlDeviceGetHandleByIndex(i, &dev));
        if (rc != NVML_SUCCESS) {
                gpu_problem(g, CALL_HANDLE, rc);
                return rc_needs_reinit(rc) ? -ENODEV : 0;
        }
        /* Identity every sample: a reset or replaced GPU may come back under the same index. */
        char uuid[sizeof g->uuid] = "", name[sizeof g->name] = "";
        NVCALL(w, CALL_UUID, (int)i, rc, lib->nvmlDeviceGetUUID ? lib->nvmlDeviceGetUUID(dev, uuid, sizeof uuid) : NS);
        if (rc != NVML_SUCCESS) {
                gpu_problem(g, CALL_UUID, rc);
                return rc_needs_reinit(rc) ? -ENODEV : 0;
        }
        NVCALL(w, CALL_NAME, (int)i, rc, lib->nvmlDeviceGetName ? lib->nvmlDeviceGetName(dev, name, sizeof name) : NS);
        if (rc != NVML_SUCCESS) name[0] = 0;
        nvmlPciInfo_t pci;
        memset(&pci, 0, sizeof pci);
        NVCALL(w, CALL_PCI_INFO, (int)i, rc, lib->nvmlDeviceGetPciInfo ? lib->nvmlDeviceGetPciInfo(dev, &pci) : NS);
        snprintf(g->uuid, sizeof g->uuid, "%s", uuid);
        snprintf(g->name, sizeof g->name, "%s", name);
        if (rc == NVML_SUCCESS)
                snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%.*s", (int)sizeof pci.busId - 1, pci.busId);
        g->identified = true;
        pthread_mutex_lock(&e->lock);
        struct known_gpu *k = &e->known[i];
        k->identified = true;
        memcpy(k->uuid, g->uuid, sizeof k->uuid);
        memcpy(k->name, g->name, sizeof k->name);
        memcpy(k->pci_bus_id, g->pci_bus_id, sizeof k->pci_bus_id);
        int64_t xid = e->xid_last[i];
        bool xid_on = e->o.xid_events;
        pthread_mutex_unlock(&e->lock);

        g->sampled = true;
        unsigned u = 0, u2 = 0;
        unsigned long long ull = 0;

        NVCALL(w, CALL_CLOCK_INFO, (int)i, rc,
               lib->nvmlDeviceGetClockInfo ? lib->nvmlDeviceGetClockInfo(dev, NVML_CLOCK_SM, &u) : NS);
        if (rc == NVML_SUCCESS) set_value(g, EXP_SM_CLOCK, u);
        if (rc == NVML_ERROR_GPU_IS_LOST) goto lost;
        NVCALL(w, CALL_CLOCK_INFO, (int)i, rc,
               lib->nvmlDeviceGetClockInfo ? lib->nvmlDeviceGetClockInfo(dev, NVML_CLOCK_MEM, &u) : NS);
        if (rc == NVML_SUCCESS) set_value(g, EXP_MEM_CLOCK, u);

        nvmlFieldValue_t fv[2];
        memset(fv, 0, sizeof fv);
        fv[0].fieldId = NVML_FI_DEV_MEMORY_TEMP;
        fv[1].fieldId = NVML_FI_DEV_NVLINK_BANDWIDTH_C0_TOTAL;
        NVCALL(w, CALL_FIELD_VALUES, (int)i, rc,
               lib->nvmlDeviceGetFieldValues ? lib->nvmlDeviceGetFieldValues(dev, 2, fv) : NS);
        if (rc == NVML_SUCCESS) {
                if (fv[0].nvmlReturn == NVML_SUCCESS) set_value(g, EXP_MEMORY_TEMP, (double)fv[0].value.uiVal);
                if (fv[1].nvmlReturn == NVML_SUCCESS)
                        set_value(g, EXP_NVLINK_BANDWIDTH_TOTAL, (double)fv[1].value.ullVal);
        }
        if (rc == NVML_ERROR_GPU_IS_LOST) goto lost;

        rc = NVML_ERROR_FUNCTION_NOT_FOUND;
        if (lib->nvmlDeviceGetTemperatureV) {
                nvmlTemperature_t t = { .version = nvmlTemperature_v1, .sensorType = NVML_TEMPERATURE_GPU };
                NVCALL(w, CALL_TEMPERATURE, (int)i, rc, lib->nvmlDeviceGetTemperatureV(dev, &t));
                if (rc == NVML_SUCCESS) set_value(g, EXP_GPU_TEMP, t.temperature);
        }
        if ((rc == NVML_ERROR_FUNCTION_NOT_FOUND || rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) &&
            lib->nvmlDeviceGetTemperature) {
                NVCALL(w, CALL_TEMPERATURE, (int)i, rc, lib->nvmlDeviceGetTemperature(dev, NVML_TEMPERATURE_GPU, &u));
                if (rc == NVML_SUCCESS) set_value(g, EXP_GPU_TEMP, u);
        }

        NVCALL(w, CALL_POWER_USAGE, (int)i, rc,
               lib->nvmlDeviceGetPowerUsage ? lib->nvmlDeviceGetPowerUsage(dev, &u) : NS);
        if (rc == NVML_SUCCESS) set_value(g, EXP_POWER_USAGE, u / 1000.0); /* mW -> W */
        if (rc == NVML_ERROR_GPU_IS_LOST) goto lost;
        NVCALL(w, CALL_ENERGY, (int)i, rc,
               lib->nvmlDeviceGetTotalEnergyConsumption ? lib->nvmlDeviceGetTotalEnergyConsumption(dev, &ull) : NS);
        if (rc == NVML_SUCCESS) set_value(g, EXP_TOTAL_ENERGY, (double)ull);
        NVCALL(w, CALL_PCIE_REPLAY, (int)i, rc,
               lib->nvmlDeviceGetPcieReplayCounter ? lib->nvmlDeviceGetPcieReplayCounter(dev, &u) : NS);
        if (rc == NVML_SUCCESS) set_value(g, EXP_PCIE_REPLAY, u);

        nvmlUtilization_t util = { 0 };
        NVCALL(w, CALL_UTILIZATION, (int)i, rc,
               lib->nvmlDeviceGetUtilizationRates ? lib->nvmlDeviceGetUtilizationRates(dev, &util) : NS);
        if (rc == NVML_SUCCESS) {
                set_value(g, EXP_GPU_UTIL, util.gpu);
                set_value(g, EXP_MEM_COPY_UTIL, util.memory);
        }
        NVCALL(w, CALL_ENCODER_UTIL, (int)i, rc,
               lib->nvmlDeviceGetEncoderUtilization ? lib->nvmlDeviceGetEncoderUtilization(dev, &u, &u2) : NS);
        if (rc == NVML_SUCCESS) set_value(g, EXP_ENC_UTIL, u);
        NVCALL(w, CALL_DECODER_UTIL, (int)i, rc,
               lib->nvmlDeviceGetDecoderUtilization ? lib->nvmlDeviceGetDecoderUtilization(dev, &u, &u2) : NS);
        if (rc == NVML_SUCCESS) set_value(g, EXP_DEC_UTIL, u);

        /* Framebuffer in MiB as DCGM reports it; reserved only from the v2 struct. */
        uint64_t memory_total = 0;
        rc = NVML_ERROR_FUNCTION_NOT_FOUND;
        if (lib->nvmlDeviceGetMemoryInfo_v2) {
                nvmlMemory_v2_t m = { .version = nvmlMemory_v2 };
                NVCALL(w, CALL_MEMORY_INFO, (int)i, rc, lib->nvmlDeviceGetMemoryInfo_v2(dev, &m));
                if (rc == NVML_SUCCESS) {
                        memory_total = m.total;
                        set_value(g, EXP_FB_FREE, (double)(m.free >> 20));
                        set_value(g, EXP_FB_USED, (double)(m.used >> 20));
                        set_value(g, EXP_FB_RESERVED, (double)(m.reserved >> 20));
                }
        }
        if ((rc == NVML_ERROR_FUNCTION_NOT_FOUND || rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) &&
            lib->nvmlDeviceGetMemoryInfo) {
                nvmlMemory_t m = { 0 };
                NVCALL(w, CALL_MEMORY_INFO, (int)i, rc, lib->nvmlDeviceGetMemoryInfo(dev, &m));
                if (rc == NVML_SUCCESS) {
                        memory_total = m.total;
                        set_value(g, EXP_FB_FREE, (double)(m.free >> 20));
                        set_value(g, EXP_FB_USED, (double)(m.used >> 20));
                }
        }

        unsigned corr = 0, unc = 0, pending = 0, failure = 0;
        NVCALL(w, CALL_REMAPPED_ROWS, (int)i, rc,
               lib->nvmlDeviceGetRemappedRows ? lib->nvmlDeviceGetRemappedRows(dev, &corr, &unc, &pending, &failure)
                                              : NS);
        if (rc == NVML_SUCCESS) {
                set_value(g, EXP_UNCORRECTABLE_REMAPPED_ROWS, unc);
                set_value(g, EXP_CORRECTABLE_REMAPPED_ROWS, corr);
                set_value(g, EXP_ROW_REMAP_FAILURE, failure ? 1 : 0);
        }
        if (xid_on) set_value(g, EXP_XID_ERRORS, xid > 0 ? (double)xid : 0);

        int r = sample_opt_in(w, lib, g, dev);
        if (r < 0) return r;
        r = sample_gpu_instances(w, lib, g, dev, memory_total);
        if (r < 0) return r;
        return exp_gpm_sample(w, lib, g, dev);

lost:
        memset(g->has, 0, sizeof g->has);
        gpu_problem(g, CALL_CLOCK_INFO, NVML_ERROR_GPU_IS_LOST);
        return 0;
}

/*
 * Takes one sample into s: loads and initialises NVML when needed, then reads every GPU that is not
 * stuck. Returns 0 (NVML failures are recorded in s), or -ECANCELED when the worker was abandoned.
 */
static int sample_once(struct worker_arg *w, struct exp_sample *s) {
        struct exporter *e = w->e;
        nvmlReturn_t rc;
        char problem[192];

        pthread_mutex_lock(&e->lock);
        struct nvml_lib *lib = nvml_lib_ref(e->lib);
        bool initialized = e->nvml_initialized;
        pthread_mutex_unlock(&e->lock);
        _cleanup_nvml_lib_ struct nvml_lib *lib_ref = lib;

        if (!lib) {
                _cleanup_free_ char *err = NULL;
                int r = nvml_lib_open(e->nvml_library, &lib, &err);
                if (r < 0) {
                        pthread_mutex_lock(&e->lock);
                        e->stats.nvml_errors[CALL_LIBRARY_OPEN]++;
                        pthread_mutex_unlock(&e->lock);
                        snprintf(s->nvml_problem, sizeof s->nvml_problem, "cannot load %s: %s",
                                 e->nvml_library ? e->nvml_library : NVML_LIBRARY_NAME, err ? err : strerror(-r));
                        return 0;
                }
                lib_ref = lib;
                pthread_mutex_lock(&e->lock);
                if (!e->lib) e->lib = nvml_lib_ref(lib);
                pthread_mutex_unlock(&e->lock);
        }

        if (!initialized) {
                NVCALL(w, CALL_INIT, -1, rc, lib->nvmlInit());
                if (rc != NVML_SUCCESS) {
                        snprintf(s->nvml_problem, sizeof s->nvml_problem, "nvmlInit: %s (%s)", nvml_return_name(rc),
                                 nvml_return_message(rc));
                        return 0;
                }
                char ver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE] = "";
                NVCALL(w, CALL_DRIVER_VERSION, -1, rc,
                       lib->nvmlSystemGetDriverVersion ? lib->nvmlSystemGetDriverVersion(ver, sizeof ver)
                                                       : NVML_ERROR_NOT_SUPPORTED);
                if (rc != NVML_SUCCESS) ver[0] = 0;
                pthread_mutex_lock(&e->lock);
                e->nvml_initialized = true;
                snprintf(e->driver_version, sizeof e->driver_version, "%s", ver);
                pthread_mutex_unlock(&e->lock);
        }
        pthread_mutex_lock(&e->lock);
        snprintf(s->driver_version, sizeof s->driver_version, "%s", e->driver_version);
        pthread_mutex_unlock(&e->lock);

        unsigned count = 0;
        NVCALL(w, CALL_DEVICE_COUNT, -1, rc, lib->nvmlDeviceGetCount(&count));
        if (rc != NVML_SUCCESS) {
                snprintf(s->nvml_problem, sizeof s->nvml_problem, "nvmlDeviceGetCount: %s (%s)", nvml_return_name(rc),
                         nvml_return_message(rc));
                goto reinit;
        }
        if (count > MAX_GPUS) count = MAX_GPUS;
        s->nvml_up = true;
        s->n_gpus = count;
        s->gpus = count ? xcalloc(count, sizeof *s->gpus) : NULL;
        for (unsigned i = 0; i < count; i++) {
                struct exp_gpu *g = &s->gpus[i];
                g->index = i;
                pthread_mutex_lock(&e->lock);
                bool stuck = e->stuck_gpu[i];
                struct known_gpu k = e->known[i];
                pthread_mutex_unlock(&e->lock);
                if (k.identified) {
                        g->identified = true;
                        memcpy(g->uuid, k.uuid, sizeof g->uuid);
                        memcpy(g->name, k.name, sizeof g->name);
                        memcpy(g->pci_bus_id, k.pci_bus_id, sizeof g->pci_bus_id);
                }
                if (stuck) {
                        s->partial = true;
                        snprintf(g->problem, sizeof g->problem, "an NVML call on this GPU has not returned");
                        continue;
                }
                int r = sample_gpu(w, lib, g);
                if (r == -ECANCELED) return r;
                if (r == -ENODEV) {
                        snprintf(problem, sizeof problem, "GPU %u: %s", i, g->problem);
                        snprintf(s->nvml_problem, sizeof s->nvml_problem, "%s", problem);
                        s->nvml_up = false;
                        goto reinit;
                }
        }
        return 0;

reinit:
        if (rc_needs_reinit(rc) || !s->nvml_up) {
                exp_gpm_release(e, lib); /* sample buffers do not outlive the NVML session */
                NVCALL(w, CALL_SHUTDOWN, -1, rc, lib->nvmlShutdown());
                pthread_mutex_lock(&e->lock);
                e->nvml_initialized = false;
                pthread_mutex_unlock(&e->lock);
        }
        return 0;
}

/* Renders sample s (and the stats) as the GPU part of the page and publishes. Returns nothing. */
static void render_and_publish(struct exporter *e, const struct exp_sample *s, bool complete) {
        struct exp_render_options ro = { .hostname = e->hostname,
                                         .hostname_label = e->hostname_label,
                                         .counters = &e->o.counters };
        pthread_mutex_lock(&e->lock);
        e->stats.samples_total++;
        struct exp_stats stats = e->stats;
        if (complete) {
                e->have_sample = true;
                e->sample_time = now_mono();
        }
        e->nvml_up = s->nvml_up;
        snprintf(e->nvml_problem, sizeof e->nvml_problem, "%s", s->nvml_problem);
        pthread_mutex_unlock(&e->lock);

        struct buf b = { 0 };
        exp_render_gpus(&b, s, &ro);
        exp_render_self(&b, s, &stats, &ro);
        pthread_mutex_lock(&e->publish_lock);
        free(e->gpu_text);
        e->gpu_text = b.data;
        pthread_mutex_unlock(&e->publish_lock);
        exporter_publish(e);
}

/*
 * Pod attribution for sample s, when on: one List call of the kubelet's pod-resources service
 * (bounded by podres_timeout_ms), its containers matched to s's GPUs and GPU instances. Returns
 * nothing: a failure is counted, kept for /health, and leaves s without pod labels.
 */
static void attribute_pods(struct exporter *e, struct exp_sample *s) {
        if (!e->podres || !s->nvml_up || s->n_gpus == 0) return; /* no GPU series to label */
        struct podres_list *l = NULL;
        char *err = NULL;
        pthread_mutex_lock(&e->podres_lock);
        int r = podres_list(e->podres, &l, &err);
        pthread_mutex_unlock(&e->podres_lock);
        pthread_mutex_lock(&e->lock);
        e->stats.pod_attribution_up = r >= 0;
        if (r < 0) {
                e->stats.pod_attribution_errors++;
                snprintf(e->podres_problem, sizeof e->podres_problem, "%s", err ? err : strerror(-r));
        } else {
                e->podres_problem[0] = 0;
        }
        pthread_mutex_unlock(&e->lock);
        if (r >= 0) exp_attribute_pods(s, l);
        podres_list_free(l);
        free(err);
}

/* The sampler worker: samples, publishes, sleeps, until stopped or abandoned. Returns NULL. */
static void *worker_main(void *arg) {
        struct worker_arg *w = arg;
        struct exporter *e = w->e;
        for (;;) {
                struct exp_sample s = { 0 };
                struct timespec t0 = now_mono();
                int r = sample_once(w, &s);
                if (r == -ECANCELED) {
                        exp_sample_clear(&s);
                        break;
                }
                struct timespec t1 = now_mono();
                s.duration_seconds = exp_seconds_between(&t0, &t1);
                pthread_mutex_lock(&e->lock);
                bool current = w->gen == e->gen;
                pthread_mutex_unlock(&e->lock);
                if (current) attribute_pods(e, &s);
                if (current) render_and_publish(e, &s, !s.partial);
                exp_sample_clear(&s);
                pthread_mutex_lock(&e->lock);
                bool stop =
                        !current || w->gen != e->gen || exporter_wait_locked(e, e->o.interval_ms) || w->gen != e->gen;
                pthread_mutex_unlock(&e->lock);
                if (stop) break;
        }
        /* An abandoned worker whose call returned: its GPU is not stuck any more. */
        pthread_mutex_lock(&e->lock);
        if (w->gen != e->gen) {
                if (e->stats.stuck_workers > 0) e->stats.stuck_workers--;
                if (w->stuck_gpu >= 0) e->stuck_gpu[w->stuck_gpu] = false;
        }
        if (e->cur == w) e->cur = NULL;
        pthread_mutex_unlock(&e->lock);
        free(w);
        exporter_unref(e);
        return NULL;
}

/* Starts a worker of the current generation. Caller holds e->lock. Returns 0 or -errno. */
int exporter_start_worker_locked(struct exporter *e) {
        struct worker_arg *w = xmalloc(sizeof *w);
        w->e = exporter_ref(e);
        w->gen = e->gen;
        w->stuck_gpu = -1;
        e->in_call = false;
        int r = pthread_create(&e->worker, NULL, worker_main, w);
        if (r != 0) {
                free(w);
                __atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL);
                e->worker_running = false;
                return -r;
        }
        e->worker_running = true;
        e->cur = w;
        return 0;
}
