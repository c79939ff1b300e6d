/* sampler.c: the exporter's background threads: NVML sampler (with a stuck-call watchdog), Xid events, layer diagnosis. */
#include "exporter/exporter.h"

#include <inttypes.h>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/wait.h>

#include "nvml/nvml_probe.h"
#include "basic/promtext.h"

/*
 * Threads and who owns what:
 * - one sampler worker at a time reads every GPU, renders the page and publishes it, then sleeps
 *   the interval. Before and after each NVML call it notes the call under e->lock.
 * - the watchdog (exporter_watchdog, from the command's main loop) sees a call that has run longer
 *   than the sample timeout: it abandons that worker (bumping e->gen, so the worker exits without
 *   touching NVML again as soon as the call returns), marks the GPU as stuck, and starts a
 *   replacement that samples the other GPUs. At most MAX_STUCK workers may be abandoned at once:
 *   beyond that nothing new starts, so threads never pile up; the page just goes stale.
 * - the Xid thread holds its own nvmlInit reference and waits on an event set.
 * - the check thread runs `gpunode check --output prometheus` in a child process every check
 *   interval (one child at a time, bounded in time and output; see "the layer diagnosis" below).
 * The exporter is reference counted: an abandoned worker may outlive exporter_stop.
 */

#define MAX_STUCK 1
#define MAX_GPUS 1024
#define EVENT_WAIT_MS 500

/* A GPU instance's profile name, resolved once per MIG device (its UUID changes when MIG is reconfigured). */
struct known_profile {
        char mig_uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
        unsigned gi_id;
        char profile[32];
};

struct known_gpu {
        bool identified;
        char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
        char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
        char pci_bus_id[NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE];
        unsigned n_profiles; /* known_profile entries in use (a ring) */
        unsigned next_profile;
        struct known_profile profiles[EXP_MAX_GPU_INSTANCES];
};

struct exporter {
        int refs; /* atomic: the owner, each worker, each helper thread */
        struct exp_options o;
        char *root, *nvml_library, *hostname, *hostname_label, *kubeconfig; /* owned copies of o's strings */

        pthread_mutex_t lock;
        pthread_cond_t cond; /* CLOCK_MONOTONIC; broadcast on stop */
        bool stop;
        struct timespec started;

        /* Under lock: the NVML session the sampler keeps. */
        struct nvml_lib *lib;
        bool nvml_initialized;
        char driver_version[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];

        /* Under lock: the current worker and its call in progress. */
        unsigned gen;
        struct worker_arg *cur; /* the current worker's argument, NULL once it left */
        pthread_t worker;
        bool worker_running;
        bool in_call;
        enum exp_call call;
        int call_gpu;
        struct timespec call_since;
        bool stuck_gpu[MAX_GPUS]; /* a call on it has not returned: skipped */
        struct known_gpu known[MAX_GPUS];
        int64_t xid_last[MAX_GPUS];
        struct exp_stats stats;

        /* Under lock: what health reads. */
        bool have_sample;
        struct timespec sample_time;
        bool nvml_up;
        char nvml_problem[192];
        bool have_check;
        struct timespec check_time;

        /* Under publish_lock: the parts of the page and the page itself (page_lock for the pointer). */
        pthread_mutex_t publish_lock;
        char *gpu_text;
        char *check_text;
        pthread_mutex_t page_lock;
        struct exp_page *page;

        int check_wake_fd;  /* eventfd: written on stop, wakes the check thread waiting on its child */
        pid_t check_pid;    /* check thread only: a killed child not reaped yet, 0 when none */

        pthread_t xid_thread, check_thread;
        bool xid_running, check_running;
};

struct worker_arg {
        struct exporter *e;
        unsigned gen;
        int stuck_gpu; /* under e->lock: set when abandoned on a call about that GPU, else -1 */
};

/* Returns the current CLOCK_MONOTONIC time. */
static struct timespec now_mono(void) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return t;
}

/* Returns e with one more reference. */
static struct exporter *exporter_ref(struct exporter *e) {
        __atomic_add_fetch(&e->refs, 1, __ATOMIC_RELAXED);
        return e;
}

/* Drops a reference; the last one frees everything. Returns NULL. */
static struct exporter *exporter_unref(struct exporter *e) {
        if (__atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL) > 0) return NULL;
        nvml_lib_unref(e->lib);
        exp_page_unref(e->page);
        free(e->gpu_text);
        free(e->check_text);
        free(e->root);
        free(e->nvml_library);
        free(e->hostname);
        free(e->hostname_label);
        free(e->kubeconfig);
        if (e->check_wake_fd >= 0) close(e->check_wake_fd);
        pthread_mutex_destroy(&e->lock);
        pthread_mutex_destroy(&e->publish_lock);
        pthread_mutex_destroy(&e->page_lock);
        pthread_cond_destroy(&e->cond);
        free(e);
        return NULL;
}

/* Waits ms or until stop. Caller holds e->lock. Returns true when stopping. */
static bool wait_locked(struct exporter *e, unsigned ms) {
        struct timespec t = now_mono();
        t.tv_sec += ms / 1000;
        t.tv_nsec += (long)(ms % 1000) * 1000000L;
        if (t.tv_nsec >= 1000000000L) {
                t.tv_sec++;
                t.tv_nsec -= 1000000000L;
        }
        while (!e->stop)
                if (pthread_cond_timedwait(&e->cond, &e->lock, &t) == ETIMEDOUT) break;
        return e->stop;
}

/* Composes the page from its parts, compresses it once, and swaps it in. Returns nothing. */
static void publish(struct exporter *e) {
        pthread_mutex_lock(&e->publish_lock);
        struct exp_page *p = xcalloc(1, sizeof *p);
        p->refs = 1;
        struct buf b = { 0 };
        if (e->gpu_text) buf_puts(&b, e->gpu_text);
        if (e->check_text) buf_puts(&b, e->check_text);
        if (!b.data) buf_puts(&b, "");
        p->text = b.data;
        p->len = b.len;
        if (exp_gzip_open(p->text, p->len, &p->gz, &p->gz_len, &p->gz_crc) < 0) p->gz = NULL;
        pthread_mutex_lock(&e->lock);
        p->have_sample = e->have_sample;
        p->sample_time = e->sample_time;
        p->have_check = e->have_check;
        p->check_time = e->check_time;
        p->nvml_up = e->nvml_up;
        snprintf(p->problem, sizeof p->problem, "%s", e->nvml_problem);
        pthread_mutex_unlock(&e->lock);
        pthread_mutex_lock(&e->page_lock);
        struct exp_page *old = e->page;
        e->page = p;
        pthread_mutex_unlock(&e->page_lock);
        exp_page_unref(old);
        pthread_mutex_unlock(&e->publish_lock);
}

struct exp_page *exporter_page(struct exporter *e) {
        pthread_mutex_lock(&e->page_lock);
        struct exp_page *p = exp_page_ref(e->page);
        pthread_mutex_unlock(&e->page_lock);
        return p;
}

/* ---- the sampler worker ---- */

/* Notes that worker w is about to make call on gpu (-1: system). Returns false when w was abandoned. */
static bool call_begin(struct worker_arg *w, enum exp_call call, int gpu) {
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

/* Notes that the call returned rc (counting errors other than "not supported"). Returns false when w
 * was abandoned meanwhile: the caller must leave without another NVML call. */
static bool call_end(struct worker_arg *w, enum exp_call call, int rc) {
        struct exporter *e = w->e;
        pthread_mutex_lock(&e->lock);
        bool current = w->gen == e->gen;
        if (current) e->in_call = false;
        if (rc != NVML_SUCCESS && rc != NVML_ERROR_NOT_SUPPORTED) e->stats.nvml_errors[call]++;
        pthread_mutex_unlock(&e->lock);
        return current;
}

/* One NVML call, noted for the watchdog. `ABANDONED` leaves the sample when the worker was abandoned. */
#define NVCALL(w, callid, gpu, rcvar, expr)                       \
        do {                                                      \
                if (!call_begin((w), (callid), (gpu))) return -ECANCELED; \
                (rcvar) = (expr);                                 \
                if (!call_end((w), (callid), (rcvar))) return -ECANCELED; \
        } while (0)

/* Returns true for return codes after which NVML must be shut down and initialised again. */
static bool rc_needs_reinit(int rc) {
        return rc == NVML_ERROR_UNINITIALIZED || rc == NVML_ERROR_DRIVER_NOT_LOADED ||
               rc == NVML_ERROR_LIB_RM_VERSION_MISMATCH || rc == NVML_ERROR_UNKNOWN;
}

/* Records a per-GPU failure in g. Returns nothing. */
static void gpu_problem(struct exp_gpu *g, enum exp_call call, int rc) {
        g->sampled = false;
        if (rc == NVML_ERROR_GPU_IS_LOST)
                snprintf(g->problem, sizeof g->problem, "GPU is lost (NVML_ERROR_GPU_IS_LOST from %s)", exp_call_name(call));
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
        NVCALL(w, CALL_ATTRIBUTES, (int)i, rc, lib->nvmlDeviceGetAttributes ? lib->nvmlDeviceGetAttributes(mdev, &a) : NS);
        bool have_attributes = rc == NVML_SUCCESS;
        if (have_attributes && a.memorySizeMB) mig_memory_mb = a.memorySizeMB;

        nvmlGpuInstance_t gi = NULL;
        NVCALL(w, CALL_GPU_INSTANCE_BY_ID, (int)i, rc,
               lib->nvmlDeviceGetGpuInstanceById ? lib->nvmlDeviceGetGpuInstanceById(dev, gi_id, &gi) : NS);
        nvmlGpuInstanceInfo_t gii;
        memset(&gii, 0, sizeof gii);
        if (rc == NVML_SUCCESS)
                NVCALL(w, CALL_GPU_INSTANCE_INFO, (int)i, rc, lib->nvmlGpuInstanceGetInfo ? lib->nvmlGpuInstanceGetInfo(gi, &gii) : NS);
        for (unsigned p = 0; rc == NVML_SUCCESS && p < NVML_GPU_INSTANCE_PROFILE_COUNT; p++) {
                nvmlGpuInstanceProfileInfo_t pi;
                memset(&pi, 0, sizeof pi);
                nvmlReturn_t prc;
                NVCALL(w, CALL_GPU_INSTANCE_PROFILE_INFO, (int)i, prc,
                       lib->nvmlDeviceGetGpuInstanceProfileInfo ? lib->nvmlDeviceGetGpuInstanceProfileInfo(dev, p, &pi) : NS);
                if (prc != NVML_SUCCESS || pi.id != gii.profileId) continue;
                int ci = ci_profile_for_slices(gi_profile_slices[p]);
                if (ci >= 0 && nvml_mig_profile_name(p, (unsigned)ci, mig_memory_mb, gpu_memory, buf, size) == 0) return 0;
                break;
        }
        if (have_attributes) {
                struct nvml_mig_attributes ma = { .gi_slices = a.gpuInstanceSliceCount, .ci_slices = a.gpuInstanceSliceCount,
                                                  .memory_mb = mig_memory_mb };
                if (nvml_mig_name_from_attributes(&ma, gpu_memory, buf, size) < 0) buf[0] = 0;
        }
        return 0;
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
        NVCALL(w, CALL_MIG_MODE, (int)i, rc, lib->nvmlDeviceGetMigMode ? lib->nvmlDeviceGetMigMode(dev, &cur, &pend) : NS);
        if (rc != NVML_SUCCESS || cur != NVML_DEVICE_MIG_ENABLE) return 0;
        NVCALL(w, CALL_MIG_MAX_COUNT, (int)i, rc,
               lib->nvmlDeviceGetMaxMigDeviceCount ? lib->nvmlDeviceGetMaxMigDeviceCount(dev, &max) : NS);
        if (rc != NVML_SUCCESS) return 0;
        unsigned n = 0;
        for (unsigned k = 0; k < max && k < 64; k++) {
                nvmlDevice_t mdev = NULL;
                NVCALL(w, CALL_MIG_HANDLE, (int)i, rc,
                       lib->nvmlDeviceGetMigDeviceHandleByIndex ? lib->nvmlDeviceGetMigDeviceHandleByIndex(dev, k, &mdev) : NS);
                if (rc == NVML_ERROR_NOT_FOUND) continue;
                if (rc != NVML_SUCCESS) {
                        n = 0; /* a partial list would hide instances: report the GPU whole */
                        break;
                }
                unsigned gi_id = 0;
                NVCALL(w, CALL_GPU_INSTANCE_ID, (int)i, rc,
                       lib->nvmlDeviceGetGpuInstanceId ? lib->nvmlDeviceGetGpuInstanceId(mdev, &gi_id) : NS);
                if (rc != NVML_SUCCESS) continue;
                bool seen = false;
                for (unsigned j = 0; j < n && !seen; j++) seen = g->instances[j].id == gi_id;
                if (seen || n == EXP_MAX_GPU_INSTANCES) continue; /* another compute instance of the same GPU instance */
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
                if ((rc == NVML_ERROR_FUNCTION_NOT_FOUND || rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) && lib->nvmlDeviceGetMemoryInfo) {
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
                NVCALL(w, CALL_UUID, (int)i, rc, lib->nvmlDeviceGetUUID ? lib->nvmlDeviceGetUUID(mdev, mig_uuid, sizeof mig_uuid) : NS);
                if (rc != NVML_SUCCESS) mig_uuid[0] = 0;
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
        if (rc == NVML_SUCCESS) snprintf(g->pci_bus_id, sizeof g->pci_bus_id, "%.*s", (int)sizeof pci.busId - 1, pci.busId);
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

        NVCALL(w, CALL_CLOCK_INFO, (int)i, rc, lib->nvmlDeviceGetClockInfo ? lib->nvmlDeviceGetClockInfo(dev, NVML_CLOCK_SM, &u) : NS);
        if (rc == NVML_SUCCESS) set_value(g, EXP_SM_CLOCK, u);
        if (rc == NVML_ERROR_GPU_IS_LOST) goto lost;
        NVCALL(w, CALL_CLOCK_INFO, (int)i, rc, lib->nvmlDeviceGetClockInfo ? lib->nvmlDeviceGetClockInfo(dev, NVML_CLOCK_MEM, &u) : NS);
        if (rc == NVML_SUCCESS) set_value(g, EXP_MEM_CLOCK, u);

        nvmlFieldValue_t fv[2];
        memset(fv, 0, sizeof fv);
        fv[0].fieldId = NVML_FI_DEV_MEMORY_TEMP;
        fv[1].fieldId = NVML_FI_DEV_NVLINK_BANDWIDTH_C0_TOTAL;
        NVCALL(w, CALL_FIELD_VALUES, (int)i, rc, lib->nvmlDeviceGetFieldValues ? lib->nvmlDeviceGetFieldValues(dev, 2, fv) : NS);
        if (rc == NVML_SUCCESS) {
                if (fv[0].nvmlReturn == NVML_SUCCESS) set_value(g, EXP_MEMORY_TEMP, (double)fv[0].value.uiVal);
                if (fv[1].nvmlReturn == NVML_SUCCESS) set_value(g, EXP_NVLINK_BANDWIDTH_TOTAL, (double)fv[1].value.ullVal);
        }
        if (rc == NVML_ERROR_GPU_IS_LOST) goto lost;

        rc = NVML_ERROR_FUNCTION_NOT_FOUND;
        if (lib->nvmlDeviceGetTemperatureV) {
                nvmlTemperature_t t = { .version = nvmlTemperature_v1, .sensorType = NVML_TEMPERATURE_GPU };
                NVCALL(w, CALL_TEMPERATURE, (int)i, rc, lib->nvmlDeviceGetTemperatureV(dev, &t));
                if (rc == NVML_SUCCESS) set_value(g, EXP_GPU_TEMP, t.temperature);
        }
        if ((rc == NVML_ERROR_FUNCTION_NOT_FOUND || rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) && lib->nvmlDeviceGetTemperature) {
                NVCALL(w, CALL_TEMPERATURE, (int)i, rc, lib->nvmlDeviceGetTemperature(dev, NVML_TEMPERATURE_GPU, &u));
                if (rc == NVML_SUCCESS) set_value(g, EXP_GPU_TEMP, u);
        }

        NVCALL(w, CALL_POWER_USAGE, (int)i, rc, lib->nvmlDeviceGetPowerUsage ? lib->nvmlDeviceGetPowerUsage(dev, &u) : NS);
        if (rc == NVML_SUCCESS) set_value(g, EXP_POWER_USAGE, u / 1000.0); /* mW -> W */
        if (rc == NVML_ERROR_GPU_IS_LOST) goto lost;
        NVCALL(w, CALL_ENERGY, (int)i, rc, lib->nvmlDeviceGetTotalEnergyConsumption ? lib->nvmlDeviceGetTotalEnergyConsumption(dev, &ull) : NS);
        if (rc == NVML_SUCCESS) set_value(g, EXP_TOTAL_ENERGY, (double)ull);
        NVCALL(w, CALL_PCIE_REPLAY, (int)i, rc, lib->nvmlDeviceGetPcieReplayCounter ? lib->nvmlDeviceGetPcieReplayCounter(dev, &u) : NS);
        if (rc == NVML_SUCCESS) set_value(g, EXP_PCIE_REPLAY, u);

        nvmlUtilization_t util = { 0 };
        NVCALL(w, CALL_UTILIZATION, (int)i, rc, lib->nvmlDeviceGetUtilizationRates ? lib->nvmlDeviceGetUtilizationRates(dev, &util) : NS);
        if (rc == NVML_SUCCESS) {
                set_value(g, EXP_GPU_UTIL, util.gpu);
                set_value(g, EXP_MEM_COPY_UTIL, util.memory);
        }
        NVCALL(w, CALL_ENCODER_UTIL, (int)i, rc, lib->nvmlDeviceGetEncoderUtilization ? lib->nvmlDeviceGetEncoderUtilization(dev, &u, &u2) : NS);
        if (rc == NVML_SUCCESS) set_value(g, EXP_ENC_UTIL, u);
        NVCALL(w, CALL_DECODER_UTIL, (int)i, rc, lib->nvmlDeviceGetDecoderUtilization ? lib->nvmlDeviceGetDecoderUtilization(dev, &u, &u2) : NS);
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
        if ((rc == NVML_ERROR_FUNCTION_NOT_FOUND || rc == NVML_ERROR_ARGUMENT_VERSION_MISMATCH) && lib->nvmlDeviceGetMemoryInfo) {
                nvmlMemory_t m = { 0 };
                NVCALL(w, CALL_MEMORY_INFO, (int)i, rc, lib->nvmlDeviceGetMemoryInfo(dev, &m));
                if (rc == NVML_SUCCESS) {
                        memory_total = m.total;
                        set_value(g, EXP_FB_FREE, (double)(m.free >> 20));
                        set_value(g, EXP_FB_USED, (double)(m.used >> 20));
                }
        }

        unsigned corr = 0, unc = 0, pending = 0, failure = 0;
        NVCALL(w, CALL_REMAPPED_ROWS, (int)i, rc, lib->nvmlDeviceGetRemappedRows ? lib->nvmlDeviceGetRemappedRows(dev, &corr, &unc, &pending, &failure) : NS);
        if (rc == NVML_SUCCESS) {
                set_value(g, EXP_UNCORRECTABLE_REMAPPED_ROWS, unc);
                set_value(g, EXP_CORRECTABLE_REMAPPED_ROWS, corr);
                set_value(g, EXP_ROW_REMAP_FAILURE, failure ? 1 : 0);
        }
        if (xid_on) set_value(g, EXP_XID_ERRORS, xid > 0 ? (double)xid : 0);

        int r = sample_gpu_instances(w, lib, g, dev, memory_total);
        if (r < 0) return r;
        return 0;

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
                       lib->nvmlSystemGetDriverVersion ? lib->nvmlSystemGetDriverVersion(ver, sizeof ver) : NVML_ERROR_NOT_SUPPORTED);
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
                NVCALL(w, CALL_SHUTDOWN, -1, rc, lib->nvmlShutdown());
                pthread_mutex_lock(&e->lock);
                e->nvml_initialized = false;
                pthread_mutex_unlock(&e->lock);
        }
        return 0;
}

/* Renders sample s (and the stats) as the GPU part of the page and publishes. Returns nothing. */
static void render_and_publish(struct exporter *e, const struct exp_sample *s, bool complete) {
        struct exp_render_options ro = { .hostname = e->hostname, .hostname_label = e->hostname_label };
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
        publish(e);
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
                if (current) render_and_publish(e, &s, !s.partial);
                exp_sample_clear(&s);
                pthread_mutex_lock(&e->lock);
                bool stop = !current || w->gen != e->gen || wait_locked(e, e->o.interval_ms) || w->gen != e->gen;
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
static int start_worker_locked(struct exporter *e) {
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

void exporter_watchdog(struct exporter *e) {
        pthread_mutex_lock(&e->lock);
        struct timespec now = now_mono();
        if (e->worker_running && e->cur && e->in_call && !e->stop &&
            exp_seconds_between(&e->call_since, &now) * 1000.0 > e->o.sample_timeout_ms &&
            e->stats.stuck_workers < MAX_STUCK) {
                if (e->call_gpu >= 0 && e->call_gpu < MAX_GPUS) {
                        e->stuck_gpu[e->call_gpu] = true;
                        e->cur->stuck_gpu = e->call_gpu;
                }
                e->stats.stuck_workers++;
                e->stats.stuck_total++;
                e->gen++; /* the stuck worker sees it is no longer current once its call returns */
                e->cur = NULL;
                pthread_detach(e->worker);
                start_worker_locked(e);
        }
        pthread_mutex_unlock(&e->lock);
}

/* ---- Xid events ---- */

/* The Xid thread: keeps an event set registered for Xid errors on every GPU and records the last Xid
 * per GPU. Holds its own nvmlInit reference; starts over after any error. Returns NULL. */
static void *xid_main(void *arg) {
        struct exporter *e = arg;
        nvmlDevice_t *handles = xcalloc(MAX_GPUS, sizeof *handles);
        pthread_mutex_lock(&e->lock);
        while (!e->stop) {
                struct nvml_lib *lib = nvml_lib_ref(e->lib);
                pthread_mutex_unlock(&e->lock);
                nvmlEventSet_t set = NULL;
                bool inited = false;
                nvmlReturn_t rc = NVML_ERROR_NOT_SUPPORTED;
                enum exp_call failed = CALL_INIT;
                unsigned count = 0;
                if (!lib || !lib->nvmlEventSetCreate || !lib->nvmlDeviceRegisterEvents || !lib->nvmlEventSetWait)
                        goto again;
                rc = lib->nvmlInit();
                if (rc != NVML_SUCCESS) goto again;
                inited = true;
                failed = CALL_DEVICE_COUNT;
                rc = lib->nvmlDeviceGetCount(&count);
                if (rc != NVML_SUCCESS) goto again;
                if (count > MAX_GPUS) count = MAX_GPUS;
                failed = CALL_EVENT_SET_CREATE;
                rc = lib->nvmlEventSetCreate(&set);
                if (rc != NVML_SUCCESS) goto again;
                for (unsigned i = 0; i < count; i++) {
                        handles[i] = NULL;
                        if (lib->nvmlDeviceGetHandleByIndex(i, &handles[i]) != NVML_SUCCESS) continue;
                        nvmlReturn_t r = lib->nvmlDeviceRegisterEvents(handles[i], nvmlEventTypeXidCriticalError, set);
                        if (r != NVML_SUCCESS && r != NVML_ERROR_NOT_SUPPORTED) {
                                pthread_mutex_lock(&e->lock);
                                e->stats.nvml_errors[CALL_REGISTER_EVENTS]++;
                                pthread_mutex_unlock(&e->lock);
                        }
                }
                failed = CALL_EVENT_SET_WAIT;
                for (;;) {
                        nvmlEventData_t d;
                        memset(&d, 0, sizeof d);
                        rc = lib->nvmlEventSetWait(set, &d, EVENT_WAIT_MS);
                        pthread_mutex_lock(&e->lock);
                        bool stop = e->stop;
                        if (rc == NVML_SUCCESS && (d.eventType & nvmlEventTypeXidCriticalError)) {
                                for (unsigned i = 0; i < count; i++)
                                        if (handles[i] && handles[i] == d.device) {
                                                e->xid_last[i] = (int64_t)d.eventData;
                                                e->stats.xid_events_total++;
                                        }
                        }
                        pthread_mutex_unlock(&e->lock);
                        if (stop) break;
                        if (rc != NVML_SUCCESS && rc != NVML_ERROR_TIMEOUT) goto again;
                }
                rc = NVML_SUCCESS;
again:
                if (rc != NVML_SUCCESS && rc != NVML_ERROR_NOT_SUPPORTED) {
                        pthread_mutex_lock(&e->lock);
                        e->stats.nvml_errors[failed]++;
                        pthread_mutex_unlock(&e->lock);
                }
                if (set && lib->nvmlEventSetFree) lib->nvmlEventSetFree(set);
                if (inited) lib->nvmlShutdown();
                nvml_lib_unref(lib);
                pthread_mutex_lock(&e->lock);
                if (!e->stop) wait_locked(e, lib ? 5000 : 1000);
        }
        pthread_mutex_unlock(&e->lock);
        free(handles);
        exporter_unref(e);
        return NULL;
}

/* ---- the layer diagnosis, in a child process ---- */

/*
 * `gpunode check --output prometheus` runs as a child (posix_spawn of /proc/self/exe), so that what
 * the probes load (libfyaml for CDI specs, libcurl and its chain on a Kubernetes node), any probe
 * that hangs and anything a probe leaks stay out of this long-running process. One child at a time;
 * its stdout is read through a pipe up to CHECK_OUTPUT_MAX bytes, within the check timeout (then it
 * is killed, with its process group); it is always reaped. Its output is validated (the Prometheus
 * text parser, only the diagnosis's own families) before it is spliced into the page.
 */
#define CHECK_OUTPUT_MAX (256u * 1024u)
#define CHECK_REAP_MS 2000u

/* Returns true when name is one of the families `gpunode check --output prometheus` writes. */
static bool check_family(const char *name) {
        return streq(name, "gpunode_check") || streq(name, "gpunode_layer_healthy") || streq(name, "gpunode_verdict") ||
               streq(name, "gpunode_root_cause_layer");
}

/* promtext callback: refuses a sample of another family; counts verdict samples. Returns 0 or -EBADMSG. */
static int check_sample_cb(const struct promtext_sample *sm, void *userdata) {
        if (!check_family(sm->name)) return -EBADMSG;
        if (streq(sm->name, "gpunode_verdict")) (*(unsigned *)userdata)++;
        return 0;
}

/* promtext callback: refuses HELP of another family. Returns 0 or -EBADMSG. */
static int check_help_cb(const char *name, const char *text, unsigned long line, void *userdata) {
        return check_family(name) ? 0 : -EBADMSG;
}

/* promtext callback: refuses TYPE of another family. Returns 0 or -EBADMSG. */
static int check_type_cb(const char *name, enum promtext_type type, unsigned long line, void *userdata) {
        return check_family(name) ? 0 : -EBADMSG;
}

/* Returns 0 when text[0..len) is the diagnosis as `gpunode check --output prometheus` writes it:
 * valid exposition text, only its four families, a verdict. Else -EBADMSG (or the parser's error). */
static int check_output_validate(const char *text, size_t len) {
        static const struct promtext_callbacks cb = { .sample = check_sample_cb, .help = check_help_cb, .type = check_type_cb };
        unsigned verdicts = 0;
        int r = promtext_parse(text, len, &cb, &verdicts, NULL);
        if (r < 0) return r;
        return verdicts > 0 ? 0 : -EBADMSG;
}

/* Kills the child's process group and the child. Returns nothing. */
static void check_child_kill(pid_t pid) {
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
}

/* Waits up to ms for child pid to end, reaping it. Returns true when reaped (*ret_status set, may be NULL). */
static bool check_child_reap(pid_t pid, unsigned ms, int *ret_status) {
        for (unsigned waited = 0;; waited += 10) {
                int st;
                pid_t r = waitpid(pid, &st, WNOHANG);
                if (r == pid || (r < 0 && errno == ECHILD)) {
                        if (ret_status) *ret_status = r == pid ? st : -1;
                        return true;
                }
                if (waited >= ms) return false;
                struct timespec t = { 0, 10 * 1000000L };
                nanosleep(&t, NULL);
        }
}

/* Returns the milliseconds from now until deadline (0 when past). */
static int ms_until(const struct timespec *deadline) {
        struct timespec now = now_mono();
        double s = exp_seconds_between(&now, deadline);
        return s <= 0 ? 0 : s > 1e6 ? 1000000000 : (int)(s * 1000) + 1;
}

/*
 * Runs one `gpunode check --output prometheus` child and reads its output. Returns 0 with the malloc'd,
 * NUL-terminated output in *ret_text (*ret_len bytes); -ETIMEDOUT when it ran past the check timeout
 * (killed); -EFBIG when it wrote more than CHECK_OUTPUT_MAX (killed); -ECANCELED when the exporter is
 * stopping (killed); -EIO when it exited other than 0, 1 or 2 (healthy, warnings, failures) or by a
 * signal; -errno when it cannot be started. A child that could not be reaped is left in e->check_pid.
 */
static int check_child_run(struct exporter *e, char **ret_text, size_t *ret_len) {
        const char *argv[16];
        unsigned n = 0;
        argv[n++] = "gpunode";
        argv[n++] = "check";
        argv[n++] = "--output";
        argv[n++] = "prometheus";
        argv[n++] = "--root";
        argv[n++] = e->root;
        if (e->nvml_library) {
                argv[n++] = "--nvml-library";
                argv[n++] = e->nvml_library;
        }
        if (e->kubeconfig) {
                argv[n++] = "--kubeconfig";
                argv[n++] = e->kubeconfig;
        }
        argv[n] = NULL;

        int fds[2];
        if (pipe2(fds, O_CLOEXEC) < 0) return -errno;
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&attr);
        posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
        posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
        posix_spawn_file_actions_addclosefrom_np(&fa, 3); /* NVML's device files and the like stay here */
#endif
        sigset_t none, deflt;
        sigemptyset(&none);
        sigemptyset(&deflt);
        sigaddset(&deflt, SIGPIPE);
        sigaddset(&deflt, SIGTERM);
        sigaddset(&deflt, SIGINT);
        posix_spawnattr_setsigmask(&attr, &none); /* this thread blocks SIGTERM; the child must not */
        posix_spawnattr_setsigdefault(&attr, &deflt);
        posix_spawnattr_setpgroup(&attr, 0); /* its own group: a timeout kills whatever it started too */
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
        pid_t pid;
        /* This program: by the path /proc/self/exe links to (under valgrind, /proc/self/exe itself is
         * valgrind), or /proc/self/exe itself once that file was deleted or replaced ("... (deleted)"). */
        char self[4096];
        ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);
        self[l > 0 && l < (ssize_t)sizeof self ? l : 0] = 0;
        if (!self[0] || access(self, X_OK) < 0) snprintf(self, sizeof self, "/proc/self/exe");
        int r = -posix_spawn(&pid, self, &fa, &attr, (char *const *)argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        close(fds[1]);
        if (r < 0) {
                close(fds[0]);
                return r;
        }

        struct timespec deadline = now_mono();
        deadline.tv_sec += e->o.check_timeout_ms / 1000;
        deadline.tv_nsec += (long)(e->o.check_timeout_ms % 1000) * 1000000L;
        if (deadline.tv_nsec >= 1000000000L) {
                deadline.tv_sec++;
                deadline.tv_nsec -= 1000000000L;
        }
        struct buf out = { 0 };
        r = 0;
        for (;;) {
                struct pollfd p[2] = { { .fd = fds[0], .events = POLLIN }, { .fd = e->check_wake_fd, .events = POLLIN } };
                int t = ms_until(&deadline);
                if (t == 0) {
                        r = -ETIMEDOUT;
                        break;
                }
                int k = poll(p, 2, t);
                if (k < 0 && errno != EINTR) {
                        r = -errno;
                        break;
                }
                if (p[1].revents) {
                        r = -ECANCELED;
                        break;
                }
                if (k <= 0 || !p[0].revents) continue;
                char chunk[4096];
                ssize_t got = read(fds[0], chunk, sizeof chunk);
                if (got < 0) {
                        if (errno == EINTR || errno == EAGAIN) continue;
                        r = -errno;
                        break;
                }
                if (got == 0) break; /* the child closed its stdout: it is ending */
                if (out.len + (size_t)got > CHECK_OUTPUT_MAX) {
                        r = -EFBIG;
                        break;
                }
                buf_append(&out, chunk, (size_t)got);
        }
        close(fds[0]);
        int status = -1;
        bool reaped = false;
        if (r == 0) {
                /* Output done; the child should exit at once. Wait for it within the same deadline. */
                while (!(reaped = check_child_reap(pid, 0, &status))) {
                        int t = ms_until(&deadline);
                        if (t == 0) {
                                r = -ETIMEDOUT;
                                break;
                        }
                        struct pollfd p = { .fd = e->check_wake_fd, .events = POLLIN };
                        if (poll(&p, 1, t < 20 ? t : 20) > 0) {
                                r = -ECANCELED;
                                break;
                        }
                }
        }
        if (!reaped) {
                check_child_kill(pid);
                reaped = check_child_reap(pid, CHECK_REAP_MS, NULL);
                if (!reaped) e->check_pid = pid; /* stuck in the kernel: reaped on a later round */
        }
        if (r == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) <= 2)) r = -EIO;
        if (r < 0) {
                buf_free(&out);
                return r;
        }
        if (!out.data) buf_puts(&out, "");
        *ret_len = out.len;
        *ret_text = out.data;
        return 0;
}

/* Runs one round of the layer diagnosis and publishes its series with the outcome. Returns nothing. */
static void check_round(struct exporter *e, struct exp_check_status *cs, char **last_output) {
        /* A child from an earlier round that could not be reaped: never a second one beside it. */
        if (e->check_pid > 0) {
                check_child_kill(e->check_pid);
                if (!check_child_reap(e->check_pid, 0, NULL)) {
                        cs->runs_total[EXP_CHECK_BUSY]++;
                        cs->last = EXP_CHECK_BUSY;
                        goto publish;
                }
                e->check_pid = 0;
        }
        struct timespec t0 = now_mono();
        char *text = NULL;
        size_t len = 0;
        int r = check_child_run(e, &text, &len);
        if (r == -ECANCELED) return;
        if (r == 0) {
                r = check_output_validate(text, len);
                if (r < 0) {
                        free(text);
                        r = -EBADMSG;
                } else if (len > 0 && text[len - 1] != '\n') {
                        text = xrealloc(text, len + 2);
                        text[len++] = '\n';
                        text[len] = 0;
                }
        }
        struct timespec t1 = now_mono();
        cs->duration_seconds = exp_seconds_between(&t0, &t1);
        cs->last = r == 0 ? EXP_CHECK_OK : r == -ETIMEDOUT ? EXP_CHECK_TIMEOUT : r == -EBADMSG || r == -EFBIG ? EXP_CHECK_INVALID
                                                                                                          : EXP_CHECK_FAILED;
        cs->runs_total[cs->last]++;
        if (r == 0) {
                free(*last_output);
                *last_output = text;
                pthread_mutex_lock(&e->lock);
                e->have_check = true;
                e->check_time = t1;
                pthread_mutex_unlock(&e->lock);
        }
publish:;
        /* The last good diagnosis (its age says how old) and how the latest run went. */
        struct buf b = { 0 };
        if (*last_output) buf_puts(&b, *last_output);
        exp_render_check_status(&b, cs);
        pthread_mutex_lock(&e->publish_lock);
        free(e->check_text);
        e->check_text = b.data;
        pthread_mutex_unlock(&e->publish_lock);
        publish(e);
}

/* The check thread: runs the layer diagnosis in a child every check interval. Returns NULL. */
static void *check_main(void *arg) {
        struct exporter *e = arg;
        struct exp_check_status cs = { .last = EXP_CHECK_NONE };
        char *last_output = NULL;
        pthread_mutex_lock(&e->lock);
        while (!e->stop) {
                pthread_mutex_unlock(&e->lock);
                check_round(e, &cs, &last_output);
                pthread_mutex_lock(&e->lock);
                wait_locked(e, e->o.check_interval_ms);
        }
        pthread_mutex_unlock(&e->lock);
        if (e->check_pid > 0) {
                check_child_kill(e->check_pid);
                check_child_reap(e->check_pid, CHECK_REAP_MS, NULL);
        }
        free(last_output);
        exporter_unref(e);
        return NULL;
}

/* ---- lifecycle ---- */

int exporter_start(const struct exp_options *o, struct exporter **ret) {
        struct exporter *e = xcalloc(1, sizeof *e);
        e->refs = 1;
        e->o = *o;
        e->root = xstrdup(o->root ? o->root : "/");
        e->nvml_library = o->nvml_library ? xstrdup(o->nvml_library) : NULL;
        e->hostname = o->hostname ? xstrdup(o->hostname) : NULL;
        e->hostname_label = xstrdup(o->hostname_label ? o->hostname_label : "Hostname");
        e->kubeconfig = o->kubeconfig ? xstrdup(o->kubeconfig) : NULL;
        e->check_wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (e->o.check_timeout_ms == 0) e->o.check_timeout_ms = 60000;
        e->o.root = e->root;
        e->o.nvml_library = e->nvml_library;
        e->o.hostname = e->hostname;
        e->o.hostname_label = e->hostname_label;
        e->o.kubeconfig = e->kubeconfig;
        pthread_mutex_init(&e->lock, NULL);
        pthread_mutex_init(&e->publish_lock, NULL);
        pthread_mutex_init(&e->page_lock, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&e->cond, &ca);
        pthread_condattr_destroy(&ca);
        e->started = now_mono();
        e->call_gpu = -1;
        snprintf(e->nvml_problem, sizeof e->nvml_problem, "no sample yet");
        publish(e); /* an empty page until the first sample */

        pthread_mutex_lock(&e->lock);
        int r = start_worker_locked(e);
        pthread_mutex_unlock(&e->lock);
        if (r < 0) {
                exporter_unref(e);
                return r;
        }
        if (o->xid_events) {
                exporter_ref(e);
                r = pthread_create(&e->xid_thread, NULL, xid_main, e);
                if (r != 0) exporter_unref(e);
                e->xid_running = r == 0;
        }
        if (o->check_interval_ms > 0 && e->check_wake_fd >= 0) {
                exporter_ref(e);
                r = pthread_create(&e->check_thread, NULL, check_main, e);
                if (r != 0) exporter_unref(e);
                e->check_running = r == 0;
        }
        *ret = e;
        return 0;
}

bool exporter_health(struct exporter *e, char *reason, size_t reason_size) {
        pthread_mutex_lock(&e->lock);
        struct timespec now = now_mono();
        double stale_after = 3.0 * e->o.interval_ms / 1000.0;
        double t = (e->o.interval_ms + e->o.sample_timeout_ms) / 1000.0;
        if (t > stale_after) stale_after = t;
        bool ok = true;
        double age = exp_seconds_between(e->have_sample ? &e->sample_time : &e->started, &now);
        if (!e->have_sample && age <= stale_after) {
                ok = false;
                snprintf(reason, reason_size, "starting: no complete sample yet (started %.1f s ago)", age);
        } else if (age > stale_after) {
                ok = false;
                int n = snprintf(reason, reason_size, "stale: %s %.1f s ago (limit %.1f s)",
                                 e->have_sample ? "last complete sample" : "no complete sample since the start",
                                 age, stale_after);
                if (e->in_call && n > 0 && (size_t)n < reason_size) {
                        double d = exp_seconds_between(&e->call_since, &now);
                        if (e->call_gpu >= 0)
                                snprintf(reason + n, reason_size - (size_t)n, "; %s on GPU %d has not returned for %.1f s",
                                         exp_call_name(e->call), e->call_gpu, d);
                        else
                                snprintf(reason + n, reason_size - (size_t)n, "; %s has not returned for %.1f s",
                                         exp_call_name(e->call), d);
                }
                size_t l = strlen(reason);
                if (e->stats.stuck_workers > 0 && l + 40 < reason_size)
                        snprintf(reason + l, reason_size - l, "; %u sampler thread(s) stuck in NVML", e->stats.stuck_workers);
        }
        if (ok && !e->nvml_up) {
                ok = false;
                snprintf(reason, reason_size, "NVML failing: %s", e->nvml_problem);
        }
        if (ok) snprintf(reason, reason_size, "ok");
        pthread_mutex_unlock(&e->lock);
        return ok;
}

/* Joins thread within ms milliseconds. Returns true when it ended, false when left running (detached). */
static bool join_bounded(pthread_t t, unsigned ms) {
        struct timespec d;
        clock_gettime(CLOCK_REALTIME, &d);
        d.tv_sec += ms / 1000;
        d.tv_nsec += (long)(ms % 1000) * 1000000L;
        if (d.tv_nsec >= 1000000000L) {
                d.tv_sec++;
                d.tv_nsec -= 1000000000L;
        }
        if (pthread_timedjoin_np(t, NULL, &d) == 0) return true;
        pthread_detach(t);
        return false;
}

struct exporter *exporter_stop(struct exporter *e) {
        if (!e) return NULL;
        pthread_mutex_lock(&e->lock);
        e->stop = true;
        pthread_cond_broadcast(&e->cond);
        if (e->check_wake_fd >= 0) {
                uint64_t one = 1;
                (void)!write(e->check_wake_fd, &one, sizeof one);
        }
        bool worker = e->worker_running;
        pthread_t wt = e->worker;
        e->worker_running = false;
        pthread_mutex_unlock(&e->lock);
        bool clean = true;
        if (worker) clean &= join_bounded(wt, 3000);
        if (e->xid_running) clean &= join_bounded(e->xid_thread, 3000);
        if (e->check_running) clean &= join_bounded(e->check_thread, 15000);
        pthread_mutex_lock(&e->lock);
        bool shutdown = clean && e->nvml_initialized && e->stats.stuck_workers == 0;
        struct nvml_lib *lib = e->lib;
        pthread_mutex_unlock(&e->lock);
        /* With a thread still inside NVML, leave the library initialised and mapped: the process is ending. */
        if (shutdown) lib->nvmlShutdown();
        exporter_unref(e);
        return NULL;
}
