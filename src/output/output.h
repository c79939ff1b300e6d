/* output.h: renderers of a report: text for terminals, JSON (the v1 contract), Prometheus. */
#pragma once

#include "engine/check.h"

struct text_options {
        bool color;   /* ANSI colours: only on a tty and without NO_COLOR */
        bool verbose; /* evidence for passing checks too */
};

/* ANSI styles of the terminal renderers (this one and the cluster's). */
#define TEXT_RESET  "\033[0m"
#define TEXT_RED    "\033[31m"
#define TEXT_YELLOW "\033[33m"
#define TEXT_GREEN  "\033[32m"
#define TEXT_DIM    "\033[2m"
#define TEXT_BOLD   "\033[1m"

/* Return a status's ANSI colour (red fail, yellow warn and blocked, green pass, dim skip), its four-letter tag
 * before a check ("FAIL", "WARN", " ok ", "BLKD", "skip") and its word after a layer's or a category's name
 * ("FAILED", "DEGRADED", "BLOCKED", "healthy", "skipped"); "" / "????" / "?" for a value out of the enum. */
const char *text_status_color(enum check_status s);
const char *text_status_tag(enum check_status s);
const char *text_status_word(enum check_status s);

/* Each returns 0 or -EIO when the stream failed. */
int output_text(FILE *out, const struct report *r, const struct text_options *opts);
int output_json(FILE *out, const struct report *r);
int output_prometheus(FILE *out, const struct report *r);

/* Returns the report as a jansson object (caller decrefs). */
struct json_t;
struct json_t *report_to_json(const struct report *r);
