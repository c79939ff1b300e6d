/* status_page.h: the agent's status page: a diagnosis's report rendered as one HTML page. */
#pragma once

#include <stddef.h>
#include <stdint.h>

struct report;

/* Caps that keep the page bounded whatever the report holds (a hostile or runaway report of 100k
 * evidence lines gives a page of a few MiB at most, each cut said so on the page). */
#define STATUS_PAGE_MAX_EVIDENCE   50         /* evidence lines shown per check, then "and N more" */
#define STATUS_PAGE_MAX_CHECKS     1000       /* checks listed */
#define STATUS_PAGE_MAX_GPUS       1024       /* GPUs listed */
#define STATUS_PAGE_MAX_PODS       32         /* pods listed per GPU */
#define STATUS_PAGE_MAX_COMPONENTS 64         /* components listed per layer */
#define STATUS_PAGE_MAX_STRING     2048       /* bytes of one string from the report, then an ellipsis */
#define STATUS_PAGE_BUDGET         (4u << 20) /* bytes of HTML after which evidence is no longer shown */
#define STATUS_PAGE_REFRESH_S      30         /* the report page reloads itself this often */

/* Returns the malloc'd HTML page (plain HTML and CSS, no JavaScript) showing report (a diagnosis
 * read back by report_from_json()) for node (NULL: the report's own node): the verdict, the root
 * cause with its evidence and remedy, each layer's status (the engine's: report_layer_status), its
 * components and checks, the GPUs and the pods holding them, links to /metrics and /report. Every
 * string from the report is HTML-escaped, its control characters and bytes that are not UTF-8 made
 * visible. report NULL gives a page saying the first diagnosis has not finished. Never returns NULL
 * (aborts on out-of-memory, as the allocation helpers do). */
char *status_page_html(const struct report *report, const char *node);

/* As status_page_html(), as of now (seconds since the epoch): the page says when the report's facts
 * were read and how long before now ("checked at ... (40 s ago)"), and reloads itself every
 * STATUS_PAGE_REFRESH_S seconds (a meta refresh: still no JavaScript). Never returns NULL. */
char *status_page_html_at(const struct report *report, const char *node, int64_t now);
