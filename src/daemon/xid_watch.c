/* xid_watch.c: the one NVML event set of a long-running gpunode: Xid errors fanned out to subscribers. */
#include "daemon/xid_watch.h"
#include "basic/util.h"
#include "nvml/nvml_lib.h"

#include <pthread.h>
#include <time.h>

#define EVENT_WAIT_MS 500  /* each nvmlEventSetWait: how soon a stop is seen */
#define RETRY_MS      5000 /* after a failure: the next attempt */
#define MAX_WATCHED   1024 /* GPUs registered at most */

struct watched_gpu {
        nvmlDevice_t handle;
        char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
        bool pending; /* its handle or registration failed (not NOT_SUPPORTED): tried again */
};

struct xid_watch {
        int refs; /* atomic: the owner and the thread */
        char *nvml_library;
        pthread_t thread;
        pthread_mutex_t lock; /* subscribers, stop, events */
        pthread_cond_t cond;
        bool stop;
        uint64_t events;
        unsigned reregister_ms; /* how often GPUs whose registration failed are tried again */
        struct xid_subscriber subs[XID_WATCH_MAX_SUBSCRIBERS];
        bool used[XID_WATCH_MAX_SUBSCRIBERS];
};

/* Drops a reference; the last frees w. Returns nothing. */
static void watch_unref(struct xid_watch *w) {
        if (__atomic_sub_fetch(&w->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
        pthread_mutex_destroy(&w->lock);
        pthread_cond_destroy(&w->cond);
        free(w->nvml_library);
        free(w);
}

/* Tells every subscriber that call failed. Returns nothing. */
static void report_error(struct xid_watch *w, const char *call) {
        pthread_mutex_lock(&w->lock);
        for (unsigned i = 0; i < XID_WATCH_MAX_SUBSCRIBERS; i++)
                if (w->used[i] && w->subs[i].on_nvml_error) w->subs[i].on_nvml_error(w->subs[i].userdata, call);
        pthread_mutex_unlock(&w->lock);
}

/* Hands an Xid event to every subscriber. Returns nothing. */
static void deliver(struct xid_watch *w, const struct xid_event *ev) {
        pthread_mutex_lock(&w->lock);
        w->events++;
        for (unsigned i = 0; i < XID_WATCH_MAX_SUBSCRIBERS; i++)
                if (w->used[i] && w->subs[i].on_xid) w->subs[i].on_xid(w->subs[i].userdata, ev);
        pthread_mutex_unlock(&w->lock);
}

/* Returns true when the watch is stopping. */
static bool stopping(struct xid_watch *w) {
        pthread_mutex_lock(&w->lock);
        bool s = w->stop;
        pthread_mutex_unlock(&w->lock);
        return s;
}

/* Waits ms or until stop. Returns true when stopping. */
static bool nap(struct xid_watch *w, unsigned ms) {
        struct timespec t = timespec_after_ms(CLOCK_MONOTONIC, ms);
        pthread_mutex_lock(&w->lock);
        while (!w->stop)
                if (pthread_cond_timedwait(&w->cond, &w->lock, &t) == ETIMEDOUT) break;
        bool s = w->stop;
        pthread_mutex_unlock(&w->lock);
        return s;
}

/* Registers GPU index i (g) on set for Xid critical errors: its handle, UUID and registration.
 * Returns true when it is registered; false with g->pending set when it is to be tried again (a
 * failure other than NOT_SUPPORTED, reported to the subscribers the first time when report). */
static bool register_gpu(struct xid_watch *w, struct nvml_lib *lib, nvmlEventSet_t set, unsigned i,
                         struct watched_gpu *g, bool report) {
        g->pending = false;
        g->handle = NULL;
        g->uuid[0] = 0;
        nvmlReturn_t r = lib->nvmlDeviceGetHandleByIndex(i, &g->handle);
        if (r != NVML_SUCCESS) {
                g->handle = NULL;
                g->pending = r != NVML_ERROR_NOT_SUPPORTED;
                return false;
        }
        if (lib->nvmlDeviceGetUUID(g->handle, g->uuid, sizeof g->uuid) != NVML_SUCCESS) g->uuid[0] = 0;
        r = lib->nvmlDeviceRegisterEvents(g->handle, nvmlEventTypeXidCriticalError, set);
        if (r == NVML_SUCCESS) return true;
        if (r != NVML_ERROR_NOT_SUPPORTED) {
                g->pending = true;
                if (report) report_error(w, "nvmlDeviceRegisterEvents");
        }
        g->handle = NULL; /* no events come from it: none is matched to it */
        return false;
}

/*
 * One session: nvmlInit, an event set registered on every GPU, events waited for until a call fails
 * or the watch stops. gpus has room for MAX_WATCHED. Returns true when it ended because of a stop,
 * false after a failure (reported to the subscribers).
 */
static bool watch_session(struct xid_watch *w, struct nvml_lib *lib, struct watched_gpu *gpus) {
        if (!lib->nvmlEventSetCreate || !lib->nvmlDeviceRegisterEvents || !lib->nvmlEventSetWait) return false;
        nvmlReturn_t rc = lib->nvmlInit();
        if (rc != NVML_SUCCESS) {
                if (rc != NVML_ERROR_NOT_SUPPORTED) report_error(w, "nvmlInit");
                return false;
        }
        bool stopped = false;
        nvmlEventSet_t set = NULL;
        unsigned count = 0;
        rc = lib->nvmlDeviceGetCount(&count);
        if (rc != NVML_SUCCESS) {
                if (rc != NVML_ERROR_NOT_SUPPORTED) report_error(w, "nvmlDeviceGetCount");
                goto done;
        }
        if (count > MAX_WATCHED) count = MAX_WATCHED;
        rc = lib->nvmlEventSetCreate(&set);
        if (rc != NVML_SUCCESS) {
                set = NULL;
                if (rc != NVML_ERROR_NOT_SUPPORTED) report_error(w, "nvmlEventSetCreate");
                goto done;
        }
        bool any_pending = false;
        for (unsigned i = 0; i < count; i++) {
                gpus[i] = (struct watched_gpu){ 0 };
                register_gpu(w, lib, set, i, &gpus[i], true);
                any_pending |= gpus[i].pending;
        }
        uint64_t retry_at = monotonic_ms() + w->reregister_ms;
        for (;;) {
                if (any_pending && monotonic_ms() >= retry_at) {
                        /* A GPU lost (or resetting) when the set was made: tried again, every reregister_ms. */
                        any_pending = false;
                        for (unsigned i = 0; i < count; i++) {
                                if (!gpus[i].pending) continue;
                                if (register_gpu(w, lib, set, i, &gpus[i], false))
                                        fprintf_escaped(stderr,
                                                        "gpunode: Xid watch: GPU %u (%s) answers again: its Xid "
                                                        "events are watched from now on\n",
                                                        i, *gpus[i].uuid ? gpus[i].uuid : "no UUID");
                                any_pending |= gpus[i].pending;
                        }
                        retry_at = monotonic_ms() + w->reregister_ms;
                }
                nvmlEventData_t d;
                memset(&d, 0, sizeof d);
                rc = lib->nvmlEventSetWait(set, &d, EVENT_WAIT_MS);
                if (rc == NVML_SUCCESS && (d.eventType & nvmlEventTypeXidCriticalError))
                        for (unsigned i = 0; i < count; i++)
                                if (gpus[i].handle && gpus[i].handle == d.device)
                                        deliver(w, &(struct xid_event){ .index = i,
                                                                        .uuid = gpus[i].uuid,
                                                                        .xid = (unsigned long long)d.eventData,
                                                                        .gpu_instance_id = d.gpuInstanceId,
                                                                        .compute_instance_id = d.computeInstanceId });
                if (stopping(w)) {
                        stopped = true;
                        break;
                }
                if (rc != NVML_SUCCESS && rc != NVML_ERROR_TIMEOUT) {
                        if (rc != NVML_ERROR_NOT_SUPPORTED) report_error(w, "nvmlEventSetWait");
                        break;
                }
        }
done:
        if (set && lib->nvmlEventSetFree) lib->nvmlEventSetFree(set);
        lib->nvmlShutdown();
        return stopped;
}

/* The watch's thread: sessions until the stop, the library loaded on first success. Returns NULL. */
static void *watch_main(void *arg) {
        struct xid_watch *w = arg;
        struct watched_gpu *gpus = xcalloc(MAX_WATCHED, sizeof *gpus);
        struct nvml_lib *lib = NULL;
        while (!stopping(w)) {
                if (!lib) {
                        char *error = NULL;
                        if (nvml_lib_open(w->nvml_library, &lib, &error) < 0) lib = NULL;
                        free(error); /* the sampler and the diagnosis say why NVML cannot load */
                }
                if (lib && watch_session(w, lib, gpus)) break;
                if (nap(w, RETRY_MS)) break;
        }
        nvml_lib_unref(lib);
        free(gpus);
        watch_unref(w);
        return NULL;
}

int xid_watch_start(const char *nvml_library, const struct xid_subscriber *subs, size_t n, struct xid_watch **ret) {
        return xid_watch_start_retrying(nvml_library, subs, n, XID_WATCH_REREGISTER_MS, ret);
}

int xid_watch_start_retrying(const char *nvml_library, const struct xid_subscriber *subs, size_t n,
                             unsigned reregister_ms, struct xid_watch **ret) {
        if (n > XID_WATCH_MAX_SUBSCRIBERS) return -E2BIG;
        struct xid_watch *w = xcalloc(1, sizeof *w);
        w->reregister_ms = reregister_ms ? reregister_ms : XID_WATCH_REREGISTER_MS;
        for (size_t i = 0; i < n; i++) {
                w->subs[i] = subs[i];
                w->used[i] = true;
        }
        w->refs = 2;
        w->nvml_library = nvml_library ? xstrdup(nvml_library) : NULL;
        pthread_mutex_init(&w->lock, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&w->cond, &ca);
        pthread_condattr_destroy(&ca);
        int r = pthread_create(&w->thread, NULL, watch_main, w);
        if (r != 0) {
                w->refs = 1;
                watch_unref(w);
                return -r;
        }
        *ret = w;
        return 0;
}

int xid_watch_subscribe(struct xid_watch *w, const struct xid_subscriber *s) {
        pthread_mutex_lock(&w->lock);
        int id = -ENOSPC;
        for (unsigned i = 0; i < XID_WATCH_MAX_SUBSCRIBERS && id < 0; i++)
                if (!w->used[i]) {
                        w->subs[i] = *s;
                        w->used[i] = true;
                        id = (int)i;
                }
        pthread_mutex_unlock(&w->lock);
        return id;
}

void xid_watch_unsubscribe(struct xid_watch *w, int id) {
        if (id < 0 || id >= XID_WATCH_MAX_SUBSCRIBERS) return;
        pthread_mutex_lock(&w->lock);
        w->used[id] = false;
        pthread_mutex_unlock(&w->lock);
}

uint64_t xid_watch_events(struct xid_watch *w) {
        pthread_mutex_lock(&w->lock);
        uint64_t n = w->events;
        pthread_mutex_unlock(&w->lock);
        return n;
}

struct xid_watch *xid_watch_stop(struct xid_watch *w) {
        if (!w) return NULL;
        pthread_mutex_lock(&w->lock);
        w->stop = true;
        for (unsigned i = 0; i < XID_WATCH_MAX_SUBSCRIBERS; i++) w->used[i] = false;
        pthread_cond_broadcast(&w->cond);
        pthread_mutex_unlock(&w->lock);
        struct timespec d = timespec_after_ms(CLOCK_REALTIME, 3000);
        if (pthread_timedjoin_np(w->thread, NULL, &d) != 0) pthread_detach(w->thread);
        watch_unref(w);
        return NULL;
}
