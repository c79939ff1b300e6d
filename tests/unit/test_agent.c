/* test_agent.c: the agent's pure decisions: conditions from real scenario reports, the patch and heartbeat,
 * Events with hold-down and aggregation, the taint and its circuit breaker. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/conditions.h"
#include "agent/events.h"
#include "agent/taint.h"
#include "output/report_read.h"
#include "basic/util.h"

/* Reads the report of scenario name (its expected.json, the final "exit N" line after the document) into *ret with
 * the one reader; fails the test otherwise. */
static void scenario_report(const char *name, struct report *ret) {
        const char *src = getenv("GPUNODE_SOURCE_ROOT");
        assert_non_null(src);
        _cleanup_free_ char *path = xasprintf("%s/tests/scenarios/%s/expected.json", src, name);
        json_error_t err;
        json_t *j = json_load_file(path, JSON_DISABLE_EOF_CHECK, &err);
        if (!j) fail_msg("%s: %s", path, err.text);
        _cleanup_free_ char *why = NULL;
        if (report_from_json(j, ret, &why) < 0) fail_msg("%s: %s", path, why);
        json_decref(j);
}

static void test_camel_and_bound(void **state) {
        (void)state;
        char b[64];
        assert_string_equal(agent_camel_case("driver.xid-errors", b, sizeof b), "DriverXidErrors");
        assert_string_equal(agent_camel_case("container-toolkit.cdi-specs", b, sizeof b), "ContainerToolkitCdiSpecs");
        /* a 2-byte character straddling the cut is dropped whole */
        char in[40], out[10];
        memset(in, 'a', sizeof in);
        memcpy(in + 5, "\xc3\xa9", 2);
        in[sizeof in - 1] = 0;
        agent_bound_utf8(in, out, sizeof out);
        assert_true(strlen(out) <= 9);
        assert_string_equal(out, "aaaaa...");
        agent_bound_utf8("short", out, sizeof out);
        assert_string_equal(out, "short");
        int64_t t;
        assert_int_equal(agent_time_parse("2024-05-01T10:00:00Z", &t), 0);
        assert_string_equal(agent_time_format(t, b, sizeof b), "2024-05-01T10:00:00Z");
        assert_int_equal(agent_time_parse("2024-05-01T10:00:00.123Z", &t), 0);
        assert_int_equal(agent_time_parse("yesterday", &t), -EINVAL);
}

static void test_conditions_healthy(void **state) {
        (void)state;
        struct report r;
        scenario_report("k8s-healthy", &r);
        struct agent_condition c[AGENT_N_LAYERS];
        assert_int_equal(agent_conditions_from_report(&r, c), 0);
        for (unsigned i = 0; i < AGENT_N_LAYERS; i++) assert_int_equal(c[i].status, AGENT_FALSE);
        assert_string_equal(c[0].reason, "GPUHardwareHealthy");
        assert_string_equal(c[3].reason, "GPUObservabilityHealthy");
        report_read_free(&r);
        /* no cluster access: layer 3 all skipped -> Unknown */
        scenario_report("hgx-h100-healthy", &r);
        assert_int_equal(agent_conditions_from_report(&r, c), 0);
        assert_int_equal(c[0].status, AGENT_FALSE);
        assert_int_equal(c[2].status, AGENT_UNKNOWN);
        assert_string_equal(c[2].reason, "GPUResourceExposureNotChecked");
        report_read_free(&r);
        assert_int_equal(agent_conditions_from_report(NULL, c), -EINVAL);
}

static void test_conditions_failed(void **state) {
        (void)state;
        struct report r;
        scenario_report("k8s-driver-broken", &r);
        struct agent_condition c[AGENT_N_LAYERS];
        assert_int_equal(agent_conditions_from_report(&r, c), 0);
        assert_int_equal(c[0].status, AGENT_TRUE);
        assert_string_equal(c[0].reason, "DriverModuleSignature"); /* the report's root cause, not the first fail */
        assert_non_null(strstr(c[0].message, "signature is not trusted; remedy: sign the module"));
        assert_int_equal(c[1].status, AGENT_UNKNOWN);
        assert_string_equal(c[1].reason, "BlockedByDriverModuleSignature");
        assert_int_equal(c[2].status, AGENT_UNKNOWN);
        assert_int_equal(c[3].status, AGENT_UNKNOWN);
        report_read_free(&r);
        scenario_report("xid-48-then-64", &r);
        assert_int_equal(agent_conditions_from_report(&r, c), 0);
        assert_int_equal(c[0].status, AGENT_TRUE);
        assert_string_equal(c[0].reason, "DriverXidErrors");
        assert_int_equal(c[1].status, AGENT_FALSE);
        report_read_free(&r);
}

static void test_patch_decision(void **state) {
        (void)state;
        struct report r;
        scenario_report("k8s-healthy", &r);
        struct agent_condition c[AGENT_N_LAYERS];
        assert_int_equal(agent_conditions_from_report(&r, c), 0);
        report_read_free(&r);
        struct agent_cond_state prev[AGENT_N_LAYERS] = { 0 }, next[AGENT_N_LAYERS];
        bool tr[AGENT_N_LAYERS];
        assert_int_equal(agent_conditions_decide(prev, c, 1000, 300, next, tr), AGENT_PATCH_CHANGE);
        assert_true(tr[0]);
        assert_int_equal(next[0].transition_time, 1000);
        memcpy(prev, next, sizeof prev);
        /* nothing changed: no patch until the heartbeat is due */
        assert_int_equal(agent_conditions_decide(prev, c, 1060, 300, next, tr), AGENT_PATCH_NONE);
        assert_false(tr[0]);
        assert_int_equal(agent_conditions_decide(prev, c, 1300, 300, next, tr), AGENT_PATCH_HEARTBEAT);
        assert_int_equal(next[0].transition_time, 1000);
        assert_int_equal(next[0].heartbeat_time, 1300);
        memcpy(prev, next, sizeof prev);
        /* a failure: a change at once, layer 1's transition time moves, the others' stay */
        scenario_report("xid-48-then-64", &r);
        struct agent_condition f[AGENT_N_LAYERS];
        assert_int_equal(agent_conditions_from_report(&r, f), 0);
        report_read_free(&r);
        assert_int_equal(agent_conditions_decide(prev, f, 1310, 300, next, tr), AGENT_PATCH_CHANGE);
        assert_true(tr[0]);
        assert_false(tr[1]);
        assert_int_equal(next[0].transition_time, 1310);
        assert_int_equal(next[1].transition_time, 1000);
        /* the body holds exactly the four types; read back from a Node it is the same state */
        json_t *patch = agent_conditions_patch(next);
        json_t *conds = json_object_get(json_object_get(patch, "status"), "conditions");
        assert_int_equal(json_array_size(conds), 4);
        assert_string_equal(json_string_value(json_object_get(json_array_get(conds, 0), "status")), "True");
        struct agent_cond_state back[AGENT_N_LAYERS];
        assert_int_equal(agent_conditions_from_node(patch, back), 4);
        assert_int_equal(back[0].transition_time, 1310);
        assert_string_equal(back[0].c.reason, "DriverXidErrors");
        assert_int_equal(agent_conditions_decide(back, f, 1320, 300, next, tr), AGENT_PATCH_NONE);
        json_decref(patch);
}

static void test_events(void **state) {
        (void)state;
        struct agent_event_layer st = { 0 };
        struct agent_condition ok = { .status = AGENT_FALSE, .reason = "GPUHardwareHealthy", .message = "fine" };
        struct agent_condition bad = { .status = AGENT_TRUE, .reason = "DriverXidErrors", .message = "Xid 79" };
        struct agent_event ev;
        /* a healthy baseline writes nothing */
        assert_false(agent_event_decide(&st, 1, &ok, 100, 300, "node-a", &ev));
        assert_false(agent_event_decide(&st, 1, &ok, 160, 300, "node-a", &ev));
        /* failure: a Warning */
        assert_true(agent_event_decide(&st, 1, &bad, 200, 300, "node-a", &ev));
        assert_string_equal(ev.type, "Warning");
        assert_string_equal(ev.reason, "DriverXidErrors");
        assert_false(ev.patch);
        assert_non_null(strstr(ev.message, "GPUHardwareProblem is True: Xid 79"));
        char first_name[256];
        snprintf(first_name, sizeof first_name, "%s", ev.name);
        /* flapping inside the hold-down: nothing; back to the last Event's state: nothing */
        assert_false(agent_event_decide(&st, 1, &ok, 260, 300, "node-a", &ev));
        assert_false(agent_event_decide(&st, 1, &bad, 320, 300, "node-a", &ev));
        assert_false(agent_event_decide(&st, 1, &ok, 380, 300, "node-a", &ev));
        /* after the hold-down: one Normal, naming the transitions held back */
        assert_true(agent_event_decide(&st, 1, &ok, 520, 300, "node-a", &ev));
        assert_string_equal(ev.type, "Normal");
        assert_non_null(strstr(ev.message, "held back"));
        /* failing again an hour-window later: the same Warning Event is PATCHed */
        assert_true(agent_event_decide(&st, 1, &bad, 900, 300, "node-a", &ev));
        assert_true(ev.patch);
        assert_int_equal(ev.count, 2);
        assert_string_equal(ev.name, first_name);
        json_t *o = agent_event_object(&ev, "node-a", "uid-1");
        assert_string_equal(json_string_value(json_object_get(json_object_get(o, "involvedObject"), "kind")), "Node");
        assert_string_equal(json_string_value(json_object_get(json_object_get(o, "metadata"), "namespace")), "default");
        json_decref(o);
        /* a failing baseline writes a Warning at once */
        struct agent_event_layer st2 = { 0 };
        assert_true(agent_event_decide(&st2, 2, &bad, 100, 300, "node-a", &ev));
        /* many flaps over an hour stay bounded: at most one per hold-down */
        struct agent_event_layer st3 = { 0 };
        unsigned written = 0;
        for (int t = 0; t < 3600; t += 60)
                written += agent_event_decide(&st3, 1, (t / 60) % 2 ? &bad : &ok, t, 300, "n", &ev);
        assert_true(written <= 3600 / 300 + 1);
}

/* One heal inside the hold-down, then many check cycles in the same state: the Event counts one transition
 * held back, not one per cycle (before: "27 more transition(s)" after a single heal); the decision that
 * begins holding it back says until when, the ones after it do not. */
static void test_events_count_transitions(void **state) {
        (void)state;
        struct agent_event_layer st = { 0 };
        struct agent_condition ok = { .status = AGENT_FALSE, .reason = "GPUHardwareHealthy", .message = "fine" };
        struct agent_condition bad = { .status = AGENT_TRUE, .reason = "DriverXidErrors", .message = "Xid 79" };
        struct agent_event ev;
        assert_false(agent_event_decide(&st, 1, &ok, 100, 300, "node-a", &ev));
        assert_true(agent_event_decide(&st, 1, &bad, 200, 300, "node-a", &ev));
        assert_int_equal(st.held_until, 0);
        assert_false(agent_event_decide(&st, 1, &ok, 210, 300, "node-a", &ev));
        assert_int_equal(st.held_until, 500);
        for (int64_t t = 220; t < 500; t += 10) {
                assert_false(agent_event_decide(&st, 1, &ok, t, 300, "node-a", &ev));
                assert_int_equal(st.held_until, 0);
        }
        assert_true(agent_event_decide(&st, 1, &ok, 510, 300, "node-a", &ev));
        assert_non_null(strstr(ev.message, "(after 1 transition(s) held back by the hold-down)"));
        /* ok -> bad -> ok inside the next hold-down: two transitions, the state back to the last Event's */
        assert_false(agent_event_decide(&st, 1, &bad, 520, 300, "node-a", &ev));
        assert_false(agent_event_decide(&st, 1, &bad, 530, 300, "node-a", &ev));
        assert_false(agent_event_decide(&st, 1, &ok, 540, 300, "node-a", &ev));
        assert_false(agent_event_decide(&st, 1, &ok, 900, 300, "node-a", &ev)); /* nothing to say: as last said */
        assert_true(agent_event_decide(&st, 1, &bad, 910, 300, "node-a", &ev));
        assert_non_null(strstr(ev.message, "(after 2 transition(s) held back by the hold-down)"));
}

static void test_taint(void **state) {
        (void)state;
        struct agent_condition c[AGENT_N_LAYERS] = { 0 };
        assert_null(agent_taint_wanted(c));
        c[1].status = AGENT_TRUE;
        assert_string_equal(agent_taint_wanted(c), "container-runtime");
        c[0].status = AGENT_TRUE;
        assert_string_equal(agent_taint_wanted(c), "hardware");
        assert_int_equal(agent_taint_allowed(3, 0.1), 1);
        assert_int_equal(agent_taint_allowed(100, 0.1), 10);
        assert_int_equal(agent_taint_allowed(25, 0.1), 2);
        json_error_t err;
        json_t *list = json_loads("{\"items\":[{\"metadata\":{\"name\":\"a\"}},"
                                  "{\"metadata\":{\"name\":\"b\"},\"spec\":{\"taints\":[{\"key\":\"gpunode.io/unhealthy\",\"value\":\"hardware\",\"effect\":\"NoSchedule\"}]}},"
                                  "{\"metadata\":{\"name\":\"c\"}}]}",
                                  0, &err);
        json_t *list2 = json_loads("{\"items\":[{\"metadata\":{\"name\":\"c\"}},{\"metadata\":{\"name\":\"d\"}}]}", 0, &err);
        const json_t *lists[] = { list, list2 };
        unsigned n, tainted;
        agent_taint_count(lists, 2, "a", &n, &tainted);
        assert_int_equal(n, 4);
        assert_int_equal(tainted, 1);
        /* page by page: a name seen on an earlier page counts once; a name or taint key holding U+0000
         * is not another node's or the taint ("b\0x" is not "b", "gpunode.io/unhealthy\0" not the key) */
        json_t *page3 = json_loads("[{\"metadata\":{\"name\":\"b\\u0000x\"},\"spec\":{\"taints\":[{\"key\":"
                                   "\"gpunode.io/unhealthy\"}]}},{\"metadata\":{\"name\":\"e\"},\"spec\":{\"taints\":"
                                   "[{\"key\":\"gpunode.io/unhealthy\\u0000\"}]}},{\"metadata\":{\"name\":\"b\"}}]",
                                   JSON_ALLOW_NUL, &err);
        assert_non_null(page3);
        struct agent_taint_counter counter;
        agent_taint_counter_init(&counter, "a");
        for (size_t i = 0; i < json_array_size(json_object_get(list, "items")); i++)
                agent_taint_counter_add(&counter, json_array_get(json_object_get(list, "items"), i));
        for (size_t i = 0; i < json_array_size(page3); i++) agent_taint_counter_add(&counter, json_array_get(page3, i));
        unsigned n3, t3;
        agent_taint_counter_done(&counter, &n3, &t3);
        assert_int_equal(n3, 4); /* a b c e */
        assert_int_equal(t3, 1); /* b, once */
        json_decref(page3);
        assert_int_equal(agent_taint_decide("hardware", NULL, n, tainted, 0.1), AGENT_TAINT_REFUSE);
        assert_int_equal(agent_taint_decide("hardware", NULL, n, 0, 0.1), AGENT_TAINT_ADD);
        assert_int_equal(agent_taint_decide("hardware", "hardware", n, tainted, 0.1), AGENT_TAINT_NONE);
        assert_int_equal(agent_taint_decide("hardware", "container-runtime", n, tainted, 0.1), AGENT_TAINT_ADD);
        assert_int_equal(agent_taint_decide(NULL, "hardware", n, tainted, 0.1), AGENT_TAINT_REMOVE);
        assert_int_equal(agent_taint_decide(NULL, NULL, n, tainted, 0.1), AGENT_TAINT_NONE);
        /* the patch keeps others' taints and the resourceVersion */
        json_t *node = json_loads("{\"metadata\":{\"name\":\"b\",\"resourceVersion\":\"42\"},\"spec\":{\"taints\":["
                                  "{\"key\":\"other\",\"effect\":\"NoExecute\"},{\"key\":\"gpunode.io/unhealthy\",\"value\":\"hardware\",\"effect\":\"NoSchedule\"}]}}",
                                  0, &err);
        assert_string_equal(agent_taint_current(node), "hardware");
        json_t *p = agent_taint_patch(node, NULL);
        assert_int_equal(json_array_size(json_object_get(json_object_get(p, "spec"), "taints")), 1);
        assert_string_equal(json_string_value(json_object_get(json_object_get(p, "metadata"), "resourceVersion")), "42");
        json_decref(p);
        p = agent_taint_patch(node, "container-runtime");
        assert_int_equal(json_array_size(json_object_get(json_object_get(p, "spec"), "taints")), 2);
        json_decref(p);
        json_decref(node);
        json_decref(list);
        json_decref(list2);
}

/* A state of four written conditions, each c, written (transition and heartbeat) at t. */
static void state_of(struct agent_cond_state st[AGENT_N_LAYERS], const struct agent_condition *c, int64_t t) {
        for (unsigned i = 0; i < AGENT_N_LAYERS; i++)
                st[i] = (struct agent_cond_state){
                        .known = true, .c = c[i], .transition_time = t, .heartbeat_time = t
                };
}

static void test_heartbeat_in_future(void **state) {
        (void)state;
        struct agent_condition c[AGENT_N_LAYERS];
        for (unsigned i = 0; i < AGENT_N_LAYERS; i++)
                c[i] = (struct agent_condition){ .status = AGENT_FALSE, .reason = "Healthy", .message = "fine" };
        struct agent_cond_state prev[AGENT_N_LAYERS], next[AGENT_N_LAYERS];
        bool tr[AGENT_N_LAYERS];
        const int64_t now = 1800000000;
        /* a clock that ran ahead 2,274,747,054 s and was corrected: heartbeat at once, not never */
        state_of(prev, c, now + 2274747054);
        assert_int_equal(agent_conditions_decide(prev, c, now, 300, next, tr), AGENT_PATCH_HEARTBEAT);
        for (unsigned i = 0; i < AGENT_N_LAYERS; i++) {
                assert_int_equal(next[i].heartbeat_time, now);
                assert_int_equal(next[i].transition_time, now); /* brought back from the future */
                assert_false(tr[i]);
        }
        memcpy(prev, next, sizeof prev);
        assert_int_equal(agent_conditions_decide(prev, c, now + 10, 300, next, tr), AGENT_PATCH_NONE);
        /* within the skew (60 s ahead) it is only a clock a little ahead: no write */
        state_of(prev, c, now + 60);
        assert_int_equal(agent_conditions_decide(prev, c, now, 300, next, tr), AGENT_PATCH_NONE);
        state_of(prev, c, now + 61);
        assert_int_equal(agent_conditions_decide(prev, c, now, 300, next, tr), AGENT_PATCH_HEARTBEAT);
        /* read from a Node as the API stores it: the same */
        char future[32], nowtext[32];
        agent_time_format(now + 3600, future, sizeof future);
        agent_time_format(now, nowtext, sizeof nowtext);
        json_t *node = json_pack("{s:{s:[{s:s,s:s,s:s,s:s,s:s,s:s}]}}", "status", "conditions", "type",
                                 "GPUHardwareProblem", "status", "False", "reason", "Healthy", "message", "fine",
                                 "lastTransitionTime", nowtext, "lastHeartbeatTime", future);
        struct agent_cond_state back[AGENT_N_LAYERS];
        assert_int_equal(agent_conditions_from_node(node, back), 1);
        assert_int_equal(back[0].heartbeat_time, now + 3600);
        for (unsigned i = 1; i < AGENT_N_LAYERS; i++) back[i] = back[0];
        assert_int_equal(agent_conditions_decide(back, c, now, 300, next, tr), AGENT_PATCH_HEARTBEAT);
        assert_int_equal(next[0].heartbeat_time, now);
        json_decref(node);
}

static void test_hold_down(void **state) {
        (void)state;
        assert_int_equal(agent_conditions_hold_down(300), 60);
        assert_int_equal(agent_conditions_hold_down(30), 6);
        assert_int_equal(agent_conditions_hold_down(3600), 60);
        struct agent_condition ok[AGENT_N_LAYERS], bad[AGENT_N_LAYERS];
        for (unsigned i = 0; i < AGENT_N_LAYERS; i++) {
                ok[i] = (struct agent_condition){ .status = AGENT_FALSE, .reason = "Healthy", .message = "fine" };
                bad[i] = ok[i];
        }
        bad[0] = (struct agent_condition){ .status = AGENT_TRUE, .reason = "DriverXidErrors", .message = "Xid 79" };
        bad[1] = (struct agent_condition){ .status = AGENT_UNKNOWN,
                                           .reason = "BlockedByDriverXidErrors",
                                           .message = "x" };
        struct agent_cond_state prev[AGENT_N_LAYERS], next[AGENT_N_LAYERS];
        bool tr[AGENT_N_LAYERS];
        state_of(prev, ok, 1000);
        /* a worsening: at once */
        assert_int_equal(agent_conditions_decide(prev, bad, 1100, 300, next, tr), AGENT_PATCH_CHANGE);
        assert_int_equal(next[0].c.status, AGENT_TRUE);
        assert_int_equal(next[1].c.status, AGENT_UNKNOWN);
        assert_true(tr[0] && tr[1] && !tr[2]);
        memcpy(prev, next, sizeof prev);
        /* the improvement waits out the hold-down (60 s after the transition) */
        assert_int_equal(agent_conditions_decide(prev, ok, 1101, 300, next, tr), AGENT_PATCH_NONE);
        assert_int_equal(agent_conditions_decide(prev, ok, 1159, 300, next, tr), AGENT_PATCH_NONE);
        assert_int_equal(next[0].c.status, AGENT_TRUE);
        assert_int_equal(agent_conditions_decide(prev, ok, 1160, 300, next, tr), AGENT_PATCH_CHANGE);
        assert_int_equal(next[0].c.status, AGENT_FALSE);
        assert_int_equal(next[0].transition_time, 1160);
        assert_true(tr[0]);
        /* a heartbeat due while an improvement is held writes the held state, times moved */
        state_of(prev, bad, 1000);
        prev[0].transition_time = prev[1].transition_time = 1290;
        assert_int_equal(agent_conditions_decide(prev, ok, 1300, 300, next, tr), AGENT_PATCH_HEARTBEAT);
        assert_int_equal(next[0].c.status, AGENT_TRUE);
        assert_int_equal(next[0].heartbeat_time, 1300);
        assert_int_equal(next[0].transition_time, 1290);
        assert_false(tr[0]);
        /* other words at the same status: with the next patch, else once the last write is 60 s old */
        state_of(prev, bad, 1000);
        struct agent_condition bad2[AGENT_N_LAYERS];
        memcpy(bad2, bad, sizeof bad2);
        snprintf(bad2[0].message, sizeof bad2[0].message, "Xid 79, twice");
        prev[0].heartbeat_time = 1030;
        assert_int_equal(agent_conditions_decide(prev, bad2, 1040, 300, next, tr), AGENT_PATCH_NONE);
        assert_int_equal(agent_conditions_decide(prev, bad2, 1090, 300, next, tr), AGENT_PATCH_CHANGE);
        assert_string_equal(next[0].c.message, "Xid 79, twice");
        assert_int_equal(next[0].transition_time, 1000);
        /* flapping every 1 s check for 10 minutes: at most one worsening and one improvement per hold-down
         * (before: a PATCH every check, 600) */
        state_of(prev, ok, 0);
        unsigned patches = 0;
        for (int64_t t = 1000; t < 1600; t++) {
                if (agent_conditions_decide(prev, (t & 1) ? bad : ok, t, 300, next, tr) != AGENT_PATCH_NONE) patches++;
                memcpy(prev, next, sizeof prev);
        }
        print_message("flapping every 1 s check for 600 s: %u PATCH(es), hold-down 60 s\n", patches);
        assert_in_range(patches, 10, 2 * (600 / 60) + 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_camel_and_bound),
                cmocka_unit_test(test_conditions_healthy),
                cmocka_unit_test(test_conditions_failed),
                cmocka_unit_test(test_patch_decision),
                cmocka_unit_test(test_events),
                cmocka_unit_test(test_events_count_transitions),
                cmocka_unit_test(test_taint),
                cmocka_unit_test(test_heartbeat_in_future),
                cmocka_unit_test(test_hold_down),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
