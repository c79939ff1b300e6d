/* test_cluster.c: gpunode cluster's parsers and judgement: GPU node detection, Node and pod extraction from recorded
 * API objects, the agent's report read back, bottom-up attribution. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <time.h>

#include "cluster/cluster.h"
#include "output/report_read.h"
#include "basic/util.h"

/* Returns the JSON file path (under the source root's scenarios) loaded, or fails the test. */
static json_t *load(const char *rel) {
        const char *root = getenv("GPUNODE_SOURCE_ROOT");
        assert_non_null(root);
        _cleanup_free_ char *p = xasprintf("%s/tests/scenarios/%s", root, rel);
        json_error_t e;
        json_t *j = json_load_file(p, JSON_DISABLE_EOF_CHECK, &e);
        if (!j) fail_msg("%s: %s", p, e.text);
        return j;
}

static json_t *parse(const char *text) {
        json_t *j = json_loads(text, 0, NULL);
        assert_non_null(j);
        return j;
}

static void test_parse_time(void **state) {
        (void)state;
        assert_int_equal(cl_parse_time("1970-01-01T00:00:10Z"), 10);
        assert_int_equal(cl_parse_time("2026-12-01T12:00:00Z"), 1796126400);
        assert_int_equal(cl_parse_time("2026-12-01T12:00:00.123456Z"), 1796126400);
        assert_int_equal(cl_parse_time("2026-12-01T13:30:00+01:30"), 1796126400);
        assert_int_equal(cl_parse_time("2026-12-01T12:00:00"), 0); /* no zone */
        assert_int_equal(cl_parse_time("yesterday"), 0);
        assert_int_equal(cl_parse_time("2026-12-01T12:00:00Zjunk"), 0);
        assert_int_equal(cl_parse_time(NULL), 0);
}

static void test_gpu_node_reason(void **state) {
        (void)state;
        json_t *j = parse("{\"metadata\":{\"name\":\"a\"},\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"8\"}}}");
        assert_string_equal(cl_gpu_node_reason(j), "GPU capacity");
        json_decref(j);
        j = parse("{\"metadata\":{\"name\":\"a\"},\"status\":{\"capacity\":{\"nvidia.com/mig-1g.10gb\":\"7\"}}}");
        assert_string_equal(cl_gpu_node_reason(j), "GPU capacity");
        json_decref(j);
        /* a zero count is not a GPU; the NFD label still makes it one (a node whose device plugin died) */
        j = parse(
                "{\"metadata\":{\"name\":\"a\",\"labels\":{\"feature.node.kubernetes.io/pci-10de.present\":\"true\"}},"
                "\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"0\"}}}");
        assert_string_equal(cl_gpu_node_reason(j), "label feature.node.kubernetes.io/pci-10de.present=true");
        json_decref(j);
        j = parse("{\"metadata\":{\"name\":\"a\",\"labels\":{\"nvidia.com/gpu.present\":\"true\"}}}");
        assert_string_equal(cl_gpu_node_reason(j), "label nvidia.com/gpu.present=true");
        json_decref(j);
        j = parse("{\"metadata\":{\"name\":\"cpu\",\"labels\":{\"nvidia.com/gpu.present\":\"false\"}},"
                  "\"status\":{\"capacity\":{\"cpu\":\"8\"}}}");
        assert_null(cl_gpu_node_reason(j));
        json_decref(j);
}

/* The recorded Node of the healthy scenario (a real H100 node's shape). */
static void test_node_parse_recorded(void **state) {
        (void)state;
        json_t *j = load("k8s-healthy/api/api/v1/nodes/k8s-healthy.json");
        struct cl_node n;
        assert_int_equal(cl_node_parse(j, &n), 0);
        assert_string_equal(n.name, "k8s-healthy");
        assert_int_equal(n.ready, 1);
        assert_int_equal(n.gpu_capacity, 8);
        assert_int_equal(n.gpu_allocatable, 8);
        assert_int_equal(n.rdma_allocatable, 63);
        assert_string_equal(n.product, "NVIDIA-H100-80GB-HBM3");
        assert_string_equal(n.driver_version, "550.54.15");
        assert_string_equal(n.cuda_version, "12.4");
        assert_string_equal(n.kubelet_version, "v1.29.4");
        assert_string_equal(n.runtime_version, "containerd://1.7.13");
        assert_string_equal(n.mig_config_state, "success");
        assert_true(n.operator_toolkit);
        for (int l = 0; l < CLUSTER_LAYERS; l++)
                assert_int_equal(n.layers[l].status, CL_COND_ABSENT); /* no agent there */
        cl_node_free(&n);
        json_decref(j);
}

static void test_node_parse_conditions(void **state) {
        (void)state;
        json_t *j = parse(
                "{\"metadata\":{\"name\":\"g\",\"labels\":{\"nvidia.com/cuda.driver.major\":\"535\","
                "\"nvidia.com/cuda.driver.minor\":\"161\",\"nvidia.com/cuda.driver.rev\":\"08\"}},"
                "\"spec\":{\"unschedulable\":true,\"taints\":[{\"key\":\"gpunode.io/unhealthy\",\"value\":\"hardware\","
                "\"effect\":\"NoSchedule\"},{\"effect\":\"NoSchedule\"}]},"
                "\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"8\",\"nvidia.com/mig-1g.10gb\":\"2k\"},"
                "\"allocatable\":{\"nvidia.com/gpu\":\"0\",\"nvidia.com/mig-2g\":\"1.5\"},\"conditions\":["
                "{\"type\":\"Ready\",\"status\":\"False\",\"reason\":\"KubeletNotReady\"},"
                "{\"type\":\"GPUHardwareProblem\",\"status\":\"True\",\"reason\":\"DriverXidErrors\",\"message\":\"Xid "
                "79\","
                "\"lastHeartbeatTime\":\"2026-12-01T12:00:00Z\"},"
                "{\"type\":\"GPUContainerRuntimeProblem\",\"status\":\"Unknown\",\"reason\":"
                "\"BlockedByDriverXidErrors\"},"
                "{\"type\":\"GPUObservabilityProblem\",\"status\":\"False\",\"reason\":\"GPUObservabilityHealthy\","
                "\"lastHeartbeatTime\":\"garbage\"},{\"type\":7}]}}");
        struct cl_node n;
        assert_int_equal(cl_node_parse(j, &n), 0);
        assert_int_equal(n.ready, 0);
        assert_string_equal(n.ready_reason, "KubeletNotReady");
        assert_true(n.unschedulable);
        assert_int_equal(n.n_taints, 1); /* the one without a key is dropped */
        assert_string_equal(n.taints[0].value, "hardware");
        assert_int_equal(n.gpu_capacity, 2008);
        assert_int_equal(n.gpu_allocatable, 0); /* "1.5" is not a count */
        assert_string_equal(n.driver_version, "535.161.08");
        assert_int_equal(n.layers[0].status, CL_COND_TRUE);
        assert_int_equal(n.layers[0].heartbeat, 1796126400);
        assert_int_equal(n.layers[1].status, CL_COND_UNKNOWN);
        assert_int_equal(n.layers[2].status, CL_COND_ABSENT);
        assert_int_equal(n.layers[3].heartbeat, 0);
        assert_int_equal(cl_node_failing_layer(&n), 1);
        cl_node_free(&n);
        json_decref(j);
        /* quantities near INT64_MAX are clamped, so the sums never overflow */
        j = parse("{\"metadata\":{\"name\":\"h\"},\"status\":{\"capacity\":{\"nvidia.com/gpu\":"
                  "\"9223372036854775807\",\"nvidia.com/mig-1g.5gb\":9223372036854775807}}}");
        assert_int_equal(cl_node_parse(j, &n), 0);
        assert_int_equal(n.gpu_capacity, 2 * CL_QUANTITY_MAX);
        cl_node_free(&n);
        json_decref(j);
        j = parse("{\"metadata\":{}}");
        assert_int_equal(cl_node_parse(j, &n), -EBADMSG);
        json_decref(j);
        j = parse("{\"metadata\":{\"name\":\"cpu\"}}");
        assert_int_equal(cl_node_parse(j, &n), 1);
        json_decref(j);
}

/* The healthy scenario's recorded node and its 16 pods, fed as the lists would. */
static void test_facts_from_recorded(void **state) {
        (void)state;
        struct cluster_facts f = { .now = 1796126400, .stale_after_s = 900 };
        json_t *node = load("k8s-healthy/api/api/v1/nodes/k8s-healthy.json");
        assert_int_equal(cluster_facts_add(&f, CL_LIST_NODES, node), 0);
        cluster_facts_finish(&f);
        json_t *pods = load("k8s-healthy/api/api/v1/pods?fieldSelector=spec.nodeName=k8s-healthy.json");
        size_t i;
        json_t *p;
        json_array_foreach(json_object_get(pods, "items"), i, p)
                assert_true(cluster_facts_add(&f, CL_LIST_PODS, p) >= 0);
        assert_int_equal(f.n_pods, 16);
        struct cl_node *n = cluster_node_find(&f, "k8s-healthy");
        assert_non_null(n);
        assert_true(n->dcgm_exporter);
        assert_true(n->node_exporter);
        assert_true(n->network_operator);
        assert_null(n->agent_pod);
        assert_true(f.network_operator_seen);
        assert_null(cluster_node_find(&f, "other"));
        json_t *notpod = json_string("x");
        assert_int_equal(cluster_facts_add(&f, CL_LIST_PODS, notpod), -EBADMSG);
        json_decref(notpod);
        struct cluster_report r;
        assert_int_equal(cluster_report_build(&f, &r), 0);
        assert_int_equal(cluster_report_find(&r, "infrastructure.agent-running")->f.status, CHECK_FAIL);
        assert_int_equal(cluster_report_find(&r, "observability.metrics-endpoint")->f.status,
                         CHECK_PASS); /* dcgm-exporter */
        assert_int_equal(cluster_report_find(&r, "gpu-health.layer-conditions")->f.status, CHECK_BLOCKED);
        assert_string_equal(r.rows[0].root_cause, "no gpunode agent");
        cluster_report_free(&r);
        cluster_facts_free(&f);
        json_decref(node);
        json_decref(pods);
}

/* Returns a GPU node's JSON with the agent's conditions; failing: layer 1 True and no GPUs allocatable. */
static json_t *gpu_node(const char *name, bool failing) {
        _cleanup_free_ char *s = xasprintf(
                "{\"metadata\":{\"name\":\"%s\"},\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"8\"},"
                "\"allocatable\":{\"nvidia.com/gpu\":\"%s\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},"
                "{\"type\":\"GPUHardwareProblem\",\"status\":\"%s\",\"reason\":\"%s\",\"lastHeartbeatTime\":\"2026-12-"
                "01T11:59:00Z\"}]}}",
                name, failing ? "0" : "8", failing ? "True" : "False",
                failing ? "DriverNvmlInit" : "GPUHardwareHealthy");
        return parse(s);
}

static void test_attribution(void **state) {
        (void)state;
        struct cluster_facts f = { .now = 1796126400, .stale_after_s = 900 };
        json_t *a = gpu_node("a", false), *b = gpu_node("b", true);
        assert_int_equal(cluster_facts_add(&f, CL_LIST_NODES, b), 0);
        assert_int_equal(cluster_facts_add(&f, CL_LIST_NODES, a), 0);
        assert_int_equal(cluster_facts_add(&f, CL_LIST_NODES, a), 1); /* the same name twice */
        cluster_facts_finish(&f);
        assert_string_equal(f.nodes[0].name, "a"); /* sorted */
        json_t *pod =
                parse("{\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\"},\"spec\":{\"containers\":[{\"resources\":"
                      "{\"limits\":{\"nvidia.com/gpu\":\"4\"}}}],\"initContainers\":[{\"resources\":{\"requests\":"
                      "{\"nvidia.com/gpu\":\"6\"}}}]},\"status\":{\"phase\":\"Pending\"}}");
        assert_int_equal(cluster_facts_add(&f, CL_LIST_PODS, pod), 0);
        assert_int_equal(f.n_pending, 1);
        assert_int_equal(f.pending[0].gpus, 6); /* the larger of the init container and the sum */
        json_t *ev = parse(
                "{\"metadata\":{\"name\":\"e\",\"namespace\":\"ml\"},\"involvedObject\":{\"kind\":\"Pod\","
                "\"namespace\":\"ml\",\"name\":\"p\"},\"reason\":\"FailedScheduling\",\"message\":\"0/2 nodes are "
                "available: 2 Insufficient nvidia.com/gpu.\"}");
        assert_int_equal(cluster_facts_add(&f, CL_LIST_EVENTS, ev), 0);
        assert_non_null(f.pending[0].message);
        struct cluster_report r;
        cluster_report_build(&f, &r);
        const struct cl_finding *ga = cluster_report_find(&r, "scheduling.gpu-allocatable");
        assert_int_equal(ga->f.status, CHECK_BLOCKED);
        assert_string_equal(ga->rests_on, "gpu-health.layer-conditions");
        const struct cl_finding *pg = cluster_report_find(&r, "scheduling.pending-gpu-pods");
        assert_int_equal(pg->f.status, CHECK_BLOCKED);
        assert_int_equal(cluster_report_find(&r, "gpu-health.layer-conditions")->f.status, CHECK_FAIL);
        assert_int_equal(r.verdict, VERDICT_FAILED);
        assert_int_equal(r.gpus_allocatable, 8);
        assert_int_equal(r.rows[1].root_layer, 1);
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        struct cl_text_options to = { 0 };
        assert_int_equal(cluster_render_text(m, &r, &to), 0);
        fclose(m);
        assert_non_null(strstr(buf, "b     yes    FAIL  ?     ?     ?     0/8      layer 1: DriverNvmlInit"));
        free(buf);
        json_t *doc = cluster_report_to_json(&r);
        assert_string_equal(json_string_value(json_object_get(doc, "schema")), "gpunode.cluster/v1");
        assert_int_equal(json_array_size(json_object_get(doc, "nodes")), 2);
        json_decref(doc);
        cluster_report_free(&r);
        cluster_facts_free(&f);
        /* no GPU nodes at all: everything rests on infrastructure.gpu-nodes */
        struct cluster_facts empty = { .now = 1 };
        cluster_facts_finish(&empty);
        cluster_report_build(&empty, &r);
        assert_int_equal(cluster_report_find(&r, "infrastructure.gpu-nodes")->f.status, CHECK_FAIL);
        assert_int_equal(cluster_report_find(&r, "storage.csi-drivers")->f.status, CHECK_BLOCKED);
        cluster_report_free(&r);
        cluster_facts_free(&empty);
        json_decref(a);
        json_decref(b);
        json_decref(pod);
        json_decref(ev);
}

/* Returns the text rendering of r with options to, malloc'd. */
static char *render(const struct cluster_report *r, const struct cl_text_options *to) {
        char *buf = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&buf, &len);
        assert_int_equal(cluster_render_text(m, r, to), 0);
        fclose(m);
        return buf;
}

/* Six nodes failing the same way share one line (before: six identical rows), a seventh failing otherwise
 * keeps its own; two instance types give a line per pool; --only failing drops the healthy rows. */
static void test_text_grouped_and_pools(void **state) {
        (void)state;
        struct cluster_facts f = { .now = 1796126400, .stale_after_s = 900 };
        for (int i = 0; i < 9; i++) {
                _cleanup_free_ char *name = xasprintf("gpu-node-%04d", 100 + i);
                json_t *n = gpu_node(name, i < 6);
                json_object_set_new(json_object_get(n, "metadata"), "labels",
                                    json_pack("{s:s}", "node.kubernetes.io/instance-type",
                                              i % 2 ? "p5.48xlarge" : "p4d.24xlarge"));
                assert_int_equal(cluster_facts_add(&f, CL_LIST_NODES, n), 0);
                json_decref(n);
        }
        json_t *odd = gpu_node("gpu-node-0200", true);
        json_t *c = json_array_get(json_object_get(json_object_get(odd, "status"), "conditions"), 1);
        json_object_set_new(c, "reason", json_string("DriverXidErrors"));
        assert_int_equal(cluster_facts_add(&f, CL_LIST_NODES, odd), 0);
        json_decref(odd);
        cluster_facts_finish(&f);
        struct cluster_report r;
        cluster_report_build(&f, &r);
        struct cl_text_options to = { 0 };
        _cleanup_free_ char *text = render(&r, &to);
        assert_non_null(strstr(text, "6 nodes: layer 1: DriverNvmlInit (gpu-node-0100 ... gpu-node-0105; GPUs 0/48; "
                                     "--all-nodes lists them)"));
        assert_null(strstr(text, "gpu-node-0101  yes"));
        assert_non_null(strstr(text, "layer 1: DriverXidErrors")); /* alone: its own row */
        assert_non_null(strstr(text, "gpu-node-0106  yes"));     /* healthy: listed (10 nodes) */
        assert_non_null(strstr(text, "  pool p4d.24xlarge: 5 GPU nodes, 2 ready; GPUs allocatable 16 of 40\n"));
        assert_non_null(strstr(text, "  pool p5.48xlarge: 4 GPU nodes, 1 ready; GPUs allocatable 8 of 32\n"));
        to.all_nodes = true;
        _cleanup_free_ char *all = render(&r, &to);
        assert_non_null(strstr(all, "gpu-node-0101  yes"));
        assert_null(strstr(all, "6 nodes:"));
        to = (struct cl_text_options){ .only = CHECK_FAIL };
        _cleanup_free_ char *failing = render(&r, &to);
        assert_null(strstr(failing, "gpu-node-0106  yes"));
        assert_non_null(strstr(failing, "(3 GPU nodes not shown: --only)"));
        cluster_report_free(&r);
        cluster_facts_free(&f);
}

/* A node whose capacity dropped to 7 while GFD counted 8 GPUs: the GPU lost is said (before: "GPUs
 * allocatable 15 of 15"), its row shows 7/8, the allocatable check names it; a count label that is no
 * number is no count. */
static void test_lost_gpus_counted(void **state) {
        (void)state;
        struct cluster_facts f = { .now = 1796126400, .stale_after_s = 900 };
        static const struct {
                const char *name, *count, *cap;
        } nodes[] = { { "gpu-a", "8", "7" }, { "gpu-b", "8", "8" }, { "gpu-c", "eight", "8" }, { "gpu-d", "1e3", "8" } };
        for (size_t i = 0; i < ELEMENTSOF(nodes); i++) {
                json_t *n = gpu_node(nodes[i].name, false);
                json_t *st = json_object_get(n, "status");
                json_object_set_new(json_object_get(st, "capacity"), "nvidia.com/gpu", json_string(nodes[i].cap));
                json_object_set_new(json_object_get(st, "allocatable"), "nvidia.com/gpu", json_string(nodes[i].cap));
                json_object_set_new(json_object_get(n, "metadata"), "labels",
                                    json_pack("{s:s}", "nvidia.com/gpu.count", nodes[i].count));
                assert_int_equal(cluster_facts_add(&f, CL_LIST_NODES, n), 0);
                json_decref(n);
        }
        cluster_facts_finish(&f);
        assert_int_equal(f.nodes[0].gpu_expected, 8);
        assert_int_equal(f.nodes[2].gpu_expected, 8); /* "eight": the capacity */
        assert_int_equal(f.nodes[3].gpu_expected, 8); /* "1e3": the capacity */
        struct cluster_report r;
        cluster_report_build(&f, &r);
        assert_int_equal(r.gpus_capacity, 31);
        assert_int_equal(r.gpus_expected, 32);
        struct cl_text_options to = { 0 };
        _cleanup_free_ char *text = render(&r, &to);
        assert_non_null(strstr(text, "GPUs allocatable 31 of 31\n1 GPUs lost: the GPU nodes should have 32 (GFD's "
                                     "nvidia.com/gpu.count), their capacity says 31\n"));
        assert_non_null(strstr(text, " 7/8 "));
        const struct cl_finding *ga = cluster_report_find(&r, "scheduling.gpu-allocatable");
        assert_int_equal(ga->f.status, CHECK_FAIL);
        assert_non_null(strstr(ga->f.evidence[0], "gpu-a: 7 of 8 GPUs allocatable"));
        assert_non_null(strstr(ga->f.evidence[0], "GPUs lost"));
        cluster_report_free(&r);
        cluster_facts_free(&f);
}

/* A node without an agent and a node with dead GPUs: the dead GPUs are the cluster's root cause (before:
 * the missing agent, the first failure in check order, which takes no GPU away). */
static void test_root_cause_prefers_lost_gpus(void **state) {
        (void)state;
        struct cluster_facts f = { .now = 1796126400, .stale_after_s = 900 };
        json_t *dead = gpu_node("gpu-dead", true);
        json_t *blind = parse("{\"metadata\":{\"name\":\"gpu-blind\",\"labels\":{\"nvidia.com/gpu.present\":\"true\"}},"
                              "\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"8\"},\"allocatable\":{\"nvidia.com/gpu\":"
                              "\"8\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}]}}");
        assert_int_equal(cluster_facts_add(&f, CL_LIST_NODES, dead), 0);
        assert_int_equal(cluster_facts_add(&f, CL_LIST_NODES, blind), 0);
        cluster_facts_finish(&f);
        struct cluster_report r;
        cluster_report_build(&f, &r);
        assert_int_equal(cluster_report_find(&r, "infrastructure.agent-running")->f.status, CHECK_FAIL);
        assert_non_null(r.root_cause);
        assert_string_equal(r.root_cause->def->id, "gpu-health.layer-conditions");
        assert_int_equal(r.verdict, VERDICT_FAILED);
        cluster_report_free(&r);
        cluster_facts_free(&f);
        json_decref(dead);
        json_decref(blind);
}

/* The driver-broken scenario's real report, read back as the agent serves it. */
static void test_agent_report(void **state) {
        (void)state;
        json_t *doc = load("k8s-driver-broken/expected.json");
        struct report r;
        char *err = NULL;
        assert_int_equal(report_from_json(doc, &r, &err), 0);
        assert_int_equal(r.verdict, VERDICT_FAILED);
        assert_non_null(r.root_cause);
        assert_string_equal(r.root_cause->def->id, "driver.module-signature");
        assert_int_equal(r.root_cause->def->layer, 1);
        assert_true(r.n_findings == json_array_size(json_object_get(doc, "checks")));
        report_read_free(&r);
        json_decref(doc);
        static const char *const bad[] = {
                "{\"schema\":\"gpunode.report/v2\",\"verdict\":\"healthy\",\"checks\":[]}",
                "{\"schema\":\"gpunode.report/v1\",\"verdict\":\"great\",\"checks\":[]}",
                "{\"schema\":\"gpunode.report/v1\",\"verdict\":\"healthy\"}",
                "{\"schema\":\"gpunode.report/"
                "v1\",\"verdict\":\"healthy\",\"checks\":[{\"id\":\"x\",\"component\":\"c\",\"layer\":5,\"status\":"
                "\"pass\"}]}",
                "{\"schema\":\"gpunode.report/"
                "v1\",\"verdict\":\"healthy\",\"checks\":[{\"id\":\"x\",\"component\":\"c\",\"layer\":1,\"status\":"
                "\"ok\"}]}",
                /* an id carrying a terminal escape (OSC title, clear screen) from a hostile pod */
                "{\"schema\":\"gpunode.report/"
                "v1\",\"verdict\":\"failed\",\"checks\":[{\"id\":\"\\u001b]0;owned\\u0007\\u001b[2J\","
                "\"component\":\"x\",\"layer\":1,\"status\":\"fail\"}]}",
                "{\"schema\":\"gpunode.report/"
                "v1\",\"verdict\":\"healthy\",\"checks\":[{\"id\":\"x\",\"component\":\"C\\n\",\"layer\":1,"
                "\"status\":\"pass\"}]}",
                "[]",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                json_t *j = json_loads(bad[i], 0, NULL);
                assert_non_null(j);
                err = NULL;
                assert_int_equal(report_from_json(j, &r, &err), -EBADMSG);
                assert_non_null(err);
                free(err);
                json_decref(j);
        }
}

/* A check that gives no answer (leaves the finding empty), one that passes, and one resting on the first: the node
 * engine and the cluster (which runs its checks through it) must judge them alike. */
static void silent_node(const struct node_facts *facts, struct finding *f) {
        (void)facts, (void)f;
}
static void pass_node(const struct node_facts *facts, struct finding *f) {
        (void)facts;
        finding_pass(f, "fine");
}
static void silent_cluster(const struct cluster_facts *facts, struct cl_finding *f) {
        (void)facts, (void)f;
}
static void pass_cluster(const struct cluster_facts *facts, struct cl_finding *f) {
        (void)facts;
        finding_pass(&f->f, "fine");
}

static void test_engine_and_cluster_agree(void **state) {
        (void)state;
        static const struct check_def n_pass = { .id = "a.pass", .layer = 1, .component = "a", .run = pass_node };
        static const struct check_def n_silent = { .id = "a.silent", .layer = 1, .component = "a", .run = silent_node };
        static const struct check_def n_dep = {
                .id = "b.dep", .layer = 2, .component = "b", .depends = { "a.silent" }, .run = pass_node
        };
        static const struct cl_check_def c_pass = { .id = "a.pass", .category = CL_INFRA, .run = pass_cluster };
        static const struct cl_check_def c_silent = {
                .id = "a.silent", .category = CL_INFRA, .title = "a title", .run = silent_cluster
        };
        static const struct cl_check_def c_dep = {
                .id = "b.dep", .category = CL_GPU_HEALTH, .depends = { "a.silent" }, .run = pass_cluster
        };
        const struct check_def *const nodes[] = { &n_pass, &n_silent, &n_dep };
        const struct cl_check_def *const cls[] = { &c_pass, &c_silent, &c_dep };

        struct report nr;
        assert_int_equal(report_build(NULL, nodes, ELEMENTSOF(nodes), "n", "/", &nr), 0);
        struct cluster_facts facts = { .now = 1 };
        cluster_facts_finish(&facts);
        struct cluster_report cr;
        assert_int_equal(cluster_report_build_with(&facts, cls, ELEMENTSOF(cls), &cr), 0);

        /* the engine's rule: no answer is a failure of its own (an internal error), not a skip */
        assert_int_equal(report_find(&nr, "a.silent")->status, CHECK_FAIL);
        assert_string_equal(report_find(&nr, "a.silent")->summary, "internal error: check a.silent gave no answer");
        assert_int_equal(nr.verdict, VERDICT_FAILED);
        assert_string_equal(nr.root_cause->def->id, "a.silent");
        assert_int_equal(report_find(&nr, "b.dep")->status, CHECK_BLOCKED);
        assert_string_equal(report_find(&nr, "b.dep")->blocked_by, "a.silent");

        assert_int_equal(cr.n_findings, nr.n_findings);
        for (size_t i = 0; i < nr.n_findings; i++) {
                assert_string_equal(cr.findings[i].def->id, nr.findings[i].def->id);
                assert_int_equal(cr.findings[i].f.status, nr.findings[i].status);
                assert_string_equal(cr.findings[i].f.blocked_by ? cr.findings[i].f.blocked_by : "-",
                                    nr.findings[i].blocked_by ? nr.findings[i].blocked_by : "-");
        }
        assert_string_equal(cluster_report_find(&cr, "a.silent")->f.summary,
                            "internal error: check a.silent gave no answer");
        assert_string_equal(cluster_report_find(&cr, "b.dep")->f.summary, "not checked: rests on a.silent");
        assert_int_equal(cr.verdict, nr.verdict);
        assert_string_equal(cr.root_cause->def->id, nr.root_cause->def->id);
        report_free(&nr);
        cluster_report_free(&cr);
        cluster_facts_free(&facts);
}

/* Returns a GPU node's JSON with layer 1 False (healthy) and its heartbeat at t (Unix seconds). */
static json_t *node_heartbeat_at(const char *name, int64_t t) {
        char when[32];
        time_t tt = (time_t)t;
        struct tm tm;
        gmtime_r(&tt, &tm);
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
        _cleanup_free_ char *s = xasprintf(
                "{\"metadata\":{\"name\":\"%s\"},\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"8\"},"
                "\"allocatable\":{\"nvidia.com/gpu\":\"8\"},\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"},"
                "{\"type\":\"GPUHardwareProblem\",\"status\":\"False\",\"reason\":\"GPUHardwareHealthy\","
                "\"lastHeartbeatTime\":\"%s\"}]}}",
                name, when);
        return parse(s);
}

/* A heartbeat from the future (a clock that ran ahead) is not fresh: the row warns, the check names it. */
static void test_heartbeat_in_future(void **state) {
        (void)state;
        const int64_t now = 1796126400;
        struct cluster_facts f = { .now = now, .stale_after_s = 900 };
        json_t *ahead = node_heartbeat_at("ahead", now + 2274747054), *fresh = node_heartbeat_at("fresh", now - 60),
               *skew = node_heartbeat_at("skew", now + 30);
        assert_int_equal(cluster_facts_add(&f, CL_LIST_NODES, ahead), 0);
        assert_int_equal(cluster_facts_add(&f, CL_LIST_NODES, fresh), 0);
        assert_int_equal(cluster_facts_add(&f, CL_LIST_NODES, skew), 0);
        cluster_facts_finish(&f);
        struct cl_node *a = cluster_node_find(&f, "ahead");
        assert_non_null(a);
        assert_int_equal(cl_node_heartbeat(a), now + 2274747054);
        assert_true(cl_node_stale(&f, a));
        assert_false(cl_node_stale(&f, cluster_node_find(&f, "fresh")));
        assert_false(cl_node_stale(&f, cluster_node_find(&f, "skew"))); /* 30 s ahead: within the skew */
        struct cluster_report r;
        assert_int_equal(cluster_report_build(&f, &r), 0);
        assert_string_equal(r.rows[0].node->name, "ahead");
        assert_int_equal(r.rows[0].status, CHECK_WARN);
        assert_true(r.rows[0].stale);
        assert_string_equal(r.rows[0].root_cause,
                            "agent heartbeat 2274747054 s in the future: the node's clock ran ahead");
        assert_int_equal(r.rows[1].status, CHECK_PASS);
        assert_int_equal(r.nodes_ready, 2);
        const struct cl_finding *hb = cluster_report_find(&r, "infrastructure.agent-heartbeat");
        assert_non_null(hb);
        assert_int_equal(hb->f.status, CHECK_WARN);
        assert_true(hb->f.n_evidence >= 1);
        assert_string_equal(hb->f.evidence[0],
                            "ahead: heartbeat 2274747054 s in the future: the node's clock ran ahead");
        cluster_report_free(&r);
        cluster_facts_free(&f);
        json_decref(ahead);
        json_decref(fresh);
        json_decref(skew);
}

/* An agent pod that runs but is not Ready (its readiness probe failing) works when its node's conditions are fresh:
 * it diagnoses and heartbeats. With stale conditions it does not. */
static void test_agent_not_ready_but_reporting(void **state) {
        (void)state;
        struct cluster_facts f = { .now = 1796126400, .stale_after_s = 900 };
        json_t *a = gpu_node("a", true);
        json_t *b = parse("{\"metadata\":{\"name\":\"b\"},\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"8\"},"
                          "\"conditions\":[{\"type\":\"GPUHardwareProblem\",\"status\":\"False\",\"reason\":"
                          "\"GPUHardwareHealthy\",\"lastHeartbeatTime\":\"2026-11-01T11:59:00Z\"}]}}");
        assert_int_equal(cluster_facts_add(&f, CL_LIST_NODES, a), 0);
        assert_int_equal(cluster_facts_add(&f, CL_LIST_NODES, b), 0);
        cluster_facts_finish(&f);
        for (const char *node = "a"; node; node = streq(node, "a") ? "b" : NULL) {
                _cleanup_free_ char *s =
                        xasprintf("{\"metadata\":{\"name\":\"gpunode-%s\",\"namespace\":\"gpunode\",\"labels\":{"
                                  "\"app.kubernetes.io/name\":\"gpunode\"}},\"spec\":{\"nodeName\":\"%s\"},\"status\":{"
                                  "\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}]}}",
                                  node, node);
                json_t *pod = parse(s);
                assert_int_equal(cluster_facts_add(&f, CL_LIST_PODS, pod), 0);
                json_decref(pod);
        }
        assert_true(cluster_node_find(&f, "a")->agent_ready);
        assert_false(cluster_node_find(&f, "b")->agent_ready);
        struct cluster_report r;
        assert_int_equal(cluster_report_build(&f, &r), 0);
        const struct cl_finding *running = cluster_report_find(&r, "infrastructure.agent-running");
        assert_int_equal(running->f.status, CHECK_FAIL);
        assert_non_null(strstr(running->f.summary, "1 of 2 GPU nodes"));
        cluster_report_free(&r);
        cluster_facts_free(&f);
        json_decref(a);
        json_decref(b);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_time),          cmocka_unit_test(test_gpu_node_reason),
                cmocka_unit_test(test_node_parse_recorded), cmocka_unit_test(test_node_parse_conditions),
                cmocka_unit_test(test_facts_from_recorded), cmocka_unit_test(test_attribution), cmocka_unit_test(test_text_grouped_and_pools),
                cmocka_unit_test(test_lost_gpus_counted),
                cmocka_unit_test(test_root_cause_prefers_lost_gpus),
                cmocka_unit_test(test_agent_report),        cmocka_unit_test(test_engine_and_cluster_agree),
                cmocka_unit_test(test_heartbeat_in_future), cmocka_unit_test(test_agent_not_ready_but_reporting),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
