/* nvml_lib.h: NVML loaded with dlopen: a table of resolved entry points, and names for return codes. */
#pragma once

#include "nvml/nvml.h"

/*
 * The table of NVML entry points. Members carry the unversioned NVML name; each was resolved from
 * the newest versioned symbol the library exports, falling back to older names (see nvml_lib.c).
 * A NULL member means the library lacks the function: callers treat that as NVML_ERROR_NOT_SUPPORTED.
 * nvmlInit, nvmlShutdown, nvmlDeviceGetCount and nvmlDeviceGetHandleByIndex are never NULL.
 * The struct is reference counted so that a worker thread stuck inside the library keeps it mapped.
 */
struct nvml_lib {
        void *handle;
        char *path; /* the file actually loaded (from dladdr), or the name asked for */
        int refs;   /* atomic */

        nvmlInit_fn nvmlInit;
        nvmlInitWithFlags_fn nvmlInitWithFlags;
        nvmlShutdown_fn nvmlShutdown;
        nvmlErrorString_fn nvmlErrorString;
        nvmlSystemGetDriverVersion_fn nvmlSystemGetDriverVersion;
        nvmlSystemGetNVMLVersion_fn nvmlSystemGetNVMLVersion;
        nvmlSystemGetCudaDriverVersion_fn nvmlSystemGetCudaDriverVersion;
        nvmlDeviceGetCount_fn nvmlDeviceGetCount;
        nvmlDeviceGetHandleByIndex_fn nvmlDeviceGetHandleByIndex;
        nvmlDeviceGetName_fn nvmlDeviceGetName;
        nvmlDeviceGetUUID_fn nvmlDeviceGetUUID;
        nvmlDeviceGetIndex_fn nvmlDeviceGetIndex;
        nvmlDeviceGetMinorNumber_fn nvmlDeviceGetMinorNumber;
        nvmlDeviceGetPciInfo_fn nvmlDeviceGetPciInfo;
        /* Two structs, two entry points: the probe tries _v2 and falls back to the v1 call. */
        nvmlDeviceGetMemoryInfo_v2_fn nvmlDeviceGetMemoryInfo_v2;
        nvmlDeviceGetMemoryInfo_fn nvmlDeviceGetMemoryInfo;
        nvmlDeviceGetCudaComputeCapability_fn nvmlDeviceGetCudaComputeCapability;
        nvmlDeviceGetMigMode_fn nvmlDeviceGetMigMode;
        /* MIG devices (all optional; the probe asks them only on GPUs with MIG mode enabled). */
        nvmlDeviceGetMaxMigDeviceCount_fn nvmlDeviceGetMaxMigDeviceCount;
        nvmlDeviceGetMigDeviceHandleByIndex_fn nvmlDeviceGetMigDeviceHandleByIndex;
        nvmlDeviceGetDeviceHandleFromMigDeviceHandle_fn nvmlDeviceGetDeviceHandleFromMigDeviceHandle;
        nvmlDeviceGetGpuInstanceId_fn nvmlDeviceGetGpuInstanceId;
        nvmlDeviceGetComputeInstanceId_fn nvmlDeviceGetComputeInstanceId;
        nvmlDeviceGetAttributes_fn nvmlDeviceGetAttributes;
        nvmlDeviceGetGpuInstanceProfileInfo_fn nvmlDeviceGetGpuInstanceProfileInfo;
        nvmlDeviceGetGpuInstanceById_fn nvmlDeviceGetGpuInstanceById;
        nvmlGpuInstanceGetInfo_fn nvmlGpuInstanceGetInfo;
        nvmlGpuInstanceGetComputeInstanceProfileInfo_fn nvmlGpuInstanceGetComputeInstanceProfileInfo;
        nvmlGpuInstanceGetComputeInstanceById_fn nvmlGpuInstanceGetComputeInstanceById;
        nvmlComputeInstanceGetInfo_fn nvmlComputeInstanceGetInfo;
        nvmlDeviceGetPersistenceMode_fn nvmlDeviceGetPersistenceMode;
        nvmlDeviceGetGpuFabricInfoV_fn nvmlDeviceGetGpuFabricInfoV;
        nvmlDeviceGetGpuFabricInfo_fn nvmlDeviceGetGpuFabricInfo;
        nvmlDeviceGetEccMode_fn nvmlDeviceGetEccMode;
        nvmlDeviceGetTotalEccErrors_fn nvmlDeviceGetTotalEccErrors;
        nvmlDeviceGetRemappedRows_fn nvmlDeviceGetRemappedRows;
        nvmlDeviceGetFieldValues_fn nvmlDeviceGetFieldValues;
        /* Same: TemperatureV (a struct) first, the deprecated Temperature (a sensor id) second. */
        nvmlDeviceGetTemperatureV_fn nvmlDeviceGetTemperatureV;
        nvmlDeviceGetTemperature_fn nvmlDeviceGetTemperature;
        nvmlDeviceGetPowerUsage_fn nvmlDeviceGetPowerUsage;
        nvmlDeviceGetTotalEnergyConsumption_fn nvmlDeviceGetTotalEnergyConsumption;
        nvmlDeviceGetUtilizationRates_fn nvmlDeviceGetUtilizationRates;
        nvmlDeviceGetClockInfo_fn nvmlDeviceGetClockInfo;
        nvmlDeviceGetPcieReplayCounter_fn nvmlDeviceGetPcieReplayCounter;
        nvmlDeviceGetCurrentClocksEventReasons_fn nvmlDeviceGetCurrentClocksEventReasons;
        nvmlDeviceGetEncoderUtilization_fn nvmlDeviceGetEncoderUtilization;
        nvmlDeviceGetDecoderUtilization_fn nvmlDeviceGetDecoderUtilization;
        nvmlDeviceGetPcieThroughput_fn nvmlDeviceGetPcieThroughput;
        /* GPM (Hopper and later; drivers before R520 lack them all). */
        nvmlGpmQueryDeviceSupport_fn nvmlGpmQueryDeviceSupport;
        nvmlGpmSampleAlloc_fn nvmlGpmSampleAlloc;
        nvmlGpmSampleFree_fn nvmlGpmSampleFree;
        nvmlGpmSampleGet_fn nvmlGpmSampleGet;
        nvmlGpmMigSampleGet_fn nvmlGpmMigSampleGet;
        nvmlGpmMetricsGet_fn nvmlGpmMetricsGet;
        /* Health queries (nvml_health_probe.c), all optional. */
        nvmlDeviceGetViolationStatus_fn nvmlDeviceGetViolationStatus;
        nvmlDeviceGetTemperatureThreshold_fn nvmlDeviceGetTemperatureThreshold;
        nvmlDeviceGetNvLinkState_fn nvmlDeviceGetNvLinkState;
        nvmlDeviceGetNvLinkErrorCounter_fn nvmlDeviceGetNvLinkErrorCounter;
        nvmlDeviceGetPcieLink_fn nvmlDeviceGetCurrPcieLinkWidth;
        nvmlDeviceGetPcieLink_fn nvmlDeviceGetMaxPcieLinkWidth;
        nvmlDeviceGetPcieLink_fn nvmlDeviceGetCurrPcieLinkGeneration;
        nvmlDeviceGetPcieLink_fn nvmlDeviceGetMaxPcieLinkGeneration;
        nvmlDeviceGetPcieLink_fn nvmlDeviceGetGpuMaxPcieLinkGeneration;
        nvmlDeviceGetRetiredPages_fn nvmlDeviceGetRetiredPages;
        nvmlDeviceGetRetiredPagesPendingStatus_fn nvmlDeviceGetRetiredPagesPendingStatus;
        /* _v3 or _v2 (one struct, nvmlProcessInfo_t); the v1 call wrote a shorter struct: not a fallback. */
        nvmlDeviceGetRunningProcesses_fn nvmlDeviceGetComputeRunningProcesses;
        nvmlDeviceGetRunningProcesses_fn nvmlDeviceGetGraphicsRunningProcesses;
        nvmlDeviceQueryDrainState_fn nvmlDeviceQueryDrainState;
        nvmlEventSetCreate_fn nvmlEventSetCreate;
        nvmlDeviceRegisterEvents_fn nvmlDeviceRegisterEvents;
        nvmlDeviceGetSupportedEventTypes_fn nvmlDeviceGetSupportedEventTypes;
        nvmlEventSetWait_fn nvmlEventSetWait;
        nvmlEventSetFree_fn nvmlEventSetFree;
};

/* The library name dlopen'ed when no path is given. */
#define NVML_LIBRARY_NAME "libnvidia-ml.so.1"

/*
 * Loads NVML from path (NULL: NVML_LIBRARY_NAME through the dynamic linker's search) and resolves
 * the table. Returns 0 and *ret (release with nvml_lib_unref); -ENOENT when the library cannot be
 * loaded, -ELIBBAD when a required entry point is missing. On failure *ret_error (when not NULL)
 * gets a malloc'd sentence (dlerror's text) to free.
 */
int nvml_lib_open(const char *path, struct nvml_lib **ret, char **ret_error);

/* Returns lib after taking one more reference (lib may be NULL). Thread-safe. */
struct nvml_lib *nvml_lib_ref(struct nvml_lib *lib);

/* Drops one reference; the last one dlcloses the library. Returns NULL. Thread-safe. */
struct nvml_lib *nvml_lib_unref(struct nvml_lib *lib);

static inline void nvml_lib_unrefp(struct nvml_lib **p) {
        nvml_lib_unref(*p);
}
#define _cleanup_nvml_lib_ __attribute__((cleanup(nvml_lib_unrefp)))

/* Asks a GPU's (or a MIG device's) memory: nvmlDeviceGetMemoryInfo_v2 where the library has it and
 * accepts the version, else the v1 call (reserved is 0 then). Returns the call's nvmlReturn_t, with
 * *ret filled on NVML_SUCCESS and *ret_version (may be NULL) set to 2 or 1 by the call that answered;
 * NVML_ERROR_NOT_SUPPORTED when the library has neither. */
nvmlReturn_t nvml_memory_info(const struct nvml_lib *lib, nvmlDevice_t dev, nvmlMemory_v2_t *ret, int *ret_version);

/* Returns the symbolic name of an nvmlReturn_t ("NVML_ERROR_DRIVER_NOT_LOADED"); never NULL. Codes the
 * project does not know give "NVML_ERROR_UNRECOGNIZED"; NVML_FACT_NOT_QUERIED gives "NOT_QUERIED". */
const char *nvml_return_name(int rc);

/* Returns a human sentence for an nvmlReturn_t, without needing the library; never NULL. */
const char *nvml_return_message(int rc);

/* The rc of a fact that the probe never asked for (it timed out first, or an earlier call failed). */
#define NVML_FACT_NOT_QUERIED (-1)
