/* attribution.c: runs the cluster checks bottom-up, blocks those resting on a failed one, and sums up each node's row.
 */
#include "cluster/cluster.h"
#include "basic/util.h"

#include <inttypes.h>
#include <stdarg.h>

/* Returns whether a False condition's reason is the agent's "<Prefix>Healthy" (not a warning's check). */
static bool endswith_healthy(const char *reason) {
        size_t n = strlen(reason);
        return n >= 7 && streq(reason + n - 7, "Healthy");
}

const char *cl_category_id(enum cl_category c) {
        static const char *const ids[] = { "infrastructure", "gpu-health", "network",
                                           "storage",        "scheduling", "observability" };
        return c < CL_CATEGORIES ? ids[c] : "unknown";
}

const char *cl_category_name(enum cl_category c) {
        static const char *const names[] = { "Infrastructure", "GPU health", "Network",
                                             "Storage",        "Scheduling", "Observability" };
        return c < CL_CATEGORIES ? names[c] : "unknown";
}

void cl_evidence_node(struct cl_finding *f, size_t *count, const char *fmt, ...) {
        if ((*count)++ >= CLUSTER_EVIDENCE_NODES) return;
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *s = xvasprintf(fmt, ap);
        va_end(ap);
        finding_evidence(&f->f, "%s", s);
}

void cl_evidence_more(struct cl_finding *f, size_t count) {
        if (count > CLUSTER_EVIDENCE_NODES)
                finding_evidence(&f->f, "... and %zu more (--output json lists every node)",
                                 count - CLUSTER_EVIDENCE_NODES);
}

bool cl_list_unreadable(const struct cluster_facts *facts, enum cl_list l, struct cl_finding *f,
                        bool not_served_skips) {
        const struct cl_list_state *st = &facts->lists[l];
        if (st->rc == 0) return false;
        if (st->rc == -ENOENT && not_served_skips) {
                finding_skip(&f->f, "the API does not serve this resource (%s)", st->error ? st->error : "404");
                return true;
        }
        finding_warn(&f->f, "cannot tell: %s", st->error ? st->error : strerror(-st->rc));
        finding_remedy(&f->f,
                       "grant the ClusterRole gpunode-cluster-reader (deploy/clusterrole-cluster-reader.yaml) to "
                       "whoever runs `gpunode cluster`");
        return true;
}

int cl_node_failing_layer(const struct cl_node *n) {
        for (int l = 0; l < CLUSTER_LAYERS; l++)
                if (n->layers[l].status == CL_COND_TRUE) return l + 1;
        return 0;
}

int64_t cl_node_heartbeat(const struct cl_node *n) {
        int64_t h = 0;
        for (int l = 0; l < CLUSTER_LAYERS; l++)
                if (n->layers[l].heartbeat > h) h = n->layers[l].heartbeat;
        return h;
}

bool cl_node_stale(const struct cluster_facts *facts, const struct cl_node *n) {
        int64_t h = cl_node_heartbeat(n);
        bool known = false;
        for (int l = 0; l < CLUSTER_LAYERS; l++) known |= n->layers[l].status != CL_COND_ABSENT;
        if (!known) return false;
        return h == 0 || facts->now - h > facts->stale_after_s || h - facts->now > CLUSTER_CLOCK_SKEW_S;
}

/* Returns the status a condition shows as in a node's row. */
static enum check_status condition_status(const struct cl_condition *c) {
        switch (c->status) {
        case CL_COND_TRUE: return CHECK_FAIL;
        case CL_COND_FALSE: return c->reason && endswith_healthy(c->reason) ? CHECK_PASS : CHECK_WARN;
        case CL_COND_UNKNOWN: return c->reason && startswith(c->reason, "BlockedBy") ? CHECK_BLOCKED : CHECK_SKIP;
        case CL_COND_ABSENT: return CHECK_SKIP;
        }
        return CHECK_SKIP;
}

void cl_row_fill(const struct cluster_facts *facts, const struct cl_node *n, struct cl_row *ret) {
        memset(ret, 0, sizeof *ret);
        ret->node = n;
        for (int l = 0; l < CLUSTER_LAYERS; l++) {
                ret->layer[l] = condition_status(&n->layers[l]);
                ret->known |= n->layers[l].status != CL_COND_ABSENT;
        }
        ret->stale = cl_node_stale(facts, n);
        int fl = cl_node_failing_layer(n);
        enum check_status worst = CHECK_PASS;
        for (int l = 0; l < CLUSTER_LAYERS; l++)
                if (check_status_rank(ret->layer[l]) > check_status_rank(worst)) worst = ret->layer[l];
        if (n->ready != 1) {
                ret->status = CHECK_FAIL;
                ret->root_cause =
                        xasprintf("node not Ready (%s)", n->ready_reason ? n->ready_reason : "no Ready condition");
        } else if (fl) {
                ret->status = CHECK_FAIL;
                ret->root_layer = fl;
                ret->root_cause =
                        xasprintf("layer %d: %s", fl, n->layers[fl - 1].reason ? n->layers[fl - 1].reason : "problem");
        } else if (!ret->known) {
                ret->status = CHECK_FAIL;
                ret->root_cause =
                        xstrdup(n->agent_pod ? "agent pod present, no GPU conditions yet" : "no gpunode agent");
        } else if (ret->stale) {
                ret->status = CHECK_WARN;
                int64_t h = cl_node_heartbeat(n);
                ret->root_cause = !h ? xstrdup("agent heartbeat unknown")
                                  : h > facts->now
                                          ? xasprintf("agent heartbeat %" PRId64 " s in the future: the "
                                                      "node's clock ran ahead",
                                                      h - facts->now)
                                          : xasprintf("agent heartbeat %" PRId64 " min old", (facts->now - h) / 60);
        } else if (n->unschedulable) {
                ret->status = CHECK_WARN;
                ret->root_cause = xstrdup("cordoned");
        } else if (worst == CHECK_WARN) {
                ret->status = CHECK_WARN;
                for (int l = 0; l < CLUSTER_LAYERS && !ret->root_cause; l++)
                        if (ret->layer[l] == CHECK_WARN)
                                ret->root_cause = xasprintf("layer %d warns: %s", l + 1,
                                                            n->layers[l].reason ? n->layers[l].reason : "no reason");
        } else {
                ret->status = CHECK_PASS;
        }
}

void cl_row_free(struct cl_row *r) {
        free(r->root_cause);
        r->root_cause = NULL;
}

const struct cl_finding *cluster_report_find(const struct cluster_report *r, const char *id) {
        for (size_t i = 0; i < r->n_findings; i++)
                if (streq(r->findings[i].def->id, id)) return &r->findings[i];
        return NULL;
}

/* What the engine hands back to cl_run_one: the facts, the cluster's checks, and where each run says which check
 * of another category explains it. */
struct cl_run {
        const struct cluster_facts *facts;
        const struct cl_check_def *const *defs;
        const char **rests_on;
};

/* Runs cluster check i into the engine's finding f (through a cl_finding around it). Returns nothing. */
static void cl_run_one(void *userdata, size_t i, struct finding *f) {
        struct cl_run *run = userdata;
        struct cl_finding cf = { .def = run->defs[i], .f = *f };
        run->defs[i]->run(run->facts, &cf);
        *f = cf.f;
        run->rests_on[i] = cf.rests_on;
}

int cluster_report_build_with(const struct cluster_facts *facts, const struct cl_check_def *const *defs, size_t n,
                              struct cluster_report *ret) {
        memset(ret, 0, sizeof *ret);
        ret->facts = facts;
        /* The engine runs them: blocking and root cause are the node report's rules (a check that gives no
         * answer fails as an internal error). Each category is a "layer" 1..6 to it, its id the component. */
        _cleanup_free_ struct check_def *engine_defs = xcalloc(n + 1, sizeof *engine_defs);
        _cleanup_free_ const struct check_def **list = xcalloc(n + 1, sizeof *list);
        _cleanup_free_ const char **rests_on = xcalloc(n + 1, sizeof *rests_on);
        for (size_t i = 0; i < n; i++) {
                engine_defs[i] = (struct check_def){ .id = defs[i]->id,
                                                     .layer = (int)defs[i]->category + 1,
                                                     .component = cl_category_id(defs[i]->category),
                                                     .title = defs[i]->title };
                memcpy(engine_defs[i].depends, defs[i]->depends, sizeof engine_defs[i].depends);
                list[i] = &engine_defs[i];
        }
        struct cl_run run = { .facts = facts, .defs = defs, .rests_on = rests_on };
        const struct check_runner runner = { .run = cl_run_one, .userdata = &run, .blocked_suffix = "" };
        struct report rep;
        report_run(list, n, &runner, NULL, NULL, &rep);
        ret->findings = xcalloc(n + 1, sizeof *ret->findings);
        for (size_t i = 0; i < rep.n_findings; i++) {
                struct cl_finding *f = &ret->findings[ret->n_findings++];
                f->def = defs[i];
                f->f = rep.findings[i]; /* the strings move; blocked_by points at the static ids */
                f->f.def = NULL;
                f->rests_on = rests_on[i];
        }
        ret->verdict = rep.verdict;
        ret->root_cause = rep.root_cause ? &ret->findings[rep.root_cause - rep.findings] : NULL;
        /* A missing agent or stale conditions only hide the GPUs' health: a failure that takes GPUs away
         * (dead GPUs, a node not Ready) names the cluster's root cause first, the first in check order. */
        if (ret->root_cause && ret->root_cause->def->hides_only)
                for (size_t i = 0; i < ret->n_findings; i++)
                        if (ret->findings[i].f.status == CHECK_FAIL && !ret->findings[i].def->hides_only) {
                                ret->root_cause = &ret->findings[i];
                                break;
                        }
        free(rep.findings);
        free(rep.node);
        free(rep.root);
        ret->rows = xcalloc(facts->n_nodes ? facts->n_nodes : 1, sizeof *ret->rows);
        for (size_t i = 0; i < facts->n_nodes; i++) {
                struct cl_row *row = &ret->rows[ret->n_rows++];
                cl_row_fill(facts, &facts->nodes[i], row);
                const struct cl_node *nd = &facts->nodes[i];
                ret->gpus_allocatable += nd->gpu_allocatable;
                ret->gpus_capacity += nd->gpu_capacity;
                ret->gpus_expected += nd->gpu_expected;
                row->ready_for_work =
                        row->status == CHECK_PASS || (row->status == CHECK_WARN && !nd->unschedulable && !row->stale);
                ret->nodes_ready += row->ready_for_work;
        }
        return 0;
}

int cluster_report_build(const struct cluster_facts *facts, struct cluster_report *ret) {
        size_t n;
        const struct cl_check_def *const *defs = cluster_checks(&n);
        return cluster_report_build_with(facts, defs, n, ret);
}

void cluster_report_free(struct cluster_report *r) {
        for (size_t i = 0; i < r->n_findings; i++) {
                struct finding *f = &r->findings[i].f;
                free(f->summary);
                for (size_t e = 0; e < f->n_evidence; e++) free(f->evidence[e]);
                free(f->evidence);
                free(f->remedy);
        }
        free(r->findings);
        for (size_t i = 0; i < r->n_rows; i++) cl_row_free(&r->rows[i]);
        free(r->rows);
        memset(r, 0, sizeof *r);
}
