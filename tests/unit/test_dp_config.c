/* test_dp_config.c: NVIDIA's device plugin configs (README, GPU Operator), refusals, Xid policy, mig-minors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "basic/util.h"
#include "dpconfig/dp_config.h"
#include "device_plugin/dp_devices.h"
#include "device_plugin/dp_health.h"
#include "device_plugin/dp_allocate.h"
#include "grpc/grpc_wire.h"
#include "nvml/nvml_lib.h"
#include "nvml/nvml_facts.h"
#include "basic/hostfs.h"

#include <sys/stat.h>
#include <time.h>

/* Parses text into c (initialised here). Returns the parser's answer; *ret_error kept for the caller. */
static int parse(const char *text, struct dp_config *c, char **ret_error) {
        dp_config_init(c);
        *ret_error = NULL;
        return dp_config_parse(text, strlen(text), 0, c, ret_error);
}

/* NVIDIA's README, "As a configuration file". */
static void test_readme_flags(void **state) {
        struct dp_config c;
        char *err;
        assert_int_equal(parse("version: v1\n"
                               "flags:\n"
                               "  migStrategy: \"none\"\n"
                               "  failOnInitError: true\n"
                               "  nvidiaDriverRoot: \"/\"\n"
                               "  plugin:\n"
                               "    passDeviceSpecs: false\n"
                               "    deviceListStrategy: \"envvar\"\n"
                               "    deviceIDStrategy: \"uuid\"\n",
                               &c, &err),
                         0);
        assert_null(err);
        assert_int_equal(c.mig_strategy, DP_MIG_NONE);
        assert_true(c.fail_on_init_error);
        assert_false(c.pass_device_specs);
        assert_int_equal(c.list_strategies, DP_LIST_ENVVAR);
        assert_false(c.id_index);
        assert_int_equal(c.n_resources, 0);
        dp_config_done(&c);

        /* README's dp-example-config1.yaml: mixed, with a comment */
        assert_int_equal(parse("version: v1\nflags:\n  migStrategy: \"mixed\" # Only change from config0.yaml\n"
                               "  failOnInitError: true\n  plugin:\n    deviceListStrategy: envvar\n    "
                               "deviceIDStrategy: index\n",
                               &c, &err),
                         0);
        assert_int_equal(c.mig_strategy, DP_MIG_MIXED);
        assert_true(c.id_index);
        dp_config_done(&c);
}

/* NVIDIA's README, "With CUDA MPS", as GFD reads it (DP_CONFIG_MPS): the same resources as time-slicing; the
 * plugin refuses it with one sentence, and both refuse replicas past DP_MAX_REPLICAS with one sentence (labels
 * once took replicas: 2000, which the plugin refuses). */
static void test_mps_and_one_refusal(void **state) {
        static const char mps[] = "version: v1\nsharing:\n  mps:\n    renameByDefault: true\n    resources:\n"
                                  "    - name: nvidia.com/gpu\n      replicas: 10\n";
        struct dp_config c;
        char *err = NULL;
        dp_config_init(&c);
        assert_int_equal(dp_config_parse(mps, strlen(mps), DP_CONFIG_MPS, &c, &err), 0);
        assert_null(err);
        assert_int_equal(c.sharing, DP_SHARING_MPS);
        const struct dp_replicated *r = dp_config_replicated(&c, "nvidia.com/gpu");
        assert_non_null(r);
        assert_int_equal(r->replicas, 10);
        assert_string_equal(dp_replicated_advertised(r), "nvidia.com/gpu.shared");
        dp_config_done(&c);
        assert_int_equal(parse(mps, &c, &err), -EINVAL);
        assert_non_null(strstr(err, "sharing.mps: MPS sharing is not supported"));
        free(err);
        dp_config_done(&c);

        /* time-slicing is the strategy of a plain config, whichever the flags */
        static const char ts[] = "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
                                 "      replicas: 4\n";
        dp_config_init(&c);
        assert_int_equal(dp_config_parse(ts, strlen(ts), DP_CONFIG_MPS, &c, &err), 0);
        assert_int_equal(c.sharing, DP_SHARING_TIME_SLICING);
        dp_config_done(&c);

        /* regression: replicas: 2000, the same refusal for the plugin (0) and the labels (DP_CONFIG_MPS) */
        static const char *const kinds[] = { "timeSlicing", "mps" };
        for (size_t k = 0; k < 2; k++) {
                _cleanup_free_ char *text = xasprintf("version: v1\nsharing:\n  %s:\n    resources:\n"
                                                      "    - name: nvidia.com/gpu\n      replicas: 2000\n",
                                                      kinds[k]);
                for (unsigned flags = 0; flags <= DP_CONFIG_MPS; flags += DP_CONFIG_MPS) {
                        dp_config_init(&c);
                        err = NULL;
                        assert_int_equal(dp_config_parse(text, strlen(text), flags, &c, &err), -EINVAL);
                        _cleanup_free_ char *want =
                                xasprintf("sharing.%s.resources[0].replicas: more than 1024", kinds[k]);
                        if (k == 0 || flags) assert_string_equal(err, want);
                        free(err);
                        dp_config_done(&c);
                }
        }
}

/* NVIDIA's README, "With CUDA Time-Slicing": 10 replicas, then renamed by default. */
static void test_readme_time_slicing(void **state) {
        struct dp_config c;
        char *err;
        assert_int_equal(parse("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
                               "      replicas: 10\n",
                               &c, &err),
                         0);
        assert_int_equal(c.n_resources, 1);
        assert_string_equal(c.resources[0].name, "nvidia.com/gpu");
        assert_int_equal(c.resources[0].replicas, 10);
        assert_true(c.resources[0].all);
        assert_null(c.resources[0].rename);
        assert_string_equal(dp_replicated_advertised(&c.resources[0]), "nvidia.com/gpu");
        assert_false(c.fail_requests_greater_than_one);
        dp_config_done(&c);

        assert_int_equal(parse("version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n"
                               "    failRequestsGreaterThanOne: true\n    resources:\n    - name: nvidia.com/gpu\n"
                               "      replicas: 10\n",
                               &c, &err),
                         0);
        assert_string_equal(dp_replicated_advertised(&c.resources[0]), "nvidia.com/gpu.shared");
        assert_true(c.fail_requests_greater_than_one);
        dp_config_done(&c);
}

/* The GPU Operator's time-slicing ConfigMap for an A100 40GB with the mixed strategy. */
static void test_operator_mixed(void **state) {
        struct dp_config c;
        char *err;
        assert_int_equal(parse("version: v1\n"
                               "flags:\n"
                               "  migStrategy: mixed\n"
                               "sharing:\n"
                               "  timeSlicing:\n"
                               "    resources:\n"
                               "    - name: nvidia.com/gpu\n"
                               "      replicas: 8\n"
                               "    - name: nvidia.com/mig-1g.5gb\n"
                               "      replicas: 2\n"
                               "    - name: nvidia.com/mig-2g.10gb\n"
                               "      replicas: 2\n"
                               "    - name: nvidia.com/mig-3g.20gb\n"
                               "      replicas: 3\n"
                               "    - name: nvidia.com/mig-7g.40gb\n"
                               "      replicas: 7\n",
                               &c, &err),
                         0);
        assert_int_equal(c.mig_strategy, DP_MIG_MIXED);
        assert_int_equal(c.n_resources, 5);
        const struct dp_replicated *r = dp_config_replicated(&c, "nvidia.com/mig-3g.20gb");
        assert_non_null(r);
        assert_int_equal(r->replicas, 3);
        assert_null(dp_config_replicated(&c, "nvidia.com/mig-4g.20gb"));
        dp_config_done(&c);
}

/* devices: all, a count, a list of indices and UUIDs; rename as a bare name; JSON input. */
static void test_devices_rename_json(void **state) {
        struct dp_config c;
        char *err;
        assert_int_equal(parse("version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                               "    - name: nvidia.com/gpu\n      replicas: 2\n      rename: gpu-shared\n"
                               "      devices: [0, \"1\", \"GPU-aa\", \"0:1\"]\n",
                               &c, &err),
                         0);
        const struct dp_replicated *r = &c.resources[0];
        assert_false(r->all);
        assert_int_equal(r->n_devices, 4);
        assert_string_equal(r->devices[0], "0");
        assert_string_equal(r->devices[2], "GPU-aa");
        assert_string_equal(r->rename, "nvidia.com/gpu-shared");
        dp_config_done(&c);

        assert_int_equal(parse("{\"version\": \"v1\", \"flags\": {\"plugin\": {\"deviceListStrategy\": [\"cdi-cri\", "
                               "\"envvar\"]}},"
                               " \"sharing\": {\"timeSlicing\": {\"resources\": [{\"name\": \"nvidia.com/gpu\", "
                               "\"replicas\": 4, "
                               "\"devices\": 2}]}}}",
                               &c, &err),
                         0);
        assert_int_equal(c.list_strategies, DP_LIST_CDI_CRI | DP_LIST_ENVVAR);
        assert_int_equal(c.resources[0].count, 2);
        dp_config_done(&c);

        /* empty file: defaults */
        assert_int_equal(parse("", &c, &err), 0);
        assert_int_equal(c.mig_strategy, DP_MIG_NONE);
        dp_config_done(&c);
}

/* What NVIDIA's plugin refuses, refused with a sentence naming the field. */
static void test_refusals(void **state) {
        static const struct {
                const char *text, *needle;
        } bad[] = {
                { "version: v2\n", "version" },
                { "version: v1\nflags:\n  migStrategy: maybe\n", "migStrategy" },
                { "version: v1\nflags:\n  failOnInitError: perhaps\n", "failOnInitError" },
                { "version: v1\nflags:\n  plugin:\n    deviceListStrategy: env\n", "deviceListStrategy" },
                { "version: v1\nflags:\n  plugin:\n    deviceIDStrategy: serial\n", "deviceIDStrategy" },
                { "version: v1\nsharing:\n  timeSlicing:\n    resources: []\n", "no resources" },
                { "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n", "no resources" },
                { "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - replicas: 2\n", "name" },
                { "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n",
                  "no replicas" },
                { "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: "
                  "1\n",
                  ">= 2" },
                { "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: "
                  "100000\n",
                  "more than" },
                { "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: "
                  "ten\n",
                  "whole number" },
                { "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: amd.com/gpu\n      replicas: 2\n",
                  "nvidia.com" },
                { "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: "
                  "2\n"
                  "      devices: some\n",
                  "devices" },
                { "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: "
                  "2\n"
                  "      devices: 0\n",
                  "count" },
                { "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: "
                  "2\n"
                  "    - name: nvidia.com/gpu\n      replicas: 3\n",
                  "twice" },
                { "version: v1\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 10\n",
                  "MPS" },
                { "- a\n- b\n", "not a mapping" },
                { "version: v1\nflags: [1]\n", "flags" },
                { "version: [v1\n", "invalid YAML" },
                /* a NUL (YAML's "\0", JSON's \u0000) would cut the C string the plugin keeps */
                { "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: "
                  "2\n      rename: \"gpu\\0evil\"\n",
                  "rename: contains a NUL" },
                { "{\"version\": \"v1\", \"sharing\": {\"timeSlicing\": {\"resources\": [{\"name\": "
                  "\"nvidia.com/gpu\\u0000x\", \"replicas\": 2}]}}}",
                  "name: contains a NUL" },
                { "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: "
                  "2\n      devices: [\"GPU-aa\\0\"]\n",
                  "devices[0]" },
                { "version: v1\nflags:\n  migStrategy: \"mixed\\0\"\n", "migStrategy: contains a NUL" },
                { "version: v1\nflags:\n  failOnInitError: \"true\\0\"\n", "failOnInitError: contains a NUL" },
                { "version: v1\nflags:\n  plugin:\n    deviceListStrategy: \"envvar\\0x\"\n", "deviceListStrategy" },
                { "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: "
                  "\"2\\0\"\n",
                  "replicas must be a whole number" },
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
                struct dp_config c;
                char *err;
                int r = parse(bad[i].text, &c, &err);
                if (r >= 0 || !err || !strstr(err, bad[i].needle))
                        fail_msg("config %zu: r=%d error '%s', wanted '%s'", i, r, err ? err : "(none)", bad[i].needle);
                free(err);
                dp_config_done(&c);
        }
}

static void test_list_strategy(void **state) {
        assert_int_equal(dp_list_strategy_parse("envvar"), DP_LIST_ENVVAR);
        assert_int_equal(dp_list_strategy_parse("cdi-annotations, volume-mounts"),
                         DP_LIST_CDI_ANNOTATIONS | DP_LIST_VOLUME_MOUNTS);
        assert_int_equal(dp_list_strategy_parse("cdi-cri"), DP_LIST_CDI_CRI);
        assert_int_equal(dp_list_strategy_parse(""), -EINVAL);
        assert_int_equal(dp_list_strategy_parse("envvar,"), -EINVAL);
        assert_int_equal(dp_list_strategy_parse("cdi"), -EINVAL);
}

/* NVIDIA's rules: application Xids skipped; DP_DISABLE_HEALTHCHECKS and DP_ENABLE_HEALTHCHECKS. */
static void test_xid_policy(void **state) {
        struct dp_xid_policy p;
        char *err = NULL;
        assert_int_equal(dp_xid_policy_parse(NULL, NULL, &p, &err), 0);
        static const unsigned app[] = { 13, 31, 43, 45, 68, 109 };
        for (size_t i = 0; i < 6; i++) assert_false(dp_xid_counts(&p, app[i]));
        assert_true(dp_xid_counts(&p, 48));
        assert_true(dp_xid_counts(&p, 79));
        assert_true(dp_xid_counts(&p, 999));
        assert_true(dp_xid_counts(&p, 123456)); /* an Xid past the table counts, as an unknown one */
        assert_int_equal(dp_xid_policy_parse("all", NULL, &p, &err), 0);
        assert_false(dp_xid_counts(&p, 79));
        assert_int_equal(dp_xid_policy_parse("xids", "79", &p, &err), 0);
        assert_true(dp_xid_counts(&p, 79));
        assert_int_equal(dp_xid_policy_parse("48, 64", NULL, &p, &err), 0);
        assert_false(dp_xid_counts(&p, 48));
        assert_false(dp_xid_counts(&p, 64));
        assert_false(dp_xid_counts(&p, 13));
        assert_true(dp_xid_counts(&p, 79));
        assert_int_equal(dp_xid_policy_parse(NULL, "13", &p, &err), 0);
        assert_true(dp_xid_counts(&p, 13));
        assert_false(dp_xid_counts(&p, 31));
        assert_int_equal(dp_xid_policy_parse("48,x", NULL, &p, &err), -EINVAL);
        assert_non_null(strstr(err, "DP_DISABLE_HEALTHCHECKS"));
        free(err);
}

/* /proc/driver/nvidia-caps/mig-minors as the driver writes it (its first lines). */
static void test_mig_minors(void **state) {
        static const char text[] =
                "config 1\nmonitor 2\ngpu0/gi0/access 3\ngpu0/gi0/ci0/access 4\ngpu0/gi0/ci1/access 5\n"
                "gpu7/gi14/ci7/access 4095\ngpu1/gi2/access 30\ngarbage line\ngpu0/gi0/access x\n"
                "gpu0/gi1/access 6 extra\n\n";
        struct dp_mig_minor *v = NULL;
        size_t n = 0, skipped = 0;
        assert_int_equal(dp_mig_minors_parse(text, sizeof text - 1, &v, &n, &skipped), 0);
        assert_int_equal(n, 5);
        assert_int_equal(skipped, 3);
        assert_int_equal(v[0].gpu, 0);
        assert_int_equal(v[0].gi, 0);
        assert_int_equal(v[0].ci, -1);
        assert_int_equal(v[0].minor, 3);
        assert_int_equal(v[2].ci, 1);
        assert_int_equal(v[2].minor, 5);
        assert_int_equal(v[3].gpu, 7);
        assert_int_equal(v[3].gi, 14);
        assert_int_equal(v[3].ci, 7);
        assert_int_equal(v[3].minor, 4095);
        free(v);
        assert_int_equal(dp_mig_minors_parse("", 0, &v, &n, NULL), 0);
        assert_int_equal(n, 0);
        free(v);
}

/* flags.nvidiaDevRoot, and its refusal. */
static void test_dev_root(void **state) {
        struct dp_config c;
        char *err;
        assert_int_equal(parse("version: v1\nflags:\n  nvidiaDevRoot: /run/nvidia/driver\n  plugin:\n    "
                               "passDeviceSpecs: true\n",
                               &c, &err),
                         0);
        assert_string_equal(c.dev_root, "/run/nvidia/driver");
        assert_true(c.pass_device_specs);
        dp_config_done(&c);
        assert_int_equal(parse("version: v1\nflags:\n  nvidiaDevRoot: run/nvidia\n", &c, &err), -EINVAL);
        assert_non_null(strstr(err, "nvidiaDevRoot"));
        free(err);
        dp_config_done(&c);
}

/* Appends a length-delimited protobuf field (tag, n bytes of s) to b. Returns nothing. */
static void pb_field(struct buf *b, unsigned tag, const void *s, size_t n) {
        uint8_t head[12];
        size_t k = 0;
        head[k++] = (uint8_t)(tag << 3 | 2);
        for (size_t v = n;; v >>= 7) {
                head[k++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
                if (v <= 0x7f) break;
        }
        buf_append(b, (const char *)head, k);
        buf_append(b, s, n);
}

/* One container request of ids (n each, NUL bytes allowed) under tags 1 (available or devices_ids)
 * and 2 (must_include), allocation_size (field 3) when size >= 0, wrapped as container_requests
 * (field 1) of the request. Returns the request bytes in *b. */
static void pb_request(struct buf *b, const char *const *ids, const size_t *lens, size_t n, const char *const *must,
                       size_t n_must, int size) {
        struct buf c = { 0 };
        for (size_t i = 0; i < n; i++) pb_field(&c, 1, ids[i], lens ? lens[i] : strlen(ids[i]));
        for (size_t i = 0; i < n_must; i++) pb_field(&c, 2, must[i], strlen(must[i]));
        if (size >= 0) {
                uint8_t v[2] = { 3 << 3, (uint8_t)size };
                buf_append(&c, (const char *)v, 2);
        }
        *b = (struct buf){ 0 };
        pb_field(b, 1, c.data ? c.data : "", c.len);
        buf_free(&c);
}

/* Three whole GPUs as one resource, for Allocate and GetPreferredAllocation. */
static const char *const alloc_ids[] = { "GPU-aaaa", "GPU-bbbb", "GPU-cccc" };

/* Fills r, devs, gpus and ctx with the three GPUs of alloc_ids. Returns nothing. */
static void alloc_setup(struct dp_resource *r, struct dp_device *devs, struct dp_gpu *gpus,
                        struct dp_alloc_context *ctx) {
        for (size_t i = 0; i < 3; i++) {
                devs[i] = (struct dp_device){ .id = (char *)alloc_ids[i],
                                              .visible = (char *)alloc_ids[i],
                                              .uuid = (char *)alloc_ids[i],
                                              .gpu = i };
                gpus[i] = (struct dp_gpu){ .index = (unsigned)i, .numa = 0, .minor = (int)i };
                snprintf(gpus[i].uuid, sizeof gpus[i].uuid, "%s", alloc_ids[i]);
        }
        *r = (struct dp_resource){ .name = (char *)"nvidia.com/gpu", .devices = devs, .n_devices = 3 };
        *ctx = (struct dp_alloc_context){ .resource = r,
                                          .list_strategies = DP_LIST_ENVVAR,
                                          .cdi_annotation_prefix = "cdi.k8s.io/",
                                          .gpus = gpus,
                                          .n_gpus = 3 };
}

/* Issue 20: an ID with a NUL byte inside (protobuf strings are length-delimited) was allocated as
 * the GPU named before the NUL; it is refused, named escaped, in Allocate and GetPreferredAllocation. */
static void test_allocate_nul_id(void **state) {
        struct dp_resource r;
        struct dp_device devs[3];
        struct dp_gpu gpus[3];
        struct dp_alloc_context ctx;
        alloc_setup(&r, devs, gpus, &ctx);
        static const char evil[] = "GPU-aaaa\0junk";
        const char *ids[] = { evil };
        const size_t lens[] = { sizeof evil - 1 };
        struct buf req;
        uint8_t *out = NULL;
        size_t out_len = 0;
        char *err = NULL;

        /* a sane request is answered with the GPU */
        pb_request(&req, alloc_ids, NULL, 1, NULL, 0, -1);
        assert_int_equal(dp_allocate(&ctx, (const uint8_t *)req.data, req.len, &out, &out_len, &err), 0);
        assert_non_null(memmem(out, out_len, "GPU-aaaa", 8));
        free(out);
        out = NULL;
        buf_free(&req);

        pb_request(&req, ids, lens, 1, NULL, 0, -1);
        int rc = dp_allocate(&ctx, (const uint8_t *)req.data, req.len, &out, &out_len, &err);
        if (rc != GRPC_INVALID_ARGUMENT)
                fail_msg("Allocate of an id with a NUL: %d (%s), wanted INVALID_ARGUMENT", rc, err ? err : "answered");
        assert_non_null(strstr(err, "devices_ids: device id \"GPU-aaaa\\0junk\" holds a NUL byte"));
        assert_null(out);
        free(err);
        err = NULL;
        buf_free(&req);

        /* GetPreferredAllocation: in available, and in must_include */
        pb_request(&req, ids, lens, 1, NULL, 0, 1);
        rc = dp_preferred(&ctx, (const uint8_t *)req.data, req.len, &out, &out_len, &err);
        if (rc != GRPC_INVALID_ARGUMENT) fail_msg("preferred, NUL in available: %d (%s)", rc, err ? err : "answered");
        assert_non_null(strstr(err, "available_deviceIDs: device id \"GPU-aaaa\\0junk\""));
        free(err);
        err = NULL;
        buf_free(&req);
        struct buf c = { 0 };
        for (size_t i = 0; i < 3; i++) pb_field(&c, 1, alloc_ids[i], 8);
        pb_field(&c, 2, evil, sizeof evil - 1);
        uint8_t size1[2] = { 3 << 3, 1 };
        buf_append(&c, (const char *)size1, 2);
        req = (struct buf){ 0 };
        pb_field(&req, 1, c.data, c.len);
        buf_free(&c);
        rc = dp_preferred(&ctx, (const uint8_t *)req.data, req.len, &out, &out_len, &err);
        if (rc != GRPC_INVALID_ARGUMENT)
                fail_msg("preferred, NUL in must_include: %d (%s)", rc, err ? err : "answered");
        assert_non_null(strstr(err, "must_include_deviceIDs: device id \"GPU-aaaa\\0junk\""));
        free(err);
        buf_free(&req);
}

/* Issue 20: GetPreferredAllocation answered a must_include ID that is not in available; the
 * kubelet's contract makes it a subset, so one that is not is INVALID_ARGUMENT naming it. */
static void test_preferred_must_include_subset(void **state) {
        struct dp_resource r;
        struct dp_device devs[3];
        struct dp_gpu gpus[3];
        struct dp_alloc_context ctx;
        alloc_setup(&r, devs, gpus, &ctx);
        const char *avail[] = { "GPU-aaaa", "GPU-cccc" };
        const char *must_b[] = { "GPU-bbbb" }, *must_c[] = { "GPU-cccc" };
        struct buf req;
        uint8_t *out = NULL;
        size_t out_len = 0;
        char *err = NULL;

        pb_request(&req, avail, NULL, 2, must_c, 1, 1);
        assert_int_equal(dp_preferred(&ctx, (const uint8_t *)req.data, req.len, &out, &out_len, &err), 0);
        assert_non_null(memmem(out, out_len, "GPU-cccc", 8));
        assert_null(memmem(out, out_len, "GPU-aaaa", 8));
        free(out);
        out = NULL;
        buf_free(&req);

        pb_request(&req, avail, NULL, 2, must_b, 1, 2);
        int rc = dp_preferred(&ctx, (const uint8_t *)req.data, req.len, &out, &out_len, &err);
        if (rc != GRPC_INVALID_ARGUMENT)
                fail_msg("must_include outside available: %d (%s), wanted INVALID_ARGUMENT", rc,
                         err ? err : "answered");
        assert_non_null(strstr(err, "must_include device id \"GPU-bbbb\" is not among the available devices"));
        assert_null(out);
        free(err);
        err = NULL;
        buf_free(&req);

        /* a size past the available devices (must_include no longer counts twice) */
        pb_request(&req, avail, NULL, 2, must_c, 1, 3);
        assert_int_equal(dp_preferred(&ctx, (const uint8_t *)req.data, req.len, &out, &out_len, &err),
                         GRPC_INVALID_ARGUMENT);
        assert_non_null(strstr(err, "cannot be met"));
        free(err);
        buf_free(&req);
}

/* Sleeps ms milliseconds. Returns nothing. */
static void sleep_ms(unsigned ms) {
        struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000L };
        nanosleep(&t, NULL);
}

/* Writes the fake NVML's description text to dir/nvml.json and points GPUNODE_FAKE_NVML at it.
 * Returns its malloc'd path. */
static char *fake_nvml_desc(const char *dir, const char *text) {
        char *p = xasprintf("%s/nvml.json", dir);
        _cleanup_free_ char *tmp = xasprintf("%s.tmp", p);
        FILE *f = fopen(tmp, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
        assert_int_equal(rename(tmp, p), 0);
        setenv("GPUNODE_FAKE_NVML", p, 1);
        return p;
}

/* Issue 20 (#15): a health thread stuck in NVML past dp_health_stop's 2 s was left holding its
 * monitor for good (a leak per stop); stop now returns on time and the thread frees the monitor
 * when the call returns. */
static void test_health_stop_stuck(void **state) {
        char dir[] = "/tmp/test-dp-health-XXXXXX";
        assert_non_null(mkdtemp(dir));
        _cleanup_free_ char *desc = fake_nvml_desc(
                dir,
                "{\"driver_version\": \"570.133.20\", \"block\": {\"call\": \"nvmlDeviceGetCount\", \"seconds\": 3},"
                " \"gpus\": [{\"name\": \"NVIDIA H200\", \"uuid\": \"GPU-aaaa\"}]}");
        struct nvml_lib *lib = NULL;
        char *err = NULL;
        assert_int_equal(nvml_lib_open(getenv("GPUNODE_FAKE_NVML_LIB"), &lib, &err), 0);
        struct dp_xid_policy pol;
        assert_int_equal(dp_xid_policy_parse(NULL, NULL, &pol, &err), 0);
        struct dp_gpu g = { .index = 0, .uuid = "GPU-aaaa", .numa = -1, .minor = -1 };
        size_t before = dp_health_live();
        struct dp_health *h = NULL;
        assert_int_equal(dp_health_start(lib, &g, 1, 50, &pol, false, &h), 0);
        assert_int_equal(dp_health_live(), before + 1);
        sleep_ms(300); /* the thread is inside nvmlDeviceGetCount, for 3 s */
        uint64_t t0 = monotonic_ms();
        dp_health_stop(h);
        uint64_t took = monotonic_ms() - t0;
        if (took < 1900 || took > 2600)
                fail_msg("dp_health_stop took %llu ms, wanted about 2050", (unsigned long long)took);
        assert_int_equal(dp_health_live(), before + 1); /* the thread still holds it */
        for (int i = 0; i < 80 && dp_health_live() > before; i++) sleep_ms(50);
        if (dp_health_live() != before)
                fail_msg("the stuck thread's monitor was never freed (%zu live, %zu before)", dp_health_live(), before);
        nvml_lib_unref(lib);
        unsetenv("GPUNODE_FAKE_NVML");
        unlink(desc);
        rmdir(dir);
}

/* Issue 20 (#15): an Xid on one MIG GPU instance marked every MIG device of its GPU. The inventory
 * keeps each MIG device's GPU instance, NVML's instance id reaches the monitor, and only that
 * instance's devices go Unhealthy; an Xid naming no instance still takes the whole GPU. */
static void test_health_mig_instance(void **state) {
        /* the inventory: GPU 0 in MIG mode with instances 3 and 5, GPU 1 whole */
        struct nvml_gpu_facts gf[2];
        for (unsigned i = 0; i < 2; i++) {
                nvml_gpu_facts_init(&gf[i], i);
                gf[i].uuid_rc = NVML_SUCCESS;
                snprintf(gf[i].uuid, sizeof gf[i].uuid, "GPU-%u000", i);
        }
        gf[0].mig_rc = NVML_SUCCESS;
        gf[0].mig_current = 1;
        gf[0].n_mig = 2;
        for (unsigned m = 0; m < 2; m++) {
                struct nvml_mig_facts *mf = &gf[0].mig[m];
                *mf = (struct nvml_mig_facts){ .index = m,
                                               .uuid_rc = NVML_SUCCESS,
                                               .gi_rc = NVML_SUCCESS,
                                               .gi_id = m ? 5 : 3,
                                               .ci_rc = NVML_SUCCESS,
                                               .profile = "1g.10gb" };
                snprintf(mf->uuid, sizeof mf->uuid, "MIG-%u", mf->gi_id);
        }
        struct nvml_facts f = { .init_rc = NVML_SUCCESS, .n_gpus = 2, .gpus = gf };
        struct dp_config cfg;
        dp_config_init(&cfg);
        cfg.mig_strategy = DP_MIG_MIXED;
        struct dp_inventory *inv = NULL;
        char *err = NULL;
        assert_int_equal(hostfs_init("/"), 0);
        if (dp_inventory_build(&f, &cfg, &inv, &err) < 0) fail_msg("inventory: %s", err);
        const struct dp_device *mig3 = NULL, *mig5 = NULL, *whole = NULL;
        for (size_t r = 0; r < inv->n_resources; r++)
                for (size_t k = 0; k < inv->resources[r].n_devices; k++) {
                        const struct dp_device *d = &inv->resources[r].devices[k];
                        if (streq(d->id, "MIG-3")) mig3 = d;
                        if (streq(d->id, "MIG-5")) mig5 = d;
                        if (streq(d->id, "GPU-1000")) whole = d;
                }
        assert_non_null(mig3);
        assert_non_null(mig5);
        assert_non_null(whole);
        assert_int_equal(mig3->gi, 3);
        assert_int_equal(mig5->gi, 5);
        assert_int_equal(whole->gi, DP_GI_NONE);

        /* the monitor, over the fake NVML answering both GPUs */
        char dir[] = "/tmp/test-dp-health-XXXXXX";
        assert_non_null(mkdtemp(dir));
        _cleanup_free_ char *desc = fake_nvml_desc(
                dir,
                "{\"driver_version\": \"570.133.20\", \"gpus\": [{\"name\": \"NVIDIA H200\", \"uuid\": \"GPU-0000\"},"
                " {\"name\": \"NVIDIA H200\", \"uuid\": \"GPU-1000\"}]}");
        struct nvml_lib *lib = NULL;
        assert_int_equal(nvml_lib_open(getenv("GPUNODE_FAKE_NVML_LIB"), &lib, &err), 0);
        struct dp_xid_policy pol;
        assert_int_equal(dp_xid_policy_parse(NULL, NULL, &pol, &err), 0);
        struct dp_health *h = NULL;
        assert_int_equal(dp_health_start(lib, inv->gpus, inv->n_gpus, 50, &pol, false, &h), 0);
        struct dp_gpu_health gh[2];
        dp_health_xid(h, "GPU-0000", 79, 3);
        dp_health_get(h, gh);
        assert_true(gh[0].healthy);
        assert_true(gh[1].healthy);
        assert_int_equal(gh[0].unhealthy_instances, (uint64_t)1 << 3);
        assert_non_null(strstr(gh[0].instance_reason, "Xid 79 on MIG GPU instance 3"));
        assert_false(dp_device_healthy(&gh[0], mig3));
        assert_true(dp_device_healthy(&gh[0], mig5)); /* before: Unhealthy, its GPU's Xid */
        assert_true(dp_device_healthy(&gh[1], whole));
        /* a whole device, or a MIG device of an unnamed instance, on a GPU with a hit instance is hit */
        struct dp_device unknown = *mig5;
        unknown.gi = DP_GI_UNKNOWN;
        assert_false(dp_device_healthy(&gh[0], &unknown));
        unknown.gi = DP_GI_NONE;
        assert_false(dp_device_healthy(&gh[0], &unknown));
        /* an application Xid on instance 5 changes nothing; an Xid naming no instance takes the GPU */
        dp_health_xid(h, "GPU-0000", 13, 5);
        dp_health_get(h, gh);
        assert_true(dp_device_healthy(&gh[0], mig5));
        dp_health_xid(h, "GPU-0000", 79, DP_NO_INSTANCE);
        dp_health_get(h, gh);
        assert_false(gh[0].healthy);
        assert_false(dp_device_healthy(&gh[0], mig5));
        assert_true(gh[1].healthy);
        dp_health_xid(h, "GPU-1000", 48, 200); /* an instance id past the tracked ones: the whole GPU */
        dp_health_get(h, gh);
        assert_false(gh[1].healthy);
        dp_health_stop(h);
        nvml_lib_unref(lib);
        dp_inventory_free(inv);
        dp_config_done(&cfg);
        unsetenv("GPUNODE_FAKE_NVML");
        unlink(desc);
        rmdir(dir);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_readme_flags),      cmocka_unit_test(test_readme_time_slicing),
                cmocka_unit_test(test_operator_mixed),    cmocka_unit_test(test_devices_rename_json),
                cmocka_unit_test(test_refusals),          cmocka_unit_test(test_list_strategy),
                cmocka_unit_test(test_xid_policy),        cmocka_unit_test(test_mig_minors),
                cmocka_unit_test(test_allocate_nul_id),   cmocka_unit_test(test_preferred_must_include_subset),
                cmocka_unit_test(test_health_stop_stuck), cmocka_unit_test(test_health_mig_instance),
                cmocka_unit_test(test_dev_root),          cmocka_unit_test(test_mps_and_one_refusal),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
