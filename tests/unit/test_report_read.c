/* test_report_read.c: the one reader of gpunode.report/v1: every scenario's real report read back whole, GPUs and
 * pods, the bounds and refusals, text with bytes that are not UTF-8. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <dirent.h>

#include "basic/util.h"
#include "output/output.h"
#include "output/report_read.h"

/* Returns the JSON file (a scenario's expected report, its "exit N" line after the document) loaded, or fails. */
static json_t *load(const char *path) {
        json_error_t e;
        json_t *j = json_load_file(path, JSON_DISABLE_EOF_CHECK, &e);
        if (!j) fail_msg("%s: %s", path, e.text);
        return j;
}

/* Returns doc parsed from text, or fails the test. */
static json_t *parse(const char *text) {
        json_error_t e;
        json_t *j = json_loads(text, 0, &e);
        if (!j) fail_msg("%s: %s", text, e.text);
        return j;
}

/* Returns whether name ends in ".json". */
static bool json_name(const char *name) {
        size_t n = strlen(name);
        return n > 5 && streq(name + n - 5, ".json");
}

/* Drops each check's depends_on (the definitions' edges, which a reader has no use for) from doc. */
static void drop_depends(json_t *doc) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(doc, "checks"), i, c) json_object_del(c, "depends_on");
}

/* Fills the placeholders run-scenarios.sh writes for what differs between runs (time, version) as a
 * gpunode fills them. */
static void fill_placeholders(json_t *doc) {
        json_object_set_new(doc, "time", json_string("2026-12-02T02:14:00Z"));
        json_object_set_new(doc, "version", json_string(GPUNODE_VERSION));
}

/* Every report the built binary wrote for a scenario (tests/scenarios/x/expected*.json) reads back into a struct
 * report that writes the same document again: node, root, verdict, root cause, layers recomputed by the engine,
 * every check, every GPU with its pods. */
static void test_round_trip_scenarios(void **state) {
        (void)state;
        const char *root = getenv("GPUNODE_SOURCE_ROOT");
        assert_non_null(root);
        _cleanup_free_ char *dir = xasprintf("%s/tests/scenarios", root);
        DIR *d = opendir(dir);
        assert_non_null(d);
        size_t n = 0, with_gpus = 0, with_pods = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.') continue;
                _cleanup_free_ char *sub = xasprintf("%s/%s", dir, de->d_name);
                DIR *s = opendir(sub);
                if (!s) continue;
                struct dirent *fe;
                while ((fe = readdir(s))) {
                        if (!startswith(fe->d_name, "expected") || !json_name(fe->d_name)) continue;
                        _cleanup_free_ char *path = xasprintf("%s/%s", sub, fe->d_name);
                        json_t *doc = load(path);
                        fill_placeholders(doc);
                        struct report r;
                        char *err = NULL;
                        if (report_from_json(doc, &r, &err) < 0) fail_msg("%s: %s", path, err);
                        json_t *again = report_to_json(&r);
                        drop_depends(doc);
                        drop_depends(again);
                        if (!json_equal(doc, again)) {
                                _cleanup_free_ char *a = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
                                _cleanup_free_ char *b = json_dumps(again, JSON_COMPACT | JSON_SORT_KEYS);
                                fail_msg("%s does not read back whole:\n%s\n%s", path, a, b);
                        }
                        with_gpus += r.n_gpus > 0;
                        for (size_t g = 0; g < r.n_gpus; g++) with_pods += r.gpus[g].n_pods;
                        n++;
                        json_decref(again);
                        json_decref(doc);
                        report_read_free(&r);
                }
                closedir(s);
        }
        closedir(d);
        print_message("%zu scenario reports read back whole (%zu with GPUs, %zu pods in all)\n", n, with_gpus,
                      with_pods);
        assert_true(n >= 40);
        assert_true(with_gpus >= 10);
        assert_true(with_pods >= 2);
}

/* The GPUs of a real report: index, UUID, PCI bus id, name, and the pods holding each. */
static void test_gpus(void **state) {
        (void)state;
        const char *root = getenv("GPUNODE_SOURCE_ROOT");
        _cleanup_free_ char *path = xasprintf("%s/tests/scenarios/gpu-xid79-held-by-pod/expected.json", root);
        json_t *doc = load(path);
        struct report r;
        char *err = NULL;
        assert_int_equal(report_from_json(doc, &r, &err), 0);
        assert_int_equal(r.n_gpus, json_array_size(json_object_get(doc, "gpus")));
        assert_int_equal(r.gpus[0].index, 0);
        assert_string_equal(r.gpus[0].uuid, "GPU-5e2d1c00-a13f-61b9-c128-3d1475965100");
        assert_string_equal(r.gpus[0].pci_bus_id, "0000:18:00.0");
        assert_string_equal(r.gpus[0].name, "NVIDIA H100 80GB HBM3");
        assert_int_equal(r.gpus[0].n_pods, 2);
        assert_string_equal(r.gpus[0].pods[1].namespace, "team-b");
        assert_string_equal(r.gpus[0].pods[1].pod, "notebook-b7");
        assert_string_equal(r.gpus[0].pods[1].container, "jupyter");
        assert_int_equal(r.gpus[1].n_pods, 0);
        bool held = false;
        for (size_t g = 0; g < r.n_gpus; g++)
                for (size_t p = 0; p < r.gpus[g].n_pods; p++)
                        held |= g == 4 && streq(r.gpus[g].pods[p].pod, "llama-ft-worker-0");
        assert_true(held);
        report_read_free(&r);
        json_decref(doc);

        /* what NVML did not say is null, and stays NULL; no gpus member at all is no GPU */
        json_t *j = parse("{\"schema\":\"gpunode.report/v1\",\"verdict\":\"failed\",\"checks\":[],\"gpus\":[{\"index\":"
                          "3,\"uuid\":null,\"pci_bus_id\":null,\"name\":null,\"pods\":[{\"namespace\":\"ml\",\"pod\":"
                          "\"p\",\"container\":null}]}]}");
        assert_int_equal(report_from_json(j, &r, &err), 0);
        assert_int_equal(r.n_gpus, 1);
        assert_int_equal(r.gpus[0].index, 3);
        assert_null(r.gpus[0].uuid);
        assert_null(r.gpus[0].name);
        assert_null(r.gpus[0].pods[0].container);
        assert_string_equal(r.gpus[0].pods[0].pod, "p");
        report_read_free(&r);
        json_decref(j);
        j = parse("{\"schema\":\"gpunode.report/v1\",\"verdict\":\"healthy\",\"checks\":[]}");
        assert_int_equal(report_from_json(j, &r, &err), 0);
        assert_int_equal(r.n_gpus, 0);
        assert_null(r.gpus);
        report_read_free(&r);
        json_decref(j);
}

/* Returns a report with n GPUs, each held by pods pods; a new reference. */
static json_t *many(size_t n, size_t pods) {
        json_t *gpus = json_array();
        for (size_t i = 0; i < n; i++) {
                json_t *p = json_array();
                for (size_t k = 0; k < pods; k++)
                        json_array_append_new(p, json_pack("{s:s, s:s, s:s}", "namespace", "ns", "pod", "x",
                                                           "container", "c"));
                json_array_append_new(gpus, json_pack("{s:I, s:s, s:o}", "index", (json_int_t)i, "uuid", "GPU-x",
                                                      "pods", p));
        }
        return json_pack("{s:s, s:s, s:[], s:o}", "schema", "gpunode.report/v1", "verdict", "healthy", "checks",
                         "gpus", gpus);
}

/* The reader's bounds: GPUs and pods counted and refused past their caps, GPU fields of the wrong type refused,
 * evidence past its cap counted, not kept. */
static void test_bounds(void **state) {
        (void)state;
        struct report r;
        char *err = NULL;
        json_t *j = many(REPORT_READ_MAX_GPUS, 1);
        assert_int_equal(report_from_json(j, &r, &err), 0);
        assert_int_equal(r.n_gpus, REPORT_READ_MAX_GPUS);
        report_read_free(&r);
        json_decref(j);
        j = many(REPORT_READ_MAX_GPUS + 1, 0);
        assert_int_equal(report_from_json(j, &r, &err), -EBADMSG);
        assert_non_null(strstr(err, "1025 GPUs"));
        free(err);
        json_decref(j);
        j = many(2, REPORT_READ_MAX_PODS + 1);
        err = NULL;
        assert_int_equal(report_from_json(j, &r, &err), -EBADMSG);
        assert_non_null(strstr(err, "1025 pods"));
        assert_int_equal(r.n_gpus, 0);
        free(err);
        json_decref(j);

        static const char *const bad[] = {
                "\"gpus\":{}",
                "\"gpus\":[1]",
                "\"gpus\":[{\"uuid\":\"GPU-x\"}]",
                "\"gpus\":[{\"index\":-1}]",
                "\"gpus\":[{\"index\":65536}]",
                "\"gpus\":[{\"index\":1.5}]",
                "\"gpus\":[{\"index\":0,\"uuid\":7}]",
                "\"gpus\":[{\"index\":0,\"name\":[\"x\"]}]",
                "\"gpus\":[{\"index\":0,\"pods\":{}}]",
                "\"gpus\":[{\"index\":0,\"pods\":[\"ns/pod\"]}]",
                "\"gpus\":[{\"index\":0,\"pods\":[{\"namespace\":\"ns\",\"pod\":false}]}]",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_free_ char *text = xasprintf("{\"schema\":\"gpunode.report/v1\",\"verdict\":\"failed\","
                                                      "\"checks\":[{\"id\":\"a.b\",\"component\":\"a\",\"layer\":1,"
                                                      "\"status\":\"fail\"}],%s}", bad[i]);
                j = parse(text);
                err = NULL;
                if (report_from_json(j, &r, &err) != -EBADMSG) fail_msg("accepted: %s", bad[i]);
                assert_non_null(err);
                assert_int_equal(r.n_findings, 0);
                assert_null(r.node);
                free(err);
                json_decref(j);
        }

        json_t *ev = json_array();
        for (int i = 0; i < REPORT_READ_MAX_EVIDENCE + 250; i++) json_array_append_new(ev, json_sprintf("line %d", i));
        json_array_append_new(ev, json_integer(5)); /* not text: neither kept nor counted */
        j = json_pack("{s:s, s:s, s:[{s:s, s:s, s:i, s:s, s:o}]}", "schema", "gpunode.report/v1", "verdict", "failed",
                      "checks", "id", "a.b", "component", "a", "layer", 1, "status", "fail", "evidence", ev);
        assert_int_equal(report_from_json(j, &r, &err), 0);
        assert_int_equal(r.findings[0].n_evidence, REPORT_READ_MAX_EVIDENCE);
        assert_int_equal(r.findings[0].n_evidence_more, 250);
        assert_string_equal(r.findings[0].evidence[999], "line 999");
        report_read_free(&r);
        json_decref(j);
}

/* The text form: bytes that are not UTF-8 read as '?', text that is not JSON refused with jansson's reason. */
/* time and version (additive to gpunode.report/v1): read when they are there, written back the same; a
 * report without them, or with a time that is no RFC 3339 time, is still read, its time unknown. */
static void test_time_and_version(void **state) {
        (void)state;
        static const char base[] = "{\"schema\": \"gpunode.report/v1\", \"verdict\": \"healthy\", \"checks\": []%s}";
        static const struct {
                const char *members;
                int64_t time;
                const char *version;
        } t[] = {
                { ", \"version\": \"0.1.0\", \"time\": \"2026-12-02T02:14:00Z\"", 1796177640, "0.1.0" },
                { ", \"time\": \"2026-12-02T04:14:00+02:00\"", 1796177640, "" },
                { "", 0, "" },
                { ", \"time\": null, \"version\": null", 0, "" },
                { ", \"time\": \"@TIME@\", \"version\": \"@VERSION@\"", 0, "" },
                { ", \"time\": 1796177640, \"version\": \"0.1.0\\u001b[2J\"", 0, "" },
        };
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                _cleanup_free_ char *text = xasprintf(base, t[i].members);
                json_t *doc = parse(text);
                struct report r;
                char *err = NULL;
                assert_int_equal(report_from_json(doc, &r, &err), 0);
                assert_int_equal(r.time, t[i].time);
                assert_string_equal(r.version, t[i].version);
                json_t *back = report_to_json(&r);
                const json_t *tj = json_object_get(back, "time");
                if (t[i].time)
                        assert_string_equal(json_string_value(tj), "2026-12-02T02:14:00Z");
                else
                        assert_true(json_is_null(tj));
                json_decref(back);
                report_read_free(&r);
                json_decref(doc);
        }
}

static void test_from_text(void **state) {
        (void)state;
        static const char text[] = "{\"schema\":\"gpunode.report/v1\",\"node\":\"n\xff\",\"verdict\":\"failed\","
                                   "\"checks\":[{\"id\":\"driver.x\",\"component\":\"driver\",\"layer\":1,\"status\":"
                                   "\"fail\",\"summary\":\"bad \xff\xfe byte \xc3\",\"evidence\":[\"a\xc0\xafz\"]}],"
                                   "\"root_cause\":{\"check\":\"driver.x\"}}";
        struct report r;
        char *err = NULL;
        assert_int_equal(report_from_text(text, sizeof text - 1, &r, &err), 0);
        assert_string_equal(r.node, "n?");
        assert_string_equal(r.findings[0].summary, "bad ?? byte ?");
        assert_string_equal(r.findings[0].evidence[0], "a??z");
        assert_ptr_equal(r.root_cause, &r.findings[0]);
        report_read_free(&r);
        static const char *const bad[] = { "", "{", "[1,2]", "\"just a string\"", "{\"a\":", "null", "{}" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                err = NULL;
                assert_int_equal(report_from_text(bad[i], strlen(bad[i]), &r, &err), -EBADMSG);
                assert_non_null(err);
                free(err);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_round_trip_scenarios),
                cmocka_unit_test(test_gpus),
                cmocka_unit_test(test_bounds),
                cmocka_unit_test(test_from_text),
                cmocka_unit_test(test_time_and_version),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
