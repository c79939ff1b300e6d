/* validation.h: the agent's side of `gpunode validate` (--validate-on-start): when it runs (no GPU pods, or
 * asked), the bounded child, and what its result becomes: the GPUValidationFailed condition, its Event, the
 * page section and the metrics. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/conditions.h"

#define AGENT_VALIDATION_CONDITION  "GPUValidationFailed"
#define AGENT_VALIDATION_TIMEOUT_MS (15u * 60 * 1000) /* the quick level's child: ~1 min, at most this */
#define AGENT_VALIDATION_MAX_OUTPUT ((size_t)4 << 20) /* its JSON; more is refused */

/*
 * Computes the GPUValidationFailed condition from a finished `gpunode validate --output json` child:
 * report (its parsed stdout, NULL when it wrote none or no JSON), exit_code (its exit status; -1 when it
 * did not exit: killed, timed out) and error (why it could not run or be read; NULL: none). False for the
 * verdict pass ("GPUValidationPassed") and degraded ("GPUValidationDegraded", the first warning named),
 * True for fail (reason "GPUValidation" + the CamelCase of the first failing test, message naming the GPU,
 * its UUID and the test's summary), Unknown otherwise ("GPUValidationCannotRun": no libcuda, no GPU, a
 * timeout, output that is not a gpunode.validate/v1 report; the message says which). Returns nothing.
 */
void agent_validation_condition(const json_t *report, int exit_code, const char *error, struct agent_condition *ret);

/* Renders the page's validation section (HTML, escaped) for report (a gpunode.validate/v1 object; NULL:
 * none yet, with state, the condition's words, as the line) at at (Unix seconds; 0: not run). Returns a
 * malloc'd fragment; never fails. */
char *agent_validation_section_html(const json_t *report, const struct agent_condition *state, int64_t at);

/* How the agent runs validations. */
struct agent_validation_options {
        const char *self;         /* this program */
        const char *root;         /* --root for the child */
        const char *nvml_library; /* NULL: the default */
        const char *cuda_library; /* NULL: the default */
        const char *node;
        unsigned timeout_ms; /* the child's bound; 0: AGENT_VALIDATION_TIMEOUT_MS */
        bool on_start;       /* run once the node has no GPU pods */
        /* Called from the validation thread after each result (the agent wakes its API thread). */
        void (*on_result)(void *userdata);
        void *userdata;
};

struct agent_validation;

/* Starts the validation thread (it waits: for a diagnosis saying no pod holds a GPU when o->on_start, or for
 * agent_validation_request()). Returns 0 and *ret, or -errno when the thread cannot start. */
int agent_validation_start(const struct agent_validation_options *o, struct agent_validation **ret);

/* Tells the thread how many pods hold GPUs, as the latest diagnosis says (SIZE_MAX: unknown). Returns
 * nothing. */
void agent_validation_note_gpu_pods(struct agent_validation *v, size_t gpu_pods);

/* Asks for a run now (or right after the one in progress). Returns the sequence number its result will
 * carry (agent_validation_state.seq once it is in). */
unsigned agent_validation_request(struct agent_validation *v);

/* The latest state, copied under the thread's lock. */
struct agent_validation_state {
        struct agent_condition cond; /* GPUValidationFailed as due now */
        unsigned seq;                /* results so far (0: none) */
        bool passed_once;            /* a run passed since the start */
        bool running;
        int64_t at; /* when the latest result came (Unix seconds; 0: none) */
};

/* Fills *ret with the latest state. Returns nothing. */
void agent_validation_get(struct agent_validation *v, struct agent_validation_state *ret);

/* Returns the latest result as JSON text (gpunode.validate/v1), its Prometheus rendering, or the page
 * section: malloc'd; the first two NULL before the first result. */
char *agent_validation_json(struct agent_validation *v);
char *agent_validation_metrics(struct agent_validation *v);
char *agent_validation_html(struct agent_validation *v);

/* Stops the thread (a running child is killed) and frees v. Returns NULL. */
struct agent_validation *agent_validation_stop(struct agent_validation *v);
