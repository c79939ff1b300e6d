/* nvml_lib.c: dlopen libnvidia-ml.so.1, resolve its entry points with versioned-name fallbacks, name return codes. */
#include "nvml/nvml_lib.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/driver_lib.h"
#include "basic/util.h"

/* One table row: the member to fill and the names to try, newest first. */
struct nvml_sym {
        size_t offset;
        bool required;
        const char *names[4];
};

#define SYM(member, req, ...)                                                                                          \
        {                                                                                                              \
                offsetof(struct nvml_lib, member), req, {                                                              \
                        __VA_ARGS__, NULL                                                                              \
                }                                                                                                      \
        }

static const struct nvml_sym nvml_syms[] = {
        SYM(nvmlInit, true, "nvmlInit_v2", "nvmlInit"),
        SYM(nvmlInitWithFlags, false, "nvmlInitWithFlags"),
        SYM(nvmlShutdown, true, "nvmlShutdown"),
        SYM(nvmlErrorString, false, "nvmlErrorString"),
        SYM(nvmlSystemGetDriverVersion, false, "nvmlSystemGetDriverVersion"),
        SYM(nvmlSystemGetNVMLVersion, false, "nvmlSystemGetNVMLVersion"),
        /* The plain call asks the kernel driver; _v2 loads libcuda, which may hang or be absent. */
        SYM(nvmlSystemGetCudaDriverVersion, false, "nvmlSystemGetCudaDriverVersion",
            "nvmlSystemGetCudaDriverVersion_v2"),
        SYM(nvmlDeviceGetCount, true, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"),
        SYM(nvmlDeviceGetHandleByIndex, true, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"),
        SYM(nvmlDeviceGetName, false, "nvmlDeviceGetName"),
        SYM(nvmlDeviceGetUUID, false, "nvmlDeviceGetUUID"),
        SYM(nvmlDeviceGetIndex, false, "nvmlDeviceGetIndex"),
        SYM(nvmlDeviceGetMinorNumber, false, "nvmlDeviceGetMinorNumber"),
        /* The unversioned v1 call predates busIdLegacy and wrote a different layout: not a fallback. */
        SYM(nvmlDeviceGetPciInfo, false, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2"),
        SYM(nvmlDeviceGetMemoryInfo_v2, false, "nvmlDeviceGetMemoryInfo_v2"),
        SYM(nvmlDeviceGetMemoryInfo, false, "nvmlDeviceGetMemoryInfo"),
        SYM(nvmlDeviceGetCudaComputeCapability, false, "nvmlDeviceGetCudaComputeCapability"),
        SYM(nvmlDeviceGetMigMode, false, "nvmlDeviceGetMigMode"),
        SYM(nvmlDeviceGetMaxMigDeviceCount, false, "nvmlDeviceGetMaxMigDeviceCount"),
        SYM(nvmlDeviceGetMigDeviceHandleByIndex, false, "nvmlDeviceGetMigDeviceHandleByIndex"),
        SYM(nvmlDeviceGetDeviceHandleFromMigDeviceHandle, false, "nvmlDeviceGetDeviceHandleFromMigDeviceHandle"),
        SYM(nvmlDeviceGetGpuInstanceId, false, "nvmlDeviceGetGpuInstanceId"),
        SYM(nvmlDeviceGetComputeInstanceId, false, "nvmlDeviceGetComputeInstanceId"),
        /* nvml.h maps nvmlDeviceGetAttributes to _v2; both take nvmlDeviceAttributes_t. */
        SYM(nvmlDeviceGetAttributes, false, "nvmlDeviceGetAttributes_v2", "nvmlDeviceGetAttributes"),
        SYM(nvmlDeviceGetGpuInstanceProfileInfo, false, "nvmlDeviceGetGpuInstanceProfileInfo"),
        SYM(nvmlDeviceGetGpuInstanceById, false, "nvmlDeviceGetGpuInstanceById"),
        SYM(nvmlGpuInstanceGetInfo, false, "nvmlGpuInstanceGetInfo"),
        SYM(nvmlGpuInstanceGetComputeInstanceProfileInfo, false, "nvmlGpuInstanceGetComputeInstanceProfileInfo"),
        SYM(nvmlGpuInstanceGetComputeInstanceById, false, "nvmlGpuInstanceGetComputeInstanceById"),
        /* Same: nvmlComputeInstanceGetInfo is _v2 in nvml.h, one struct for both. */
        SYM(nvmlComputeInstanceGetInfo, false, "nvmlComputeInstanceGetInfo_v2", "nvmlComputeInstanceGetInfo"),
        SYM(nvmlDeviceGetPersistenceMode, false, "nvmlDeviceGetPersistenceMode"),
        SYM(nvmlDeviceGetGpuFabricInfoV, false, "nvmlDeviceGetGpuFabricInfoV"),
        SYM(nvmlDeviceGetGpuFabricInfo, false, "nvmlDeviceGetGpuFabricInfo"),
        SYM(nvmlDeviceGetEccMode, false, "nvmlDeviceGetEccMode"),
        SYM(nvmlDeviceGetTotalEccErrors, false, "nvmlDeviceGetTotalEccErrors"),
        SYM(nvmlDeviceGetRemappedRows, false, "nvmlDeviceGetRemappedRows"),
        SYM(nvmlDeviceGetFieldValues, false, "nvmlDeviceGetFieldValues"),
        SYM(nvmlDeviceGetTemperatureV, false, "nvmlDeviceGetTemperatureV"),
        SYM(nvmlDeviceGetTemperature, false, "nvmlDeviceGetTemperature"),
        SYM(nvmlDeviceGetPowerUsage, false, "nvmlDeviceGetPowerUsage"),
        SYM(nvmlDeviceGetTotalEnergyConsumption, false, "nvmlDeviceGetTotalEnergyConsumption"),
        SYM(nvmlDeviceGetUtilizationRates, false, "nvmlDeviceGetUtilizationRates"),
        SYM(nvmlDeviceGetClockInfo, false, "nvmlDeviceGetClockInfo"),
        SYM(nvmlDeviceGetPcieReplayCounter, false, "nvmlDeviceGetPcieReplayCounter"),
        SYM(nvmlDeviceGetCurrentClocksEventReasons, false, "nvmlDeviceGetCurrentClocksEventReasons",
            "nvmlDeviceGetCurrentClocksThrottleReasons"),
        SYM(nvmlDeviceGetEncoderUtilization, false, "nvmlDeviceGetEncoderUtilization"),
        SYM(nvmlDeviceGetDecoderUtilization, false, "nvmlDeviceGetDecoderUtilization"),
        SYM(nvmlDeviceGetPcieThroughput, false, "nvmlDeviceGetPcieThroughput"),
        SYM(nvmlGpmQueryDeviceSupport, false, "nvmlGpmQueryDeviceSupport"),
        SYM(nvmlGpmSampleAlloc, false, "nvmlGpmSampleAlloc"),
        SYM(nvmlGpmSampleFree, false, "nvmlGpmSampleFree"),
        SYM(nvmlGpmSampleGet, false, "nvmlGpmSampleGet"),
        SYM(nvmlGpmMigSampleGet, false, "nvmlGpmMigSampleGet"),
        SYM(nvmlGpmMetricsGet, false, "nvmlGpmMetricsGet"),
        SYM(nvmlDeviceGetViolationStatus, false, "nvmlDeviceGetViolationStatus"),
        SYM(nvmlDeviceGetTemperatureThreshold, false, "nvmlDeviceGetTemperatureThreshold"),
        SYM(nvmlDeviceGetNvLinkState, false, "nvmlDeviceGetNvLinkState"),
        SYM(nvmlDeviceGetNvLinkErrorCounter, false, "nvmlDeviceGetNvLinkErrorCounter"),
        SYM(nvmlDeviceGetCurrPcieLinkWidth, false, "nvmlDeviceGetCurrPcieLinkWidth"),
        SYM(nvmlDeviceGetMaxPcieLinkWidth, false, "nvmlDeviceGetMaxPcieLinkWidth"),
        SYM(nvmlDeviceGetCurrPcieLinkGeneration, false, "nvmlDeviceGetCurrPcieLinkGeneration"),
        SYM(nvmlDeviceGetMaxPcieLinkGeneration, false, "nvmlDeviceGetMaxPcieLinkGeneration"),
        SYM(nvmlDeviceGetGpuMaxPcieLinkGeneration, false, "nvmlDeviceGetGpuMaxPcieLinkGeneration"),
        SYM(nvmlDeviceGetRetiredPages, false, "nvmlDeviceGetRetiredPages"),
        SYM(nvmlDeviceGetRetiredPagesPendingStatus, false, "nvmlDeviceGetRetiredPagesPendingStatus"),
        SYM(nvmlDeviceGetComputeRunningProcesses, false, "nvmlDeviceGetComputeRunningProcesses_v3",
            "nvmlDeviceGetComputeRunningProcesses_v2"),
        SYM(nvmlDeviceGetGraphicsRunningProcesses, false, "nvmlDeviceGetGraphicsRunningProcesses_v3",
            "nvmlDeviceGetGraphicsRunningProcesses_v2"),
        SYM(nvmlDeviceQueryDrainState, false, "nvmlDeviceQueryDrainState"),
        SYM(nvmlEventSetCreate, false, "nvmlEventSetCreate"),
        SYM(nvmlDeviceRegisterEvents, false, "nvmlDeviceRegisterEvents"),
        SYM(nvmlDeviceGetSupportedEventTypes, false, "nvmlDeviceGetSupportedEventTypes"),
        SYM(nvmlEventSetWait, false, "nvmlEventSetWait_v2", "nvmlEventSetWait"),
        SYM(nvmlEventSetFree, false, "nvmlEventSetFree"),
};

/* Frees a lib whose last reference is gone. Returns nothing; never fails. */
static void nvml_lib_free(struct nvml_lib *lib) {
        if (lib->handle) dlclose(lib->handle);
        free(lib->path);
        free(lib);
}

int nvml_lib_open(const char *path, struct nvml_lib **ret, char **ret_error) {
        const char *name = path ? path : NVML_LIBRARY_NAME;

        if (ret_error) *ret_error = NULL;
        void *h;
        if (path) {
                dlerror();
                h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
                if (!h) {
                        const char *e = dlerror();
                        if (ret_error) *ret_error = xstrdup(e ? e : "dlopen failed");
                }
        } else
                h = driver_lib_dlopen(NVML_LIBRARY_NAME, ret_error);
        if (!h) return -ENOENT;

        struct nvml_lib *lib = xcalloc(1, sizeof *lib);
        lib->handle = h;
        lib->refs = 1;
        for (size_t i = 0; i < ELEMENTSOF(nvml_syms); i++) {
                const struct nvml_sym *s = &nvml_syms[i];
                void *f = NULL;
                for (size_t j = 0; s->names[j] && !f; j++) f = dlsym(h, s->names[j]);
                if (!f && s->required) {
                        if (ret_error)
                                *ret_error = xasprintf("%s: no symbol %s: not an NVML library", name, s->names[0]);
                        nvml_lib_free(lib);
                        return -ELIBBAD;
                }
                /* POSIX guarantees data and function pointers convert through dlsym's void *. */
                memcpy((char *)lib + s->offset, &f, sizeof f);
        }

        Dl_info info;
        if (dladdr((void *)lib->nvmlInit, &info) && info.dli_fname)
                lib->path = xstrdup(info.dli_fname);
        else
                lib->path = xstrdup(name);

        *ret = lib;
        return 0;
}

struct nvml_lib *nvml_lib_ref(struct nvml_lib *lib) {
        if (lib) __atomic_add_fetch(&lib->refs, 1, __ATOMIC_RELAXED);
        return lib;
}

struct nvml_lib *nvml_lib_unref(struct nvml_lib *lib) {
        if (lib && __atomic_sub_fetch(&lib->refs, 1, __ATOMIC_ACQ_REL) == 0) nvml_lib_free(lib);
        return NULL;
}

/* One row per nvmlReturn_t: the name in nvml.h and a sentence for people. */
struct nvml_rc_text {
        int rc;
        const char *name, *message;
};

static const struct nvml_rc_text nvml_rc_texts[] = {
        { NVML_FACT_NOT_QUERIED, "NOT_QUERIED", "the value was not queried (NVML did not get that far)" },
        { 0, "NVML_SUCCESS", "success" },
        { 1, "NVML_ERROR_UNINITIALIZED", "NVML was not initialized (nvmlInit was not called or failed)" },
        { 2, "NVML_ERROR_INVALID_ARGUMENT", "an argument passed to NVML was invalid" },
        { 3, "NVML_ERROR_NOT_SUPPORTED", "the operation is not supported on this device" },
        { 4, "NVML_ERROR_NO_PERMISSION", "insufficient permissions for the NVML operation" },
        { 5, "NVML_ERROR_ALREADY_INITIALIZED", "NVML was already initialized" },
        { 6, "NVML_ERROR_NOT_FOUND", "the object NVML was asked for was not found" },
        { 7, "NVML_ERROR_INSUFFICIENT_SIZE", "a buffer passed to NVML was too small" },
        { 8, "NVML_ERROR_INSUFFICIENT_POWER", "a GPU's external power cables are not properly attached" },
        { 9, "NVML_ERROR_DRIVER_NOT_LOADED",
          "the NVIDIA kernel driver is not loaded (or its device nodes are not reachable)" },
        { 10, "NVML_ERROR_TIMEOUT", "the NVML call timed out" },
        { 11, "NVML_ERROR_IRQ_ISSUE", "the NVIDIA kernel driver detected an interrupt problem with a GPU" },
        { 12, "NVML_ERROR_LIBRARY_NOT_FOUND", "the NVML shared library could not be found or loaded" },
        { 13, "NVML_ERROR_FUNCTION_NOT_FOUND", "this NVML library does not implement the function" },
        { 14, "NVML_ERROR_CORRUPTED_INFOROM", "the GPU's infoROM is corrupted" },
        { 15, "NVML_ERROR_GPU_IS_LOST", "the GPU has fallen off the bus or is otherwise inaccessible" },
        { 16, "NVML_ERROR_RESET_REQUIRED", "the GPU needs a reset before it can be used again" },
        { 17, "NVML_ERROR_OPERATING_SYSTEM",
          "the operating system or cgroups blocked access to the GPU control device" },
        { 18, "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
          "the NVML library and the kernel module have different versions (driver/library version mismatch)" },
        { 19, "NVML_ERROR_IN_USE", "the GPU is in use, so the operation cannot be performed" },
        { 20, "NVML_ERROR_MEMORY", "NVML ran out of memory" },
        { 21, "NVML_ERROR_NO_DATA", "NVML has no data for this request" },
        { 22, "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED", "the vGPU operation is not available because ECC is enabled" },
        { 23, "NVML_ERROR_INSUFFICIENT_RESOURCES", "NVML ran out of critical resources other than memory" },
        { 24, "NVML_ERROR_FREQ_NOT_SUPPORTED", "the requested clock frequency is not supported" },
        { 25, "NVML_ERROR_ARGUMENT_VERSION_MISMATCH", "the struct version passed to NVML is not supported" },
        { 26, "NVML_ERROR_DEPRECATED", "the NVML function is deprecated" },
        { 27, "NVML_ERROR_NOT_READY", "the system is not ready for the request" },
        { 28, "NVML_ERROR_GPU_NOT_FOUND", "NVML found no GPUs" },
        { 29, "NVML_ERROR_INVALID_STATE", "the resource is not in the right state for the operation" },
        { 30, "NVML_ERROR_RESET_TYPE_NOT_SUPPORTED", "this reset type is not supported for the device" },
        { 999, "NVML_ERROR_UNKNOWN", "an internal driver error occurred (unknown NVML error)" },
};

/* Returns the row for rc, or NULL. */
static const struct nvml_rc_text *rc_text(int rc) {
        for (size_t i = 0; i < ELEMENTSOF(nvml_rc_texts); i++)
                if (nvml_rc_texts[i].rc == rc) return &nvml_rc_texts[i];
        return NULL;
}

const char *nvml_return_name(int rc) {
        const struct nvml_rc_text *t = rc_text(rc);
        return t ? t->name : "NVML_ERROR_UNRECOGNIZED";
}

const char *nvml_return_message(int rc) {
        const struct nvml_rc_text *t = rc_text(rc);
        return t ? t->message : "NVML returned a code this program does not know";
}

nvmlReturn_t nvml_memory_info(const struct nvml_lib *lib, nvmlDevice_t dev, nvmlMemory_v2_t *ret, int *ret_version) {
        nvmlReturn_t rc = NVML_ERROR_FUNCTION_NOT_FOUND;
        if (lib->nvmlDeviceGetMemoryInfo_v2) {
                *ret = (nvmlMemory_v2_t){ .version = nvmlMemory_v2 };
                rc = lib->nvmlDeviceGetMemoryInfo_v2(dev, ret);
                if (rc == NVML_SUCCESS && ret_version) *ret_version = 2;
        }
        if (rc == NVML_ERROR_FUNCTION_NOT_FOUND || rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) {
                nvmlMemory_t v = { 0 };
                rc = lib->nvmlDeviceGetMemoryInfo ? lib->nvmlDeviceGetMemoryInfo(dev, &v) : NVML_ERROR_NOT_SUPPORTED;
                if (rc == NVML_SUCCESS) {
                        *ret = (nvmlMemory_v2_t){ .total = v.total, .free = v.free, .used = v.used };
                        if (ret_version) *ret_version = 1;
                }
        }
        return rc;
}
