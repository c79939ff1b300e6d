/* test_status_page.c: the agent's status page: report strings land escaped, bad reports are refused, the page stays
 * bounded. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <jansson.h>

#include "agent/status_page.h"
#include "output/report_read.h"
#include "basic/util.h"

/* Returns the number of times needle occurs in haystack. */
static size_t count(const char *haystack, const char *needle) {
        size_t n = 0;
        for (const char *p = haystack; (p = strstr(p, needle)); p += strlen(needle)) n++;
        return n;
}

/* Returns a malloc'd gpunode.report/v1 text with one failed check (id, evidence ev, the root cause)
 * and the node name node; aborts on a jansson failure. */
static char *report_with(const char *node, json_t *ev) {
        json_t *layers = json_array();
        for (int l = 1; l <= 4; l++)
                json_array_append_new(layers, json_pack("{s:i, s:s, s:s, s:[{s:s, s:s}]}", "layer", l, "name",
                                                        l == 1 ? "hardware enablement" : "other", "status",
                                                        l == 1 ? "failed" : "blocked", "components", "id",
                                                        "driver", "status", l == 1 ? "failed" : "blocked"));
        json_t *r = json_pack("{s:s, s:s, s:s, s:{s:i, s:s, s:s, s:s, s:s}, s:o, s:[{s:s, s:i, s:s, s:s, s:s, "
                              "s:o, s:s, s:n}, {s:s, s:i, s:s, s:s, s:s, s:[], s:n, s:s}], "
                              "s:[{s:i, s:s, s:s, s:s, s:[{s:s, s:s, s:s}]}]}",
                              "schema", "gpunode.report/v1", "node", node, "verdict", "failed",
                              "root_cause", "layer", 1, "component", "driver", "check", "driver.gpu-fallen-off-bus",
                              "summary", "1 GPU(s) have fallen off the bus", "remedy", "reboot <the> node",
                              "layers", layers,
                              "checks",
                              "id", "driver.gpu-fallen-off-bus", "layer", 1, "component", "driver", "status", "fail",
                              "summary", "1 GPU(s) have fallen off the bus", "evidence", ev, "remedy",
                              "reboot <the> node", "blocked_by",
                              "id", "driver.gpu-count", "layer", 1, "component", "driver", "status", "blocked",
                              "summary", "not checked", "evidence", "remedy", "blocked_by", "driver.gpu-fallen-off-bus",
                              "gpus", "index", 0, "uuid", "GPU-1234", "pci_bus_id", "0000:18:00.0", "name",
                              "NVIDIA H100", "pods", "namespace", "ml", "pod", "llama<0>", "container", "trainer");
        assert_non_null(r);
        char *s = json_dumps(r, JSON_COMPACT);
        json_decref(r);
        assert_non_null(s);
        return s;
}

/* Returns the page of a report's text as the agent renders it (read once by the one reader, which must accept
 * it) for node. */
static char *page_of(const char *json, const char *node) {
        struct report r;
        _cleanup_free_ char *err = NULL;
        if (report_from_text(json, strlen(json), &r, &err) < 0) fail_msg("refused: %s", err);
        char *html = status_page_html(&r, node);
        report_read_free(&r);
        return html;
}

static void test_null_report(void **state) {
        _cleanup_free_ char *html = status_page_html(NULL, "gpu-node-1");
        assert_non_null(strstr(html, "<!DOCTYPE html>"));
        assert_non_null(strstr(html, "first diagnosis has not finished"));
        assert_non_null(strstr(html, "gpu-node-1"));
        assert_non_null(strstr(html, "href=\"/metrics\""));
        assert_null(strstr(html, "<script"));
        _cleanup_free_ char *anon = status_page_html(NULL, NULL);
        assert_non_null(strstr(anon, "this node"));
}

static void test_unreadable_report(void **state) {
        /* the reader refuses them (the agent keeps its last page); the page it has meanwhile escapes the node */
        const char *bad[] = { "", "{", "[1,2]", "\"just a string\"", "{\"a\":", "null" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                struct report r;
                _cleanup_free_ char *err = NULL;
                assert_int_equal(report_from_text(bad[i], strlen(bad[i]), &r, &err), -EBADMSG);
        }
        _cleanup_free_ char *html = status_page_html(NULL, "n<1>");
        assert_non_null(strstr(html, "n&lt;1&gt;"));
        assert_null(strstr(html, "n<1>"));
}

static void test_root_cause_shown(void **state) {
        _cleanup_free_ char *json = report_with("node-a", json_pack("[s, s]", "NVML: GPU 3 lost", "kernel log: Xid 79"));
        _cleanup_free_ char *html = page_of(json, NULL);
        assert_non_null(strstr(html, "id=\"root-cause\""));
        assert_non_null(strstr(html, "<code class=\"rc-check\">driver.gpu-fallen-off-bus</code>"));
        assert_non_null(strstr(html, "1 GPU(s) have fallen off the bus"));
        assert_non_null(strstr(html, "kernel log: Xid 79"));
        assert_non_null(strstr(html, "reboot &lt;the&gt; node"));
        assert_non_null(strstr(html, "FAILED"));
        assert_non_null(strstr(html, "node-a"));                  /* the report's node when none is given */
        for (int l = 1; l <= 4; l++) {
                char want[32];
                snprintf(want, sizeof(want), "id=\"layer-%d\"", l);
                assert_non_null(strstr(html, want));
        }
        assert_non_null(strstr(html, "Not run: it rests on <code>driver.gpu-fallen-off-bus</code>"));
        assert_non_null(strstr(html, "GPU-1234"));
        assert_non_null(strstr(html, "ml/llama&lt;0&gt;"));
        assert_non_null(strstr(html, "href=\"/report\""));
        assert_null(strstr(html, "<script"));
}

/* The page says when the report's facts were read and how long ago, and reloads itself; a report that
 * does not say when shows no time, and a time ahead of the clock is said as such. */
static void test_checked_at(void **state) {
        (void)state;
        _cleanup_free_ char *json = report_with("node-a", json_pack("[]"));
        json_t *doc = json_loads(json, 0, NULL);
        json_object_set_new(doc, "time", json_string("2026-12-02T02:14:00Z"));
        json_object_set_new(doc, "version", json_string("0.1.0"));
        _cleanup_free_ char *timed = json_dumps(doc, JSON_COMPACT);
        json_decref(doc);
        struct report r;
        _cleanup_free_ char *err = NULL;
        assert_int_equal(report_from_text(timed, strlen(timed), &r, &err), 0);
        _cleanup_free_ char *html = status_page_html_at(&r, NULL, 1796177640 + 40);
        assert_non_null(strstr(html, "checked at <time datetime=\"2026-12-02T02:14:00Z\">2026-12-02T02:14:00Z</time> "
                                     "(40 s ago) by gpunode 0.1.0"));
        assert_non_null(strstr(html, "<meta http-equiv=\"refresh\" content=\"30\">"));
        _cleanup_free_ char *ahead = status_page_html_at(&r, NULL, 1796177640 - 5);
        assert_non_null(strstr(ahead, "(5 s ahead of this node's clock)"));
        report_read_free(&r);
        _cleanup_free_ char *untimed = page_of(json, NULL);
        assert_null(strstr(untimed, "checked at"));
}

/* Checks blocked by one failure fold into one line naming it; a check that did not pass links to its
 * explanation on the page, whose anchor exists (from the registry); a passing one does not link. */
static void test_blocked_folded_and_explained(void **state) {
        (void)state;
        _cleanup_free_ char *base = report_with("node-a", json_pack("[]"));
        json_t *doc = json_loads(base, 0, NULL);
        json_t *checks = json_object_get(doc, "checks");
        static const char *const more[] = { "driver.xid-errors", "driver.recovery-action" };
        for (size_t i = 0; i < ELEMENTSOF(more); i++)
                json_array_append_new(checks, json_pack("{s:s, s:i, s:s, s:s, s:s, s:[], s:n, s:s}", "id", more[i],
                                                        "layer", 1, "component", "driver", "status", "blocked",
                                                        "summary", "not checked", "evidence", "remedy", "blocked_by",
                                                        "driver.gpu-fallen-off-bus"));
        json_array_append_new(checks, json_pack("{s:s, s:i, s:s, s:s, s:s, s:[], s:n, s:n}", "id", "driver.pci-devices",
                                                "layer", 1, "component", "driver", "status", "pass", "summary",
                                                "8 GPUs", "evidence", "remedy", "blocked_by"));
        _cleanup_free_ char *json = json_dumps(doc, JSON_COMPACT);
        json_decref(doc);
        _cleanup_free_ char *html = page_of(json, NULL);
        assert_non_null(strstr(html, "3 checks not run: they rest on <a class=\"explain\" "
                                     "href=\"#explain-driver.gpu-fallen-off-bus\"><code>driver.gpu-fallen-off-bus</code></a>"));
        assert_null(strstr(html, "Not run: it rests on")); /* folded, not one block each */
        assert_int_equal(count(html, "id=\"explain-driver.gpu-fallen-off-bus\""), 1);
        assert_int_equal(count(html, "id=\"explain-driver.xid-errors\""), 1);
        assert_int_equal(count(html, "id=\"explain-driver.gpu-count\""), 1);
        assert_null(strstr(html, "id=\"explain-driver.pci-devices\""));
        assert_null(strstr(html, "href=\"#explain-driver.pci-devices\""));
        /* every link has its anchor */
        for (const char *p = html; (p = strstr(p, "href=\"#explain-")); p++) {
                const char *id = p + strlen("href=\"#explain-"), *end = strchr(id, '"');
                _cleanup_free_ char *anchor = xasprintf("id=\"explain-%.*s\"", (int)(end - id), id);
                if (!strstr(html, anchor)) fail_msg("no anchor for %s", anchor);
        }
}

/* A healthy node whose Kubernetes and observability layers were not checked (no cluster access) is not
 * called healthy in every layer: the page says which were not checked. */
static void test_unchecked_layers_not_healthy(void **state) {
        (void)state;
        _cleanup_free_ char *path = xasprintf("%s/tests/scenarios/hgx-h100-healthy/expected.json",
                                              getenv("GPUNODE_SOURCE_ROOT"));
        json_t *doc = json_load_file(path, JSON_DISABLE_EOF_CHECK, NULL);
        assert_non_null(doc);
        _cleanup_free_ char *json = json_dumps(doc, JSON_COMPACT);
        json_decref(doc);
        _cleanup_free_ char *html = page_of(json, NULL);
        assert_null(strstr(html, "Every layer is healthy"));
        assert_non_null(strstr(html, "Every layer checked is healthy. Not checked: layer 3 (Kubernetes resource "
                                     "exposure), layer 4 (observability)."));
}

static void test_hostile_strings_escaped(void **state) {
        const char *hostile = "<script>alert(1)</script><img src=x onerror=alert(2)> \"dq\" 'sq' & \x1b[2J end";
        _cleanup_free_ char *json = report_with("<b>node</b>\"'", json_pack("[s]", hostile));
        _cleanup_free_ char *html = page_of(json, NULL);
        assert_null(strstr(html, "<script"));
        assert_null(strstr(html, "<img"));
        assert_null(strstr(html, "\x1b"));
        assert_null(strstr(html, "<b>node"));
        assert_non_null(strstr(html, "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt; "
                                     "&quot;dq&quot; &#39;sq&#39; &amp; \\x1b[2J end"));
        assert_non_null(strstr(html, "&lt;b&gt;node&lt;/b&gt;&quot;&#39;"));
        /* the node given by the caller is escaped as well */
        _cleanup_free_ char *html2 = page_of(json, "x\"><script>");
        assert_null(strstr(html2, "<script"));
        assert_non_null(strstr(html2, "x&quot;&gt;&lt;script&gt;"));
}

static void test_invalid_utf8(void **state) {
        /* jansson refuses invalid UTF-8: the page repairs the text first and shows the rest */
        const char *json = "{\"schema\":\"gpunode.report/v1\",\"node\":\"n\",\"verdict\":\"failed\","
                           "\"root_cause\":null,\"layers\":[],\"checks\":[{\"id\":\"driver.x\",\"layer\":1,"
                           "\"component\":\"driver\","
                           "\"status\":\"fail\",\"summary\":\"bad \xff\xfe byte \xc3\",\"evidence\":[\"a\xc0\xafz\"]}]}";
        _cleanup_free_ char *html = page_of(json, NULL);
        assert_non_null(strstr(html, "bad ?? byte ?"));
        assert_non_null(strstr(html, "a??z"));
        assert_int_equal(utf8_valid_prefix(html, strlen(html)), strlen(html));
        /* control characters inside a valid string become visible escapes */
        const char *ctl = "{\"schema\":\"gpunode.report/v1\",\"node\":\"n\",\"verdict\":\"healthy\",\"checks\":"
                          "[{\"id\":"
                          "\"a.b\",\"layer\":4,\"component\":\"a\",\"status\":\"pass\","
                          "\"summary\":\"bell\\u0007 bidi\\u202e x\"}]}";
        _cleanup_free_ char *html2 = page_of(ctl, NULL);
        assert_non_null(strstr(html2, "bell\\x07 bidi\\xe2\\x80\\xae x"));
        assert_non_null(strstr(html2, "<li><span class=\"b ok\">\xe2\x9c\x93 healthy</span> a</li>")); /* layer 4's */
}

static void test_huge_report_bounded(void **state) {
        json_t *ev = json_array();
        for (int i = 0; i < 100000; i++) json_array_append_new(ev, json_sprintf("evidence line %d <x>", i));
        _cleanup_free_ char *json = report_with("big", ev);
        _cleanup_free_ char *html = page_of(json, NULL);
        /* the root cause and its check each show 50 lines, then say how many more */
        assert_int_equal(count(html, "evidence line "), 2 * STATUS_PAGE_MAX_EVIDENCE);
        assert_non_null(strstr(html, "evidence line 49 &lt;x&gt;"));
        assert_null(strstr(html, "evidence line 50 "));
        assert_int_equal(count(html, "and 99950 more"), 2);
        assert_true(strlen(html) < 64 * 1024);

        /* one enormous string is cut, and many checks stop at the budget */
        _cleanup_free_ char *longs = xmalloc(1 << 20);
        memset(longs, 'A', (1 << 20) - 1);
        longs[(1 << 20) - 1] = 0;
        json_t *checks = json_array();
        for (int i = 0; i < 1000; i++) {
                json_t *e = json_array();
                for (int k = 0; k < 10; k++) json_array_append_new(e, json_string(longs + (1 << 20) - 3000));
                json_array_append_new(checks, json_pack("{s:s, s:i, s:s, s:s, s:s, s:o}", "id", "x.y", "layer", 1,
                                                        "component", "x", "status", "fail", "summary",
                                                        i == 0 ? longs : longs + (1 << 20) - 4000, "evidence", e));
        }
        json_t *r = json_pack("{s:s, s:s, s:s, s:o}", "schema", "gpunode.report/v1", "node", "huge", "verdict",
                              "failed", "checks", checks);
        _cleanup_free_ char *big = json_dumps(r, JSON_COMPACT);
        json_decref(r);
        uint64_t start = monotonic_ms();
        _cleanup_free_ char *page = page_of(big, NULL);
        uint64_t took = monotonic_ms() - start;
        print_message("hostile report of %zu MiB: page %zu KiB in %llu ms\n", strlen(big) >> 20, strlen(page) >> 10,
                      (unsigned long long)took);
        assert_true(strlen(page) < STATUS_PAGE_BUDGET + (1 << 20));
        assert_non_null(strstr(page, "bytes more)"));
        assert_non_null(strstr(page, "more checks are not shown here"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_null_report),
                cmocka_unit_test(test_unreadable_report),
                cmocka_unit_test(test_root_cause_shown),
                cmocka_unit_test(test_checked_at),
                cmocka_unit_test(test_blocked_folded_and_explained),
                cmocka_unit_test(test_unchecked_layers_not_healthy),
                cmocka_unit_test(test_hostile_strings_escaped),
                cmocka_unit_test(test_invalid_utf8),
                cmocka_unit_test(test_huge_report_bounded),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
