/* render_text.c: the cluster as a person reads it: one line per GPU node (layers, GPUs, root cause), then the six
 * categories. */
#include "cluster/cluster.h"
#include "basic/util.h"

#include <inttypes.h>

#define C_RESET  "\033[0m"
#define C_RED    "\033[31m"
#define C_YELLOW "\033[33m"
#define C_GREEN  "\033[32m"
#define C_DIM    "\033[2m"
#define C_BOLD   "\033[1m"

/* Returns the colour of a status. */
static const char *color_of(enum check_status s) {
        switch (s) {
        case CHECK_FAIL: return C_RED;
        case CHECK_WARN:
        case CHECK_BLOCKED: return C_YELLOW;
        case CHECK_PASS: return C_GREEN;
        case CHECK_SKIP: return C_DIM;
        }
        return "";
}

/* Returns the tag of a check line. */
static const char *tag(enum check_status s) {
        switch (s) {
        case CHECK_FAIL: return "FAIL";
        case CHECK_WARN: return "WARN";
        case CHECK_PASS: return " ok ";
        case CHECK_BLOCKED: return "BLKD";
        case CHECK_SKIP: return "skip";
        }
        return "????";
}

/* Returns the word after a category's name. */
static const char *word(enum check_status s) {
        switch (s) {
        case CHECK_FAIL: return "FAILED";
        case CHECK_BLOCKED: return "BLOCKED";
        case CHECK_WARN: return "DEGRADED";
        case CHECK_PASS: return "healthy";
        case CHECK_SKIP: return "skipped";
        }
        return "?";
}

/* Returns a layer cell of the node table. */
static const char *cell(const struct cl_row *row, int l) {
        if (row->node->layers[l].status == CL_COND_ABSENT) return "?";
        switch (row->layer[l]) {
        case CHECK_FAIL: return "FAIL";
        case CHECK_WARN: return "warn";
        case CHECK_PASS: return "ok";
        case CHECK_BLOCKED: return "blkd";
        case CHECK_SKIP: return "skip";
        }
        return "?";
}

/* Prints s made safe for a terminal (API strings are the cluster's, not ours). */
static void put_clean(FILE *out, const char *s) {
        _cleanup_free_ char *clean = escape_terminal(s ? s : "");
        fputs(clean, out);
}

/* Returns the worst status of a category's findings. */
static enum check_status category_status(const struct cluster_report *r, enum cl_category c) {
        enum check_status worst = CHECK_SKIP;
        for (size_t i = 0; i < r->n_findings; i++)
                if (r->findings[i].def->category == c &&
                    check_status_rank(r->findings[i].f.status) > check_status_rank(worst))
                        worst = r->findings[i].f.status;
        return worst;
}

int cluster_render_text(FILE *out, const struct cluster_report *r, const struct cl_text_options *o) {
        bool c = o && o->color;
#define COL(x) (c ? (x) : "")
        const struct cluster_facts *f = r->facts;
        fprintf(out, "%sgpunode cluster%s: ", COL(C_BOLD), COL(C_RESET));
        put_clean(out, f->server);
        fprintf(out,
                "\n%zu nodes, %zu GPU nodes, %zu ready for GPU work; GPUs allocatable %" PRId64 " of %" PRId64 "\n",
                f->n_nodes_total, f->n_nodes, r->nodes_ready, r->gpus_allocatable, r->gpus_capacity);
        if (r->n_rows) {
                int w = 4;
                for (size_t i = 0; i < r->n_rows; i++) {
                        int len = (int)strlen(r->rows[i].node->name);
                        if (len > w) w = len > 48 ? 48 : len;
                }
                bool all = (o && o->all_nodes) || r->n_rows <= CLUSTER_TABLE_ALL;
                fprintf(out, "\n%s%-*s  READY  L1    L2    L3    L4    GPUS     ROOT CAUSE%s\n", COL(C_BOLD), w, "NODE",
                        COL(C_RESET));
                size_t hidden = 0;
                for (size_t i = 0; i < r->n_rows; i++) {
                        const struct cl_row *row = &r->rows[i];
                        if (!all && row->status == CHECK_PASS) {
                                hidden++;
                                continue;
                        }
                        _cleanup_free_ char *name = escape_terminal(row->node->name);
                        fprintf(out, "%-*s  %-5s ", w, name,
                                row->node->ready == 1   ? "yes"
                                : row->node->ready == 0 ? "no"
                                                        : "?");
                        for (int l = 0; l < CLUSTER_LAYERS; l++)
                                fprintf(out, " %s%-4s%s ",
                                        COL(row->node->layers[l].status == CL_COND_ABSENT ? C_DIM
                                                                                          : color_of(row->layer[l])),
                                        cell(row, l), COL(C_RESET));
                        _cleanup_free_ char *gpus =
                                xasprintf("%" PRId64 "/%" PRId64, row->node->gpu_allocatable, row->node->gpu_capacity);
                        fprintf(out, " %-8s %s", gpus, COL(color_of(row->status)));
                        put_clean(out, row->root_cause ? row->root_cause : "-");
                        fprintf(out, "%s\n", COL(C_RESET));
                }
                if (hidden) fprintf(out, "(%zu healthy GPU nodes not shown; --all-nodes lists them)\n", hidden);
        }
        for (int cat = 0; cat < CL_CATEGORIES; cat++) {
                enum check_status cs = category_status(r, (enum cl_category)cat);
                fprintf(out, "\n%s%s%s  %s%s%s\n", COL(C_BOLD), cl_category_name((enum cl_category)cat), COL(C_RESET),
                        COL(color_of(cs)), word(cs), COL(C_RESET));
                for (size_t i = 0; i < r->n_findings; i++) {
                        const struct cl_finding *fd = &r->findings[i];
                        if ((int)fd->def->category != cat) continue;
                        fprintf(out, "  %s[%s]%s %-32s ", COL(color_of(fd->f.status)), tag(fd->f.status), COL(C_RESET),
                                fd->def->id);
                        put_clean(out, fd->f.summary);
                        fputc('\n', out);
                        bool detail = (o && o->verbose) || fd->f.status == CHECK_FAIL || fd->f.status == CHECK_WARN ||
                                      fd->f.status == CHECK_BLOCKED;
                        if (!detail) continue;
                        for (size_t e = 0; e < fd->f.n_evidence; e++) {
                                fprintf(out, "         %s", COL(C_DIM));
                                put_clean(out, fd->f.evidence[e]);
                                fprintf(out, "%s\n", COL(C_RESET));
                        }
                        if (fd->rests_on) fprintf(out, "         rests on %s\n", fd->rests_on);
                        if (fd->f.remedy) {
                                fputs("         remedy: ", out);
                                put_clean(out, fd->f.remedy);
                                fputc('\n', out);
                        }
                }
        }
        const char *vc = r->verdict == VERDICT_FAILED ? C_RED : r->verdict == VERDICT_DEGRADED ? C_YELLOW : C_GREEN;
        fprintf(out, "\n%sVerdict: %s%s", COL(vc), verdict_name(r->verdict), COL(C_RESET));
        if (r->root_cause) {
                fprintf(out, "; root cause: %s (%s): ", r->root_cause->def->id,
                        cl_category_id(r->root_cause->def->category));
                put_clean(out, r->root_cause->f.summary);
        }
        fputc('\n', out);
#undef COL
        return ferror(out) ? -EIO : 0;
}
