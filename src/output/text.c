/* text.c: the terminal report: layers bottom-up, failures with evidence and remedy. */
#include "output/output.h"
#include "basic/rfc3339.h"

const char *text_status_color(enum check_status s) {
        switch (s) {
        case CHECK_FAIL: return TEXT_RED;
        case CHECK_WARN: return TEXT_YELLOW;
        case CHECK_PASS: return TEXT_GREEN;
        case CHECK_BLOCKED: return TEXT_YELLOW;
        case CHECK_SKIP: return TEXT_DIM;
        }
        return "";
}

const char *text_status_tag(enum check_status s) {
        switch (s) {
        case CHECK_FAIL: return "FAIL";
        case CHECK_WARN: return "WARN";
        case CHECK_PASS: return " ok ";
        case CHECK_BLOCKED: return "BLKD";
        case CHECK_SKIP: return "skip";
        }
        return "????";
}

const char *text_status_word(enum check_status s) {
        switch (s) {
        case CHECK_FAIL: return "FAILED";
        case CHECK_BLOCKED: return "BLOCKED";
        case CHECK_WARN: return "DEGRADED";
        case CHECK_PASS: return "healthy";
        case CHECK_SKIP: return "skipped";
        }
        return "?";
}

/* Prints s, a string from outside (summaries, evidence and remedies embed file contents, API
 * answers and kernel log lines; the node name may come from a snapshot's manifest), made safe for a
 * terminal by escape_terminal: an escape sequence in a hostile file shows as \x1b[..., never acts.
 * Returns nothing; errors show in ferror(out). */
static void put_clean(FILE *out, const char *s) {
        _cleanup_free_ char *clean = escape_terminal(s);
        fputs(clean, out);
}

int output_text(FILE *out, const struct report *r, const struct text_options *opts) {
        bool c = opts && opts->color;
        bool verbose = opts && opts->verbose;
#define COL(x) (c ? (x) : "")
        fprintf(out, "%sgpunode check%s: node ", COL(TEXT_BOLD), COL(TEXT_RESET));
        put_clean(out, r->node);
        fputs(" (root ", out);
        put_clean(out, r->root);
        char when[RFC3339_MAX];
        fprintf(out, ")%s%s\n", r->time > 0 ? " at " : "", r->time > 0 ? rfc3339_format(r->time, when) : "");
        for (int layer = LAYER_MIN; layer <= LAYER_MAX; layer++) {
                enum check_status ls = report_layer_status(r, layer);
                fprintf(out, "\n%sLayer %d  %s%s  %s%s%s\n", COL(TEXT_BOLD), layer, layer_name(layer), COL(TEXT_RESET),
                        COL(text_status_color(ls)), text_status_word(ls), COL(TEXT_RESET));
                bool any = false;
                for (size_t i = 0; i < r->n_findings; i++) {
                        const struct finding *f = &r->findings[i];
                        if (f->def->layer != layer) continue;
                        any = true;
                        fprintf(out, "  %s[%s]%s %-34s ", COL(text_status_color(f->status)), text_status_tag(f->status),
                                COL(TEXT_RESET), f->def->id);
                        put_clean(out, f->summary);
                        fputc('\n', out);
                        bool detail = verbose || f->status == CHECK_FAIL || f->status == CHECK_WARN;
                        if (!detail) continue;
                        for (size_t e = 0; e < f->n_evidence; e++) {
                                fprintf(out, "         %s", COL(TEXT_DIM));
                                put_clean(out, f->evidence[e]);
                                fprintf(out, "%s\n", COL(TEXT_RESET));
                        }
                        if (f->remedy) {
                                fputs("         remedy: ", out);
                                put_clean(out, f->remedy);
                                fputc('\n', out);
                        }
                }
                if (!any) fprintf(out, "  %s(no checks in this layer yet)%s\n", COL(TEXT_DIM), COL(TEXT_RESET));
        }
        const char *vc = r->verdict == VERDICT_FAILED     ? TEXT_RED
                         : r->verdict == VERDICT_DEGRADED ? TEXT_YELLOW
                                                          : TEXT_GREEN;
        fprintf(out, "\n%sVerdict: %s%s", COL(vc), verdict_name(r->verdict), COL(TEXT_RESET));
        if (r->root_cause) {
                const struct finding *f = r->root_cause;
                fprintf(out, "; root cause: layer %d %s (%s): ", f->def->layer, f->def->component, f->def->id);
                put_clean(out, f->summary);
                fputc('\n', out);
                if (f->remedy) {
                        fputs("Remedy: ", out);
                        put_clean(out, f->remedy);
                        fputc('\n', out);
                }
        } else {
                fputc('\n', out);
        }
#undef COL
        return ferror(out) ? -EIO : 0;
}
