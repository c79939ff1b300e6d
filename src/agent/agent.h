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
        /* --validate-on-start: run `gpunode validate --level quick` (self, with root, nvml_library,
         * cuda_library) once no pod holds a GPU; the GPUValidationFailed condition, its Events, with --taint
         * gpunode.io/unvalidated until the first pass; GET /validate (the last JSON), /metrics/validate. */
        bool validate_on_start;
        /* --allow-remote-validate: POST /validate starts a run (202 with the run's number; GET
         * /validate/status says when it is in); without it POST /validate is refused (403). */
        bool allow_remote_validate;
        const char *self, *root, *nvml_library, *cuda_library;
        unsigned validate_timeout_ms; /* 0: AGENT_VALIDATION_TIMEOUT_MS */
};

struct agent;

/* Starts the API thread (conditions, Events, the taint: each request a `gpunode kube-call` child).
 * Returns 0 and *ret, or -errno when it cannot start. */
int agent_start(const struct agent_options *o, struct agent **ret);

struct diagnosis_sink;
/* Fills *ret with the agent's sink of the daemon's diagnosis loop: each good report becomes the
 * conditions, Events and taint to write, /report and the status page. Returns nothing. */
void agent_diagnosis_sink(struct agent *a, struct diagnosis_sink *ret);

/* The exporter's route callback (userdata: the agent; registered with .post): POST /validate (403 without
 * --allow-remote-validate, else 202 {"run": N}: the run whose result will be number N), GET /validate (the
 * last gpunode.validate/v1 result, 404 with validation off, 503 before the first), /validate/status
 * ({"results", "running"}), /metrics/validate (the result's Prometheus text), /report (503 before
 * the first diagnosis), /ready (the readiness probe: 200 once a diagnosis finished, whatever it found, so a node whose
 * NVML fails still has a Ready agent reporting it; 503 before) and / (the status page). Returns true when it answered.
 * Never blocks. */
bool agent_http_route(void *userdata, const struct http_request *req, struct http_response *r);

/* Queues an Event about the node (Warning or Normal) from any thread, such as the device plugin's
 * GPU health changes; the API thread writes it, and a diagnosis runs at once (o->diagnose_now).
 * Returns nothing; beyond the queue's room it is dropped. */
void agent_post_event(struct agent *a, bool warning, const char *reason, const char *message);

/* Stops the threads, kills the children and frees a. Returns NULL. */
struct agent *agent_stop(struct agent *a);
