/* exporter_internal.h: what the exporter's files share (private to src/exporter/): struct exporter, its references, the
 * page. */
#pragma once

#include "exporter/exporter.h"

/*
 * Threads and who owns what:
 * - one sampler worker at a time reads every GPU, renders the page and publishes it, then sleeps
 *   the interval. Before and after each NVML call it notes the call under e->lock.
 * - the watchdog (exporter_watchdog, from the command's main loop) sees a call that has run longer
 *   than the sample timeout: it abandons that worker (bumping e->gen, so the worker exits without
 *   touching NVML again as soon as the call returns), marks the GPU as stuck, and starts a
 *   replacement that samples the other GPUs. At most MAX_STUCK workers may be abandoned at once:
 *   beyond that nothing new starts, so threads never pile up; the page just goes stale.
 * - the daemon's Xid watch (src/daemon/xid_watch.c) calls xid_events.c's subscriber in its thread,
 *   and the daemon's diagnosis loop diagnosis_series.c's sink in its own, both under e->lock or
 *   publish_lock for what they change.
 * The exporter is reference counted: an abandoned worker may outlive exporter_stop.
 */

#define MAX_STUCK 1
#define MAX_GPUS  1024

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

/* GPM state of one GPU or GPU instance kept between samples (gpm.c): two sample buffers, the one read
 * last (prev) and the next one to read (cur); the rates come from the pair. */
struct gpm_slot {
        bool used; /* an instance slot: gi_id is a GPU instance of the GPU */
        bool seen; /* gpm.c: the instance was found in this sample */
        unsigned gi_id;
        bool have_prev; /* prev holds a sample */
        nvmlGpmSample_t prev, cur;
};

/* GPM state of one GPU: its own slot (MIG off) or one per GPU instance (MIG on). */
struct gpm_gpu {
        struct gpm_slot whole;
        struct gpm_slot inst[EXP_MAX_GPU_INSTANCES];
};

struct exporter {
        int refs; /* atomic: the owner, each worker, each helper thread */
        struct exp_options o;
        char *root, *nvml_library, *hostname, *hostname_label; /* owned copies of o's strings */

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
        /* Not under lock: gpm[i] belongs to the worker sampling GPU i (a stuck GPU is sampled by no one
         * until its call returns); NULL until GPM answers for the GPU. */
        struct gpm_gpu *gpm[MAX_GPUS];
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

        /* Under publish_lock: how the daemon's diagnosis runs went, and the last good one's series. */
        struct exp_check_status check_status;
        char *check_series;

        /* Pod attribution (o.kubernetes): one client for the exporter's lifetime, used by the sampler
         * worker once per sample under podres_lock (a replacement worker may overlap an abandoned one);
         * under lock: why the last List failed ("" when it succeeded), for /health. */
        pthread_mutex_t podres_lock;
        struct podres_client *podres;
        char *podres_socket;
        char podres_problem[256];
};

struct worker_arg {
        struct exporter *e;
        unsigned gen;
        int stuck_gpu; /* under e->lock: set when abandoned on a call about that GPU, else -1 */
};

/* Returns the current CLOCK_MONOTONIC time. Never fails. */
static inline struct timespec now_mono(void) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return t;
}

/* ---- lifecycle.c ---- */

/* Returns e with one more reference. Never fails. */
struct exporter *exporter_ref(struct exporter *e);

/* Drops a reference; the last one frees everything. Returns NULL. Never fails. */
struct exporter *exporter_unref(struct exporter *e);

/* Waits ms or until stop. Caller holds e->lock. Returns true when stopping, false when ms passed. Never fails. */
bool exporter_wait_locked(struct exporter *e, unsigned ms);

/* Composes the page from its parts, compresses it once, and swaps it in. Returns nothing; when
 * compression fails the page is served uncompressed (gz NULL). */
void exporter_publish(struct exporter *e);

/* ---- sampler.c ---- */

/* Notes that worker w is about to make call on gpu (-1: system). Returns false when w was abandoned. */
bool exp_call_begin(struct worker_arg *w, enum exp_call call, int gpu);

/* Notes that the call returned rc (counting errors other than "not supported"). Returns false when w
 * was abandoned meanwhile: the caller must leave without another NVML call. */
bool exp_call_end(struct worker_arg *w, enum exp_call call, int rc);

/* One NVML call, noted for the watchdog; the enclosing function returns -ECANCELED when the worker
 * was abandoned. */
#define NVCALL(w, callid, gpu, rcvar, expr)                                                                            \
        do {                                                                                                           \
                if (!exp_call_begin((w), (callid), (gpu))) return -ECANCELED;                                          \
                (rcvar) = (expr);                                                                                      \
                if (!exp_call_end((w), (callid), (rcvar))) return -ECANCELED;                                          \
        } while (0)

/* How long one List call may take: half the interval, within [100 ms, 2 s], so that a kubelet that
 * hangs delays a sample by at most that and never stops the page. */
static inline unsigned podres_timeout_ms(unsigned interval_ms) {
        unsigned t = interval_ms / 2;
        return t < 100 ? 100 : t > 2000 ? 2000 : t;
}

/* Starts a sampler worker of the current generation. Caller holds e->lock. Returns 0, or -errno from
 * pthread_create (then no worker runs: e->worker_running is false). */
int exporter_start_worker_locked(struct exporter *e);

/* ---- gpm.c ---- */

/*
 * Reads GPU g's profiling counters (dev: its handle) into g: with GPM where the GPU supports it (the
 * rates between this sample and the one before, per GPU instance on a GPU in MIG mode), the PCIe ones
 * otherwise from nvmlDeviceGetPcieThroughput. Call after g's GPU instances are known. Returns 0 (a
 * counter NVML does not give is left out), or -ECANCELED when the worker was abandoned.
 */
int exp_gpm_sample(struct worker_arg *w, struct nvml_lib *lib, struct exp_gpu *g, nvmlDevice_t dev);

/* Frees the GPM sample buffers of every GPU (with nvmlGpmSampleFree when lib is not NULL: only while no
 * thread is inside NVML and before nvmlShutdown) and the state. Returns nothing; never fails. */
void exp_gpm_release(struct exporter *e, struct nvml_lib *lib);
