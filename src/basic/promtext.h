/* promtext.h: parser for the Prometheus text exposition format 0.0.4, plus a DCGM per-GPU summary. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Limits; exceeding one is an error (-E2BIG), never a truncation. */
#define PROMTEXT_MAX_LINE_LEN (64u * 1024u) /* bytes in one line, without its '\n' */
#define PROMTEXT_MAX_LABELS   128u          /* labels on one sample */

enum promtext_type {
        PROMTEXT_UNTYPED = 0,
        PROMTEXT_COUNTER,
        PROMTEXT_GAUGE,
        PROMTEXT_HISTOGRAM,
        PROMTEXT_SUMMARY,
};

struct promtext_label {
        const char *name;  /* NUL-terminated */
        const char *value; /* NUL-terminated, escapes decoded (input with NUL bytes is rejected) */
};

/* One sample line. All pointers are valid only during the callback. */
struct promtext_sample {
        const char *name;
        const struct promtext_label *labels; /* in input order */
        size_t n_labels;
        double value; /* NaN, +Inf, -Inf possible */
        bool has_timestamp;
        int64_t timestamp_ms;
        /* Type from the most recent "# TYPE" line when this sample belongs to that family (name
         * equal, or name + _bucket/_sum/_count for histograms, + _sum/_count for summaries);
         * PROMTEXT_UNTYPED otherwise. */
        enum promtext_type type;
        unsigned long line; /* 1-based */
};

/* Each callback may be NULL. Return 0 to go on, a positive value to stop parsing early (the parse
 * returns that value), or a negative errno to abort (the parse returns it). */
struct promtext_callbacks {
        int (*sample)(const struct promtext_sample *sample, void *userdata);
        /* "# HELP name text": text has \\ and \n decoded. */
        int (*help)(const char *name, const char *text, unsigned long line, void *userdata);
        /* "# TYPE name type". */
        int (*type)(const char *name, enum promtext_type type, unsigned long line, void *userdata);
};

struct promtext_error {
        unsigned long line; /* 1-based line of the error; 0 when none */
        int error;          /* the negative errno promtext_parse returned */
        char message[192];  /* "line 12: label value not quoted" */
};

/* Parses len bytes of exposition text (need not be NUL-terminated; never read past data + len),
 * calling cb for every sample, HELP and TYPE line; other comments and blank lines are skipped.
 * Accepts a last line without '\n' and a '\r' before a '\n'.
 * Returns 0 when all input was parsed; the positive value a callback returned to stop early;
 * -EBADMSG on a syntax error, -E2BIG when a line or label count exceeds the limits, or a
 * callback's negative errno. On failure ret_error (may be NULL) is filled in. Linear time. */
int promtext_parse(const char *data, size_t len, const struct promtext_callbacks *cb, void *userdata,
                   struct promtext_error *ret_error);

/* Returns the name of t as in a TYPE line ("counter"...), or NULL for an out-of-range value. */
const char *promtext_type_to_string(enum promtext_type t);

/* Per-GPU counts of DCGM_FI_* samples, keyed by their "UUID" label. */
struct promtext_gpu {
        char *uuid;
        size_t n_series;  /* DCGM_FI_* samples carrying this UUID */
        size_t n_nonzero; /* of those, samples whose value is neither 0 nor NaN */
};

struct promtext_gpu_summary {
        struct promtext_gpu *gpus; /* in order of first appearance */
        size_t n_gpus;
        char **metrics; /* distinct sample names (all, not only DCGM_FI_*), first-seen order */
        size_t n_metrics;
        size_t n_samples;      /* all samples */
        size_t n_dcgm_samples; /* samples named DCGM_FI_* */
        size_t n_dcgm_no_uuid; /* DCGM_FI_* samples without a UUID label (not in gpus) */
        void *index_;          /* private hash indexes */
};

/* Parses the exposition text and fills ret (which promtext_gpu_summary_free must release, also on
 * failure). Returns 0, or promtext_parse's negative errno with ret_error filled in. */
int promtext_gpu_summary_parse(const char *data, size_t len, struct promtext_gpu_summary *ret,
                               struct promtext_error *ret_error);

/* Returns the entry for uuid, or NULL when no DCGM_FI_* sample carried it. */
const struct promtext_gpu *promtext_gpu_summary_find(const struct promtext_gpu_summary *s, const char *uuid);

/* Returns true when some sample was named name. */
bool promtext_gpu_summary_has_metric(const struct promtext_gpu_summary *s, const char *name);

/* Frees everything s holds and zeroes it; never fails; s may be zeroed already. */
void promtext_gpu_summary_free(struct promtext_gpu_summary *s);
