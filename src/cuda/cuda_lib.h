/* cuda_lib.h: the CUDA driver API (libcuda.so.1) loaded with dlopen: a table of resolved entry points, names for
 * CUresult codes. */
#pragma once

#include <stdbool.h>

#include "cuda/cuda.h"

/*
 * The table of entry points. Members carry the unversioned name; each was resolved from the versioned
 * symbol the real library exports (cuMemAlloc_v2, ...), newest first, falling back to older names
 * (cuda_lib.c). Every member is required except those marked optional (NULL when the library lacks
 * them). Reference counted, so that a worker thread stuck inside the driver keeps the library mapped.
 */
struct cuda_lib {
        void *handle;
        char *path; /* the file actually loaded (from dladdr), or the name asked for */
        int refs;   /* atomic */

        cuInit_fn cuInit;
        cuDriverGetVersion_fn cuDriverGetVersion;
        cuGetErrorName_fn cuGetErrorName;     /* optional */
        cuGetErrorString_fn cuGetErrorString; /* optional */
        cuDeviceGetCount_fn cuDeviceGetCount;
        cuDeviceGet_fn cuDeviceGet;
        cuDeviceGetName_fn cuDeviceGetName;
        cuDeviceGetUuid_fn cuDeviceGetUuid;
        cuDeviceGetPCIBusId_fn cuDeviceGetPCIBusId;
        cuDeviceGetAttribute_fn cuDeviceGetAttribute;
        cuDeviceTotalMem_fn cuDeviceTotalMem;
        cuDeviceCanAccessPeer_fn cuDeviceCanAccessPeer;
        cuDevicePrimaryCtxRetain_fn cuDevicePrimaryCtxRetain;
        cuDevicePrimaryCtxRelease_fn cuDevicePrimaryCtxRelease;
        cuCtxSetCurrent_fn cuCtxSetCurrent;
        cuCtxSynchronize_fn cuCtxSynchronize;
        cuCtxEnablePeerAccess_fn cuCtxEnablePeerAccess;
        cuMemGetInfo_fn cuMemGetInfo;
        cuMemAlloc_fn cuMemAlloc;
        cuMemFree_fn cuMemFree;
        cuMemHostAlloc_fn cuMemHostAlloc;
        cuMemFreeHost_fn cuMemFreeHost;
        cuMemcpyHtoD_fn cuMemcpyHtoD;
        cuMemcpyDtoH_fn cuMemcpyDtoH;
        cuMemcpyDtoD_fn cuMemcpyDtoD;
        cuMemcpyDtoDAsync_fn cuMemcpyDtoDAsync;
        cuMemcpyHtoDAsync_fn cuMemcpyHtoDAsync;
        cuMemcpyDtoHAsync_fn cuMemcpyDtoHAsync;
        cuMemsetD32_fn cuMemsetD32;
        cuMemcpyPeer_fn cuMemcpyPeer;
        cuMemcpyPeerAsync_fn cuMemcpyPeerAsync;
        cuModuleLoadDataEx_fn cuModuleLoadDataEx;
        cuModuleGetFunction_fn cuModuleGetFunction;
        cuModuleUnload_fn cuModuleUnload;
        cuLaunchKernel_fn cuLaunchKernel;
        cuStreamCreate_fn cuStreamCreate;
        cuStreamSynchronize_fn cuStreamSynchronize;
        cuStreamDestroy_fn cuStreamDestroy;
        cuEventCreate_fn cuEventCreate;
        cuEventRecord_fn cuEventRecord;
        cuEventSynchronize_fn cuEventSynchronize;
        cuEventElapsedTime_fn cuEventElapsedTime;
        cuEventDestroy_fn cuEventDestroy;
};

/* The library name dlopen'ed when no path is given. */
#define CUDA_LIBRARY_NAME "libcuda.so.1"

/*
 * Loads the CUDA driver library and resolves the table. path: a file the user named, loaded as it is
 * (not under the root); NULL: CUDA_LIBRARY_NAME where drivers install it, under the root hostfs reads
 * and through the dynamic linker, as NVML is found (driver_lib_dlopen: the host's and the GPU
 * Operator's driver container's folders, their ld.so.cache). Returns 0 and *ret (release with
 * cuda_lib_unref); -ENOENT when no library can be loaded, -ELIBBAD when a required entry point is
 * missing. On failure *ret_error (when not NULL) gets a malloc'd sentence naming the file and the
 * loader's errors.
 */
int cuda_lib_open(const char *path, struct cuda_lib **ret, char **ret_error);

/* Returns lib after taking one more reference (lib may be NULL). Thread-safe. */
struct cuda_lib *cuda_lib_ref(struct cuda_lib *lib);

/* Drops one reference; the last one dlcloses the library. Returns NULL. Thread-safe. */
struct cuda_lib *cuda_lib_unref(struct cuda_lib *lib);

/* Returns the symbolic name of a CUresult ("CUDA_ERROR_ILLEGAL_ADDRESS"), without the library; never NULL.
 * Codes the project does not know give "CUDA_ERROR_UNRECOGNIZED". */
const char *cuda_result_name(int rc);

/* Returns a sentence for people about a CUresult, without the library; never NULL. */
const char *cuda_result_message(int rc);

/* Returns true when rc leaves the context unusable (every later call on it fails the same way: an illegal
 * address, a failed launch, an uncorrectable ECC error, ...): the GPU's tests cannot go on in this process. */
bool cuda_result_is_sticky(int rc);
