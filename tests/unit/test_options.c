/* test_options.c: the shared command options: one duration syntax, the one node-name rule, the
 * argument checks every command applies the same way. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <sys/stat.h>

#include "basic/hostfs.h"
#include "cmd/options.h"

static void test_durations(void **state) {
        uint64_t ms;
        assert_int_equal(parse_duration_ms("10", 1, 86400000, &ms), 0);
        assert_int_equal(ms, 10000);
        assert_int_equal(parse_duration_ms("1.5", 1, 86400000, &ms), 0);
        assert_int_equal(ms, 1500);
        assert_int_equal(parse_duration_ms("500ms", 1, 86400000, &ms), 0);
        assert_int_equal(ms, 500);
        assert_int_equal(parse_duration_ms("10s", 1, 86400000, &ms), 0);
        assert_int_equal(ms, 10000);
        assert_int_equal(parse_duration_ms("5m", 1, 86400000, &ms), 0);
        assert_int_equal(ms, 300000);
        assert_int_equal(parse_duration_ms("2h", 1, 86400000, &ms), 0);
        assert_int_equal(ms, 7200000);
        assert_int_equal(parse_duration_ms("0", 0, 86400000, &ms), 0);
        assert_int_equal(ms, 0);
        /* refused: zero where a minimum is set, out of range, units, garbage */
        assert_int_equal(parse_duration_ms("0", 1, 86400000, &ms), -EINVAL);
        assert_int_equal(parse_duration_ms("601", 1, 600000, &ms), -EINVAL);
        assert_int_equal(parse_duration_ms("0.1ms", 0, 600000, &ms), -EINVAL);
        static const char *const bad[] = {"", " 5", "5 s", "5d", "-1", "nan", "inf", "1e999", "s", "5sec", "0x10q"};
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (parse_duration_ms(bad[i], 0, 86400000, &ms) != -EINVAL) fail_msg("'%s' was accepted", bad[i]);
}

static void test_go_durations(void **state) {
        static const struct {
                const char *s;
                uint64_t ms;
        } good[] = {
                {"60s", 60000}, {"1m30s", 90000}, {"1h", 3600000}, {"2h45m", 9900000}, {"1.5h", 5400000},
                {"300ms", 300}, {"1m0.5s", 60500}, {".5s", 500}, {"5.s", 5000}, {"+10s", 10000}, {"1000000us", 1000},
                {"2000000ns", 2}, {"1500\u00b5s", 2}, {"3000\u03bcs", 3}, {"1h1m1s1ms", 3661001}, {"0", 0}, {"0s", 0},
        };
        uint64_t ms;
        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                if (parse_go_duration_ms(good[i].s, 0, 365ull * 86400000, &ms) != 0) fail_msg("'%s' was refused", good[i].s);
                if (ms != good[i].ms) fail_msg("'%s' gave %llu ms, not %llu", good[i].s, (unsigned long long)ms,
                                               (unsigned long long)good[i].ms);
        }
        /* Go's refusals (no unit, unknown unit, garbage), and gpunode's: a sign, below a millisecond, range */
        static const char *const bad[] = {"", "10", "00", "1.5", "s", "5sec", "5 s", " 5s", "5s ", "1m30", "1d", "1e3s",
                                          "0x10s", "-5s", "-0", "inf", "nan", "5..5s", ".s", "1h-5m", "100us",
                                          "9999999999999999h", "1m30s\n"};
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (parse_go_duration_ms(bad[i], 0, 365ull * 86400000, &ms) != -EINVAL) fail_msg("'%s' was accepted", bad[i]);
        assert_int_equal(parse_go_duration_ms("0", 1, 1000, &ms), -EINVAL);
        assert_int_equal(parse_go_duration_ms("2s", 1, 1000, &ms), -EINVAL);
        assert_int_equal(parse_go_duration_ms("1s", 1, 1000, &ms), 0);
        assert_int_equal(ms, 1000);
        /* parse_duration_ms takes Go's compound forms too, and keeps its own */
        assert_int_equal(parse_duration_ms("1m30s", 1, 86400000, &ms), 0);
        assert_int_equal(ms, 90000);
        assert_int_equal(parse_duration_ms("10", 1, 86400000, &ms), 0);
        assert_int_equal(ms, 10000);
        assert_int_equal(parse_duration_ms("1m30", 1, 86400000, &ms), -EINVAL);
}

static void test_go_bools(void **state) {
        static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
        static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};
        bool b;
        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                b = false;
                assert_int_equal(parse_go_bool(yes[i], &b), 0);
                assert_true(b);
                assert_int_equal(parse_go_bool(no[i], &b), 0);
                assert_false(b);
        }
        static const char *const bad[] = {"", "yes", "no", "on", "off", "tRUE", "2", " true", "true "};
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                if (parse_go_bool(bad[i], &b) != -EINVAL) fail_msg("'%s' was accepted", bad[i]);
}

static void test_env_first(void **state) {
        static const char *const names[] = {"GPUNODE_TEST_ENV_A", "GPUNODE_TEST_ENV_B", NULL};
        const char *name = NULL;
        unsetenv("GPUNODE_TEST_ENV_A");
        unsetenv("GPUNODE_TEST_ENV_B");
        assert_null(env_first(names, &name));
        setenv("GPUNODE_TEST_ENV_B", "b", 1);
        setenv("GPUNODE_TEST_ENV_A", "", 1); /* set but empty: as unset */
        assert_string_equal(env_first(names, &name), "b");
        assert_string_equal(name, "GPUNODE_TEST_ENV_B");
        setenv("GPUNODE_TEST_ENV_A", "a", 1); /* the first name wins */
        assert_string_equal(env_first(names, &name), "a");
        assert_string_equal(name, "GPUNODE_TEST_ENV_A");
        unsetenv("GPUNODE_TEST_ENV_A");
        unsetenv("GPUNODE_TEST_ENV_B");
}

static void test_shared_option_errors(void **state) {
        struct shared_options o;
        shared_options_init(&o);
        char *err = NULL;
        assert_int_equal(shared_option(OPT_TIMEOUT, "500ms", &o, &err), 1);
        assert_int_equal(o.kube.timeout_ms, 500);
        assert_true(o.timeout_given);
        assert_int_equal(shared_option(OPT_TIMEOUT, "11m", &o, &err), -EINVAL);
        assert_non_null(strstr(err, "--timeout"));
        free(err);
        err = NULL;
        assert_int_equal(shared_option(OPT_NVML_TIMEOUT, "0", &o, &err), -EINVAL);
        assert_non_null(strstr(err, "--nvml-timeout"));
        free(err);
        err = NULL;
        assert_int_equal(shared_option(OPT_ROOT, "/host", &o, &err), 1);
        assert_string_equal(o.root, "/host");
        assert_true(o.root_given);
        assert_int_equal(shared_option('Z', "x", &o, &err), 0); /* not a shared option */
        assert_null(err);
        /* --expect-gpus: a count of GPUs, 1..1024, nothing else */
        assert_int_equal(o.probe.expect_gpus, 0);
        assert_int_equal(shared_option(OPT_EXPECT_GPUS, "8", &o, &err), 1);
        assert_int_equal(o.probe.expect_gpus, 8);
        static const char *const bad[] = { "0", "-1", "1025", "8x", "", " 8", "0x8", "99999999999999999999" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                assert_int_equal(shared_option(OPT_EXPECT_GPUS, bad[i], &o, &err), -EINVAL);
                assert_non_null(strstr(err, "--expect-gpus"));
                assert_non_null(strstr(err, bad[i]));
                free(err);
                err = NULL;
        }
        assert_int_equal(o.probe.expect_gpus, 8); /* a refused value leaves the last good one */
}

/* --node takes node names only (DNS-1123 subdomains); before, any string was taken and went raw
 * into API paths. */
static void test_node_names(void **state) {
        (void)state;
        static const char *const good[] = { "a", "gpu-1", "ip-10-0-0-1.ec2.internal", "0", "a.b-c.d" };
        static const char *const bad[] = { "", "Gpu-1", "gpu_1", "-gpu", "gpu-", "gpu.", ".gpu", "gpu..1",
                                           "gpu-.x", "gpu/../x", "gpu 1", "gpu\x1b[2J", "gpu-1%2F" };
        char long_ok[254], long_bad[255];
        memset(long_ok, 'a', 253);
        long_ok[253] = 0;
        memset(long_bad, 'a', 254);
        long_bad[254] = 0;
        char *err = NULL;
        for (size_t i = 0; i < ELEMENTSOF(good); i++) assert_int_equal(node_name_check(good[i], "--node", &err), 0);
        assert_int_equal(node_name_check(long_ok, "--node", &err), 0);
        assert_null(err);
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                assert_int_equal(node_name_check(bad[i], "--node", &err), -EINVAL);
                assert_non_null(strstr(err, "--node '"));
                assert_non_null(strstr(err, "is not a node name"));
                assert_null(strchr(err, '\x1b')); /* shown escaped */
                free(err);
                err = NULL;
        }
        assert_int_equal(node_name_check(long_bad, "$NODE_NAME", &err), -EINVAL);
        assert_non_null(strstr(err, "$NODE_NAME"));
        assert_non_null(strstr(err, "253"));
        free(err);
        err = NULL;
        struct shared_options o;
        shared_options_init(&o);
        assert_int_equal(shared_option(OPT_NODE, "Bad_Name", &o, &err), -EINVAL);
        assert_null(o.node);
        assert_non_null(strstr(err, "--node 'Bad_Name'"));
        free(err);
        err = NULL;
        assert_int_equal(shared_option(OPT_NODE, "gpu-7", &o, &err), 1);
        assert_string_equal(o.node, "gpu-7");
}

/* Every SHARED_OPT_* bit has its help, naming its option at the line's start, the text in the
 * column the commands' own lines use, each line ending in a newline within 110 columns. */
static void test_shared_option_help(void **state) {
        static const struct {
                unsigned bit;
                const char *option;
        } opts[] = {
                { SHARED_OPT_ROOT, "--root DIR" },
                { SHARED_OPT_KMSG, "--kmsg FILE" },
                { SHARED_OPT_NVML_LIBRARY, "--nvml-library PATH" },
                { SHARED_OPT_NVML_TIMEOUT, "--nvml-timeout MS" },
                { SHARED_OPT_NODE, "--node NAME" },
                { SHARED_OPT_KUBECONFIG, "--kubeconfig FILE" },
                { SHARED_OPT_TIMEOUT, "--timeout DURATION" },
                { SHARED_OPT_OPERATOR_NAMESPACE, "--operator-namespace NS" },
                { SHARED_OPT_DCGM_URL, "--dcgm-url URL" },
                { SHARED_OPT_NODE_EXPORTER_URL, "--node-exporter-url URL" },
                { SHARED_OPT_EXPECT_GPUS, "--expect-gpus N" },
        };
        for (size_t i = 0; i < ELEMENTSOF(opts); i++) {
                const char *h = shared_option_help(opts[i].bit);
                assert_non_null(h);
                assert_true(startswith(h, "  "));
                assert_true(startswith(h + 2, opts[i].option));
                size_t n = strlen(opts[i].option);
                /* the text at column 25, or two spaces after a longer name */
                assert_true(n <= 20 ? strspn(h + 2 + n, " ") == 22 - n : strspn(h + 2 + n, " ") == 2);
                assert_int_equal(h[strlen(h) - 1], '\n');
                for (const char *line = h; *line; line = strchr(line, '\n') + 1) {
                        assert_true(strchr(line, '\n') - line <= 110);
                        if (line != h) assert_int_equal(strspn(line, " "), 24); /* continuation lines */
                }
        }
        /* SHARED_OPTS_KUBE is what OPTIONS_KUBE accepts */
        assert_int_equal(SHARED_OPTS_KUBE, SHARED_OPT_KUBECONFIG | SHARED_OPT_TIMEOUT | SHARED_OPT_OPERATOR_NAMESPACE |
                                                   SHARED_OPT_DCGM_URL | SHARED_OPT_NODE_EXPORTER_URL);
        /* not exactly one bit: no text */
        assert_null(shared_option_help(0));
        assert_null(shared_option_help(SHARED_OPT_ROOT | SHARED_OPT_KMSG));
        assert_null(shared_option_help(SHARED_OPT_EXPECT_GPUS << 1));
}

/* Writes text to dir/rel, creating the folders on the way. */
static void write_file(const char *dir, const char *rel, const char *text) {
        _cleanup_free_ char *p = xasprintf("%s/%s", dir, rel);
        for (char *s = p + strlen(dir) + 1; (s = strchr(s, '/')); s++) {
                *s = 0;
                mkdir(p, 0755);
                *s = '/';
        }
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
}

static void test_node_name_rule(void **state) {
        char dir[] = "/tmp/gpunode-options-XXXXXX";
        assert_non_null(mkdtemp(dir));
        write_file(dir, "proc/sys/kernel/hostname", "GPU-Node-7\n");
        assert_int_equal(hostfs_init(dir), 0);
        unsetenv("NODE_NAME");
        char *n = node_name_resolve("from-flag");
        assert_string_equal(n, "from-flag");
        free(n);
        setenv("NODE_NAME", "from-env", 1);
        n = node_name_resolve(NULL);
        assert_string_equal(n, "from-env");
        free(n);
        n = node_name_resolve("");
        assert_string_equal(n, "from-env");
        free(n);
        unsetenv("NODE_NAME");
        /* the host name under the root, lowercased as the kubelet does */
        n = node_name_resolve(NULL);
        assert_string_equal(n, "gpu-node-7");
        free(n);
        hostfs_done();
        /* a root without the file: "unknown", never the machine running the test */
        char empty[] = "/tmp/gpunode-options-XXXXXX";
        assert_non_null(mkdtemp(empty));
        assert_int_equal(hostfs_init(empty), 0);
        n = node_name_resolve(NULL);
        assert_string_equal(n, "unknown");
        free(n);
        hostfs_done();
        _cleanup_free_ char *cmd = xasprintf("rm -rf %s %s", dir, empty);
        assert_int_equal(system(cmd), 0);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_durations),
                cmocka_unit_test(test_go_durations),
                cmocka_unit_test(test_go_bools),
                cmocka_unit_test(test_env_first),
                cmocka_unit_test(test_shared_option_errors),
                cmocka_unit_test(test_node_names),
                cmocka_unit_test(test_shared_option_help),
                cmocka_unit_test(test_node_name_rule),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
