/* lifecycle.c: the exporter object: start, the stuck-sampler watchdog, health, stop; its references and the published
 * page. */
#include "exporter/exporter_internal.h"

#include "kube/podresources.h"

/* Returns e with one more reference. */
struct exporter *exporter_ref(struct exporter *e) {
        __atomic_add_fetch(&e->refs, 1, __ATOMIC_RELAXED);
        return e;
}

/* Drops a reference; the last one frees everything. Returns NULL. */
struct exporter *exporter_unref(struct exporter *e) {
        if (__atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL) > 0) return NULL;
        exp_gpm_release(e, NULL);
        nvml_lib_unref(e->lib);
        exp_page_unref(e->page);
        free(e->gpu_text);
        free(e->check_text);
        free(e->check_series);
        free(e->root);
        free(e->nvml_library);
        free(e->hostname);
        free(e->hostname_label);
        podres_client_free(e->podres);
        free(e->podres_socket);
        pthread_mutex_destroy(&e->podres_lock);
        pthread_mutex_destroy(&e->lock);
        pthread_mutex_destroy(&e->publish_lock);
        pthread_mutex_destroy(&e->page_lock);
        pthread_cond_destroy(&e->cond);
        free(e);
        return NULL;
}

/* Waits ms or until stop. Caller holds e->lock. Returns true when stopping. */
bool exporter_wait_locked(struct exporter *e, unsigned ms) {
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
void exporter_publish(struct exporter *e) {
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

/* Returns the latest page with a reference (never NULL); never fails, never calls NVML. */
struct exp_page *exporter_page(struct exporter *e) {
        pthread_mutex_lock(&e->page_lock);
        struct exp_page *p = exp_page_ref(e->page);
        pthread_mutex_unlock(&e->page_lock);
        return p;
}

/* Abandons a worker whose NVML call ran past the sample timeout and starts a replacement (at most
 * MAX_STUCK abandoned at once). Returns nothing; when the replacement cannot start, the page goes stale. */
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
                exporter_start_worker_locked(e);
        }
        pthread_mutex_unlock(&e->lock);
}

bool exporter_tried_nvml(struct exporter *e) {
        struct exp_page *p = exporter_page(e);
        bool tried = p->have_sample || p->nvml_up;
        exp_page_unref(p);
        return tried;
}

/* Starts the sampler worker. Returns 0 and *ret, or -errno when it cannot start. */
int exporter_start(const struct exp_options *o, struct exporter **ret) {
        struct exporter *e = xcalloc(1, sizeof *e);
        e->refs = 1;
        e->o = *o;
        e->root = xstrdup(o->root ? o->root : "/");
        e->nvml_library = o->nvml_library ? xstrdup(o->nvml_library) : NULL;
        e->hostname = o->hostname ? xstrdup(o->hostname) : NULL;
        e->hostname_label = xstrdup(o->hostname_label ? o->hostname_label : "Hostname");
        e->check_status.last = EXP_CHECK_NONE;
        e->o.root = e->root;
        e->o.nvml_library = e->nvml_library;
        e->o.hostname = e->hostname;
        e->o.hostname_label = e->hostname_label;
        e->podres_socket = o->podres_socket ? xstrdup(o->podres_socket) : NULL;
        e->o.podres_socket = e->podres_socket;
        pthread_mutex_init(&e->podres_lock, NULL);
        if (o->kubernetes) {
                /* no I/O here: the first sample connects (and says so on /health when it cannot) */
                e->podres = podres_client_new(e->podres_socket, podres_timeout_ms(o->interval_ms));
                e->stats.pod_attribution = true;
        }
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
        exporter_publish(e); /* an empty page until the first sample */

        pthread_mutex_lock(&e->lock);
        int r = exporter_start_worker_locked(e);
        pthread_mutex_unlock(&e->lock);
        if (r < 0) {
                exporter_unref(e);
                return r;
        }
        *ret = e;
        return 0;
}

/* Fills reason with "ok" or why the exporter is unhealthy, then why pod attribution fails, if it does.
 * Returns true when healthy (attribution aside); never fails. */
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
                                 e->have_sample ? "last complete sample" : "no complete sample since the start", age,
                                 stale_after);
                if (e->in_call && n > 0 && (size_t)n < reason_size) {
                        double d = exp_seconds_between(&e->call_since, &now);
                        if (e->call_gpu >= 0)
                                snprintf(reason + n, reason_size - (size_t)n,
                                         "; %s on GPU %d has not returned for %.1f s", exp_call_name(e->call),
                                         e->call_gpu, d);
                        else
                                snprintf(reason + n, reason_size - (size_t)n, "; %s has not returned for %.1f s",
                                         exp_call_name(e->call), d);
                }
                size_t l = strlen(reason);
                if (e->stats.stuck_workers > 0 && l + 40 < reason_size)
                        snprintf(reason + l, reason_size - l, "; %u sampler thread(s) stuck in NVML",
                                 e->stats.stuck_workers);
        }
        if (ok && !e->nvml_up) {
                ok = false;
                snprintf(reason, reason_size, "NVML failing: %s", e->nvml_problem);
        }
        if (ok) snprintf(reason, reason_size, "ok");
        /* Attribution is not health: a failing List is said, the status stays NVML's. */
        size_t l = strlen(reason);
        if (e->o.kubernetes && e->podres_problem[0] && l + 32 < reason_size)
                snprintf(reason + l, reason_size - l, "; pod attribution failing: %s", e->podres_problem);
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

/* Stops every thread, waiting a bounded time for each, and drops the owner's reference. Returns NULL. */
struct exporter *exporter_stop(struct exporter *e) {
        if (!e) return NULL;
        pthread_mutex_lock(&e->lock);
        e->stop = true;
        pthread_cond_broadcast(&e->cond);
        bool worker = e->worker_running;
        pthread_t wt = e->worker;
        e->worker_running = false;
        pthread_mutex_unlock(&e->lock);
        bool clean = true;
        if (worker) clean &= join_bounded(wt, 3000);
        pthread_mutex_lock(&e->lock);
        bool shutdown = clean && e->nvml_initialized && e->stats.stuck_workers == 0;
        struct nvml_lib *lib = e->lib;
        pthread_mutex_unlock(&e->lock);
        /* With a thread still inside NVML, leave the library initialised and mapped: the process is ending. */
        if (shutdown) {
                exp_gpm_release(e, lib);
                lib->nvmlShutdown();
        }
        exporter_unref(e);
        return NULL;
}
