/* daemon.c: one daemon under the long-running commands: which sources and sinks are on, started and
 * stopped in one order. */
#include "daemon/daemon.h"
#include "basic/util.h"
#include "daemon/supervisor.h"

struct daemon {
        struct daemon_options o;
        struct daemon_route routes[DAEMON_MAX_ROUTES];
        unsigned n_routes;
        struct xid_subscriber subs[XID_WATCH_MAX_SUBSCRIBERS];
        unsigned n_subs;
        struct diagnosis_sink sinks[DIAGNOSIS_MAX_SINKS];
        unsigned n_sinks;
        struct xid_watch *xid;
        struct diagnosis *diagnosis; /* set once started; read by daemon_diagnose_now from any thread */
        struct daemon_http *http;
        struct supervisor *supervisor;
};

struct daemon *daemon_new(void) {
        return xcalloc(1, sizeof(struct daemon));
}

int daemon_add_route(struct daemon *d, const struct daemon_route *route) {
        if (d->n_routes >= DAEMON_MAX_ROUTES) return -E2BIG;
        d->routes[d->n_routes++] = *route;
        return 0;
}

int daemon_add_xid_subscriber(struct daemon *d, const struct xid_subscriber *s) {
        if (d->n_subs >= XID_WATCH_MAX_SUBSCRIBERS - 2) return -E2BIG; /* room for the trigger and a late one */
        d->subs[d->n_subs++] = *s;
        return 0;
}

int daemon_add_sink(struct daemon *d, const struct diagnosis_sink *sink) {
        if (d->n_sinks >= DIAGNOSIS_MAX_SINKS) return -E2BIG;
        d->sinks[d->n_sinks++] = *sink;
        return 0;
}

/* The Xid watch's subscriber that starts a diagnosis. Returns nothing. */
static void xid_diagnose(void *userdata, const struct xid_event *ev) {
        struct daemon *d = userdata;
        if (ev->gpu_instance_id != XID_NO_INSTANCE)
                fprintf(stderr, "gpunode %s: Xid %llu on GPU %u (MIG GPU instance %u): diagnosing now\n", d->o.who,
                        ev->xid, ev->index, ev->gpu_instance_id);
        else
                fprintf(stderr, "gpunode %s: Xid %llu on GPU %u: diagnosing now\n", d->o.who, ev->xid, ev->index);
        daemon_diagnose_now(d);
}

/* Returns the words that say a failure r of a start was the thread's (pthread_create's EAGAIN: RLIMIT_NPROC,
 * threads-max), "" for any other. */
static const char *thread_words(int r) {
        return r == -EAGAIN ? " (cannot start a thread)" : "";
}

int daemon_start(struct daemon *d, const struct daemon_options *o, char **ret_error) {
        d->o = *o;
        d->o.loop.who = o->who;
        int r;
        if (o->xid_events) {
                if (o->xid_diagnoses && o->diagnose)
                        d->subs[d->n_subs++] = (struct xid_subscriber){ .on_xid = xid_diagnose, .userdata = d };
                r = xid_watch_start(o->nvml_library, d->subs, d->n_subs, &d->xid);
                if (r < 0) return errorf(ret_error, r, "cannot start the Xid watch: %s", strerror(-r));
        }
        if (o->diagnose) {
                struct diagnosis_options dopt = o->diagnosis;
                memcpy(dopt.sinks, d->sinks, sizeof d->sinks);
                dopt.n_sinks = d->n_sinks;
                struct diagnosis *diag = NULL;
                r = diagnosis_start(&dopt, &diag);
                if (r < 0)
                        return errorf(ret_error, r, "cannot start the diagnosis loop%s: %s", thread_words(r),
                                      strerror(-r));
                __atomic_store_n(&d->diagnosis, diag, __ATOMIC_RELEASE);
        }
        if (o->listen_addr) {
                r = daemon_http_start(o->listen_addr, d->routes, d->n_routes, &d->http);
                if (r == -EAGAIN) /* binding a TCP socket never says EAGAIN: the server's thread could not start */
                        return errorf(ret_error, r, "cannot start the HTTP server for %s%s: %s", o->listen_addr,
                                      thread_words(r), strerror(-r));
                if (r < 0)
                        return errorf(ret_error, r, "cannot listen on %s: %s", o->listen_addr,
                                      r == -EINVAL ? "not HOST:PORT, [V6]:PORT or :PORT" : strerror(-r));
        }
        if (o->supervise_argv) {
                const char *name = o->supervise_argv[1] ? o->supervise_argv[1] : o->supervise_argv[0];
                r = supervisor_start(o->who, name, o->self, o->supervise_argv, &d->supervisor);
                if (r < 0)
                        return errorf(ret_error, r, "cannot start the %s supervisor%s: %s", name, thread_words(r),
                                      strerror(-r));
        }
        return 0;
}

struct xid_watch *daemon_xid_watch(struct daemon *d) {
        return d->xid;
}

void daemon_diagnose_now(struct daemon *d) {
        struct diagnosis *diag = d ? __atomic_load_n(&d->diagnosis, __ATOMIC_ACQUIRE) : NULL;
        if (diag) diagnosis_trigger(diag);
}

int daemon_run(struct daemon *d, const sigset_t *sigs) {
        return daemon_main_loop(sigs, &d->o.loop);
}

struct daemon *daemon_free(struct daemon *d) {
        if (!d) return NULL;
        daemon_http_stop(d->http);
        struct diagnosis *diag = __atomic_exchange_n(&d->diagnosis, NULL, __ATOMIC_ACQ_REL);
        diagnosis_stop(diag);
        xid_watch_stop(d->xid);
        supervisor_stop(d->supervisor);
        free(d);
        return NULL;
}
