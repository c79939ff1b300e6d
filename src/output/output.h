/* output.h: renderers of a report: text for terminals, JSON (the v1 contract), Prometheus. */
#pragma once

#include "engine/check.h"

struct text_options {
        bool color;     /* ANSI colours: only on a tty and without NO_COLOR */
        bool verbose;   /* evidence for passing checks too */
};

/* Each returns 0 or -EIO when the stream failed. */
int output_text(FILE *out, const struct report *r, const struct text_options *opts);
int output_json(FILE *out, const struct report *r);
int output_prometheus(FILE *out, const struct report *r);

/* Returns the report as a jansson object (caller decrefs). */
struct json_t;
struct json_t *report_to_json(const struct report *r);
