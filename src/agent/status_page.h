/* status_page.h: the agent's status page: a gpunode.report/v1 JSON report rendered as one HTML page. */
#pragma once

#include <stddef.h>

/* Caps that keep the page bounded whatever the report holds (a hostile or runaway report of 100k
 * evidence lines gives a page of a few MiB at most, each cut said so on the page). */
#define STATUS_PAGE_MAX_EVIDENCE 50     /* evidence lines shown per check, then "and N more" */
#define STATUS_PAGE_MAX_CHECKS 1000     /* checks listed */
#define STATUS_PAGE_MAX_GPUS 1024       /* GPUs listed */
#define STATUS_PAGE_MAX_PODS 32         /* pods listed per GPU */
#define STATUS_PAGE_MAX_COMPONENTS 64   /* components listed per layer */
#define STATUS_PAGE_MAX_LAYERS 16       /* layer sections */
#define STATUS_PAGE_MAX_STRING 2048     /* bytes of one string from the report, then an ellipsis */
#define STATUS_PAGE_BUDGET (4u << 20)   /* bytes of HTML after which evidence is no longer shown */

/* Returns the malloc'd HTML page (plain HTML and CSS, no JavaScript) showing report_json (a
 * gpunode.report/v1 document, NUL-terminated text) for node (NULL: the report's own
 * "node"): the verdict, the root cause with its evidence and remedy, each layer's status and checks,
 * the GPUs and the pods holding them, links to /metrics and /report. Every string from the report is
 * HTML-escaped. report_json NULL gives a page saying the first diagnosis has not finished; text that
 * does not parse as a JSON object, a page saying the report could not be read. Never returns NULL
 * (aborts on out-of-memory, as the allocation helpers do). */
char *status_page_html(const char *report_json, const char *node);
