/* diagnosis.h: the one diagnosis loop of a long-running gpunode: a bounded `gpunode check --output json`
 * child, its report parsed once and handed to every sink. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "engine/check.h"

/* How one run went (gpunode_exporter_check_runs_total's result label, in this order). */
enum diagnosis_result {
        DIAGNOSIS_OK,      /* it finished and its report was valid */
        DIAGNOSIS_TIMEOUT, /* it ran past the timeout and was killed */
        DIAGNOSIS_FAILED,  /* it could not start, or exited with a usage or internal error, or by a signal */
        DIAGNOSIS_INVALID, /* its output was not a gpunode.report/v1 document, or too large */
        DIAGNOSIS_BUSY,    /* not started: an earlier, killed child has not been reaped yet */
        DIAGNOSIS_N_RESULTS,
};

/* One run, as every sink gets it. */
struct diagnosis_round {
        enum diagnosis_result result;
        double duration_seconds;
        const char *error; /* when not OK: why, one sentence */
        /* When OK: the report, parsed once (doc by jansson, report by src/output/report_read.c), and its
         * text as the child wrote it. Valid during the callback only. */
        const json_t *doc;
        const struct report *report;
        const char *json;
        size_t json_len;
};

/* A consumer of the diagnosis: metrics, conditions and Events, the status page, /report. */
struct diagnosis_sink {
        /* Called in the diagnosis thread after each run (not after a run cut short by the stop). */
        void (*on_round)(void *userdata, const struct diagnosis_round *round);
        void *userdata;
};

#define DIAGNOSIS_MAX_SINKS 4

/* What the child is given; NULL or 0: the option is left out (the child's default). */
struct diagnosis_options {
        const char *self;         /* this program, e.g. child_self_path() */
        const char *root;         /* --root (default /) */
        const char *nvml_library; /* --nvml-library */
        const char *kmsg;         /* --kmsg: a saved kernel log instead of /dev/kmsg */
        const char *kubeconfig;   /* --kubeconfig */
        const char *node;         /* --node */
        unsigned api_timeout_ms;  /* --timeout */
        const char *dcgm_url, *node_exporter_url, *operator_namespace;
        unsigned expect_gpus; /* --expect-gpus (0: left out) */
        unsigned interval_ms; /* between runs (> 0) */
        unsigned timeout_ms;  /* a run taking longer is killed (0: 60 s) */
        struct diagnosis_sink sinks[DIAGNOSIS_MAX_SINKS];
        unsigned n_sinks;
};

struct diagnosis;

/* Starts the loop's thread: a run at once, then every interval. Returns 0 and *ret, or -errno when the
 * thread cannot start. */
int diagnosis_start(const struct diagnosis_options *o, struct diagnosis **ret);

/* Asks for a run now (an Xid, a GPU's health changed), at most one a second; from any thread,
 * async-signal-safe. Returns nothing. */
void diagnosis_trigger(struct diagnosis *d);

/* Stops the loop, killing a running child, and frees d. Returns NULL. */
struct diagnosis *diagnosis_stop(struct diagnosis *d);
