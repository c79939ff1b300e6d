/* status_page.h: the agent's status page (/): the latest report rendered as HTML. */
#pragma once

/* Renders the status page of node from report_json (a gpunode.report/v1 text; NULL before the first
 * diagnosis). Returns the malloc'd HTML (aborts on OOM; never fails otherwise). */
char *status_page_html(const char *report_json, const char *node);
