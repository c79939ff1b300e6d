/* cuda.h: the part of the CUDA driver API gpunode uses, declared by the project (no CUDA toolkit at build time). */
#pragma once

/*
 * Written from the facts of NVIDIA's public cuda.h (CUDA 12/13): the handle types, the CUresult codes,
 * the attribute and option numbers, and the signatures of the entry points. The real header maps
 * several names to versioned symbols (cuMemAlloc -> cuMemAlloc_v2, ...); cuda_lib.c resolves those
 * symbol names, so the typedefs below carry the unversioned names and the versioned signatures.
 */
#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
typedef int CUdevice;
typedef unsigned long long CUdeviceptr; /* 64-bit on x86_64 and aarch64 */
typedef struct CUctx_st *CUcontext;
typedef struct CUmod_st *CUmodule;
typedef struct CUfunc_st *CUfunction;
typedef struct CUstream_st *CUstream;
typedef struct CUevent_st *CUevent;
typedef struct CUuuid_st {
        char bytes[16];
} CUuuid;

/* CUresult codes (the numbers are cuda.h's). */
enum {
        CUDA_SUCCESS = 0,
        CUDA_ERROR_INVALID_VALUE = 1,
        CUDA_ERROR_OUT_OF_MEMORY = 2,
        CUDA_ERROR_NOT_INITIALIZED = 3,
        CUDA_ERROR_DEINITIALIZED = 4,
        CUDA_ERROR_STUB_LIBRARY = 34,
        CUDA_ERROR_DEVICE_UNAVAILABLE = 46,
        CUDA_ERROR_NO_DEVICE = 100,
        CUDA_ERROR_INVALID_DEVICE = 101,
        CUDA_ERROR_INVALID_IMAGE = 200,
        CUDA_ERROR_INVALID_CONTEXT = 201,
        CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
        CUDA_ERROR_ECC_UNCORRECTABLE = 214,
        CUDA_ERROR_PEER_ACCESS_UNSUPPORTED = 217,
        CUDA_ERROR_INVALID_PTX = 218,
        CUDA_ERROR_NVLINK_UNCORRECTABLE = 220,
        CUDA_ERROR_JIT_COMPILER_NOT_FOUND = 221,
        CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
        CUDA_ERROR_INVALID_HANDLE = 400,
        CUDA_ERROR_NOT_FOUND = 500,
        CUDA_ERROR_NOT_READY = 600,
        CUDA_ERROR_ILLEGAL_ADDRESS = 700,
        CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
        CUDA_ERROR_LAUNCH_TIMEOUT = 702,
        CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED = 704,
        CUDA_ERROR_PEER_ACCESS_NOT_ENABLED = 705,
        CUDA_ERROR_CONTEXT_IS_DESTROYED = 709,
        CUDA_ERROR_ASSERT = 710,
        CUDA_ERROR_HARDWARE_STACK_ERROR = 714,
        CUDA_ERROR_ILLEGAL_INSTRUCTION = 715,
        CUDA_ERROR_MISALIGNED_ADDRESS = 716,
        CUDA_ERROR_INVALID_ADDRESS_SPACE = 717,
        CUDA_ERROR_INVALID_PC = 718,
        CUDA_ERROR_LAUNCH_FAILED = 719,
        CUDA_ERROR_NOT_PERMITTED = 800,
        CUDA_ERROR_NOT_SUPPORTED = 801,
        CUDA_ERROR_SYSTEM_NOT_READY = 802,
        CUDA_ERROR_SYSTEM_DRIVER_MISMATCH = 803,
        CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE = 804,
        CUDA_ERROR_TIMEOUT = 909,
        CUDA_ERROR_UNKNOWN = 999,
};

/* CUdevice_attribute numbers gpunode asks. */
typedef enum {
        CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
        CU_DEVICE_ATTRIBUTE_CLOCK_RATE = 13, /* kHz */
        CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
        CU_DEVICE_ATTRIBUTE_ECC_ENABLED = 32,
        CU_DEVICE_ATTRIBUTE_PCI_BUS_ID = 33,
        CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID = 34,
        CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE = 36,       /* kHz */
        CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH = 37, /* bits */
        CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID = 50,
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76,
} CUdevice_attribute;

/* CUjit_option numbers for cuModuleLoadDataEx: a log buffer and its size (in: capacity, out: used). */
typedef enum {
        CU_JIT_INFO_LOG_BUFFER = 3,
        CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,
        CU_JIT_ERROR_LOG_BUFFER = 5,
        CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6,
} CUjit_option;

#define CU_MEMHOSTALLOC_PORTABLE 0x01
#define CU_STREAM_NON_BLOCKING   0x1
#define CU_EVENT_DEFAULT         0x0

/* Entry points (signatures of the symbols cuda_lib.c resolves). */
typedef CUresult (*cuInit_fn)(unsigned int flags);
typedef CUresult (*cuDriverGetVersion_fn)(int *version);
typedef CUresult (*cuGetErrorName_fn)(CUresult error, const char **ret);
typedef CUresult (*cuGetErrorString_fn)(CUresult error, const char **ret);
typedef CUresult (*cuDeviceGetCount_fn)(int *count);
typedef CUresult (*cuDeviceGet_fn)(CUdevice *device, int ordinal);
typedef CUresult (*cuDeviceGetName_fn)(char *name, int len, CUdevice dev);
typedef CUresult (*cuDeviceGetUuid_fn)(CUuuid *uuid, CUdevice dev); /* _v2 and the plain call */
typedef CUresult (*cuDeviceGetPCIBusId_fn)(char *bus_id, int len, CUdevice dev);
typedef CUresult (*cuDeviceGetAttribute_fn)(int *value, CUdevice_attribute attrib, CUdevice dev);
typedef CUresult (*cuDeviceTotalMem_fn)(size_t *bytes, CUdevice dev); /* _v2 */
typedef CUresult (*cuDeviceCanAccessPeer_fn)(int *can, CUdevice dev, CUdevice peer);
typedef CUresult (*cuDevicePrimaryCtxRetain_fn)(CUcontext *ctx, CUdevice dev);
typedef CUresult (*cuDevicePrimaryCtxRelease_fn)(CUdevice dev); /* _v2 */
typedef CUresult (*cuCtxSetCurrent_fn)(CUcontext ctx);
typedef CUresult (*cuCtxSynchronize_fn)(void);
typedef CUresult (*cuCtxEnablePeerAccess_fn)(CUcontext peer, unsigned int flags);
typedef CUresult (*cuMemGetInfo_fn)(size_t *free_bytes, size_t *total_bytes); /* _v2 */
typedef CUresult (*cuMemAlloc_fn)(CUdeviceptr *ptr, size_t bytes);            /* _v2 */
typedef CUresult (*cuMemFree_fn)(CUdeviceptr ptr);                            /* _v2 */
typedef CUresult (*cuMemHostAlloc_fn)(void **ptr, size_t bytes, unsigned int flags);
typedef CUresult (*cuMemFreeHost_fn)(void *ptr);
typedef CUresult (*cuMemcpyHtoD_fn)(CUdeviceptr dst, const void *src, size_t bytes);                  /* _v2 */
typedef CUresult (*cuMemcpyDtoH_fn)(void *dst, CUdeviceptr src, size_t bytes);                        /* _v2 */
typedef CUresult (*cuMemcpyDtoD_fn)(CUdeviceptr dst, CUdeviceptr src, size_t bytes);                  /* _v2 */
typedef CUresult (*cuMemcpyDtoDAsync_fn)(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream s); /* _v2 */
typedef CUresult (*cuMemcpyHtoDAsync_fn)(CUdeviceptr dst, const void *src, size_t bytes, CUstream s); /* _v2 */
typedef CUresult (*cuMemcpyDtoHAsync_fn)(void *dst, CUdeviceptr src, size_t bytes, CUstream s);       /* _v2 */
typedef CUresult (*cuMemsetD32_fn)(CUdeviceptr dst, unsigned int value, size_t count);                /* _v2 */
typedef CUresult (*cuMemcpyPeer_fn)(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                                    size_t bytes);
typedef CUresult (*cuMemcpyPeerAsync_fn)(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                                         size_t bytes, CUstream s);
typedef CUresult (*cuModuleLoadDataEx_fn)(CUmodule *mod, const void *image, unsigned int n_options,
                                          CUjit_option *options, void **values);
typedef CUresult (*cuModuleGetFunction_fn)(CUfunction *f, CUmodule mod, const char *name);
typedef CUresult (*cuModuleUnload_fn)(CUmodule mod);
typedef CUresult (*cuLaunchKernel_fn)(CUfunction f, unsigned int grid_x, unsigned int grid_y, unsigned int grid_z,
                                      unsigned int block_x, unsigned int block_y, unsigned int block_z,
                                      unsigned int shared_bytes, CUstream s, void **params, void **extra);
typedef CUresult (*cuStreamCreate_fn)(CUstream *s, unsigned int flags);
typedef CUresult (*cuStreamSynchronize_fn)(CUstream s);
typedef CUresult (*cuStreamDestroy_fn)(CUstream s); /* _v2 */
typedef CUresult (*cuEventCreate_fn)(CUevent *e, unsigned int flags);
typedef CUresult (*cuEventRecord_fn)(CUevent e, CUstream s);
typedef CUresult (*cuEventSynchronize_fn)(CUevent e);
typedef CUresult (*cuEventElapsedTime_fn)(float *ms, CUevent start, CUevent end); /* _v2 (12.8+) and plain */
typedef CUresult (*cuEventDestroy_fn)(CUevent e);                                 /* _v2 */
