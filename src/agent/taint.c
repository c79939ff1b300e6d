/* taint.c: whether the node should carry gpunode.io/unhealthy, the circuit breaker's arithmetic, the patch; pure. */
#include "agent/taint.h"

#include <math.h>
#include <string.h>

#include "basic/util.h"
#include "kube/kube_objects.h"

const char *agent_taint_wanted(const struct agent_condition c[AGENT_N_LAYERS]) {
        if (c[0].status == AGENT_TRUE) return "hardware";
        if (c[1].status == AGENT_TRUE) return "container-runtime";
        return NULL;
}

const char *agent_taint_current(const json_t *node) {
        const json_t *taints = json_object_get(json_object_get(node, "spec"), "taints");
        size_t i;
        const json_t *t;
        json_array_foreach(taints, i, t) {
                const char *key = kube_json_str(json_object_get(t, "key"));
                if (key && streq(key, AGENT_TAINT_KEY)) {
                        /* a value holding a NUL is none the agent writes: "" (it is changed, not kept) */
                        const char *v = kube_json_str(json_object_get(t, "value"));
                        return v ? v : "";
                }
        }
        return NULL;
}

unsigned agent_taint_allowed(unsigned gpu_nodes, double max_share) {
        double a = floor(max_share * (double)gpu_nodes + 1e-9);
        return a < 1 ? 1 : (unsigned)a;
}

void agent_taint_counter_init(struct agent_taint_counter *c, const char *self) {
        *c = (struct agent_taint_counter){ .seen = json_object(), .self = self };
}

void agent_taint_counter_add(struct agent_taint_counter *c, const json_t *node) {
        const char *name = kube_json_str(json_object_get(json_object_get(node, "metadata"), "name"));
        if (!name || !*name || json_object_get(c->seen, name)) return;
        json_object_set_new(c->seen, name, json_true());
        if (!(c->self && streq(name, c->self)) && agent_taint_current(node)) c->tainted++;
}

void agent_taint_counter_done(struct agent_taint_counter *c, unsigned *ret_gpu_nodes, unsigned *ret_tainted_others) {
        if (c->self && !json_object_get(c->seen, c->self)) json_object_set_new(c->seen, c->self, json_true());
        *ret_gpu_nodes = (unsigned)json_object_size(c->seen);
        *ret_tainted_others = c->tainted;
        json_decref(c->seen);
        c->seen = NULL;
}

void agent_taint_count(const json_t *lists[], unsigned n_lists, const char *self, unsigned *ret_gpu_nodes,
                       unsigned *ret_tainted_others) {
        struct agent_taint_counter c;
        agent_taint_counter_init(&c, self);
        for (unsigned l = 0; l < n_lists; l++) {
                const json_t *items = json_is_array(lists[l]) ? lists[l] : json_object_get(lists[l], "items");
                size_t i;
                const json_t *n;
                json_array_foreach(items, i, n) agent_taint_counter_add(&c, n);
        }
        agent_taint_counter_done(&c, ret_gpu_nodes, ret_tainted_others);
}

enum agent_taint_action agent_taint_decide(const char *want, const char *has, unsigned gpu_nodes,
                                           unsigned tainted_others, double max_share) {
        if (!want) return has ? AGENT_TAINT_REMOVE : AGENT_TAINT_NONE;
        if (has) return streq(has, want) ? AGENT_TAINT_NONE : AGENT_TAINT_ADD;
        if (tainted_others + 1 > agent_taint_allowed(gpu_nodes, max_share)) return AGENT_TAINT_REFUSE;
        return AGENT_TAINT_ADD;
}

json_t *agent_taint_patch(const json_t *node, const char *want) {
        json_t *list = json_array();
        const json_t *taints = json_object_get(json_object_get(node, "spec"), "taints");
        size_t i;
        json_t *t;
        json_array_foreach(taints, i, t) {
                const char *key = kube_json_str(json_object_get(t, "key"));
                if (key && streq(key, AGENT_TAINT_KEY)) continue;
                json_array_append(list, t);
        }
        if (want)
                json_array_append_new(list, json_pack("{s:s, s:s, s:s}", "key", AGENT_TAINT_KEY, "value", want,
                                                      "effect", "NoSchedule"));
        const char *rv = json_string_value(json_object_get(json_object_get(node, "metadata"), "resourceVersion"));
        json_t *patch = json_pack("{s:{s:o}}", "spec", "taints", list);
        if (rv) json_object_set_new(patch, "metadata", json_pack("{s:s}", "resourceVersion", rv));
        return patch;
}
