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

void finding_action(struct finding *f, enum finding_action a) {
        f->action = a;
        f->action_set = true;
}

struct finding_gpu *finding_gpu(struct finding *f, int index, const char *uuid, const char *pci_bus_id) {
        f->gpus = xrealloc(f->gpus, (f->n_gpus + 1) * sizeof *f->gpus);
        struct finding_gpu *g = &f->gpus[f->n_gpus++];
        *g = (struct finding_gpu){ .index = index,
                                   .uuid = uuid ? xstrdup(uuid) : NULL,
                                   .pci_bus_id = pci_bus_id ? xstrdup(pci_bus_id) : NULL };
        return g;
}

void finding_free_contents(struct finding *f) {
        free(f->summary);
        for (size_t e = 0; e < f->n_evidence; e++) free(f->evidence[e]);
        free(f->evidence);
        free(f->remedy);
        for (size_t g = 0; g < f->n_gpus; g++) {
                free(f->gpus[g].uuid);
                free(f->gpus[g].pci_bus_id);
        }
        free(f->gpus);
        f->summary = f->remedy = NULL;
        f->evidence = NULL;
        f->gpus = NULL;
        f->n_evidence = f->n_gpus = 0;
}

static const char *const action_names[_ACTION_MAX] = {
        [ACTION_NONE] = "none",
        [ACTION_RESTART_POD] = "restart-pod",
        [ACTION_RECONFIGURE] = "reconfigure",
        [ACTION_DRAIN] = "drain",
        [ACTION_RESET_GPU] = "reset-gpu",
        [ACTION_REBOOT] = "reboot",
        [ACTION_RMA] = "rma",
        [ACTION_CONTACT_SUPPORT] = "contact-support",
};

const char *finding_action_name(enum finding_action a) {
        return (unsigned)a < _ACTION_MAX ? action_names[a] : "none";
}

int finding_action_from_name(const char *s) {
        for (int a = 0; s && a < _ACTION_MAX; a++)
                if (streq(action_names[a], s)) return a;
        return -1;
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

const char *layer_status_name(enum check_status s) {
        switch (s) {
        case CHECK_FAIL: return "failed";
        case CHECK_BLOCKED: return "blocked";
        case CHECK_WARN: return "degraded";
        case CHECK_PASS: return "healthy";
        case CHECK_SKIP: return "skipped";
        }
        return "unknown";
}

const struct finding *report_find(const struct report *r, const char *id) {
        for (size_t i = 0; i < r->n_findings; i++)
                if (streq(r->findings[i].def->id, id)) return &r->findings[i];
        return NULL;
}

/* Returns the id of the failed check that check i rests on (following blocked dependencies down to the
 * failure itself), or NULL when every dependency it rests on here answered. */
static const char *blocking_failure(const struct report *r, const struct check_runner *runner, size_t i,
                                    const struct check_def *def) {
        for (size_t d = 0; d < CHECK_MAX_DEPS && def->depends[d]; d++) {
                if (runner->rests_on && !runner->rests_on(runner->userdata, i, def->depends[d])) continue;
                const struct finding *dep = report_find(r, def->depends[d]);
                if (!dep) continue;
                if (dep->status == CHECK_FAIL) return dep->def->id;
                if (dep->status == CHECK_BLOCKED) return dep->blocked_by;
        }
        return NULL;
}

int report_run(const struct check_def *const *checks, size_t n_checks, const struct check_runner *runner,
               const char *node, const char *root, struct report *ret) {
        struct report r = {
                .node = xstrdup(node ? node : "unknown"),
                .root = xstrdup(root ? root : "/"),
                .findings = xcalloc(n_checks + 1, sizeof(struct finding)),
                .version = GPUNODE_VERSION,
        };
        for (size_t i = 0; i < n_checks; i++) {
                struct finding *f = &r.findings[i];
                f->def = checks[i];
                r.n_findings = i + 1;
                const char *blocker = blocking_failure(&r, runner, i, checks[i]);
                if (blocker) {
                        f->blocked_by = blocker;
                        finding_set(f, CHECK_BLOCKED, "not checked: rests on %s%s", blocker,
                                    runner->blocked_suffix ? runner->blocked_suffix : ", which failed");
                        continue;
                }
                runner->run(runner->userdata, i, f);
                if (!f->summary) finding_set(f, CHECK_FAIL, "internal error: check %s gave no answer", checks[i]->id);
                /* What it asks: run()'s choice, else its def's, and nothing for what passed or skipped. */
                if (f->status != CHECK_WARN && f->status != CHECK_FAIL)
                        f->action = ACTION_NONE;
                else if (!f->action_set)
                        f->action = checks[i]->action;
        }

        /* Root cause: the first failure, else the first warning (or a check blocked with no failure);
         * the list runs bottom-up and, within a layer, foundations first, so the first one wins. */
        r.verdict = VERDICT_HEALTHY;
        for (size_t i = 0; i < r.n_findings; i++)
                if (r.findings[i].status == CHECK_FAIL) {
                        r.root_cause = &r.findings[i];
                        break;
                }
        /* Failed only when a failure stops the work: one in a layer up to failing_layers_max. */
        for (size_t i = 0; r.root_cause && i < r.n_findings; i++)
                if (r.findings[i].status == CHECK_FAIL &&
                    (!runner->failing_layers_max || r.findings[i].def->layer <= runner->failing_layers_max)) {
                        r.verdict = VERDICT_FAILED;
                        break;
                }
        if (r.root_cause && r.verdict != VERDICT_FAILED) r.verdict = VERDICT_DEGRADED;
        if (!r.root_cause)
                for (size_t i = 0; i < r.n_findings; i++)
                        if (r.findings[i].status == CHECK_WARN || r.findings[i].status == CHECK_BLOCKED) {
                                r.verdict = VERDICT_DEGRADED;
                                r.root_cause = &r.findings[i];
                                break;
                        }
        *ret = r;
        return 0;
}

/* What report_build's runner hands back: the facts and the list. */
struct node_run {
        const struct node_facts *facts;
        const struct check_def *const *checks;
};

/* Runs node check i through its run(). Returns nothing. */
static void node_run_one(void *userdata, size_t i, struct finding *f) {
        const struct node_run *nr = userdata;
        nr->checks[i]->run(nr->facts, f);
}

/* Returns whether node check i rests on dep here: its rests_on(), or always without one. */
static bool node_rests_on(void *userdata, size_t i, const char *dep) {
        const struct node_run *nr = userdata;
        return !nr->checks[i]->rests_on || nr->checks[i]->rests_on(nr->facts, dep);
}

int report_build(const struct node_facts *facts, const struct check_def *const *checks, size_t n_checks,
                 const char *node, const char *root, struct report *ret) {
        struct node_run nr = { .facts = facts, .checks = checks };
        /* Layers 1-3 carry GPU work; a failure in layer 4 (observability) alone degrades the node. */
        const struct check_runner runner = {
                .run = node_run_one, .rests_on = node_rests_on, .userdata = &nr, .failing_layers_max = LAYER_MAX - 1
        };
        return report_run(checks, n_checks, &runner, node, root, ret);
}

void report_free(struct report *r) {
        for (size_t i = 0; i < r->n_findings; i++) finding_free_contents(&r->findings[i]);
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
        *r = (struct report){ 0 };
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
