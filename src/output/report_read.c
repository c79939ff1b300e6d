/* report_read.c: the one reader of gpunode.report/v1: a report's JSON (a diagnosis child's output, an agent's
 * /report) back into a struct report for the agent, its page and the cluster command. */
#include "output/report_read.h"
#include "basic/util.h"

#define REPORT_READ_MAX_CHECKS   4096
#define REPORT_READ_MAX_EVIDENCE 1000

/* Returns the status for a JSON word, or -1. */
static int status_of(const char *s) {
        static const struct {
                const char *w;
                enum check_status s;
        } map[] = {
                { "pass", CHECK_PASS },       { "skip", CHECK_SKIP }, { "warn", CHECK_WARN },
                { "blocked", CHECK_BLOCKED }, { "fail", CHECK_FAIL },
        };
        for (size_t i = 0; s && i < ELEMENTSOF(map); i++)
                if (streq(map[i].w, s)) return (int)map[i].s;
        return -1;
}

/* Returns whether s is a check id or component as gpunode writes them: 1..64 of [a-z0-9._-]. The text renderer
 * prints ids as they are, so anything else from a pod's answer (escape sequences, say) is refused here. */
static bool plain_token(const char *s) {
        size_t n = 0;
        for (; s && s[n]; n++)
                if (n >= 64 || !((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= '0' && s[n] <= '9') || strchr("._-", s[n])))
                        return false;
        return n > 0;
}

/* Returns a malloc'd copy of the string member key, or NULL when absent or not a string. */
static char *dup_str(const json_t *o, const char *key) {
        const char *s = json_string_value(json_object_get(o, key));
        return s ? xstrdup(s) : NULL;
}

void report_read_free(struct report *r) {
        for (size_t i = 0; i < r->n_findings; i++) {
                struct finding *f = &r->findings[i];
                struct check_def *d = (struct check_def *)f->def;
                if (d) {
                        free((char *)d->id);
                        free((char *)d->component);
                        free(d);
                }
                free(f->summary);
                for (size_t e = 0; e < f->n_evidence; e++) free(f->evidence[e]);
                free(f->evidence);
                free(f->remedy);
                free((char *)f->blocked_by);
        }
        free(r->findings);
        free(r->node);
        free(r->root);
        memset(r, 0, sizeof *r);
}

int report_from_json(const json_t *doc, struct report *ret, char **ret_error) {
        memset(ret, 0, sizeof *ret);
        const char *schema = json_string_value(json_object_get(doc, "schema"));
        if (!json_is_object(doc) || !schema || !streq(schema, "gpunode.report/v1"))
                return errorf(ret_error, -EBADMSG, "the answer is not a gpunode.report/v1 document (schema %s)",
                              schema ? schema : "missing");
        const json_t *checks = json_object_get(doc, "checks");
        const char *verdict = json_string_value(json_object_get(doc, "verdict"));
        if (!json_is_array(checks) || !verdict)
                return errorf(ret_error, -EBADMSG, "the report has no checks or no verdict");
        if (json_array_size(checks) > REPORT_READ_MAX_CHECKS)
                return errorf(ret_error, -EBADMSG, "the report has %zu checks (at most %d)", json_array_size(checks),
                              REPORT_READ_MAX_CHECKS);
        if (streq(verdict, "healthy"))
                ret->verdict = VERDICT_HEALTHY;
        else if (streq(verdict, "degraded"))
                ret->verdict = VERDICT_DEGRADED;
        else if (streq(verdict, "failed"))
                ret->verdict = VERDICT_FAILED;
        else
                return errorf(ret_error, -EBADMSG, "the report's verdict \"%.40s\" is not healthy, degraded or failed",
                              verdict);
        ret->node = dup_str(doc, "node");
        if (!ret->node) ret->node = xstrdup("unknown");
        ret->root = dup_str(doc, "root");
        if (!ret->root) ret->root = xstrdup("/");
        ret->findings = xcalloc(json_array_size(checks) + 1, sizeof *ret->findings);
        size_t i;
        const json_t *c;
        json_array_foreach(checks, i, c) {
                const char *id = json_string_value(json_object_get(c, "id"));
                const char *component = json_string_value(json_object_get(c, "component"));
                json_int_t layer = json_integer_value(json_object_get(c, "layer"));
                int st = status_of(json_string_value(json_object_get(c, "status")));
                if (!plain_token(id) || !plain_token(component) || layer < LAYER_MIN || layer > LAYER_MAX || st < 0) {
                        report_read_free(ret);
                        return errorf(ret_error, -EBADMSG,
                                      "check %zu of the report lacks an id or component of [a-z0-9._-], a layer 1..4 "
                                      "or a status", i);
                }
                struct check_def *d = xcalloc(1, sizeof *d);
                d->id = xstrdup(id);
                d->component = xstrdup(component);
                d->layer = (int)layer;
                struct finding *f = &ret->findings[ret->n_findings++];
                f->def = d;
                f->status = (enum check_status)st;
                f->summary = dup_str(c, "summary");
                if (!f->summary) f->summary = xstrdup("");
                f->remedy = dup_str(c, "remedy");
                f->blocked_by = dup_str(c, "blocked_by");
                size_t e;
                const json_t *ev;
                json_array_foreach(json_object_get(c, "evidence"), e, ev) {
                        if (!json_is_string(ev) || f->n_evidence >= REPORT_READ_MAX_EVIDENCE) continue;
                        f->evidence = xrealloc(f->evidence, (f->n_evidence + 1) * sizeof *f->evidence);
                        f->evidence[f->n_evidence++] = xstrdup(json_string_value(ev));
                }
        }
        const char *rc = json_string_value(json_object_get(json_object_get(doc, "root_cause"), "check"));
        for (size_t k = 0; rc && k < ret->n_findings && !ret->root_cause; k++)
                if (streq(ret->findings[k].def->id, rc)) ret->root_cause = &ret->findings[k];
        return 0;
}
