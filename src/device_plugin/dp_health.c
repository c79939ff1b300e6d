/* dp_health.c: the health thread: lost GPUs, layer-1 faults, Xid events; every change signalled on a pipe. */
/*
 * What makes a GPU Unhealthy, and what makes it Healthy again:
 *   - NVML answers NVML_ERROR_GPU_IS_LOST for it, or its index names no GPU of its UUID any more
 *     (fallen off the bus): Healthy again once it answers with its UUID;
 *   - NVML says its row remapping failed, or that it needs a reset, a reboot or a drain (recovery
 *     action, field 230): the layer-1 checks' facts; Healthy again when NVML says so;
 *   - an Xid event that is not an application's (NVIDIA's plugin's rule): until the GPU went
 *     through a reset (seen lost and back, or NVML back after the driver was gone) or the plugin
 *     restarts (NVIDIA's plugin never clears it);
 *   - NVML or the driver gone (nvmlInit or nvmlDeviceGetCount failing): every GPU, with the error.
 * Nothing here exits the process: a broken driver is a device state, not a crash loop.
 */
#include "device_plugin/dp_health.h"
#include "basic/util.h"
#include "nvidia/gpu_recovery.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>

/* How often the slower layer-1 queries (remapped rows, recovery action) run. */
#define LAYER1_EVERY_MS 5000
#define REINIT_EVERY_MS 2000

int dp_xid_policy_parse(const char *disable, const char *enable, struct dp_xid_policy *p, char **ret_error) {
        static const unsigned app[] = DP_APPLICATION_XIDS;
        memset(p, 0, sizeof *p);
        for (size_t i = 0; i < ELEMENTSOF(app); i++) p->skip[app[i]] = true;
        const char *vars[2] = { disable, enable };
        for (int v = 0; v < 2; v++) {
                if (!vars[v] || !*vars[v]) continue;
                _cleanup_free_ char *copy = xstrdup(vars[v]);
                char *save = NULL;
                for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                        while (*t == ' ') t++;
                        strstrip_right(t);
                        if (!*t) continue;
                        if (streq(t, "all") || streq(t, "xids")) {
                                if (v == 0)
                                        p->all_disabled = true;
                                else
                                        for (size_t i = 0; i < ELEMENTSOF(app); i++) p->skip[app[i]] = false;
                                continue;
                        }
                        uint64_t x;
                        if (parse_u64(t, 10, &x) < 0 || x >= DP_MAX_XID)
                                return errorf(ret_error, -EINVAL, "%s: '%s' is not an Xid",
                                              v == 0 ? "DP_DISABLE_HEALTHCHECKS" : "DP_ENABLE_HEALTHCHECKS", t);
                        p->skip[x] = v == 0;
                        if (v == 1) p->all_disabled = false;
                }
        }
        return 0;
}

bool dp_xid_counts(const struct dp_xid_policy *p, unsigned long long x) {
        if (p->all_disabled) return false;
        return x >= DP_MAX_XID || !p->skip[x];
}

typedef nvmlReturn_t (*topo_fn)(nvmlDevice_t, nvmlDevice_t, int *);
typedef nvmlReturn_t (*p2p_fn)(nvmlDevice_t, nvmlDevice_t, int, int *);
#define P2P_CAPS_INDEX_NVLINK 2
#define P2P_STATUS_OK         0

struct gpu_state {
        struct dp_gpu gpu;
        nvmlDevice_t handle; /* thread only */
        bool lost, layer1_bad, xid_bad;
        uint64_t xid_instances; /* MIG GPU instances hit by an Xid */
        char lost_reason[200], layer1_reason[200], xid_reason[200], instance_reason[200];
        struct dp_gpu_health now; /* what was last published */
};

struct dp_health {
        pthread_t thread;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        int pipe[2];
        struct nvml_lib *lib;
        unsigned interval_ms;
        struct dp_xid_policy policy;
        size_t n;
        struct gpu_state *g; /* under lock: .now, the *_bad fields and reasons */
        bool driver_gone;
        char driver_reason[200];
        bool nvml_failed_once, nvml_back;
        int *links; /* n*n, -1 unknown */
        bool stop, exited;
        int refs; /* atomic: the owner and, while it runs, the thread; the last one frees */
};

/* How many monitors are not freed yet (atomic). */
static size_t live_monitors;

size_t dp_health_live(void) {
        return __atomic_load_n(&live_monitors, __ATOMIC_ACQUIRE);
}

/* Drops a reference to h; the last one closes its pipe, drops the library and frees it (a thread
 * stuck in NVML past dp_health_stop frees it when the call finally returns). Returns nothing. */
static void health_unref(struct dp_health *h) {
        if (__atomic_sub_fetch(&h->refs, 1, __ATOMIC_ACQ_REL) > 0) return;
        close(h->pipe[0]);
        close(h->pipe[1]);
        nvml_lib_unref(h->lib);
        pthread_mutex_destroy(&h->lock);
        pthread_cond_destroy(&h->cond);
        free(h->g);
        free(h->links);
        free(h);
        __atomic_sub_fetch(&live_monitors, 1, __ATOMIC_ACQ_REL);
}

/* Publishes the GPUs' health; signals the pipe when any changed. Called with the lock held. */
static void publish_locked(struct dp_health *h) {
        bool changed = false;
        for (size_t i = 0; i < h->n; i++) {
                struct gpu_state *s = &h->g[i];
                struct dp_gpu_health v = { .healthy = true };
                const char *why = h->driver_gone  ? h->driver_reason
                                  : s->lost       ? s->lost_reason
                                  : s->layer1_bad ? s->layer1_reason
                                  : s->xid_bad    ? s->xid_reason
                                                  : NULL;
                if (why) {
                        v.healthy = false;
                        snprintf(v.reason, sizeof v.reason, "%s", why);
                }
                v.unhealthy_instances = s->xid_instances;
                if (s->xid_instances) snprintf(v.instance_reason, sizeof v.instance_reason, "%s", s->instance_reason);
                if (v.healthy != s->now.healthy || strcmp(v.reason, s->now.reason) != 0 ||
                    v.unhealthy_instances != s->now.unhealthy_instances ||
                    strcmp(v.instance_reason, s->now.instance_reason) != 0) {
                        s->now = v;
                        changed = true;
                }
        }
        if (changed) {
                char one = 1;
                (void)!write(h->pipe[1], &one, 1);
        }
}

/* Waits ms on the condition (woken by stop). Returns true when stopping. */
static bool nap(struct dp_health *h, unsigned ms) {
        pthread_mutex_lock(&h->lock);
        if (!h->stop) {
                struct timespec t = timespec_after_ms(CLOCK_MONOTONIC, ms);
                pthread_cond_timedwait(&h->cond, &h->lock, &t);
        }
        bool stop = h->stop;
        pthread_mutex_unlock(&h->lock);
        return stop;
}

/* Marks every GPU down: call failed with rc, which means what says (the driver or NVML is gone). */
static void driver_down(struct dp_health *h, const char *call, nvmlReturn_t rc, const char *what) {
        pthread_mutex_lock(&h->lock);
        h->driver_gone = true;
        h->nvml_failed_once = true;
        snprintf(h->driver_reason, sizeof h->driver_reason, "NVML %s (%s: %s): %s",
                 streq(call, "nvmlInit") ? "cannot start" : "cannot count the GPUs", call, nvml_return_name(rc), what);
        publish_locked(h);
        pthread_mutex_unlock(&h->lock);
}

/* Reads the NVML topology between every pair once (NVLink P2P status, common ancestor). */
static void read_topology(struct dp_health *h) {
        topo_fn topo = (topo_fn)dlsym(h->lib->handle, "nvmlDeviceGetTopologyCommonAncestor");
        p2p_fn p2p = (p2p_fn)dlsym(h->lib->handle, "nvmlDeviceGetP2PStatus");
        for (size_t a = 0; a < h->n; a++)
                for (size_t b = 0; b < h->n; b++) {
                        int score = -1;
                        if (a == b)
                                score = 1000;
                        else if (h->g[a].handle && h->g[b].handle) {
                                int st = -1, level = -1;
                                if (p2p &&
                                    p2p(h->g[a].handle, h->g[b].handle, P2P_CAPS_INDEX_NVLINK, &st) == NVML_SUCCESS &&
                                    st == P2P_STATUS_OK)
                                        score = 100;
                                else if (topo && topo(h->g[a].handle, h->g[b].handle, &level) == NVML_SUCCESS)
                                        score = level <= 10   ? 40
                                                : level <= 20 ? 30
                                                : level <= 30 ? 20
                                                : level <= 40 ? 10
                                                              : 0;
                                if (score < 100 && score >= 0 && h->g[a].gpu.numa >= 0 &&
                                    h->g[a].gpu.numa == h->g[b].gpu.numa && score < 10)
                                        score = 10;
                        }
                        if (score < 0 && h->g[a].gpu.numa >= 0 && h->g[b].gpu.numa >= 0)
                                score = h->g[a].gpu.numa == h->g[b].gpu.numa ? 10 : 0;
                        pthread_mutex_lock(&h->lock);
                        h->links[a * h->n + b] = score;
                        pthread_mutex_unlock(&h->lock);
                }
}

/* Finds each GPU's handle and whether it answers with its UUID. Returns nothing; updates lost. */
static void poll_presence(struct dp_health *h, unsigned count) {
        for (size_t i = 0; i < h->n; i++) {
                struct gpu_state *s = &h->g[i];
                nvmlDevice_t dev = NULL;
                char uuid[96] = "";
                nvmlReturn_t rc = NVML_ERROR_NOT_FOUND;
                if (s->gpu.index < count && h->lib->nvmlDeviceGetHandleByIndex(s->gpu.index, &dev) == NVML_SUCCESS)
                        rc = h->lib->nvmlDeviceGetUUID(dev, uuid, sizeof uuid);
                if (rc == NVML_SUCCESS && !streq(uuid, s->gpu.uuid)) {
                        /* Indices moved (a GPU fell off the bus): look for it by UUID. */
                        rc = NVML_ERROR_NOT_FOUND;
                        for (unsigned k = 0; k < count; k++) {
                                nvmlDevice_t d2;
                                char u2[96];
                                if (h->lib->nvmlDeviceGetHandleByIndex(k, &d2) == NVML_SUCCESS &&
                                    h->lib->nvmlDeviceGetUUID(d2, u2, sizeof u2) == NVML_SUCCESS &&
                                    streq(u2, s->gpu.uuid)) {
                                        dev = d2;
                                        rc = NVML_SUCCESS;
                                        break;
                                }
                        }
                }
                pthread_mutex_lock(&h->lock);
                bool was_lost = s->lost;
                if (rc == NVML_SUCCESS) {
                        s->lost = false;
                        s->handle = dev;
                        if (was_lost) { /* it came back: it went through a reset */
                                s->xid_bad = false;
                                s->xid_instances = 0;
                        }
                } else if (rc == NVML_ERROR_GPU_IS_LOST || rc == NVML_ERROR_NOT_FOUND) {
                        s->lost = true;
                        s->handle = rc == NVML_ERROR_GPU_IS_LOST ? dev : NULL;
                        snprintf(s->lost_reason, sizeof s->lost_reason, "%s",
                                 rc == NVML_ERROR_GPU_IS_LOST
                                         ? "the GPU is lost (NVML_ERROR_GPU_IS_LOST): fallen off the bus or hung"
                                         : "NVML no longer lists the GPU (fallen off the bus?)");
                }
                /* other errors (a timeout, an unknown error) change nothing: not evidence either way */
                pthread_mutex_unlock(&h->lock);
        }
}

/* Reads the layer-1 facts that take a GPU out of service: row remapping failure, recovery action. */
static void poll_layer1(struct dp_health *h) {
        for (size_t i = 0; i < h->n; i++) {
                struct gpu_state *s = &h->g[i];
                if (!s->handle || s->lost) continue;
                /* The facts layer 1 judges, read live; the verdict is layer 1's (gpu_recovery_verdict). */
                struct gpu_recovery rec = { .remapped_rows_rc = -1, .retired_pending_rc = -1, .action_rc = -1 };
                unsigned corr = 0, unc = 0, pending = 0, failure = 0;
                if (h->lib->nvmlDeviceGetRemappedRows &&
                    (rec.remapped_rows_rc = h->lib->nvmlDeviceGetRemappedRows(s->handle, &corr, &unc, &pending,
                                                                              &failure)) == NVML_SUCCESS) {
                        rec.remapped_uncorrectable = unc;
                        rec.remapped_pending = pending;
                        rec.remapped_failure = failure;
                }
                nvmlEnableState_t retired = NVML_FEATURE_DISABLED;
                if (h->lib->nvmlDeviceGetRetiredPagesPendingStatus &&
                    (rec.retired_pending_rc = h->lib->nvmlDeviceGetRetiredPagesPendingStatus(s->handle, &retired)) ==
                            NVML_SUCCESS)
                        rec.retired_pending = retired == NVML_FEATURE_ENABLED;
                nvmlFieldValue_t fv;
                memset(&fv, 0, sizeof fv);
                fv.fieldId = NVML_FI_DEV_GET_GPU_RECOVERY_ACTION;
                if (h->lib->nvmlDeviceGetFieldValues &&
                    h->lib->nvmlDeviceGetFieldValues(s->handle, 1, &fv) == NVML_SUCCESS) {
                        rec.action_rc = fv.nvmlReturn;
                        rec.action = fv.valueType == NVML_VALUE_TYPE_UNSIGNED_INT ? fv.value.uiVal : fv.value.ullVal;
                }
                char why[200];
                bool bad = gpu_recovery_verdict(&rec, why, sizeof why);
                pthread_mutex_lock(&h->lock);
                s->layer1_bad = bad;
                snprintf(s->layer1_reason, sizeof s->layer1_reason, "%s", why);
                pthread_mutex_unlock(&h->lock);
        }
}

void dp_health_xid(struct dp_health *h, const char *uuid, unsigned long long xid, unsigned gpu_instance_id) {
        if (!uuid || !*uuid || !dp_xid_counts(&h->policy, xid)) return;
        pthread_mutex_lock(&h->lock);
        for (size_t i = 0; i < h->n; i++) {
                struct gpu_state *s = &h->g[i];
                if (!streq(s->gpu.uuid, uuid)) continue;
                if (gpu_instance_id <= DP_MAX_INSTANCE_ID) {
                        /* NVML names the MIG GPU instance it hit: only that instance's devices */
                        s->xid_instances |= (uint64_t)1 << gpu_instance_id;
                        snprintf(s->instance_reason, sizeof s->instance_reason,
                                 "Xid %llu on MIG GPU instance %u (a critical error that is not the application's)",
                                 xid, gpu_instance_id);
                        continue;
                }
                s->xid_bad = true;
                snprintf(s->xid_reason, sizeof s->xid_reason,
                         "Xid %llu (a critical error that is not the application's; NVIDIA's plugin marks it too)",
                         xid);
        }
        publish_locked(h);
        pthread_mutex_unlock(&h->lock);
}

bool dp_device_healthy(const struct dp_gpu_health *gh, const struct dp_device *d) {
        if (!gh->healthy) return false;
        if (!gh->unhealthy_instances) return true;
        if (d->gi >= 0 && (unsigned)d->gi <= DP_MAX_INSTANCE_ID)
                return !(gh->unhealthy_instances & ((uint64_t)1 << d->gi));
        return false; /* the whole GPU, or a MIG device of an instance NVML did not name: some of it is hit */
}

/* The thread: init, poll every interval; after any NVML failure, the same again (Xid events come from
 * the daemon's Xid watch: dp_health_xid). Returns NULL. */
static void *health_main(void *arg) {
        struct dp_health *h = arg;
        bool topology_done = false;
        for (;;) {
                pthread_mutex_lock(&h->lock);
                bool stop = h->stop;
                pthread_mutex_unlock(&h->lock);
                if (stop) break;
                nvmlReturn_t rc = h->lib->nvmlInit();
                if (rc != NVML_SUCCESS) {
                        driver_down(h, "nvmlInit", rc, "the NVIDIA driver is not loaded or broken");
                        if (nap(h, REINIT_EVERY_MS)) break;
                        continue;
                }
                uint64_t layer1_at = 0;
                for (;;) {
                        unsigned count = 0;
                        rc = h->lib->nvmlDeviceGetCount(&count);
                        if (rc != NVML_SUCCESS) {
                                driver_down(h, "nvmlDeviceGetCount", rc, "the driver is gone or broken");
                                break;
                        }
                        poll_presence(h, count);
                        uint64_t now = monotonic_ms();
                        if (now >= layer1_at) {
                                poll_layer1(h);
                                layer1_at = now + LAYER1_EVERY_MS;
                        }
                        if (!topology_done) {
                                read_topology(h);
                                topology_done = true;
                        }
                        pthread_mutex_lock(&h->lock);
                        if (h->driver_gone) {
                                /* NVML back after it failed: the driver was reloaded, its GPUs reset */
                                h->driver_gone = false;
                                for (size_t i = 0; i < h->n; i++) {
                                        h->g[i].xid_bad = false;
                                        h->g[i].xid_instances = 0;
                                }
                                if (h->nvml_failed_once && count > 0) h->nvml_back = true;
                                char one = 1;
                                if (h->nvml_back) (void)!write(h->pipe[1], &one, 1);
                        }
                        publish_locked(h);
                        stop = h->stop;
                        pthread_mutex_unlock(&h->lock);
                        if (stop) break;
                        if (nap(h, h->interval_ms)) break;
                }
                h->lib->nvmlShutdown();
                if (nap(h, h->interval_ms)) break;
        }
        pthread_mutex_lock(&h->lock);
        h->exited = true;
        pthread_cond_broadcast(&h->cond);
        pthread_mutex_unlock(&h->lock);
        health_unref(h);
        return NULL;
}

int dp_health_start(struct nvml_lib *lib, const struct dp_gpu *gpus, size_t n_gpus, unsigned interval_ms,
                    const struct dp_xid_policy *policy, bool unproven, struct dp_health **ret) {
        struct dp_health *h = xcalloc(1, sizeof *h);
        if (pipe2(h->pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
                free(h);
                return -errno;
        }
        h->refs = 1;
        __atomic_add_fetch(&live_monitors, 1, __ATOMIC_ACQ_REL);
        pthread_mutex_init(&h->lock, NULL);
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&h->cond, &ca);
        pthread_condattr_destroy(&ca);
        h->lib = nvml_lib_ref(lib);
        h->interval_ms = interval_ms ? interval_ms : 250;
        h->policy = *policy;
        h->n = n_gpus;
        h->g = xcalloc(n_gpus ? n_gpus : 1, sizeof *h->g);
        for (size_t i = 0; i < n_gpus; i++) {
                h->g[i].gpu = gpus[i];
                h->g[i].now.healthy = true;
        }
        h->links = xcalloc(n_gpus ? n_gpus * n_gpus : 1, sizeof *h->links);
        for (size_t i = 0; i < n_gpus * n_gpus; i++) h->links[i] = -1;
        if (!lib) {
                /* No NVML at all: every GPU is down, for good. */
                h->driver_gone = true;
                snprintf(h->driver_reason, sizeof h->driver_reason, "%s",
                         "NVML (libnvidia-ml.so.1) cannot be loaded: no NVIDIA driver");
                pthread_mutex_lock(&h->lock);
                publish_locked(h);
                h->exited = true;
                pthread_mutex_unlock(&h->lock);
                *ret = h;
                return 0;
        }
        if (unproven) {
                /* The devices are the kubelet's last ones, NVML did not list them: the first round NVML answers
                 * is "NVML back", so the plugin enumerates again instead of serving these for ever. */
                h->driver_gone = true;
                h->nvml_failed_once = true;
                snprintf(h->driver_reason, sizeof h->driver_reason, "%s",
                         "NVML did not list the GPUs when the plugin started");
        }
        h->refs = 2;
        int r = pthread_create(&h->thread, NULL, health_main, h);
        if (r != 0) {
                h->refs = 1;
                h->exited = true;
                dp_health_stop(h);
                return -r;
        }
        *ret = h;
        return 0;
}

void dp_health_stop(struct dp_health *h) {
        if (!h) return;
        pthread_mutex_lock(&h->lock);
        bool had_thread = !h->exited;
        h->stop = true;
        pthread_cond_broadcast(&h->cond);
        struct timespec t = timespec_after_ms(CLOCK_MONOTONIC, 2000 + h->interval_ms);
        while (!h->exited)
                if (pthread_cond_timedwait(&h->cond, &h->lock, &t) == ETIMEDOUT) break;
        bool exited = h->exited;
        pthread_mutex_unlock(&h->lock);
        if (had_thread) {
                /* Stuck inside NVML: detached, it drops its own reference (and frees h) when the call returns. */
                if (exited)
                        pthread_join(h->thread, NULL);
                else
                        pthread_detach(h->thread);
        }
        health_unref(h);
}

int dp_health_fd(const struct dp_health *h) {
        return h->pipe[0];
}

void dp_health_drain(struct dp_health *h) {
        char buf[64];
        while (read(h->pipe[0], buf, sizeof buf) > 0) {
        }
}

void dp_health_get(struct dp_health *h, struct dp_gpu_health *out) {
        pthread_mutex_lock(&h->lock);
        for (size_t i = 0; i < h->n; i++) out[i] = h->g[i].now;
        pthread_mutex_unlock(&h->lock);
}

bool dp_health_take_nvml_back(struct dp_health *h) {
        pthread_mutex_lock(&h->lock);
        bool b = h->nvml_back;
        h->nvml_back = false;
        pthread_mutex_unlock(&h->lock);
        return b;
}

int dp_health_link(struct dp_health *h, size_t a, size_t b) {
        if (a >= h->n || b >= h->n) return -1;
        pthread_mutex_lock(&h->lock);
        int v = h->links[a * h->n + b];
        pthread_mutex_unlock(&h->lock);
        return v;
}
