/* conditions.c: the report -> the four node conditions (one per layer) and the patch decision; pure. */
#include "agent/conditions.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "basic/util.h"
#include "engine/check.h"

/* The four types and their words, layer 1..4. */
static const struct {
        const char *type;   /* the condition type */
        const char *prefix; /* reasons when there is no check to name */
} layer_names[AGENT_N_LAYERS] = {
        { "GPUHardwareProblem", "GPUHardware" },
        { "GPUContainerRuntimeProblem", "GPUContainerRuntime" },
        { "GPUResourceExposureProblem", "GPUResourceExposure" },
        { "GPUObservabilityProblem", "GPUObservability" },
};

const char *agent_condition_type(unsigned layer) {
        return layer >= 1 && layer <= AGENT_N_LAYERS ? layer_names[layer - 1].type : NULL;
}

const char *agent_status_name(enum agent_status s) {
        return s == AGENT_TRUE ? "True" : s == AGENT_FALSE ? "False" : "Unknown";
}

char *agent_camel_case(const char *id, char *ret, size_t size) {
        size_t n = 0;
        bool up = true;
        for (const char *p = id; *p && n + 1 < size; p++) {
                unsigned char ch = (unsigned char)*p;
                if (ch == '.' || ch == '-' || ch == '_' || ch == ' ') {
                        up = true;
                } else if (isalnum(ch) && ch < 0x80) {
                        ret[n++] = up ? (char)toupper(ch) : (char)ch;
                        up = false;
                }
        }
        ret[n] = 0;
        return ret;
}

char *agent_bound_utf8(const char *s, char *ret, size_t size) {
        size_t len = strlen(s);
        if (len < size) {
                memcpy(ret, s, len + 1);
                return ret;
        }
        size_t cut = size - 4; /* room for "..." and the NUL */
        while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80) cut--;
        memcpy(ret, s, cut);
        memcpy(ret + cut, "...", 4);
        return ret;
}

/* Returns the string member key of o, or "" when absent or not a string. */
static const char *str_member(const json_t *o, const char *key) {
        const char *s = json_string_value(json_object_get(o, key));
        return s ? s : "";
}

/* Fills c with reason from check id `check` (prefixed by prefix) and message text bounded. Returns nothing. */
static void set_condition(struct agent_condition *c, enum agent_status st, const char *prefix, const char *check,
                          const char *message) {
        char camel[AGENT_REASON_MAX - 32]; /* leaves room for a prefix ("BlockedBy") */
        c->status = st;
        agent_camel_case(check, camel, sizeof camel);
        snprintf(c->reason, sizeof c->reason, "%s%s", prefix, camel);
        snprintf(c->check, sizeof c->check, "%s", check);
        agent_bound_utf8(message, c->message, sizeof c->message);
}

/* Returns s, or "" for NULL. */
static const char *or_empty(const char *s) {
        return s ? s : "";
}

int agent_conditions_from_report(const struct report *report, struct agent_condition ret[AGENT_N_LAYERS]) {
        if (!report) return -EINVAL;
        const struct finding *rc = report->root_cause;
        for (unsigned l = 1; l <= AGENT_N_LAYERS; l++) {
                /* the engine's status of the layer (the worst of its checks) picks the branch; the first
                 * check of that status in the layer names it */
                enum check_status worst = report_layer_status(report, (int)l);
                const struct finding *first = NULL;
                unsigned passed = 0, skipped = 0;
                for (size_t i = 0; i < report->n_findings; i++) {
                        const struct finding *f = &report->findings[i];
                        if (f->def->layer != (int)l) continue;
                        if (!first && f->status == worst) first = f;
                        passed += f->status == CHECK_PASS;
                        skipped += f->status == CHECK_SKIP;
                }
                struct agent_condition *c = &ret[l - 1];
                memset(c, 0, sizeof *c);
                const char *prefix = layer_names[l - 1].prefix;
                _cleanup_free_ char *msg = NULL;
                if (worst == CHECK_FAIL) {
                        /* the report's root cause when it lies in this layer, else its first failure */
                        const struct finding *root =
                                rc && rc->status == CHECK_FAIL && rc->def->layer == (int)l ? rc : first;
                        const char *remedy = or_empty(root->remedy);
                        msg = *remedy ? xasprintf("%s; remedy: %s", or_empty(root->summary), remedy)
                                      : xasprintf("%s", or_empty(root->summary));
                        set_condition(c, AGENT_TRUE, "", root->def->id, msg);
                } else if (worst == CHECK_BLOCKED) {
                        const char *by = or_empty(first->blocked_by);
                        msg = xasprintf("not checked: %s rests on %s, which failed (%s)", first->def->id,
                                        *by ? by : "a lower check", or_empty(first->summary));
                        set_condition(c, AGENT_UNKNOWN, "BlockedBy", *by ? by : "lower-layer", msg);
                        snprintf(c->check, sizeof c->check, "%s", first->def->id);
                } else if (worst == CHECK_SKIP) {
                        msg = xasprintf("not checked: %s",
                                        first ? or_empty(first->summary) : "no check of this layer ran");
                        set_condition(c, AGENT_UNKNOWN, "", "", msg);
                        snprintf(c->reason, sizeof c->reason, "%sNotChecked", prefix);
                } else if (worst == CHECK_WARN) {
                        msg = xasprintf("warning: %s", or_empty(first->summary));
                        set_condition(c, AGENT_FALSE, "", first->def->id, msg);
                } else {
                        msg = xasprintf("%u check(s) pass, %u skipped", passed, skipped);
                        set_condition(c, AGENT_FALSE, "", "", msg);
                        snprintf(c->reason, sizeof c->reason, "%sHealthy", prefix);
                }
        }
        return 0;
}

/* Returns true when a and b say the same (status, reason, message). */
static bool same_condition(const struct agent_condition *a, const struct agent_condition *b) {
        return a->status == b->status && streq(a->reason, b->reason) && streq(a->message, b->message);
}

/* Returns how bad s is: False 0, Unknown 1 (not checked), True 2. */
static int status_rank(enum agent_status s) {
        return s == AGENT_TRUE ? 2 : s == AGENT_UNKNOWN ? 1 : 0;
}

/* Returns true when t lies within the last window seconds before now (0 <= now - t < window): a time
 * in the future (a clock that ran ahead) is not recent, so it holds nothing back. */
static bool recent(int64_t t, int64_t now, int64_t window) {
        return now >= t && now - t < window;
}

int64_t agent_conditions_hold_down(int64_t heartbeat_s) {
        int64_t h = heartbeat_s / 5;
        return h > AGENT_COND_HOLD_DOWN_MAX_S ? AGENT_COND_HOLD_DOWN_MAX_S : h < 0 ? 0 : h;
}

enum agent_patch agent_conditions_decide(const struct agent_cond_state prev[AGENT_N_LAYERS],
                                         const struct agent_condition cur[AGENT_N_LAYERS], int64_t now,
                                         int64_t heartbeat_s, struct agent_cond_state next[AGENT_N_LAYERS],
                                         bool transition[AGENT_N_LAYERS]) {
        int64_t hold = agent_conditions_hold_down(heartbeat_s);
        /* per layer: take cur now, or keep what was written (a held improvement or lateral change) */
        bool take[AGENT_N_LAYERS], lateral[AGENT_N_LAYERS];
        bool changed = false, stale = false;
        for (unsigned i = 0; i < AGENT_N_LAYERS; i++) {
                const struct agent_cond_state *p = &prev[i];
                lateral[i] = false;
                if (!p->known) {
                        take[i] = true;
                } else if (same_condition(&p->c, &cur[i])) {
                        take[i] = false;
                } else if (status_rank(cur[i].status) > status_rank(p->c.status)) {
                        take[i] = true; /* a worsening is written at once */
                } else if (status_rank(cur[i].status) < status_rank(p->c.status)) {
                        take[i] = !recent(p->transition_time, now, hold); /* an improvement waits out the hold-down */
                } else {
                        /* the same status, other words: written with the next patch, or once the last write
                         * is a hold-down old */
                        lateral[i] = true;
                        take[i] = !recent(p->heartbeat_time, now, hold);
                }
                changed |= take[i];
                /* the heartbeat: due by age, or when the stored one lies in the future beyond the skew (a
                 * clock that ran ahead and was corrected must not stop it) */
                if (!p->known || now - p->heartbeat_time >= heartbeat_s || p->heartbeat_time - now > AGENT_CLOCK_SKEW_S)
                        stale = true;
        }
        enum agent_patch d = changed ? AGENT_PATCH_CHANGE : stale ? AGENT_PATCH_HEARTBEAT : AGENT_PATCH_NONE;
        for (unsigned i = 0; i < AGENT_N_LAYERS; i++) {
                next[i] = prev[i];
                transition[i] = false;
                if (d == AGENT_PATCH_NONE) continue;
                if (lateral[i]) take[i] = true; /* a patch goes anyway: it costs no write */
                next[i].known = true;
                next[i].heartbeat_time = now;
                if (!take[i]) {
                        /* a held state keeps its times, but none in the future */
                        if (next[i].transition_time > now) next[i].transition_time = now;
                        continue;
                }
                bool status_changed = !prev[i].known || prev[i].c.status != cur[i].status;
                transition[i] =
                        status_changed || (cur[i].status == AGENT_TRUE && !streq(prev[i].c.reason, cur[i].reason));
                next[i].c = cur[i];
                if (status_changed || next[i].transition_time > now) next[i].transition_time = now;
        }
        return d;
}

char *agent_time_format(int64_t t, char *ret, size_t size) {
        time_t tt = (time_t)t;
        struct tm tm;
        gmtime_r(&tt, &tm);
        strftime(ret, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
        return ret;
}

int agent_time_parse(const char *s, int64_t *ret) {
        struct tm tm = { 0 };
        const char *end = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
        if (!end) return -EINVAL;
        if (*end == '.')
                for (end++; isdigit((unsigned char)*end); end++) {
                }
        if (!streq(end, "Z")) return -EINVAL;
        *ret = (int64_t)timegm(&tm);
        return 0;
}

json_t *agent_conditions_patch(const struct agent_cond_state state[AGENT_N_LAYERS]) {
        json_t *list = json_array();
        for (unsigned i = 0; i < AGENT_N_LAYERS; i++) {
                char tt[32], hb[32];
                json_array_append_new(
                        list, json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "type", layer_names[i].type, "status",
                                        agent_status_name(state[i].c.status), "reason", state[i].c.reason, "message",
                                        state[i].c.message, "lastTransitionTime",
                                        agent_time_format(state[i].transition_time, tt, sizeof tt), "lastHeartbeatTime",
                                        agent_time_format(state[i].heartbeat_time, hb, sizeof hb)));
        }
        return json_pack("{s:{s:o}}", "status", "conditions", list);
}

unsigned agent_conditions_from_node(const json_t *node, struct agent_cond_state ret[AGENT_N_LAYERS]) {
        const json_t *conds = json_object_get(json_object_get(node, "status"), "conditions");
        unsigned found = 0;
        memset(ret, 0, sizeof *ret * AGENT_N_LAYERS);
        size_t i;
        const json_t *c;
        json_array_foreach(conds, i, c) {
                const char *type = str_member(c, "type");
                for (unsigned l = 0; l < AGENT_N_LAYERS; l++) {
                        if (!streq(type, layer_names[l].type)) continue;
                        struct agent_cond_state *s = &ret[l];
                        const char *st = str_member(c, "status");
                        s->c.status = streq(st, "True") ? AGENT_TRUE : streq(st, "False") ? AGENT_FALSE : AGENT_UNKNOWN;
                        snprintf(s->c.reason, sizeof s->c.reason, "%s", str_member(c, "reason"));
                        agent_bound_utf8(str_member(c, "message"), s->c.message, sizeof s->c.message);
                        if (agent_time_parse(str_member(c, "lastTransitionTime"), &s->transition_time) < 0) continue;
                        if (agent_time_parse(str_member(c, "lastHeartbeatTime"), &s->heartbeat_time) < 0)
                                s->heartbeat_time = 0;
                        s->known = true;
                        found++;
                }
        }
        return found;
}
