/* agent.h: `gpunode agent`'s loop: periodic diagnosis in a child, node conditions, Events, the taint, labels. */
#pragma once

#include <stdbool.h>

#include "exporter/exporter.h"

struct agent_options {
        const char *self;         /* this program (the diagnosis and labels children), e.g. /proc/self/exe */
        const char *root;
        const char *nvml_library; /* NULL: libnvidia-ml.so.1 */
        const char *kubeconfig;   /* NULL: in-cluster, $KUBECONFIG, ~/.kube/config */
        const char *node;         /* the node's name (resolved) */
        const char *dcgm_url, *node_exporter_url, *operator_namespace; /* passed to the diagnosis; NULL: its defaults */
        unsigned api_timeout_ms;  /* each API request, and the diagnosis's --timeout */
        unsigned check_interval_ms;
        unsigned check_timeout_ms;
        unsigned heartbeat_s;
        unsigned event_hold_down_s;
        unsigned backoff_max_s;   /* the API retry cap */
        bool conditions;          /* patch the Node's conditions, write Events */
        bool taint;               /* --taint */
        double taint_max_share;
        bool labels;              /* supervise a `gpunode labels` child */
        const char *labels_output; /* its --output; NULL: its default */
};

struct agent;

/* Starts the diagnosis thread (and the labels supervisor). xid_fd: an eventfd that starts a diagnosis
 * at once when readable (-1: none). Returns 0 and *ret, or -errno when a thread cannot start. */
int agent_start(const struct agent_options *o, int xid_fd, struct agent **ret);

/* The exporter's route callback (userdata: the agent): /report (503 before the first diagnosis) and /
 * (the status page). Returns true when it answered. Never blocks. */
bool agent_http_route(void *userdata, const struct http_request *req, struct http_response *r);

/* Queues an Event about the node (Warning or Normal) from any thread, such as the device plugin's
 * GPU health changes; the diagnosis thread writes it (with a diagnosis at once when an xid_fd was
 * given). Returns nothing; beyond the queue's room it is dropped. */
void agent_post_event(struct agent *a, bool warning, const char *reason, const char *message);

/* Stops the threads, kills the children and frees a. Returns NULL. */
struct agent *agent_stop(struct agent *a);
