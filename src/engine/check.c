/* check.c: runs the registry over the facts and attributes the root cause bottom-up. */
#include "engine/check.h"

#include <stdarg.h>

void finding_set(struct finding *f, enum check_status status, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        free(f->summary);
        f->summary = xvasprintf(fmt, ap);
        va_end(ap);
        f->status = status;
}

void finding_evidence(struct finding *f, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        f->evidence = xrealloc(f->evidence, (f->n_evidence + 1) * sizeof *f->evidence);
        f->evidence[f->n_evidence++] = xvasprintf(fmt, ap);
        va_end(ap);
}

void finding_remedy(struct finding *f, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        free(f->remedy);
        f->remedy = xvasprintf(fmt, ap);
        va_end(ap);
}

const char *check_status_name(enum check_status s) {
        switch (s) {
        case CHECK_PASS: return "pass";
        case CHECK_SKIP: return "skip";
        case CHECK_WARN: return "warn";
        case CHECK_BLOCKED: return "blocked";
        case CHECK_FAIL: return "fail";
        }
        return "unknown";
}

const char *verdict_name(enum verdict v) {
        switch (v) {
        case VERDICT_HEALTHY: return "healthy";
        case VERDICT_DEGRADED: return "degraded";
        case VERDICT_FAILED: return "failed";
        }
        return "unknown";
}

const char *layer_name(int layer) {
        static const char *const names[] = {
                [1] = "hardware enablement",
                [2] = "container integration",
                [3] = "Kubernetes resource exposure",
                [4] = "observability",
        };
        return layer >= LAYER_MIN && layer <= LAYER_MAX ? names[layer] : NULL;
}

const struct check_def *check_find(const char *id) {
        size_t n;
        const struct check_def *const *all = check_registry(&n);
        for (size_t i = 0; i < n; i++)
                if (streq(all[i]->id, id)) return all[i];
        return NULL;
}

const struct finding *report_find(const struct report *r, const char *id) {
        for (size_t i = 0; i < r->n_findings; i++)
                if (streq(r->findings[i].def->id, id)) return &r->findings[i];
        return NULL;
}

/* Returns the id of the failed check that blocks f (following blocked dependencies down to the
 * failure itself), or NULL when every dependency it rests on here answered. */
static const char *blocking_failure(const struct report *r, const struct node_facts *facts, const struct check_def *def) {
        for (size_t d = 0; d < CHECK_MAX_DEPS && def->depends[d]; d++) {
                if (def->rests_on && !def->rests_on(facts, def->depends[d])) continue;
                const struct finding *dep = report_find(r, def->depends[d]);
                if (!dep) continue;
                if (dep->status == CHECK_FAIL) return dep->def->id;
                if (dep->status == CHECK_BLOCKED) return dep->blocked_by;
        }
        return NULL;
}

int report_build(const struct node_facts *facts, const char *node, const char *root, struct report *ret) {
        size_t n;
        const struct check_def *const *all = check_registry(&n);
        struct report r = {
                .node = xstrdup(node ? node : "unknown"),
                .root = xstrdup(root ? root : "/"),
                .findings = xcalloc(n, sizeof(struct finding)),
        };
        for (size_t i = 0; i < n; i++) {
                struct finding *f = &r.findings[i];
                f->def = all[i];
                r.n_findings = i + 1;
                const char *blocker = blocking_failure(&r, facts, all[i]);
                if (blocker) {
                        const struct check_def *b = check_find(blocker);
                        f->blocked_by = b ? b->id : blocker;
                        finding_set(f, CHECK_BLOCKED, "not checked: rests on %s, which failed", f->blocked_by);
                        continue;
                }
                all[i]->run(facts, f);
                if (!f->summary) finding_set(f, CHECK_FAIL, "internal error: check %s gave no answer", all[i]->id);
        }

        /* Root cause: the lowest-layer failure, else the lowest-layer warning; the registry is
         * ordered bottom-up and, within a layer, foundations first, so the first one wins. */
        r.verdict = VERDICT_HEALTHY;
        for (size_t i = 0; i < r.n_findings; i++)
                if (r.findings[i].status == CHECK_FAIL) {
                        r.verdict = VERDICT_FAILED;
                        r.root_cause = &r.findings[i];
                        break;
                }
        if (!r.root_cause)
                for (size_t i = 0; i < r.n_findings; i++)
                        if (r.findings[i].status == CHECK_WARN) {
                                r.verdict = VERDICT_DEGRADED;
                                r.root_cause = &r.findings[i];
                                break;
                        }
        *ret = r;
        return 0;
}

void report_free(struct report *r) {
        for (size_t i = 0; i < r->n_findings; i++) {
                struct finding *f = &r->findings[i];
                free(f->summary);
                for (size_t e = 0; e < f->n_evidence; e++) free(f->evidence[e]);
                free(f->evidence);
                free(f->remedy);
        }
        free(r->findings);
        for (size_t i = 0; i < r->n_gpus; i++) {
                struct report_gpu *g = &r->gpus[i];
                free(g->uuid);
                free(g->pci_bus_id);
                free(g->name);
                for (size_t p = 0; p < g->n_pods; p++) {
                        free(g->pods[p].namespace);
                        free(g->pods[p].pod);
                        free(g->pods[p].container);
                }
                free(g->pods);
        }
        free(r->gpus);
        free(r->node);
        free(r->root);
        *r = (struct report){0};
}

int check_status_rank(enum check_status s) {
        switch (s) {
        case CHECK_SKIP: return 0;
        case CHECK_PASS: return 1;
        case CHECK_WARN: return 2;
        case CHECK_BLOCKED: return 3;
        case CHECK_FAIL: return 4;
        }
        return 0;
}

enum check_status report_component_status(const struct report *r, int layer, const char *component) {
        enum check_status worst = CHECK_SKIP;
        for (size_t i = 0; i < r->n_findings; i++) {
                const struct finding *f = &r->findings[i];
                if (f->def->layer != layer) continue;
                if (component && !streq(f->def->component, component)) continue;
                if (check_status_rank(f->status) > check_status_rank(worst)) worst = f->status;
        }
        return worst;
}

enum check_status report_layer_status(const struct report *r, int layer) {
        return report_component_status(r, layer, NULL);
}

int verdict_exit_code(enum verdict v) {
        switch (v) {
        case VERDICT_HEALTHY: return 0;
        case VERDICT_DEGRADED: return 1;
        case VERDICT_FAILED: return 2;
        }
        return 2;
}
