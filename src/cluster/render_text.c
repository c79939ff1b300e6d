/* render_text.c: the cluster as a person reads it: one line per GPU node (layers, GPUs, root cause), then the six
 * categories. */
#include "cluster/cluster.h"
#include "basic/util.h"
#include "output/output.h"

#include <inttypes.h>

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

/* Returns whether rows a and b are troubled the same way: the same status and root cause. */
static bool same_trouble(const struct cl_row *a, const struct cl_row *b) {
        return a->status == b->status && a->status != CHECK_PASS && a->root_cause && b->root_cause &&
               streq(a->root_cause, b->root_cause);
}

/* Prints a line per pool (the nodes' instance type, node.kubernetes.io/instance-type) when the GPU nodes
 * come in more than one: its GPU nodes, how many are ready for GPU work, its GPUs allocatable of capacity.
 * Nothing with one pool. Never fails. */
static void put_pools(FILE *out, const struct cluster_report *r) {
        const char *pools[32];
        size_t n = 0;
        bool more = false;
        for (size_t i = 0; i < r->n_rows; i++) {
                const char *t = r->rows[i].node->instance_type ? r->rows[i].node->instance_type : "(no instance type)";
                bool seen = false;
                for (size_t k = 0; k < n && !seen; k++) seen = streq(pools[k], t);
                if (seen) continue;
                if (n == ELEMENTSOF(pools)) {
                        more = true;
                        continue;
                }
                pools[n++] = t;
        }
        if (n < 2) return;
        for (size_t k = 0; k < n; k++) {
                size_t nodes = 0, ready = 0;
                int64_t alloc = 0, cap = 0;
                for (size_t i = 0; i < r->n_rows; i++) {
                        const struct cl_row *row = &r->rows[i];
                        const char *t = row->node->instance_type ? row->node->instance_type : "(no instance type)";
                        if (!streq(t, pools[k])) continue;
                        nodes++;
                        ready += row->ready_for_work;
                        alloc += row->node->gpu_allocatable;
                        cap += row->node->gpu_capacity;
                }
                fputs("  pool ", out);
                put_clean(out, pools[k]);
                fprintf(out, ": %zu GPU nodes, %zu ready; GPUs allocatable %" PRId64 " of %" PRId64 "\n", nodes, ready,
                        alloc, cap);
        }
        if (more) fprintf(out, "  (more pools than the %zu shown)\n", ELEMENTSOF(pools));
}

int cluster_render_text(FILE *out, const struct cluster_report *r, const struct cl_text_options *o) {
        bool c = o && o->color;
#define COL(x) (c ? (x) : "")
        const struct cluster_facts *f = r->facts;
        fprintf(out, "%sgpunode cluster%s: ", COL(TEXT_BOLD), COL(TEXT_RESET));
        put_clean(out, f->server);
        fprintf(out,
                "\n%zu nodes, %zu GPU nodes, %zu ready for GPU work; GPUs allocatable %" PRId64 " of %" PRId64 "\n",
                f->n_nodes_total, f->n_nodes, r->nodes_ready, r->gpus_allocatable, r->gpus_capacity);
        if (r->gpus_expected > r->gpus_capacity)
                fprintf(out,
                        "%s%" PRId64 " GPUs lost: the GPU nodes should have %" PRId64
                        " (GFD's nvidia.com/gpu.count), their capacity says %" PRId64 "%s\n",
                        COL(TEXT_RED), r->gpus_expected - r->gpus_capacity, r->gpus_expected, r->gpus_capacity,
                        COL(TEXT_RESET));
        put_pools(out, r);
        if (r->n_rows) {
                int w = 4;
                for (size_t i = 0; i < r->n_rows; i++) {
                        int len = (int)strlen(r->rows[i].node->name);
                        if (len > w) w = len > 48 ? 48 : len;
                }
                bool all = (o && o->all_nodes) || r->n_rows <= CLUSTER_TABLE_ALL;
                fprintf(out, "\n%s%-*s  READY  L1    L2    L3    L4    GPUS     ROOT CAUSE%s\n", COL(TEXT_BOLD), w,
                        "NODE", COL(TEXT_RESET));
                size_t hidden = 0, filtered = 0;
                enum check_status only = o ? o->only : CHECK_PASS;
                for (size_t i = 0; i < r->n_rows; i++) {
                        const struct cl_row *row = &r->rows[i];
                        if ((only == CHECK_FAIL && row->status != CHECK_FAIL) ||
                            (only == CHECK_WARN && row->status != CHECK_FAIL && row->status != CHECK_WARN)) {
                                filtered++;
                                continue;
                        }
                        if (!all && row->status == CHECK_PASS) {
                                hidden++;
                                continue;
                        }
                        /* Troubled the same way as CLUSTER_GROUP_MIN or more nodes: one line for them all, at
                         * the first (100 nodes with one cause are one line, not 100). */
                        size_t same = 0, first = i;
                        if (!(o && o->all_nodes) && row->status != CHECK_PASS)
                                for (size_t k = 0; k < r->n_rows; k++)
                                        if (same_trouble(&r->rows[k], row)) {
                                                if (!same) first = k;
                                                same++;
                                        }
                        if (same >= CLUSTER_GROUP_MIN) {
                                if (first != i) continue;
                                const struct cl_row *last = row;
                                int64_t alloc = 0, cap = 0;
                                for (size_t k = i; k < r->n_rows; k++)
                                        if (same_trouble(&r->rows[k], row)) {
                                                last = &r->rows[k];
                                                alloc += r->rows[k].node->gpu_allocatable;
                                                cap += r->rows[k].node->gpu_expected;
                                        }
                                fprintf(out, "%s%zu nodes: ", COL(text_status_color(row->status)), same);
                                put_clean(out, row->root_cause);
                                fprintf(out, "%s (", COL(TEXT_RESET));
                                put_clean(out, row->node->name);
                                fputs(" ... ", out);
                                put_clean(out, last->node->name);
                                fprintf(out, "; GPUs %" PRId64 "/%" PRId64 "; --all-nodes lists them)\n", alloc, cap);
                                continue;
                        }
                        _cleanup_free_ char *name = escape_terminal(row->node->name);
                        fprintf(out, "%-*s  %-5s ", w, name,
                                row->node->ready == 1   ? "yes"
                                : row->node->ready == 0 ? "no"
                                                        : "?");
                        for (int l = 0; l < CLUSTER_LAYERS; l++)
                                fprintf(out, " %s%-4s%s ",
                                        COL(row->node->layers[l].status == CL_COND_ABSENT
                                                    ? TEXT_DIM
                                                    : text_status_color(row->layer[l])),
                                        cell(row, l), COL(TEXT_RESET));
                        _cleanup_free_ char *gpus =
                                xasprintf("%" PRId64 "/%" PRId64, row->node->gpu_allocatable, row->node->gpu_expected);
                        fprintf(out, " %-8s %s", gpus, COL(text_status_color(row->status)));
                        put_clean(out, row->root_cause ? row->root_cause : "-");
                        fprintf(out, "%s\n", COL(TEXT_RESET));
                }
                if (hidden) fprintf(out, "(%zu healthy GPU nodes not shown; --all-nodes lists them)\n", hidden);
                if (filtered) fprintf(out, "(%zu GPU nodes not shown: --only)\n", filtered);
        }
        for (int cat = 0; cat < CL_CATEGORIES; cat++) {
                enum check_status cs = category_status(r, (enum cl_category)cat);
                fprintf(out, "\n%s%s%s  %s%s%s\n", COL(TEXT_BOLD), cl_category_name((enum cl_category)cat),
                        COL(TEXT_RESET), COL(text_status_color(cs)), text_status_word(cs), COL(TEXT_RESET));
                for (size_t i = 0; i < r->n_findings; i++) {
                        const struct cl_finding *fd = &r->findings[i];
                        if ((int)fd->def->category != cat) continue;
                        fprintf(out, "  %s[%s]%s %-32s ", COL(text_status_color(fd->f.status)),
                                text_status_tag(fd->f.status), COL(TEXT_RESET), fd->def->id);
                        put_clean(out, fd->f.summary);
                        fputc('\n', out);
                        bool detail = (o && o->verbose) || fd->f.status == CHECK_FAIL || fd->f.status == CHECK_WARN ||
                                      fd->f.status == CHECK_BLOCKED;
                        if (!detail) continue;
                        for (size_t e = 0; e < fd->f.n_evidence; e++) {
                                fprintf(out, "         %s", COL(TEXT_DIM));
                                put_clean(out, fd->f.evidence[e]);
                                fprintf(out, "%s\n", COL(TEXT_RESET));
                        }
                        if (fd->rests_on) fprintf(out, "         rests on %s\n", fd->rests_on);
                        if (fd->f.remedy) {
                                fputs("         remedy: ", out);
                                put_clean(out, fd->f.remedy);
                                fputc('\n', out);
                        }
                }
        }
        const char *vc = r->verdict == VERDICT_FAILED     ? TEXT_RED
                         : r->verdict == VERDICT_DEGRADED ? TEXT_YELLOW
                                                          : TEXT_GREEN;
        fprintf(out, "\n%sVerdict: %s%s", COL(vc), verdict_name(r->verdict), COL(TEXT_RESET));
        if (r->root_cause) {
                fprintf(out, "; root cause: %s (%s): ", r->root_cause->def->id,
                        cl_category_id(r->root_cause->def->category));
                put_clean(out, r->root_cause->f.summary);
        }
        fputc('\n', out);
#undef COL
        return ferror(out) ? -EIO : 0;
}
