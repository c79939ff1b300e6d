/* xid_watch.h: the one NVML event set of a long-running gpunode: Xid errors fanned out to subscribers. */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* nvmlEventData_t's gpuInstanceId and computeInstanceId of an event that is not MIG-specific. */
#define XID_NO_INSTANCE 0xFFFFFFFFu

/* One Xid event, as NVML's event data gives it. */
struct xid_event {
        unsigned index;               /* the GPU's (nvmlDeviceGetHandleByIndex) */
        const char *uuid;             /* the GPU's UUID; "" when NVML did not give one */
        unsigned long long xid;       /* eventData */
        unsigned gpu_instance_id;     /* the MIG GPU instance it hit; XID_NO_INSTANCE: the whole GPU */
        unsigned compute_instance_id; /* its compute instance; XID_NO_INSTANCE when not given */
};

/* Who hears of Xid events: the exporter's DCGM_FI_DEV_XID_ERRORS, the device plugin's GPU health,
 * the diagnosis trigger. Callbacks run in the watch's thread with its subscriber lock held: they must
 * be quick and must not call back into the watch. */
struct xid_subscriber {
        /* An Xid event (ev and its uuid valid during the call only). NULL: not wanted. */
        void (*on_xid)(void *userdata, const struct xid_event *ev);
        /* An NVML call of the watch failed (other than NOT_SUPPORTED and the wait's TIMEOUT): call is its
         * name, e.g. "nvmlEventSetCreate". NULL: not wanted. */
        void (*on_nvml_error)(void *userdata, const char *call);
        void *userdata;
};

#define XID_WATCH_MAX_SUBSCRIBERS 8
/* How often a GPU whose handle or event registration failed (lost, resetting) is tried again. */
#define XID_WATCH_REREGISTER_MS 30000u

struct xid_watch;

/* Starts the watch's thread with the subscribers subs[0..n) (copied; more may subscribe later, and
 * hear the events from then on): it loads nvml_library (NULL: libnvidia-ml.so.1), holds its own
 * nvmlInit, registers one event set for Xid critical errors on every GPU, waits on it, and after any
 * failure starts over 5 s later (a node whose driver comes back is watched again). A GPU whose
 * handle or registration failed (other than NOT_SUPPORTED: a GPU lost or resetting then) is tried
 * again every XID_WATCH_REREGISTER_MS, and its return logged on stderr. Returns 0 and *ret; -E2BIG
 * past XID_WATCH_MAX_SUBSCRIBERS, or -errno when the thread cannot start. */
int xid_watch_start(const char *nvml_library, const struct xid_subscriber *subs, size_t n, struct xid_watch **ret);

/* xid_watch_start with the retry of failed GPUs every reregister_ms (0: XID_WATCH_REREGISTER_MS), for
 * tests. Returns like xid_watch_start. */
int xid_watch_start_retrying(const char *nvml_library, const struct xid_subscriber *subs, size_t n,
                             unsigned reregister_ms, struct xid_watch **ret);

/* Adds a subscriber (copied). Returns its id (>= 0), or -ENOSPC past XID_WATCH_MAX_SUBSCRIBERS. */
int xid_watch_subscribe(struct xid_watch *w, const struct xid_subscriber *s);

/* Removes subscriber id; once it returns, none of its callbacks runs any more. Returns nothing. */
void xid_watch_unsubscribe(struct xid_watch *w, int id);

/* Returns the number of Xid events delivered since the start. Never fails. */
uint64_t xid_watch_events(struct xid_watch *w);

/* Stops the thread, waiting up to 3 s for an NVML call to return (one that does not is left behind,
 * holding its own reference), and drops the caller's reference. Returns NULL. */
struct xid_watch *xid_watch_stop(struct xid_watch *w);
