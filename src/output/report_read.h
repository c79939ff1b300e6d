/* report_read.h: the one reader of gpunode.report/v1, back into the engine's struct report. */
#pragma once

#include <jansson.h>

#include "engine/check.h"

/*
 * Reads a gpunode.report/v1 document (doc) into *ret: node, root, verdict, every check with its
 * evidence, remedy and blocked_by, and the root cause (pointing into ret->findings). Check ids and
 * components must be 1..64 of [a-z0-9._-] (the text renderer prints them as they are), layers 1..4.
 * Returns 0, or -EBADMSG with a malloc'd sentence in *ret_error when doc is not such a report (a
 * schema, verdict or check that does not fit, more than 4096 checks); *ret is then empty.
 */
int report_from_json(const json_t *doc, struct report *ret, char **ret_error);

/* Frees what report_from_json() filled (not r itself) and zeroes it. Returns nothing. */
void report_read_free(struct report *r);
