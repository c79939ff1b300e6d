/* daemon.h: one daemon under the long-running commands: which sources and sinks are on, started and
 * stopped in one order. `gpunode exporter`, `agent` and `device-plugin` are configurations of it. */
#pragma once

#include <signal.h>
#include <stdbool.h>

#include "daemon/diagnosis.h"
#include "daemon/http.h"
#include "daemon/main_loop.h"
#include "daemon/xid_watch.h"

/* What the daemon runs; the capabilities (exporter, agent, device plugin) add their routes, Xid
 * subscribers and diagnosis sinks before daemon_start(). */
struct daemon_options {
        const char *who;          /* "exporter", "agent", "device-plugin": log lines */
        const char *listen_addr;  /* the HTTP server; NULL: none */
        bool xid_events;          /* run the Xid watch */
        const char *nvml_library; /* for the Xid watch; NULL: libnvidia-ml.so.1 */
        bool xid_diagnoses;       /* an Xid starts a diagnosis at once (at most one a second) */
        bool diagnose;            /* run the diagnosis loop with diagnosis (its sinks: daemon_add_sink) */
        struct diagnosis_options diagnosis;
        const char *const
                *supervise_argv; /* a child kept alive ({"gpunode", "labels", ...}: argv[1] names it); NULL: none */
        const char *self;        /* this program, for the children */
        struct daemon_loop_options loop; /* loop.who is set from who */
};

struct daemon;

/* Returns a daemon to configure; never fails. */
struct daemon *daemon_new(void);

/* Adds an HTTP route (asked in the order added), an Xid subscriber, or a diagnosis sink. Returns 0, or
 * -E2BIG past DAEMON_MAX_ROUTES, XID_WATCH_MAX_SUBSCRIBERS or DIAGNOSIS_MAX_SINKS. */
int daemon_add_route(struct daemon *d, const struct daemon_route *route);
int daemon_add_xid_subscriber(struct daemon *d, const struct xid_subscriber *s);
int daemon_add_sink(struct daemon *d, const struct diagnosis_sink *sink);

/* Starts what o turns on: the Xid watch, the diagnosis loop, the HTTP server, the supervised child.
 * Returns 0; -EINVAL for a listen address of the wrong form, or -errno, with a malloc'd sentence in
 * *ret_error naming what could not start (what started is stopped again by daemon_free). */
int daemon_start(struct daemon *d, const struct daemon_options *o, char **ret_error);

/* The Xid watch once started (NULL: none), for a capability that subscribes later (the device plugin). */
struct xid_watch *daemon_xid_watch(struct daemon *d);

/* Asks for a diagnosis now; from any thread, before the start a no-op. Returns nothing. */
void daemon_diagnose_now(struct daemon *d);

/* Runs the main loop (daemon_main_loop with o->loop) until a signal or the loop's tick says stop.
 * Returns the signal, or 0. */
int daemon_run(struct daemon *d, const sigset_t *sigs);

/* Stops what was started, in order (HTTP server, diagnosis loop, Xid watch, supervised child), and
 * frees d. The capabilities are stopped by their owner afterwards. Returns NULL. */
struct daemon *daemon_free(struct daemon *d);
