/* daemon_hooks.c: the exporter on the daemon: its route, its Xid subscriber and diagnosis sink, its main-loop hooks. */
#include "exporter/exporter_internal.h"
#include "daemon/daemon.h"

int exporter_join_daemon(struct exporter *e, struct daemon *d) {
        struct xid_subscriber xs;
        struct diagnosis_sink sink;
        exporter_xid_subscriber(e, &xs);
        exporter_diagnosis_sink(e, &sink);
        int r = daemon_add_route(d, &(struct daemon_route){ .handle = exporter_http_route, .userdata = e });
        if (r == 0) r = daemon_add_xid_subscriber(d, &xs);
        if (r == 0) r = daemon_add_sink(d, &sink);
        return r;
}

/* The main loop's tick: the sampler's watchdog. Returns false (never stops the loop). */
static bool watchdog_tick(void *userdata) {
        exporter_watchdog(userdata);
        return false;
}

/* Returns true once the sampler tried NVML: capabilities may go. */
static bool sampler_tried(void *userdata) {
        return exporter_tried_nvml(userdata);
}

void exporter_loop_hooks(struct exporter *e, struct daemon_loop_options *o) {
        o->tick = watchdog_tick;
        o->ready_to_drop = sampler_tried;
        o->userdata = e;
        o->drop_timeout_ms = e->o.sample_timeout_ms;
}
