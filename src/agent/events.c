/* events.c: condition transitions -> Kubernetes Events, with a hold-down and count aggregation; pure. */
#include "agent/events.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "basic/util.h"

/* Remembers cur as what the last decision saw. Returns whether it differs from what the one before saw
 * (a transition). */
static bool seen(struct agent_event_layer *st, const struct agent_condition *cur) {
        bool changed =
                st->seen_status != cur->status || (cur->status == AGENT_TRUE && !streq(st->seen_reason, cur->reason));
        st->seen_status = cur->status;
        snprintf(st->seen_reason, sizeof st->seen_reason, "%s", cur->reason);
        return changed;
}

bool agent_event_decide(struct agent_event_layer *st, unsigned layer, const struct agent_condition *cur, int64_t now,
                        int64_t hold_down_s, const char *node, struct agent_event *ret) {
        bool transition = st->have ? seen(st, cur) : (seen(st, cur), false);
        st->held_until = 0;
        if (!st->have) {
                st->have = true;
                st->status = cur->status;
                snprintf(st->reason, sizeof st->reason, "%s", cur->reason);
                st->time = 0;
                if (cur->status != AGENT_TRUE) return false;
        } else {
                bool held = st->time > 0 && now - st->time < hold_down_s;
                if (held && transition) st->suppressed++;
                bool same = st->status == cur->status && (cur->status != AGENT_TRUE || streq(st->reason, cur->reason));
                if (same) return false;
                if (held) {
                        if (transition) st->held_until = st->time + hold_down_s;
                        return false;
                }
        }
        memset(ret, 0, sizeof *ret);
        ret->type = cur->status == AGENT_TRUE ? "Warning" : "Normal";
        snprintf(ret->reason, sizeof ret->reason, "%s", cur->reason);
        _cleanup_free_ char *msg =
                st->suppressed ? xasprintf("%s is %s: %s (after %u transition(s) held back by the hold-down)",
                                           agent_condition_type(layer), agent_status_name(cur->status), cur->message,
                                           st->suppressed)
                               : xasprintf("%s is %s: %s", agent_condition_type(layer), agent_status_name(cur->status),
                                           cur->message);
        agent_bound_utf8(msg, ret->message, sizeof ret->message);
        /* The same reason and type written recently: aggregate into its count. */
        struct agent_event_record *rec = NULL, *slot = NULL;
        for (unsigned i = 0; i < AGENT_EVENT_RECENT; i++) {
                struct agent_event_record *r = &st->recent[i];
                if (r->used && streq(r->reason, ret->reason) && streq(r->type, ret->type) &&
                    now - r->last_time < AGENT_EVENT_AGGREGATE_S)
                        rec = r;
                /* where a new one goes: a free record, else the least recently written */
                if (!slot || (slot->used && (!r->used || r->last_time < slot->last_time))) slot = r;
        }
        if (rec) {
                rec->count++;
                rec->last_time = now;
                ret->patch = true;
        } else {
                rec = slot;
                memset(rec, 0, sizeof *rec);
                rec->used = true;
                snprintf(rec->reason, sizeof rec->reason, "%s", ret->reason);
                snprintf(rec->type, sizeof rec->type, "%s", ret->type);
                /* The kubelet's naming (node, a dot, hex time), plus the layer and reason so that names
                 * never collide; lowercase, as object names must be. */
                char low[AGENT_REASON_MAX];
                size_t n = 0;
                for (const char *p = ret->reason; *p && n + 1 < sizeof low; p++)
                        low[n++] = (char)tolower((unsigned char)*p);
                low[n] = 0;
                snprintf(rec->name, sizeof rec->name, "%.180s.gpunode-l%u-%.40s.%llx", node, layer, low,
                         (unsigned long long)now);
                rec->count = 1;
                rec->first_time = rec->last_time = now;
        }
        snprintf(ret->name, sizeof ret->name, "%s", rec->name);
        ret->count = rec->count;
        ret->first_time = rec->first_time;
        ret->last_time = now;
        st->status = cur->status;
        snprintf(st->reason, sizeof st->reason, "%s", cur->reason);
        st->time = now;
        st->suppressed = 0;
        return true;
}

json_t *agent_event_object(const struct agent_event *ev, const char *node, const char *uid) {
        char first[32], last[32];
        agent_time_format(ev->first_time, first, sizeof first);
        agent_time_format(ev->last_time, last, sizeof last);
        return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s, s:s}, s:s, s:s, s:s, s:{s:s, s:s}, "
                         "s:s, s:s, s:i, s:s, s:s}",
                         "apiVersion", "v1", "kind", "Event", "metadata", "name", ev->name, "namespace", "default",
                         "involvedObject", "apiVersion", "v1", "kind", "Node", "name", node, "uid", uid ? uid : "",
                         "type", ev->type, "reason", ev->reason, "message", ev->message, "source", "component",
                         "gpunode-agent", "host", node, "firstTimestamp", first, "lastTimestamp", last, "count",
                         (json_int_t)ev->count, "reportingComponent", "gpunode-agent", "reportingInstance", node);
}

json_t *agent_event_patch(const struct agent_event *ev) {
        char last[32];
        agent_time_format(ev->last_time, last, sizeof last);
        return json_pack("{s:i, s:s, s:s}", "count", (json_int_t)ev->count, "lastTimestamp", last, "message",
                         ev->message);
}
