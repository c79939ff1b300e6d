/* exporter_internal.h: what the exporter's files share (private to src/exporter/): struct exporter, its references, the page. */
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
 * - the Xid thread holds its own nvmlInit reference and waits on an event set.
 * - the check thread runs `gpunode check --output prometheus` in a child process every check
 *   interval (one child at a time, bounded in time and output; see check_child.c).
 * The exporter is reference counted: an abandoned worker may outlive exporter_stop.
 */

#define MAX_STUCK 1
#define MAX_GPUS 1024

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

/* How long one List call may take: half the interval, within [100 ms, 2 s], so that a kubelet that
 * hangs delays a sample by at most that and never stops the page. */
static inline unsigned podres_timeout_ms(unsigned interval_ms) {
        unsigned t = interval_ms / 2;
        return t < 100 ? 100 : t > 2000 ? 2000 : t;
}

/* Starts a sampler worker of the current generation. Caller holds e->lock. Returns 0, or -errno from
 * pthread_create (then no worker runs: e->worker_running is false). */
int exporter_start_worker_locked(struct exporter *e);

/* ---- xid_events.c ---- */

/* The Xid thread's entry (arg: the exporter, with a reference the thread drops). Returns NULL; NVML
 * errors are counted and the thread starts over, it never fails. */
void *exporter_xid_main(void *arg);

/* ---- check_child.c ---- */

/* The check thread's entry (arg: the exporter, with a reference the thread drops). Returns NULL; how
 * each run went is published in its series, the thread never fails. */
void *exporter_check_main(void *arg);
