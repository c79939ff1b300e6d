/* xid_events.c: the exporter's subscription to the daemon's Xid watch: the last Xid error of each GPU. */
#include "exporter/exporter_internal.h"
#include "daemon/xid_watch.h"

/* An Xid on a GPU (any of its MIG instances included): recorded for its DCGM_FI_DEV_XID_ERRORS and
 * counted. Returns nothing. */
static void on_xid(void *userdata, const struct xid_event *ev) {
        struct exporter *e = userdata;
        pthread_mutex_lock(&e->lock);
        if (ev->index < MAX_GPUS) e->xid_last[ev->index] = (int64_t)ev->xid;
        e->stats.xid_events_total++;
        pthread_mutex_unlock(&e->lock);
}

/* A failed NVML call of the watch: counted under its call label. Returns nothing. */
static void on_nvml_error(void *userdata, const char *call) {
        struct exporter *e = userdata;
        for (unsigned c = 0; c < EXP_N_CALLS; c++)
                if (streq(exp_call_name((enum exp_call)c), call)) {
                        pthread_mutex_lock(&e->lock);
                        e->stats.nvml_errors[c]++;
                        pthread_mutex_unlock(&e->lock);
                        return;
                }
}

void exporter_xid_subscriber(struct exporter *e, struct xid_subscriber *ret) {
        *ret = (struct xid_subscriber){ .on_xid = on_xid, .on_nvml_error = on_nvml_error, .userdata = e };
}
