/* agent.h: `gpunode agent`'s sink of the daemon's diagnosis: node conditions, Events, the taint, /report, the page. */
#pragma once

#include <stdbool.h>

#include "basic/http_server.h"

struct agent_options {
        const char *kubeconfig;  /* NULL: in-cluster, $KUBECONFIG, ~/.kube/config */
        const char *node;        /* the node's name (resolved) */
        unsigned api_timeout_ms; /* each API request */
        unsigned heartbeat_s;
        unsigned event_hold_down_s;
        unsigned backoff_max_s; /* the API retry cap */
        bool conditions;        /* patch the Node's conditions, write Events */
        bool taint;             /* --taint */
        double taint_max_share;
        /* Asks the daemon for a diagnosis at once (a posted Event about a GPU); NULL: none. */
        void (*diagnose_now)(void *userdata);
        void *diagnose_now_userdata;
};

struct agent;

/* Starts the API thread (conditions, Events, the taint: each request a `gpunode kube-call` child).
 * Returns 0 and *ret, or -errno when it cannot start. */
int agent_start(const struct agent_options *o, struct agent **ret);

struct diagnosis_sink;
/* Fills *ret with the agent's sink of the daemon's diagnosis loop: each good report becomes the
 * conditions, Events and taint to write, /report and the status page. Returns nothing. */
void agent_diagnosis_sink(struct agent *a, struct diagnosis_sink *ret);

/* The exporter's route callback (userdata: the agent): /report (503 before the first diagnosis), /ready
 * (the readiness probe: 200 once a diagnosis finished, whatever it found, so a node whose NVML fails still
 * has a Ready agent reporting it; 503 before) and / (the status page). Returns true when it answered.
 * Never blocks. */
bool agent_http_route(void *userdata, const struct http_request *req, struct http_response *r);

/* Queues an Event about the node (Warning or Normal) from any thread, such as the device plugin's
 * GPU health changes; the API thread writes it, and a diagnosis runs at once (o->diagnose_now).
 * Returns nothing; beyond the queue's room it is dropped. */
void agent_post_event(struct agent *a, bool warning, const char *reason, const char *message);

/* Stops the threads, kills the children and frees a. Returns NULL. */
struct agent *agent_stop(struct agent *a);
