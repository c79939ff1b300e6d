/* status_page_fallback.c: a minimal status page until the full renderer (status_page.c) lands. */
#include "agent/status_page.h"

#include <jansson.h>

#include "basic/util.h"

/* Appends s to b with HTML escaping. Returns nothing. */
static void html_escape(struct buf *b, const char *s) {
        for (; s && *s; s++) {
                switch (*s) {
                case '<': buf_puts(b, "&lt;"); break;
                case '>': buf_puts(b, "&gt;"); break;
                case '&': buf_puts(b, "&amp;"); break;
                case '"': buf_puts(b, "&quot;"); break;
                default: buf_append(b, s, 1);
                }
        }
}

char *status_page_html(const char *report_json, const char *node) {
        struct buf b = { 0 };
        buf_puts(&b, "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>gpunode agent: ");
        html_escape(&b, node);
        buf_puts(&b, "</title></head><body><h1>gpunode agent: ");
        html_escape(&b, node);
        buf_puts(&b, "</h1>\n");
        json_t *r = report_json ? json_loads(report_json, 0, NULL) : NULL;
        if (!r) {
                buf_puts(&b, "<p>No diagnosis yet.</p>\n");
        } else {
                buf_puts(&b, "<p>Verdict: <b>");
                html_escape(&b, json_string_value(json_object_get(r, "verdict")));
                buf_puts(&b, "</b></p>\n");
                json_t *rc = json_object_get(r, "root_cause");
                if (json_is_object(rc)) {
                        buf_puts(&b, "<p>Root cause: ");
                        html_escape(&b, json_string_value(json_object_get(rc, "check")));
                        buf_puts(&b, ": ");
                        html_escape(&b, json_string_value(json_object_get(rc, "summary")));
                        buf_puts(&b, "</p>\n");
                }
                buf_puts(&b, "<table><tr><th>check</th><th>status</th><th>summary</th></tr>\n");
                size_t i;
                json_t *c;
                json_array_foreach(json_object_get(r, "checks"), i, c) {
                        buf_puts(&b, "<tr><td>");
                        html_escape(&b, json_string_value(json_object_get(c, "id")));
                        buf_puts(&b, "</td><td>");
                        html_escape(&b, json_string_value(json_object_get(c, "status")));
                        buf_puts(&b, "</td><td>");
                        html_escape(&b, json_string_value(json_object_get(c, "summary")));
                        buf_puts(&b, "</td></tr>\n");
                }
                buf_puts(&b, "</table>\n");
                json_decref(r);
        }
        buf_puts(&b, "<p><a href=\"/report\">/report</a> <a href=\"/metrics\">/metrics</a> "
                     "<a href=\"/health\">/health</a></p></body></html>\n");
        return b.data;
}
