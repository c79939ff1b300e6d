/* report_read.c: the one reader of gpunode.report/v1: a report's JSON (a diagnosis child's output, an agent's
 * /report) back into a struct report for the agent, its page and the cluster command. */
#include "output/report_read.h"
#include "basic/rfc3339.h"
#include "basic/util.h"

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
                free((char *)f->blocked_by);
                f->blocked_by = NULL;
        }
        report_free(r); /* the rest is owned as report_build's is */
}

/* Returns a malloc'd copy of the member key when it is a string, NULL when absent or null; -EBADMSG in *ret_rc
 * (left alone otherwise) when it is something else. */
static char *dup_str_or_null(const json_t *o, const char *key, int *ret_rc) {
        const json_t *v = json_object_get(o, key);
        if (json_is_string(v)) return xstrdup(json_string_value(v));
        if (v && !json_is_null(v)) *ret_rc = -EBADMSG;
        return NULL;
}

/* Reads the report's "gpus" array (absent: none) into ret->gpus. Returns 0, or -EBADMSG with a malloc'd
 * sentence in *ret_error when it is not an array of GPU objects with an index 0..65535, string or null names,
 * and pods of string or null fields, or holds more than REPORT_READ_MAX_GPUS GPUs or REPORT_READ_MAX_PODS pods
 * on one GPU; what was read stays in ret for the caller to free. */
static int read_gpus(const json_t *doc, struct report *ret, char **ret_error) {
        const json_t *gpus = json_object_get(doc, "gpus");
        if (!gpus || json_is_null(gpus)) return 0;
        if (!json_is_array(gpus)) return errorf(ret_error, -EBADMSG, "the report's gpus is not an array");
        if (json_array_size(gpus) > REPORT_READ_MAX_GPUS)
                return errorf(ret_error, -EBADMSG, "the report has %zu GPUs (at most %d)", json_array_size(gpus),
                              REPORT_READ_MAX_GPUS);
        ret->gpus = xcalloc(json_array_size(gpus) + 1, sizeof *ret->gpus);
        size_t i;
        const json_t *g;
        json_array_foreach(gpus, i, g) {
                const json_t *index = json_object_get(g, "index"), *pods = json_object_get(g, "pods");
                if (!json_is_object(g) || !json_is_integer(index) || json_integer_value(index) < 0 ||
                    json_integer_value(index) > REPORT_READ_MAX_GPU_INDEX || (pods && !json_is_array(pods)))
                        return errorf(ret_error, -EBADMSG,
                                      "GPU %zu of the report lacks an index 0..%d or its pods "
                                      "are not an array",
                                      i, REPORT_READ_MAX_GPU_INDEX);
                if (json_array_size(pods) > REPORT_READ_MAX_PODS)
                        return errorf(ret_error, -EBADMSG, "GPU %zu of the report is held by %zu pods (at most %d)", i,
                                      json_array_size(pods), REPORT_READ_MAX_PODS);
                struct report_gpu *rg = &ret->gpus[ret->n_gpus++];
                int rc = 0;
                rg->index = (unsigned)json_integer_value(index);
                rg->uuid = dup_str_or_null(g, "uuid", &rc);
                rg->pci_bus_id = dup_str_or_null(g, "pci_bus_id", &rc);
                rg->name = dup_str_or_null(g, "name", &rc);
                rg->pods = xcalloc(json_array_size(pods) + 1, sizeof *rg->pods);
                size_t k;
                const json_t *p;
                json_array_foreach(pods, k, p) {
                        if (!json_is_object(p)) rc = -EBADMSG;
                        struct report_pod *rp = &rg->pods[rg->n_pods++];
                        rp->namespace = dup_str_or_null(p, "namespace", &rc);
                        rp->pod = dup_str_or_null(p, "pod", &rc);
                        rp->container = dup_str_or_null(p, "container", &rc);
                }
                if (rc < 0)
                        return errorf(ret_error, rc,
                                      "GPU %zu of the report has a name, UUID, PCI bus id or pod "
                                      "that is neither a string nor null",
                                      i);
        }
        return 0;
}

/* Returns the integer member key of o, or fallback when it is absent or not an integer in [lo, hi]. */
static json_int_t int_member(const json_t *o, const char *key, json_int_t lo, json_int_t hi, json_int_t fallback) {
        const json_t *v = json_object_get(o, key);
        if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) return fallback;
        return json_integer_value(v);
}

/* Returns the time member key of o (RFC 3339) in seconds since the epoch, 0 when absent or no time. */
static int64_t time_member(const json_t *o, const char *key) {
        int64_t t;
        return rfc3339_parse(json_string_value(json_object_get(o, key)), &t) < 0 ? 0 : t;
}

/* Reads a check's "gpus" (additive; absent: none) into f, at most REPORT_READ_MAX_FINDING_GPUS of them;
 * an entry that is not an object, or a member of the wrong type, is left out. Never fails. */
static void read_finding_gpus(const json_t *gpus, struct finding *f) {
        size_t i;
        const json_t *g;
        json_array_foreach(gpus, i, g) {
                if (!json_is_object(g) || f->n_gpus >= REPORT_READ_MAX_FINDING_GPUS) continue;
                const json_t *uuid = json_object_get(g, "uuid"), *pci = json_object_get(g, "pci_bus_id");
                struct finding_gpu *e = finding_gpu(f, (int)int_member(g, "gpu", 0, 65535, -1),
                                                    json_is_string(uuid) ? json_string_value(uuid) : NULL,
                                                    json_is_string(pci) ? json_string_value(pci) : NULL);
                e->xid = (int)int_member(g, "xid", 1, 1000000, 0);
                e->count = (uint64_t)int_member(g, "count", 1, INT64_MAX, 0);
                e->first_seen = time_member(g, "first_seen");
                e->last_seen = time_member(g, "last_seen");
        }
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
        /* Additive members: a report without them (an older gpunode), or whose time is no RFC 3339
         * time, has time 0 (unknown) and no version; the rest of it still counts. */
        const json_t *version = json_object_get(doc, "version");
        if (json_is_string(version) && plain_token(json_string_value(version)))
                snprintf(ret->version, sizeof ret->version, "%s", json_string_value(version));
        if (rfc3339_parse(json_string_value(json_object_get(doc, "time")), &ret->time) < 0) ret->time = 0;
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
                                      "or a status",
                                      i);
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
                int action = finding_action_from_name(json_string_value(json_object_get(c, "action")));
                f->action = action < 0 ? ACTION_NONE : (enum finding_action)action;
                read_finding_gpus(json_object_get(c, "gpus"), f);
                size_t e;
                const json_t *ev;
                json_array_foreach(json_object_get(c, "evidence"), e, ev) {
                        if (!json_is_string(ev)) continue;
                        if (f->n_evidence >= REPORT_READ_MAX_EVIDENCE) {
                                f->n_evidence_more++;
                                continue;
                        }
                        f->evidence = xrealloc(f->evidence, (f->n_evidence + 1) * sizeof *f->evidence);
                        f->evidence[f->n_evidence++] = xstrdup(json_string_value(ev));
                }
        }
        int r = read_gpus(doc, ret, ret_error);
        if (r < 0) {
                report_read_free(ret);
                return r;
        }
        const char *rc = json_string_value(json_object_get(json_object_get(doc, "root_cause"), "check"));
        for (size_t k = 0; rc && k < ret->n_findings && !ret->root_cause; k++)
                if (streq(ret->findings[k].def->id, rc)) ret->root_cause = &ret->findings[k];
        return 0;
}

/* Returns a malloc'd copy of s (len bytes) in which each byte that does not start a valid UTF-8 sequence is '?':
 * jansson refuses the whole text otherwise, and one bad byte in a quoted file should not hide the report. Never
 * fails. */
static char *utf8_repair(const char *s, size_t len) {
        struct buf b = {};
        buf_append(&b, "", 0);
        while (len > 0) {
                size_t ok = utf8_valid_prefix(s, len);
                buf_append(&b, s, ok);
                if (ok == len) break;
                buf_append(&b, "?", 1);
                s += ok + 1;
                len -= ok + 1;
        }
        return b.data;
}

int report_from_text(const char *text, size_t len, struct report *ret, char **ret_error) {
        memset(ret, 0, sizeof *ret);
        _cleanup_free_ char *repaired = utf8_valid_prefix(text, len) < len ? utf8_repair(text, len) : NULL;
        json_error_t jerr;
        json_t *doc = repaired ? json_loads(repaired, 0, &jerr) : json_loadb(text, len, 0, &jerr);
        if (!doc) return errorf(ret_error, -EBADMSG, "the report is not JSON (%s)", jerr.text);
        int r = report_from_json(doc, ret, ret_error);
        json_decref(doc);
        return r;
}
