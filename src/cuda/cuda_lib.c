/* cuda_lib.c: dlopen libcuda.so.1 (or the file named, or the host's under --root), resolve its _v2 entry points. */
#include "cuda/cuda_lib.h"

#include <dlfcn.h>
#include <stddef.h>

#include "basic/driver_lib.h"
#include "basic/util.h"

/* One table row: the member to fill, whether the table needs it, the names to try, newest first. */
struct cuda_sym {
        size_t offset;
        bool required;
        const char *names[3];
};

#define SYM(member, req, ...)                                                                                          \
        {                                                                                                              \
                offsetof(struct cuda_lib, member), req, {                                                              \
                        __VA_ARGS__, NULL                                                                              \
                }                                                                                                      \
        }

/* cuda.h maps these names to the _v2 symbols since CUDA 3.2 (memory, contexts) and 11-12 (streams,
 * events, UUIDs); the unversioned symbols that remain in libcuda keep the old 32-bit signatures, so
 * they are no fallback. cuEventElapsedTime_v2 (CUDA 12.8) and cuDeviceGetUuid_v2 (11.4) do fall back:
 * the old symbol has the same signature. */
static const struct cuda_sym cuda_syms[] = {
        SYM(cuInit, true, "cuInit"),
        SYM(cuDriverGetVersion, true, "cuDriverGetVersion"),
        SYM(cuGetErrorName, false, "cuGetErrorName"),
        SYM(cuGetErrorString, false, "cuGetErrorString"),
        SYM(cuDeviceGetCount, true, "cuDeviceGetCount"),
        SYM(cuDeviceGet, true, "cuDeviceGet"),
        SYM(cuDeviceGetName, true, "cuDeviceGetName"),
        SYM(cuDeviceGetUuid, true, "cuDeviceGetUuid_v2", "cuDeviceGetUuid"),
        SYM(cuDeviceGetPCIBusId, true, "cuDeviceGetPCIBusId"),
        SYM(cuDeviceGetAttribute, true, "cuDeviceGetAttribute"),
        SYM(cuDeviceTotalMem, true, "cuDeviceTotalMem_v2"),
        SYM(cuDeviceCanAccessPeer, true, "cuDeviceCanAccessPeer"),
        SYM(cuDevicePrimaryCtxRetain, true, "cuDevicePrimaryCtxRetain"),
        SYM(cuDevicePrimaryCtxRelease, true, "cuDevicePrimaryCtxRelease_v2"),
        SYM(cuCtxSetCurrent, true, "cuCtxSetCurrent"),
        SYM(cuCtxSynchronize, true, "cuCtxSynchronize"),
        SYM(cuCtxEnablePeerAccess, true, "cuCtxEnablePeerAccess"),
        SYM(cuMemGetInfo, true, "cuMemGetInfo_v2"),
        SYM(cuMemAlloc, true, "cuMemAlloc_v2"),
        SYM(cuMemFree, true, "cuMemFree_v2"),
        SYM(cuMemHostAlloc, true, "cuMemHostAlloc"),
        SYM(cuMemFreeHost, true, "cuMemFreeHost"),
        SYM(cuMemcpyHtoD, true, "cuMemcpyHtoD_v2"),
        SYM(cuMemcpyDtoH, true, "cuMemcpyDtoH_v2"),
        SYM(cuMemcpyDtoD, true, "cuMemcpyDtoD_v2"),
        SYM(cuMemcpyDtoDAsync, true, "cuMemcpyDtoDAsync_v2"),
        SYM(cuMemcpyHtoDAsync, true, "cuMemcpyHtoDAsync_v2"),
        SYM(cuMemcpyDtoHAsync, true, "cuMemcpyDtoHAsync_v2"),
        SYM(cuMemsetD32, true, "cuMemsetD32_v2"),
        SYM(cuMemcpyPeer, true, "cuMemcpyPeer"),
        SYM(cuMemcpyPeerAsync, true, "cuMemcpyPeerAsync"),
        SYM(cuModuleLoadDataEx, true, "cuModuleLoadDataEx"),
        SYM(cuModuleGetFunction, true, "cuModuleGetFunction"),
        SYM(cuModuleUnload, true, "cuModuleUnload"),
        SYM(cuLaunchKernel, true, "cuLaunchKernel"),
        SYM(cuStreamCreate, true, "cuStreamCreate"),
        SYM(cuStreamSynchronize, true, "cuStreamSynchronize"),
        SYM(cuStreamDestroy, true, "cuStreamDestroy_v2"),
        SYM(cuEventCreate, true, "cuEventCreate"),
        SYM(cuEventRecord, true, "cuEventRecord"),
        SYM(cuEventSynchronize, true, "cuEventSynchronize"),
        SYM(cuEventElapsedTime, true, "cuEventElapsedTime_v2", "cuEventElapsedTime"),
        SYM(cuEventDestroy, true, "cuEventDestroy_v2"),
};

/* Frees a lib whose last reference is gone. Returns nothing; never fails. */
static void cuda_lib_free(struct cuda_lib *lib) {
        if (lib->handle) dlclose(lib->handle);
        free(lib->path);
        free(lib);
}

/* Resolves the table from an open handle h (loaded as name). Returns 0 with *ret, or -ELIBBAD with
 * *ret_error naming the missing symbol (h is closed then). */
static int resolve(void *h, const char *name, struct cuda_lib **ret, char **ret_error) {
        struct cuda_lib *lib = xcalloc(1, sizeof *lib);
        lib->handle = h;
        lib->refs = 1;
        for (size_t i = 0; i < ELEMENTSOF(cuda_syms); i++) {
                const struct cuda_sym *s = &cuda_syms[i];
                void *f = NULL;
                for (size_t j = 0; s->names[j] && !f; j++) f = dlsym(h, s->names[j]);
                if (!f && s->required) {
                        if (ret_error)
                                *ret_error = xasprintf("%s: no symbol %s: not a CUDA driver library, or one too old "
                                                       "(gpunode needs CUDA 11.4 or later)",
                                                       name, s->names[0]);
                        cuda_lib_free(lib);
                        return -ELIBBAD;
                }
                /* POSIX guarantees data and function pointers convert through dlsym's void *. */
                memcpy((char *)lib + s->offset, &f, sizeof f);
        }
        Dl_info info;
        if (dladdr((void *)lib->cuInit, &info) && info.dli_fname)
                lib->path = xstrdup(info.dli_fname);
        else
                lib->path = xstrdup(name);
        *ret = lib;
        return 0;
}

int cuda_lib_open(const char *path, struct cuda_lib **ret, char **ret_error) {
        const char *name = path ? path : CUDA_LIBRARY_NAME;
        if (ret_error) *ret_error = NULL;
        _cleanup_free_ char *why = NULL;
        void *h;
        if (path) {
                dlerror();
                h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
                if (!h) {
                        const char *e = dlerror();
                        why = xstrdup(e ? e : "dlopen failed");
                }
        } else
                h = driver_lib_dlopen(CUDA_LIBRARY_NAME, &why);
        if (!h) {
                if (ret_error)
                        *ret_error = xasprintf("cannot load %s%s: %s", name,
                                               path ? "" : " (the NVIDIA driver's CUDA library)", why ? why : "?");
                return -ENOENT;
        }
        return resolve(h, name, ret, ret_error);
}

struct cuda_lib *cuda_lib_ref(struct cuda_lib *lib) {
        if (lib) __atomic_add_fetch(&lib->refs, 1, __ATOMIC_RELAXED);
        return lib;
}

struct cuda_lib *cuda_lib_unref(struct cuda_lib *lib) {
        if (lib && __atomic_sub_fetch(&lib->refs, 1, __ATOMIC_ACQ_REL) == 0) cuda_lib_free(lib);
        return NULL;
}
