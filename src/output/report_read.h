/* report_read.h: the one reader of gpunode.report/v1, back into the engine's struct report. */
#pragma once

#include <jansson.h>

#include "engine/check.h"

#define REPORT_READ_MAX_CHECKS       4096  /* checks of one report, more is refused */
#define REPORT_READ_MAX_EVIDENCE     1000  /* evidence lines kept per check, the rest counted (n_evidence_more) */
#define REPORT_READ_MAX_GPUS         1024  /* GPUs of one report, more is refused */
#define REPORT_READ_MAX_PODS         1024  /* pods holding one GPU, more is refused */
#define REPORT_READ_MAX_GPU_INDEX    65535 /* a GPU's index */
#define REPORT_READ_MAX_FINDING_GPUS 1024  /* GPUs one check is about, the rest left out */

/*
 * Reads a gpunode.report/v1 document (doc) into *ret: node, root, verdict, every check with its
 * evidence, remedy and blocked_by, the root cause (pointing into ret->findings), and the GPUs with the
 * pods holding them. Check ids and components must be 1..64 of [a-z0-9._-] (the text renderer prints
 * them as they are), layers 1..4; a GPU has an index 0..65535 and string or null names. Evidence past
 * REPORT_READ_MAX_EVIDENCE lines per check is counted in n_evidence_more, not kept; the layers and
 * statuses the document repeats are the engine's to recompute (report_layer_status).
 * Returns 0, or -EBADMSG with a malloc'd sentence in *ret_error when doc is not such a report (a
 * schema, verdict, check or GPU that does not fit, more than 4096 checks, 1024 GPUs or 1024 pods on
 * one GPU); *ret is then empty.
 */
int report_from_json(const json_t *doc, struct report *ret, char **ret_error);

/* Reads a report from its text (len bytes, the output of `gpunode check --output json`) as
 * report_from_json() does, each byte that is not valid UTF-8 read as '?' first (one bad byte quoted
 * from a file should not hide the report). Returns 0, or -EBADMSG with a malloc'd sentence in
 * *ret_error when the text is not JSON or not such a report; *ret is then empty. */
int report_from_text(const char *text, size_t len, struct report *ret, char **ret_error);

/* Frees what report_from_json() filled (not r itself) and zeroes it. Returns nothing. */
void report_read_free(struct report *r);
