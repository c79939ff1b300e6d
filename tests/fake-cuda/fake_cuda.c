/* fake_cuda.c: a test-only libcuda.so.1: GPUs from a JSON description, device memory in host memory, simulated time. */

/*
 * Built as libcuda.so.1 (never installed). It exports the real library's symbol names (cuMemAlloc_v2,
 * cuEventElapsedTime, ...) with the real signatures and CUresult codes (src/cuda/cuda.h), so gpunode
 * cannot tell it from the driver's. The description is the JSON file named by GPUNODE_FAKE_CUDA
 * (README.md beside this file lists every key). Device memory is malloc'd host memory and device
 * pointers are its addresses: copies really copy. Work runs in the calling thread when it is
 * submitted; what it would take on the GPU is added to its stream's simulated clock (bytes over the
 * configured bandwidth, flops over the configured TFLOPS), and events read that clock, so figures are
 * deterministic. A fake cannot run PTX: cuModuleLoadDataEx checks the text minimally (.version,
 * .target, the entries) and cuLaunchKernel runs src/validate/kernels_ref.c's C version of the known
 * entries (gpunode_pattern, gpunode_copy, gpunode_fma), the same algorithms. Faults per GPU: a launch
 * error, a sticky error surfacing at the next synchronisation, a hang (that synchronisation sleeps),
 * bit flips in the pattern kernel's reads, a corrupted FMA result, no peer access, an allocation
 * error, a JIT error; and a whole-library init error.
 */
#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda/cuda.h"
#include "cuda/cuda_lib.h"
#include "validate/kernels_ref.h"

#define EXPORT        __attribute__((visibility("default")))
#define FAKE_MAX_GPUS 64
#define MAX_FLIPS     8

enum fake_kernel { K_PATTERN, K_COPY, K_FMA, K_COUNT };
static const char *const kernel_names[K_COUNT] = { "gpunode_pattern", "gpunode_copy", "gpunode_fma" };

struct CUctx_st {
        int dev;
};
struct CUfunc_st {
        int kind;
};
struct CUmod_st {
        int dev;
        bool has[K_COUNT];
};
struct CUstream_st {
        int dev;
        double clock_ms;
};
struct CUevent_st {
        int dev;
        bool recorded;
        double t_ms;
};

struct fake_fault {
        char entry[32];
        int code;
        double seconds;
};

struct fake_gpu {
        char name[96], pci[32];
        unsigned char uuid[16];
        int domain, bus, device;
        size_t total, used;
        int sm_count, cc_major, cc_minor, clock_khz, mem_clock_khz, bus_width;
        double mem_gbps, tflops, h2d_gbps, d2h_gbps, p2p_gbps;
        bool peer_access, jit_error;
        struct fake_fault launch_error, sticky_error, hang;
        struct {
                uint64_t offset;
                uint32_t mask;
        } flips[MAX_FLIPS];
        int n_flips;
        int64_t fma_corrupt_thread;
        int alloc_error;
        /* state, under fake_lock */
        int sticky, pending_sticky;
        bool hang_pending;
        double clock_ms; /* the NULL stream's */
        int retained;
        unsigned long long peers; /* bit p: peer access to GPU p enabled */
        struct CUctx_st ctx;
};

struct fake_alloc {
        void *p;
        size_t size;
        int dev; /* -1: pinned host memory */
        struct fake_alloc *next;
};

static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;
static bool loaded;
static int init_rc = -1; /* -1: cuInit not called */
static int driver_version = 12040;
static int n_gpus;
static struct fake_gpu gpus[FAKE_MAX_GPUS];
static struct fake_alloc *allocs;
static struct CUfunc_st funcs[K_COUNT] = { { K_PATTERN }, { K_COPY }, { K_FMA } };
static __thread int cur_dev = -1;

/* Sleeps for seconds. Returns nothing. */
static void sleep_seconds(double seconds) {
        struct timespec ts = { .tv_sec = (time_t)seconds,
                               .tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9) };
        while (nanosleep(&ts, &ts) != 0) {
        }
}

/* Reads a fault object {"entry": NAME, "code": N, "seconds": S} into f. Returns nothing. */
static void read_fault(json_t *o, struct fake_fault *f) {
        if (!json_is_object(o)) return;
        const char *e = json_string_value(json_object_get(o, "entry"));
        snprintf(f->entry, sizeof f->entry, "%s", e ? e : "*");
        f->code = (int)json_integer_value(json_object_get(o, "code"));
        f->seconds = json_number_value(json_object_get(o, "seconds"));
}

/* Returns the number under key, or def when absent. */
static double num(json_t *o, const char *key, double def) {
        json_t *v = json_object_get(o, key);
        return json_is_number(v) ? json_number_value(v) : def;
}

/* Parses "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" into 16 bytes. Returns nothing (zeros on garbage). */
static void parse_uuid(const char *s, unsigned char *out) {
        memset(out, 0, 16);
        if (!s) return;
        if (strncmp(s, "GPU-", 4) == 0) s += 4;
        int n = 0;
        for (; *s && n < 32; s++) {
                int v = *s >= '0' && *s <= '9'   ? *s - '0'
                        : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
                        : *s >= 'A' && *s <= 'F' ? *s - 'A' + 10
                                                 : -1;
                if (v < 0) continue;
                out[n / 2] = (unsigned char)(out[n / 2] | (n % 2 ? v : v << 4));
                n++;
        }
}

/* Loads the description once. Returns CUDA_SUCCESS, or CUDA_ERROR_NO_DEVICE (no description, no GPU),
 * or the configured init_error. Called under fake_lock. */
static int load(void) {
        static char loaded_path[4096];
        const char *path = getenv("GPUNODE_FAKE_CUDA");
        /* Unlike the driver, a new description path starts over (tests run several in one process; a
         * worker still asleep in a hang of the old one only touches the static array). */
        if (loaded && strcmp(loaded_path, path ? path : "") == 0) return init_rc;
        if (loaded) {
                memset(gpus, 0, sizeof gpus);
                n_gpus = 0;
        }
        snprintf(loaded_path, sizeof loaded_path, "%s", path ? path : "");
        loaded = true;
        json_t *d = path ? json_load_file(path, 0, NULL) : NULL;
        if (!d) return init_rc = CUDA_ERROR_NO_DEVICE;
        driver_version = (int)num(d, "driver_version", 12040);
        json_t *g = json_object_get(d, "gpus");
        size_t i;
        json_t *o;
        json_array_foreach(g, i, o) {
                if (i >= FAKE_MAX_GPUS) break;
                struct fake_gpu *f = &gpus[n_gpus++];
                const char *s = json_string_value(json_object_get(o, "name"));
                snprintf(f->name, sizeof f->name, "%s", s ? s : "Fake GPU");
                parse_uuid(json_string_value(json_object_get(o, "uuid")), f->uuid);
                s = json_string_value(json_object_get(o, "pci_bus_id"));
                if (!s ||
                    sscanf(s, "%x:%x:%x", (unsigned *)&f->domain, (unsigned *)&f->bus, (unsigned *)&f->device) != 3)
                        f->domain = 0, f->bus = (int)i + 1, f->device = 0;
                snprintf(f->pci, sizeof f->pci, "%04X:%02X:%02X.0", f->domain, f->bus, f->device);
                f->total = (size_t)num(o, "memory_mib", 64) << 20;
                f->sm_count = (int)num(o, "sm_count", 2);
                json_t *cc = json_object_get(o, "compute_capability");
                f->cc_major = json_is_array(cc) ? (int)json_integer_value(json_array_get(cc, 0)) : 9;
                f->cc_minor = json_is_array(cc) ? (int)json_integer_value(json_array_get(cc, 1)) : 0;
                f->clock_khz = (int)num(o, "clock_mhz", 1980) * 1000;
                f->mem_clock_khz = (int)num(o, "memory_clock_mhz", 2619) * 1000;
                f->bus_width = (int)num(o, "bus_width", 5120);
                f->mem_gbps = num(o, "memory_gbps", 3000);
                f->tflops = num(o, "tflops", 60);
                f->h2d_gbps = num(o, "h2d_gbps", 55);
                f->d2h_gbps = num(o, "d2h_gbps", 55);
                f->p2p_gbps = num(o, "p2p_gbps", 400);
                json_t *pa = json_object_get(o, "peer_access");
                f->peer_access = !json_is_false(pa);
                f->fma_corrupt_thread = -1;
                f->ctx.dev = (int)i;
                json_t *faults = json_object_get(o, "faults");
                if (json_is_object(faults)) {
                        read_fault(json_object_get(faults, "launch_error"), &f->launch_error);
                        read_fault(json_object_get(faults, "sticky_error"), &f->sticky_error);
                        read_fault(json_object_get(faults, "hang"), &f->hang);
                        size_t j;
                        json_t *b;
                        json_array_foreach(json_object_get(faults, "bit_flips"), j, b) {
                                if (f->n_flips >= MAX_FLIPS) break;
                                f->flips[f->n_flips].offset = (uint64_t)num(b, "offset", 0);
                                f->flips[f->n_flips].mask = (uint32_t)num(b, "mask", 1);
                                f->n_flips++;
                        }
                        f->fma_corrupt_thread = (int64_t)num(faults, "fma_corrupt_thread", -1);
                        f->alloc_error = (int)num(faults, "alloc_error", 0);
                        f->jit_error = json_is_true(json_object_get(faults, "jit_error"));
                }
        }
        int ie = (int)num(d, "init_error", 0);
        json_decref(d);
        if (ie) return init_rc = ie;
        return init_rc = n_gpus ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}

/* Returns the GPU the calling thread's current context is on, or NULL with *rc set (not initialised, no
 * context, or the context's sticky error). Called under fake_lock. */
static struct fake_gpu *current(int *rc) {
        if (init_rc != CUDA_SUCCESS) {
                *rc = CUDA_ERROR_NOT_INITIALIZED;
                return NULL;
        }
        if (cur_dev < 0 || cur_dev >= n_gpus) {
                *rc = CUDA_ERROR_INVALID_CONTEXT;
                return NULL;
        }
        struct fake_gpu *g = &gpus[cur_dev];
        if (g->sticky) {
                *rc = g->sticky;
                return NULL;
        }
        *rc = CUDA_SUCCESS;
        return g;
}

/* Returns the device ordinal dev checked, or -1 (not initialised or out of range). */
static int device_ok(CUdevice dev) {
        return init_rc == CUDA_SUCCESS && dev >= 0 && dev < n_gpus ? dev : -1;
}

/* Returns the allocation holding [p, p + n) on dev (-1: pinned host), or NULL. Called under fake_lock. */
static struct fake_alloc *find_alloc(const void *p, size_t n, int dev) {
        for (struct fake_alloc *a = allocs; a; a = a->next)
                if (a->dev == dev && (const char *)p >= (char *)a->p && (const char *)p + n <= (char *)a->p + a->size)
                        return a;
        return NULL;
}

/* A synchronisation point on g: a pending hang sleeps (the lock dropped), a pending sticky error becomes
 * the context's. Returns CUDA_SUCCESS or the sticky code. Called under fake_lock. */
static int sync_point(struct fake_gpu *g) {
        if (g->hang_pending) {
                g->hang_pending = false;
                double s = g->hang.seconds > 0 ? g->hang.seconds : 3600;
                pthread_mutex_unlock(&fake_lock);
                sleep_seconds(s);
                pthread_mutex_lock(&fake_lock);
        }
        if (g->pending_sticky) {
                g->sticky = g->pending_sticky;
                g->pending_sticky = 0;
        }
        return g->sticky;
}

/* Adds ms of simulated time to stream s (NULL: g's NULL stream). Returns nothing. */
static void advance(struct fake_gpu *g, CUstream s, double ms) {
        if (s)
                s->clock_ms += ms;
        else
                g->clock_ms += ms;
}

/* Returns the milliseconds bytes take at gbps (GB/s, 1e9 bytes). */
static double ms_at(double bytes, double gbps) {
        return gbps > 0 ? bytes / (gbps * 1e9) * 1e3 : 0;
}

#define LOCKED_BEGIN pthread_mutex_lock(&fake_lock)
#define RETURN(rc)                                                                                                     \
        do {                                                                                                           \
                int rc_ = (rc);                                                                                        \
                pthread_mutex_unlock(&fake_lock);                                                                      \
                return rc_;                                                                                            \
        } while (0)

EXPORT CUresult cuInit(unsigned int flags) {
        LOCKED_BEGIN;
        RETURN(flags ? CUDA_ERROR_INVALID_VALUE : load());
}

EXPORT CUresult cuDriverGetVersion(int *v) {
        if (!v) return CUDA_ERROR_INVALID_VALUE;
        LOCKED_BEGIN;
        load();
        *v = driver_version;
        RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuGetErrorName(CUresult e, const char **ret) {
        const char *n = cuda_result_name(e);
        if (!ret || strcmp(n, "CUDA_ERROR_UNRECOGNIZED") == 0) return CUDA_ERROR_INVALID_VALUE;
        *ret = n;
        return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorString(CUresult e, const char **ret) {
        if (!ret) return CUDA_ERROR_INVALID_VALUE;
        *ret = cuda_result_message(e);
        return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *count) {
        LOCKED_BEGIN;
        if (init_rc != CUDA_SUCCESS) RETURN(CUDA_ERROR_NOT_INITIALIZED);
        *count = n_gpus;
        RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuDeviceGet(CUdevice *dev, int ordinal) {
        LOCKED_BEGIN;
        if (init_rc != CUDA_SUCCESS) RETURN(CUDA_ERROR_NOT_INITIALIZED);
        if (ordinal < 0 || ordinal >= n_gpus) RETURN(CUDA_ERROR_INVALID_DEVICE);
        *dev = ordinal;
        RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
        LOCKED_BEGIN;
        if (device_ok(dev) < 0) RETURN(CUDA_ERROR_INVALID_DEVICE);
        if (!name || len <= 0) RETURN(CUDA_ERROR_INVALID_VALUE);
        snprintf(name, (size_t)len, "%s", gpus[dev].name);
        RETURN(CUDA_SUCCESS);
}

/* cuDeviceGetUuid and _v2 (one signature). Returns the CUresult. */
static CUresult get_uuid(CUuuid *u, CUdevice dev) {
        LOCKED_BEGIN;
        if (device_ok(dev) < 0) RETURN(CUDA_ERROR_INVALID_DEVICE);
        memcpy(u->bytes, gpus[dev].uuid, 16);
        RETURN(CUDA_SUCCESS);
}
EXPORT CUresult cuDeviceGetUuid(CUuuid *u, CUdevice dev) {
        return get_uuid(u, dev);
}
EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *u, CUdevice dev) {
        return get_uuid(u, dev);
}

EXPORT CUresult cuDeviceGetPCIBusId(char *id, int len, CUdevice dev) {
        LOCKED_BEGIN;
        if (device_ok(dev) < 0) RETURN(CUDA_ERROR_INVALID_DEVICE);
        if (!id || len < 13) RETURN(CUDA_ERROR_INVALID_VALUE);
        snprintf(id, (size_t)len, "%s", gpus[dev].pci);
        RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice dev) {
        LOCKED_BEGIN;
        if (device_ok(dev) < 0) RETURN(CUDA_ERROR_INVALID_DEVICE);
        struct fake_gpu *g = &gpus[dev];
        switch ((int)a) {
        case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; break;
        case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *v = g->clock_khz; break;
        case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = g->sm_count; break;
        case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: *v = 1; break;
        case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: *v = g->bus; break;
        case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: *v = g->device; break;
        case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *v = g->mem_clock_khz; break;
        case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: *v = g->bus_width; break;
        case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: *v = g->domain; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = g->cc_major; break;
        case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = g->cc_minor; break;
        default: RETURN(CUDA_ERROR_INVALID_VALUE);
        }
        RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
        LOCKED_BEGIN;
        if (device_ok(dev) < 0) RETURN(CUDA_ERROR_INVALID_DEVICE);
        *bytes = gpus[dev].total;
        RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer) {
        LOCKED_BEGIN;
        if (device_ok(dev) < 0 || device_ok(peer) < 0) RETURN(CUDA_ERROR_INVALID_DEVICE);
        *can = dev != peer && gpus[dev].peer_access && gpus[peer].peer_access;
        RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev) {
        LOCKED_BEGIN;
        if (device_ok(dev) < 0) RETURN(CUDA_ERROR_INVALID_DEVICE);
        gpus[dev].retained++;
        *ctx = &gpus[dev].ctx;
        RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
        LOCKED_BEGIN;
        if (device_ok(dev) < 0) RETURN(CUDA_ERROR_INVALID_DEVICE);
        if (gpus[dev].retained > 0) gpus[dev].retained--;
        RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
        LOCKED_BEGIN;
        if (init_rc != CUDA_SUCCESS) RETURN(CUDA_ERROR_NOT_INITIALIZED);
        if (ctx && (ctx->dev < 0 || ctx->dev >= n_gpus || ctx != &gpus[ctx->dev].ctx))
                RETURN(CUDA_ERROR_INVALID_CONTEXT);
        cur_dev = ctx ? ctx->dev : -1;
        RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuCtxSynchronize(void) {
        LOCKED_BEGIN;
        int rc;
        struct fake_gpu *g = current(&rc);
        RETURN(g ? sync_point(g) : rc);
}

EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags) {
        LOCKED_BEGIN;
        int rc;
        struct fake_gpu *g = current(&rc);
        if (!g) RETURN(rc);
        if (!peer || flags) RETURN(CUDA_ERROR_INVALID_VALUE);
        struct fake_gpu *p = &gpus[peer->dev];
        if (p == g || !g->peer_access || !p->peer_access) RETURN(CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
        if (g->peers & (1ull << peer->dev)) RETURN(CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
        g->peers |= 1ull << peer->dev;
        RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
        LOCKED_BEGIN;
        int rc;
        struct fake_gpu *g = current(&rc);
        if (!g) RETURN(rc);
        *free_bytes = g->total - g->used;
        *total = g->total;
        RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *ptr, size_t bytes) {
        LOCKED_BEGIN;
        int rc;
        struct fake_gpu *g = current(&rc);
        if (!g) RETURN(rc);
        if (!ptr || !bytes) RETURN(CUDA_ERROR_INVALID_VALUE);
        if (g->alloc_error) RETURN(g->alloc_error);
        if (bytes > g->total - g->used) RETURN(CUDA_ERROR_OUT_OF_MEMORY);
        void *p = malloc(bytes);
        if (!p) RETURN(CUDA_ERROR_OUT_OF_MEMORY);
        struct fake_alloc *a = calloc(1, sizeof *a);
        *a = (struct fake_alloc){ .p = p, .size = bytes, .dev = cur_dev, .next = allocs };
        allocs = a;
        g->used += bytes;
        *ptr = (CUdeviceptr)(uintptr_t)p;
        RETURN(CUDA_SUCCESS);
}

/* Unlinks and frees the allocation that starts at p on dev. Returns CUDA_SUCCESS or CUDA_ERROR_INVALID_VALUE.
 * Called under fake_lock. */
static int free_alloc(void *p, int dev) {
        for (struct fake_alloc **a = &allocs; *a; a = &(*a)->next)
                if ((*a)->p == p && (*a)->dev == dev) {
                        struct fake_alloc *x = *a;
                        *a = x->next;
                        if (dev >= 0) gpus[dev].used -= x->size;
                        free(x->p);
                        free(x);
                        return CUDA_SUCCESS;
                }
        return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr ptr) {
        LOCKED_BEGIN;
        int rc;
        struct fake_gpu *g = current(&rc);
        if (!g && rc != CUDA_ERROR_ILLEGAL_ADDRESS && !cuda_result_is_sticky(rc)) RETURN(rc);
        /* As the driver: freeing works on a dead context too (the error is still returned). */
        int r = free_alloc((void *)(uintptr_t)ptr, cur_dev);
        RETURN(g ? r : rc);
}

EXPORT CUresult cuMemHostAlloc(void **p, size_t bytes, unsigned int flags) {
        LOCKED_BEGIN;
        int rc;
        if (!current(&rc) && rc != CUDA_SUCCESS && !cuda_result_is_sticky(rc)) RETURN(rc);
        if (!p || !bytes) RETURN(CUDA_ERROR_INVALID_VALUE);
        void *m = malloc(bytes);
        if (!m) RETURN(CUDA_ERROR_OUT_OF_MEMORY);
        struct fake_alloc *a = calloc(1, sizeof *a);
        *a = (struct fake_alloc){ .p = m, .size = bytes, .dev = -1, .next = allocs };
        allocs = a;
        *p = m;
        RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuMemFreeHost(void *p) {
        LOCKED_BEGIN;
        RETURN(free_alloc(p, -1));
}

/* One copy of bytes from src to dst on g, checked against g's allocations (dev_dst/dev_src: whether
 * each side is device memory of g), timed at gbps on stream s; sync: a synchronisation point first.
 * Returns the CUresult. Called under fake_lock. */
static int copy(struct fake_gpu *g, void *dst, bool dev_dst, const void *src, bool dev_src, size_t bytes, double gbps,
                CUstream s, bool sync) {
        int dev = (int)(g - gpus);
        if ((dev_dst && !find_alloc(dst, bytes, dev)) || (dev_src && !find_alloc(src, bytes, dev)))
                return CUDA_ERROR_INVALID_VALUE;
        if (sync) {
                int rc = sync_point(g);
                if (rc) return rc;
        }
        memmove(dst, src, bytes);
        /* pageable host memory goes through a staging buffer: half the pinned figure */
        const void *host = !dev_dst ? dst : !dev_src ? src : NULL;
        if (host && !find_alloc(host, bytes, -1)) gbps /= 2;
        advance(g, s, ms_at((double)bytes, gbps));
        return CUDA_SUCCESS;
}

#define COPY_ENTRY(rc_expr)                                                                                            \
        LOCKED_BEGIN;                                                                                                  \
        int rc;                                                                                                        \
        struct fake_gpu *g = current(&rc);                                                                             \
        if (!g) RETURN(rc);                                                                                            \
        RETURN(rc_expr)

EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n) {
        COPY_ENTRY(copy(g, (void *)(uintptr_t)dst, true, src, false, n, g->h2d_gbps, NULL, true));
}
EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n) {
        COPY_ENTRY(copy(g, dst, false, (void *)(uintptr_t)src, true, n, g->d2h_gbps, NULL, true));
}
EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n) {
        /* a device copy reads and writes every byte: 2n bytes of memory traffic */
        COPY_ENTRY(
                copy(g, (void *)(uintptr_t)dst, true, (void *)(uintptr_t)src, true, n, g->mem_gbps / 2, NULL, false));
}
EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
        COPY_ENTRY(copy(g, (void *)(uintptr_t)dst, true, (void *)(uintptr_t)src, true, n, g->mem_gbps / 2, s, false));
}
EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, CUstream s) {
        COPY_ENTRY(copy(g, (void *)(uintptr_t)dst, true, src, false, n, g->h2d_gbps, s, false));
}
EXPORT CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, CUstream s) {
        COPY_ENTRY(copy(g, dst, false, (void *)(uintptr_t)src, true, n, g->d2h_gbps, s, false));
}

EXPORT CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int value, size_t count) {
        LOCKED_BEGIN;
        int rc;
        struct fake_gpu *g = current(&rc);
        if (!g) RETURN(rc);
        uint32_t *p = (uint32_t *)(uintptr_t)dst;
        if (!find_alloc(p, count * 4, cur_dev)) RETURN(CUDA_ERROR_INVALID_VALUE);
        for (size_t i = 0; i < count; i++) p[i] = value;
        advance(g, NULL, ms_at((double)count * 4, g->mem_gbps));
        RETURN(CUDA_SUCCESS);
}

/* cuMemcpyPeer(Async): from src_ctx's memory to dst_ctx's, at the peer figure when peer access is on
 * between them, else staged through the host. Returns the CUresult. */
static CUresult peer_copy(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n, CUstream s) {
        LOCKED_BEGIN;
        int rc;
        struct fake_gpu *g = current(&rc);
        if (!g) RETURN(rc);
        if (!dctx || !sctx) RETURN(CUDA_ERROR_INVALID_CONTEXT);
        struct fake_gpu *d = &gpus[dctx->dev], *sg = &gpus[sctx->dev];
        if (d->sticky) RETURN(d->sticky);
        if (sg->sticky) RETURN(sg->sticky);
        void *dp = (void *)(uintptr_t)dst, *sp = (void *)(uintptr_t)src;
        if (!find_alloc(dp, n, dctx->dev) || !find_alloc(sp, n, sctx->dev)) RETURN(CUDA_ERROR_INVALID_VALUE);
        memmove(dp, sp, n);
        bool peer = (d->peers >> sctx->dev & 1) || (sg->peers >> dctx->dev & 1);
        double gbps = peer ? (d->p2p_gbps < sg->p2p_gbps ? d->p2p_gbps : sg->p2p_gbps)
                           : (sg->d2h_gbps < d->h2d_gbps ? sg->d2h_gbps : d->h2d_gbps) / 2;
        advance(g, s, ms_at((double)n, gbps));
        RETURN(CUDA_SUCCESS);
}
EXPORT CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n) {
        return peer_copy(dst, dctx, src, sctx, n, NULL);
}
EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dctx, CUdeviceptr src, CUcontext sctx, size_t n,
                                  CUstream s) {
        return peer_copy(dst, dctx, src, sctx, n, s);
}

EXPORT CUresult cuModuleLoadDataEx(CUmodule *mod, const void *image, unsigned int n, CUjit_option *opts, void **vals) {
        LOCKED_BEGIN;
        int rc;
        struct fake_gpu *g = current(&rc);
        if (!g) RETURN(rc);
        if (!mod || !image) RETURN(CUDA_ERROR_INVALID_VALUE);
        const char *text = image;
        const char *err = NULL;
        if (g->jit_error)
                err = "ptxas fatal   : (fake) JIT compilation failed as configured";
        else if (!strstr(text, ".version ") || !strstr(text, ".target sm_"))
                err = "ptxas fatal   : (fake) not PTX: no .version or .target directive";
        if (err) {
                char *buf = NULL;
                size_t cap = 0;
                for (unsigned i = 0; i < n; i++) {
                        if (opts[i] == CU_JIT_ERROR_LOG_BUFFER) buf = vals[i];
                        if (opts[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) cap = (size_t)(uintptr_t)vals[i];
                }
                if (buf && cap) snprintf(buf, cap, "%s", err);
                RETURN(CUDA_ERROR_INVALID_PTX);
        }
        struct CUmod_st *m = calloc(1, sizeof *m);
        m->dev = cur_dev;
        for (int k = 0; k < K_COUNT; k++) {
                char want[64];
                snprintf(want, sizeof want, ".entry %s(", kernel_names[k]);
                m->has[k] = strstr(text, want) != NULL;
        }
        *mod = m;
        RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule mod, const char *name) {
        if (!f || !mod || !name) return CUDA_ERROR_INVALID_VALUE;
        for (int k = 0; k < K_COUNT; k++)
                if (mod->has[k] && strcmp(name, kernel_names[k]) == 0) {
                        *f = &funcs[k];
                        return CUDA_SUCCESS;
                }
        return CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuModuleUnload(CUmodule mod) {
        if (!mod) return CUDA_ERROR_INVALID_HANDLE;
        free(mod);
        return CUDA_SUCCESS;
}

/* Returns true when fault f names kernel kind k ("*": any). */
static bool fault_hits(const struct fake_fault *f, int k) {
        return f->entry[0] && (strcmp(f->entry, "*") == 0 || strcmp(f->entry, kernel_names[k]) == 0);
}

EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
                               unsigned int by, unsigned int bz, unsigned int shared, CUstream s, void **params,
                               void **extra) {
        LOCKED_BEGIN;
        int rc;
        struct fake_gpu *g = current(&rc);
        if (!g) RETURN(rc);
        if (!f || f->kind < 0 || f->kind >= K_COUNT) RETURN(CUDA_ERROR_INVALID_HANDLE);
        if (!params || !gx || !bx || gy != 1 || gz != 1 || by != 1 || bz != 1 || bx > 1024)
                RETURN(CUDA_ERROR_INVALID_VALUE);
        int k = f->kind;
        if (fault_hits(&g->launch_error, k)) {
                if (cuda_result_is_sticky(g->launch_error.code)) g->sticky = g->launch_error.code;
                RETURN(g->launch_error.code ? g->launch_error.code : CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
        }
        if (fault_hits(&g->sticky_error, k)) {
                /* the kernel faults on the GPU: the launch returns, the next synchronisation reports it */
                g->pending_sticky = g->sticky_error.code ? g->sticky_error.code : CUDA_ERROR_ILLEGAL_ADDRESS;
                RETURN(CUDA_SUCCESS);
        }
        if (fault_hits(&g->hang, k)) {
                g->hang_pending = true;
                RETURN(CUDA_SUCCESS);
        }
        int dev = cur_dev;
        uint64_t threads = (uint64_t)gx * bx;
        double ms = 0;
        if (k == K_PATTERN) {
                uint32_t *buf = (uint32_t *)(uintptr_t) * (uint64_t *)params[0];
                uint64_t n = *(uint64_t *)params[1];
                uint32_t mode = *(uint32_t *)params[2], seed = *(uint32_t *)params[3], op = *(uint32_t *)params[4];
                uint64_t *res = (uint64_t *)(uintptr_t) * (uint64_t *)params[5];
                if (!find_alloc(buf, n * 4, dev) || (op && !find_alloc(res, KERNEL_PATTERN_RESULT_WORDS * 8, dev))) {
                        g->pending_sticky = CUDA_ERROR_ILLEGAL_ADDRESS; /* as the GPU: at the next sync */
                        RETURN(CUDA_SUCCESS);
                }
                if (op)
                        for (int i = 0; i < g->n_flips; i++)
                                if (g->flips[i].offset / 4 < n) buf[g->flips[i].offset / 4] ^= g->flips[i].mask;
                kernel_pattern_run(buf, n, mode, seed, op, res);
                ms = ms_at((double)n * 4, g->mem_gbps);
        } else if (k == K_COPY) {
                void *dst = (void *)(uintptr_t) * (uint64_t *)params[0];
                void *src = (void *)(uintptr_t) * (uint64_t *)params[1];
                uint64_t n = *(uint64_t *)params[2];
                if (!find_alloc(dst, n * 16, dev) || !find_alloc(src, n * 16, dev)) {
                        g->pending_sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
                        RETURN(CUDA_SUCCESS);
                }
                memmove(dst, src, n * 16);
                ms = ms_at((double)n * 32, g->mem_gbps);
        } else {
                float *out = (float *)(uintptr_t) * (uint64_t *)params[0];
                uint64_t n = *(uint64_t *)params[1];
                uint32_t iters = *(uint32_t *)params[2];
                uint64_t m = n < threads ? n : threads;
                if (!find_alloc(out, m * 4, dev)) {
                        g->pending_sticky = CUDA_ERROR_ILLEGAL_ADDRESS;
                        RETURN(CUDA_SUCCESS);
                }
                for (uint64_t t = 0; t < m; t++) out[t] = kernel_fma_thread(t, iters);
                if (g->fma_corrupt_thread >= 0 && (uint64_t)g->fma_corrupt_thread < m) {
                        uint32_t bits;
                        memcpy(&bits, &out[g->fma_corrupt_thread], 4);
                        bits ^= 1;
                        memcpy(&out[g->fma_corrupt_thread], &bits, 4);
                }
                ms = g->tflops > 0 ? (double)m * 2 * KERNEL_FMA_PER_TURN * iters / (g->tflops * 1e12) * 1e3 : 0;
        }
        advance(g, s, ms);
        RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuStreamCreate(CUstream *s, unsigned int flags) {
        LOCKED_BEGIN;
        int rc;
        struct fake_gpu *g = current(&rc);
        if (!g) RETURN(rc);
        *s = calloc(1, sizeof **s);
        (*s)->dev = cur_dev;
        (*s)->clock_ms = g->clock_ms;
        RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuStreamSynchronize(CUstream s) {
        LOCKED_BEGIN;
        int rc;
        struct fake_gpu *g = current(&rc);
        RETURN(g ? sync_point(g) : rc);
}

EXPORT CUresult cuStreamDestroy_v2(CUstream s) {
        if (!s) return CUDA_ERROR_INVALID_HANDLE;
        free(s);
        return CUDA_SUCCESS;
}

EXPORT CUresult cuEventCreate(CUevent *e, unsigned int flags) {
        LOCKED_BEGIN;
        int rc;
        if (!current(&rc)) RETURN(rc);
        *e = calloc(1, sizeof **e);
        (*e)->dev = cur_dev;
        RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuEventRecord(CUevent e, CUstream s) {
        LOCKED_BEGIN;
        int rc;
        struct fake_gpu *g = current(&rc);
        if (!g) RETURN(rc);
        if (!e) RETURN(CUDA_ERROR_INVALID_HANDLE);
        e->t_ms = s ? s->clock_ms : g->clock_ms;
        e->recorded = true;
        RETURN(CUDA_SUCCESS);
}

EXPORT CUresult cuEventSynchronize(CUevent e) {
        LOCKED_BEGIN;
        if (!e) RETURN(CUDA_ERROR_INVALID_HANDLE);
        int rc;
        struct fake_gpu *g = current(&rc);
        RETURN(g ? sync_point(g) : rc);
}

/* cuEventElapsedTime and _v2. Returns the CUresult. */
static CUresult elapsed(float *ms, CUevent a, CUevent b) {
        LOCKED_BEGIN;
        if (!ms || !a || !b) RETURN(CUDA_ERROR_INVALID_HANDLE);
        if (gpus[a->dev].sticky) RETURN(gpus[a->dev].sticky);
        if (!a->recorded || !b->recorded) RETURN(CUDA_ERROR_INVALID_HANDLE);
        *ms = (float)(b->t_ms - a->t_ms);
        RETURN(CUDA_SUCCESS);
}
EXPORT CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
        return elapsed(ms, a, b);
}
EXPORT CUresult cuEventElapsedTime_v2(float *ms, CUevent a, CUevent b) {
        return elapsed(ms, a, b);
}

EXPORT CUresult cuEventDestroy_v2(CUevent e) {
        if (!e) return CUDA_ERROR_INVALID_HANDLE;
        free(e);
        return CUDA_SUCCESS;
}
