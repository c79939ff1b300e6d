/* test_promtext.c: cmocka tests for the Prometheus text parser (argv[1] or $PROMTEXT_TESTDATA: testdata dir). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <math.h>

#include "basic/promtext.h"
#include "basic/util.h"

static const char *testdata_dir;

/* A recording of everything the parser delivered. */
struct rec {
        struct buf out;    /* one line per event, in a canonical form */
        size_t n_samples, n_help, n_type;
        int stop_at;       /* stop with this value at sample number stop_after (1-based) */
        size_t stop_after;
};

/* Appends the sample to r->out as "L<line> <type> name{a="b",...} value [ts]". Returns r->stop_at
 * at sample number stop_after, 0 otherwise. */
static int rec_sample(const struct promtext_sample *s, void *userdata) {
        struct rec *r = userdata;
        r->n_samples++;
        buf_printf(&r->out, "L%lu %s %s{", s->line, promtext_type_to_string(s->type), s->name);
        for (size_t i = 0; i < s->n_labels; i++)
                buf_printf(&r->out, "%s%s=[%s]", i ? "," : "", s->labels[i].name, s->labels[i].value);
        buf_printf(&r->out, "} %g", s->value);
        if (s->has_timestamp) buf_printf(&r->out, " @%lld", (long long)s->timestamp_ms);
        buf_puts(&r->out, "\n");
        return r->stop_after == r->n_samples ? r->stop_at : 0;
}

/* Appends "L<line> HELP name [text]". Returns 0. */
static int rec_help(const char *name, const char *text, unsigned long line, void *userdata) {
        struct rec *r = userdata;
        r->n_help++;
        buf_printf(&r->out, "L%lu HELP %s [%s]\n", line, name, text);
        return 0;
}

/* Appends "L<line> TYPE name type". Returns 0. */
static int rec_type(const char *name, enum promtext_type t, unsigned long line, void *userdata) {
        struct rec *r = userdata;
        r->n_type++;
        buf_printf(&r->out, "L%lu TYPE %s %s\n", line, name, promtext_type_to_string(t));
        return 0;
}

/* Stores the sample's value into the double userdata points to. Returns 0. */
static int value_sample(const struct promtext_sample *s, void *userdata) {
        *(double *)userdata = s->value;
        return 0;
}

static const struct promtext_callbacks rec_cb = { .sample = rec_sample, .help = rec_help, .type = rec_type };

/* Parses s from an exact-size heap copy (so ASan catches over-reads) into r. Returns the parse result. */
static int parse_exact(const char *s, size_t n, struct rec *r, struct promtext_error *e) {
        char *copy = xmalloc(n);
        memcpy(copy, s, n);
        int ret = promtext_parse(copy, n, &rec_cb, r, e);
        free(copy);
        return ret;
}

/* Parses the NUL-terminated s and asserts success; returns the recorded text (caller frees). */
static char *parse_ok(const char *s) {
        struct rec r = {};
        struct promtext_error e;
        int ret = parse_exact(s, strlen(s), &r, &e);
        if (ret != 0) fail_msg("unexpected failure %d: %s", ret, e.message);
        assert_int_equal(e.line, 0);
        return r.out.data ? r.out.data : xstrdup("");
}

/* Reads testdata file name; returns its malloc'd contents and length (fails the test on error). */
static char *read_testdata(const char *name, size_t *ret_len) {
        _cleanup_free_ char *path = xasprintf("%s/%s", testdata_dir, name);
        _cleanup_fclose_ FILE *f = fopen(path, "re");
        struct buf b = {};
        char chunk[4096];
        size_t n;
        if (!f) fail_msg("cannot open %s: %m (pass the testdata dir as argv[1] or $PROMTEXT_TESTDATA)", path);
        while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) buf_append(&b, chunk, n);
        *ret_len = b.len;
        return b.data;
}

static void test_dcgm_doc_line(void **state) {
        (void)state;
        /* The real H100 line quoted in layer4-observability.md. */
        static const char line[] =
                "DCGM_FI_DEV_GPU_TEMP{gpu=\"6\",UUID=\"GPU-d0f25a6f-9a3f-61b9-c128-3d14759651d7\",pci_bus_id=\"00000000:B9:00.0\","
                "device=\"nvidia6\",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"ip-10-0-180-136.ec2.internal\","
                "DCGM_FI_DRIVER_VERSION=\"580.105.08\",container=\"llama-3-2-1b-ctr\",namespace=\"nim-workload\","
                "pod=\"llama-3-2-1b-7577f87fc7-dhb97\",pod_uid=\"\"} 37\n";
        _cleanup_free_ char *out = parse_ok(line);
        assert_string_equal(out,
                "L1 untyped DCGM_FI_DEV_GPU_TEMP{gpu=[6],UUID=[GPU-d0f25a6f-9a3f-61b9-c128-3d14759651d7],"
                "pci_bus_id=[00000000:B9:00.0],device=[nvidia6],modelName=[NVIDIA H100 80GB HBM3],"
                "Hostname=[ip-10-0-180-136.ec2.internal],DCGM_FI_DRIVER_VERSION=[580.105.08],container=[llama-3-2-1b-ctr],"
                "namespace=[nim-workload],pod=[llama-3-2-1b-7577f87fc7-dhb97],pod_uid=[]} 37\n");

        struct promtext_gpu_summary s;
        struct promtext_error e;
        assert_int_equal(promtext_gpu_summary_parse(line, sizeof line - 1, &s, &e), 0);
        assert_int_equal(s.n_gpus, 1);
        assert_string_equal(s.gpus[0].uuid, "GPU-d0f25a6f-9a3f-61b9-c128-3d14759651d7");
        assert_int_equal(s.gpus[0].n_series, 1);
        assert_int_equal(s.gpus[0].n_nonzero, 1);
        assert_int_equal(s.n_metrics, 1);
        assert_true(promtext_gpu_summary_has_metric(&s, "DCGM_FI_DEV_GPU_TEMP"));
        promtext_gpu_summary_free(&s);
}

static void test_dcgm_page(void **state) {
        (void)state;
        size_t len;
        _cleanup_free_ char *data = read_testdata("dcgm-exporter-2gpu.prom", &len);
        struct rec r = {};
        struct promtext_error e;
        assert_int_equal(parse_exact(data, len, &r, &e), 0);
        assert_int_equal(r.n_samples, 50);
        assert_int_equal(r.n_help, 25);
        assert_int_equal(r.n_type, 25);
        assert_non_null(strstr(r.out.data, "L1 HELP DCGM_FI_DEV_SM_CLOCK [SM clock frequency (in MHz).]\n"));
        assert_non_null(strstr(r.out.data, "L2 TYPE DCGM_FI_DEV_SM_CLOCK gauge\n"));
        assert_non_null(strstr(r.out.data, "L23 counter DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu=[0],"));
        assert_non_null(strstr(r.out.data, "pod=[llm-finetune-5d8f9c7b6-x2kqp]} 1.83493e+11\n"));
        assert_non_null(strstr(r.out.data, "L20 gauge DCGM_FI_DEV_POWER_USAGE{gpu=[1],"));
        buf_free(&r.out);

        struct promtext_gpu_summary s;
        assert_int_equal(promtext_gpu_summary_parse(data, len, &s, &e), 0);
        assert_int_equal(s.n_samples, 50);
        assert_int_equal(s.n_dcgm_samples, 50);
        assert_int_equal(s.n_dcgm_no_uuid, 0);
        assert_int_equal(s.n_metrics, 25);
        assert_int_equal(s.n_gpus, 2);
        assert_string_equal(s.gpus[0].uuid, "GPU-6f4e2c1a-8b3d-4e5f-9a7b-1c2d3e4f5a6b");
        assert_string_equal(s.gpus[1].uuid, "GPU-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d");
        assert_int_equal(s.gpus[0].n_series, 25);
        assert_int_equal(s.gpus[0].n_nonzero, 16);
        assert_int_equal(s.gpus[1].n_series, 25);
        assert_int_equal(s.gpus[1].n_nonzero, 11);
        const struct promtext_gpu *g = promtext_gpu_summary_find(&s, "GPU-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d");
        assert_ptr_equal(g, &s.gpus[1]);
        assert_null(promtext_gpu_summary_find(&s, "GPU-00000000-0000-0000-0000-000000000000"));
        assert_true(promtext_gpu_summary_has_metric(&s, "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"));
        assert_true(promtext_gpu_summary_has_metric(&s, "DCGM_FI_DEV_XID_ERRORS"));
        assert_false(promtext_gpu_summary_has_metric(&s, "DCGM_FI_DEV_XID"));
        assert_string_equal(s.metrics[0], "DCGM_FI_DEV_SM_CLOCK");
        assert_string_equal(s.metrics[24], "DCGM_FI_PROF_PCIE_RX_BYTES");
        promtext_gpu_summary_free(&s);
        assert_null(s.gpus);
        promtext_gpu_summary_free(&s); /* idempotent */
}

static void test_dcgm_all_zero_and_no_uuid(void **state) {
        (void)state;
        /* An exporter stuck reporting zeros for one GPU, a DCGM line without UUID, and non-DCGM lines. */
        static const char page[] =
                "# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
                "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-a\"} 0\n"
                "DCGM_FI_DEV_GPU_TEMP{gpu=\"1\",UUID=\"GPU-b\"} 33\n"
                "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",UUID=\"GPU-a\"} 0.000000\n"
                "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",UUID=\"GPU-b\"} NaN\n"
                "DCGM_FI_DEV_SM_CLOCK{gpu=\"0\"} 1500\n"
                "dcgm_exporter_up 1\n"
                "DCGM_FI_DEV_SM_CLOCK_other{UUID=\"GPU-c\"} 1\n";
        struct promtext_gpu_summary s;
        struct promtext_error e;
        assert_int_equal(promtext_gpu_summary_parse(page, sizeof page - 1, &s, &e), 0);
        assert_int_equal(s.n_samples, 7);
        assert_int_equal(s.n_dcgm_samples, 6);
        assert_int_equal(s.n_dcgm_no_uuid, 1);
        assert_int_equal(s.n_gpus, 3);
        const struct promtext_gpu *a = promtext_gpu_summary_find(&s, "GPU-a"), *b = promtext_gpu_summary_find(&s, "GPU-b");
        assert_non_null(a);
        assert_non_null(b);
        assert_int_equal(a->n_series, 2);
        assert_int_equal(a->n_nonzero, 0);
        assert_int_equal(b->n_series, 2);
        assert_int_equal(b->n_nonzero, 1); /* NaN is not a reading */
        assert_int_equal(s.n_metrics, 5);
        assert_true(promtext_gpu_summary_has_metric(&s, "dcgm_exporter_up"));
        promtext_gpu_summary_free(&s);

        /* Failure still leaves something promtext_gpu_summary_free releases. */
        static const char bad[] = "DCGM_FI_DEV_GPU_TEMP{UUID=\"GPU-a\"} 1\nDCGM_FI_DEV_GPU_TEMP{UUID=GPU-a} 1\n";
        assert_int_equal(promtext_gpu_summary_parse(bad, sizeof bad - 1, &s, &e), -EBADMSG);
        assert_string_equal(e.message, "line 2: label value not quoted (label \"UUID\")");
        assert_int_equal(s.n_gpus, 1);
        promtext_gpu_summary_free(&s);

        /* Empty input. */
        assert_int_equal(promtext_gpu_summary_parse("", 0, &s, NULL), 0);
        assert_int_equal(s.n_gpus, 0);
        assert_int_equal(s.n_metrics, 0);
        assert_false(promtext_gpu_summary_has_metric(&s, "x"));
        assert_null(promtext_gpu_summary_find(&s, "GPU-a"));
        promtext_gpu_summary_free(&s);
        assert_false(promtext_gpu_summary_has_metric(&s, "x"));
        assert_null(promtext_gpu_summary_find(&s, "GPU-a"));
}

static void test_node_exporter_page(void **state) {
        (void)state;
        size_t len;
        /* A real page: prometheus-node-exporter 1.5.0 (Debian), default collectors. */
        _cleanup_free_ char *data = read_testdata("node_exporter-1.5.0.prom", &len);
        struct rec r = {};
        struct promtext_error e;
        assert_int_equal(parse_exact(data, len, &r, &e), 0);
        assert_int_equal(r.n_samples, 507);
        assert_int_equal(r.n_help, 283);
        assert_int_equal(r.n_type, 283);
        assert_non_null(strstr(r.out.data, "L3 summary go_gc_duration_seconds{quantile=[0]} 0\n"));
        assert_non_null(strstr(r.out.data, " summary go_gc_duration_seconds_sum{} 0\n"));
        assert_non_null(strstr(r.out.data, " summary go_gc_duration_seconds_count{} 0\n"));
        assert_non_null(strstr(r.out.data, " gauge node_load1{} 0.08\n"));
        assert_non_null(strstr(r.out.data, " gauge node_uname_info{domainname=[(none)],machine=[x86_64],nodename=[vm],"));
        assert_non_null(strstr(r.out.data, " counter node_cpu_seconds_total{cpu=[0],mode=[idle]} "));
        assert_non_null(strstr(r.out.data, " gauge go_memstats_sys_bytes{} 1.43987e+07\n"));
        buf_free(&r.out);

        struct promtext_gpu_summary s;
        assert_int_equal(promtext_gpu_summary_parse(data, len, &s, &e), 0);
        assert_int_equal(s.n_samples, 507);
        assert_int_equal(s.n_metrics, 285);
        assert_int_equal(s.n_gpus, 0);
        assert_int_equal(s.n_dcgm_samples, 0);
        assert_true(promtext_gpu_summary_has_metric(&s, "node_boot_time_seconds"));
        promtext_gpu_summary_free(&s);
}

static void test_escapes_and_spacing(void **state) {
        (void)state;
        _cleanup_free_ char *a = parse_ok("m{a=\"x\\\\y\\\"z\\nw\",b=\"\"} 1\n");
        assert_string_equal(a, "L1 untyped m{a=[x\\y\"z\nw],b=[]} 1\n");
        /* Raw UTF-8, tab, '#', '}' and ',' inside values; blanks around every token; trailing comma. */
        _cleanup_free_ char *b = parse_ok("  m_1:x \t{ a = \"Ü\tb#}\" , _b2=\",\" , }\t-2.5\t \n");
        assert_string_equal(b, "L1 untyped m_1:x{a=[Ü\tb#}],_b2=[,]} -2.5\n");
        _cleanup_free_ char *c = parse_ok("m{} 3\nm{}4\n:m 5\n");
        assert_string_equal(c, "L1 untyped m{} 3\nL2 untyped m{} 4\nL3 untyped :m{} 5\n");
        _cleanup_free_ char *d = parse_ok("# HELP m a \\\\ b\\nc \"q\" \\\\n  \n# HELP  m2\n#\tHELP m3 x\n");
        assert_string_equal(d, "L1 HELP m [a \\ b\nc \"q\" \\n  ]\nL2 HELP m2 []\nL3 HELP m3 [x]\n");
}

static void test_values(void **state) {
        (void)state;
        static const struct { const char *text; double v; } ok[] = {
                { "1", 1 }, { "-1", -1 }, { "+3", 3 }, { "1.5", 1.5 }, { ".5", 0.5 }, { "5.", 5 },
                { "1e3", 1000 }, { "1.5E-3", 0.0015 }, { "1.4398728e+07", 14398728 }, { "0.000000", 0 },
                { "-0", 0 }, { "183492771046", 183492771046.0 }, { "1e-400", 0 },
                { "+Inf", INFINITY }, { "-Inf", -INFINITY }, { "Inf", INFINITY }, { "inf", INFINITY },
                { "+infinity", INFINITY }, { "-INF", -INFINITY },
        };
        for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
                _cleanup_free_ char *line = xasprintf("m %s\n", ok[i].text);
                static const struct promtext_callbacks cb = { .sample = value_sample };
                double got = NAN;
                assert_int_equal(promtext_parse(line, strlen(line), &cb, &got, NULL), 0);
                if (isinf(ok[i].v)) assert_true(isinf(got) && signbit(got) == signbit(ok[i].v));
                else assert_true(fabs(got - ok[i].v) <= 1e-9 * fabs(ok[i].v));
        }
        static const char *nans[] = { "NaN", "nan", "NAN" };
        for (size_t i = 0; i < ELEMENTSOF(nans); i++) {
                _cleanup_free_ char *line = xasprintf("m %s\n", nans[i]);
                _cleanup_free_ char *out = parse_ok(line);
                assert_non_null(strstr(out, "} nan\n"));
        }
        static const char *bad[] = { "abc", "1e", "1e+", "0x10", "1_000", "--1", "+", ".", "+NaN", "Infinit", "1.2.3", "1e5e5", "e5", "１" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_free_ char *line = xasprintf("m %s\n", bad[i]);
                _cleanup_free_ char *msg = xasprintf("line 1: invalid value \"%s\"", bad[i]);
                struct promtext_error e;
                struct rec r = {};
                assert_int_equal(parse_exact(line, strlen(line), &r, &e), -EBADMSG);
                if (strcmp(bad[i], "１") != 0) assert_string_equal(e.message, msg);
                assert_int_equal(r.n_samples, 0);
        }
}

static void test_timestamps(void **state) {
        (void)state;
        _cleanup_free_ char *a = parse_ok("m 1 1712345678901\nm{a=\"b\"} 2 -5\nm 3 +7 \nm 4 9223372036854775807\nm 5 -9223372036854775808\nm 6\n");
        assert_string_equal(a,
                "L1 untyped m{} 1 @1712345678901\nL2 untyped m{a=[b]} 2 @-5\nL3 untyped m{} 3 @7\n"
                "L4 untyped m{} 4 @9223372036854775807\nL5 untyped m{} 5 @-9223372036854775808\nL6 untyped m{} 6\n");
}

static void test_types(void **state) {
        (void)state;
        _cleanup_free_ char *a = parse_ok(
                "# TYPE h histogram\nh_bucket{le=\"0.5\"} 1\nh_bucket{le=\"+Inf\"} 2\nh_sum 0.7\nh_count 2\nh_total 1\nh 9\nhx 1\n"
                "# TYPE s summary\ns{quantile=\"0.9\"} 1\ns_sum 1\ns_count 1\ns_bucket 1\n"
                "# TYPE c_total counter\nc_total 5\nc_total_sum 5\n"
                "# TYPE u untyped\nu 1\n# TYPE g gauge\ng 1\nother 2\n");
        assert_string_equal(a,
                "L1 TYPE h histogram\nL2 histogram h_bucket{le=[0.5]} 1\nL3 histogram h_bucket{le=[+Inf]} 2\n"
                "L4 histogram h_sum{} 0.7\nL5 histogram h_count{} 2\nL6 untyped h_total{} 1\nL7 histogram h{} 9\n"
                "L8 untyped hx{} 1\n"
                "L9 TYPE s summary\nL10 summary s{quantile=[0.9]} 1\nL11 summary s_sum{} 1\nL12 summary s_count{} 1\n"
                "L13 untyped s_bucket{} 1\n"
                "L14 TYPE c_total counter\nL15 counter c_total{} 5\nL16 untyped c_total_sum{} 5\n"
                "L17 TYPE u untyped\nL18 untyped u{} 1\nL19 TYPE g gauge\nL20 gauge g{} 1\nL21 untyped other{} 2\n");
        assert_null(promtext_type_to_string((enum promtext_type)99));
        assert_string_equal(promtext_type_to_string(PROMTEXT_HISTOGRAM), "histogram");
}

static void test_lines(void **state) {
        (void)state;
        /* CRLF, no final newline, blank and whitespace-only lines, ordinary comments, stray keywords. */
        _cleanup_free_ char *a = parse_ok("\n  \n\t\r\n# just a comment\n#\n# HELPX foo\n#help lower\n# TYPEfoo\nm 1\r\nn{a=\"\\n\"} 2 3\r\no 4");
        assert_string_equal(a, "L9 untyped m{} 1\nL10 untyped n{a=[\n]} 2 @3\nL11 untyped o{} 4\n");
        _cleanup_free_ char *b = parse_ok("");
        assert_string_equal(b, "");
        assert_int_equal(promtext_parse(NULL, 0, &rec_cb, NULL, NULL), 0);
        assert_int_equal(promtext_parse("m 1\n", 4, NULL, NULL, NULL), 0);
        static const struct promtext_callbacks none = {};
        assert_int_equal(promtext_parse("# HELP m x\n# TYPE m gauge\nm 1\n", 30, &none, NULL, NULL), 0);

        struct promtext_error e;
        assert_int_equal(promtext_parse(NULL, 5, &rec_cb, NULL, &e), -EINVAL);
        assert_int_equal(e.error, -EINVAL);
}

static void test_limits(void **state) {
        (void)state;
        struct promtext_error e;
        struct rec r = {};
        /* A line of exactly the limit is fine; one byte more is not. */
        size_t n = PROMTEXT_MAX_LINE_LEN;
        char *line = xmalloc(n + 1);
        memset(line, ' ', n);
        memcpy(line, "m{a=\"", 5);
        memset(line + 5, 'x', n - 20);
        memcpy(line + n - 15, "\"} 1", 4);
        line[n] = '\n';
        assert_int_equal(parse_exact(line, n + 1, &r, &e), 0);
        assert_int_equal(r.n_samples, 1);
        buf_free(&r.out);
        free(line);
        r = (struct rec){};

        n = PROMTEXT_MAX_LINE_LEN + 1;
        line = xmalloc(n);
        memset(line, '#', n);
        assert_int_equal(parse_exact(line, n, &r, &e), -E2BIG);
        assert_string_equal(e.message, "line 1: line too long (65537 bytes, limit 65536)");
        assert_int_equal(e.error, -E2BIG);
        free(line);

        struct buf b = {};
        buf_puts(&b, "m 1\nm{");
        for (unsigned i = 0; i < PROMTEXT_MAX_LABELS; i++) buf_printf(&b, "l%u=\"v\",", i);
        buf_puts(&b, "} 1\nm{");
        for (unsigned i = 0; i <= PROMTEXT_MAX_LABELS; i++) buf_printf(&b, "l%u=\"v\",", i);
        buf_puts(&b, "} 1\n");
        assert_int_equal(parse_exact(b.data, b.len, &r, &e), -E2BIG);
        assert_int_equal(r.n_samples, 2);
        assert_int_equal(e.line, 3);
        assert_string_equal(e.message, "line 3: more than 128 labels on \"m\"");
        buf_free(&b);
        buf_free(&r.out);
}

static void test_callbacks_stop(void **state) {
        (void)state;
        static const char page[] = "a 1\nb 2\nc 3\n";
        struct promtext_error e;
        struct rec r = { .stop_at = 7, .stop_after = 2 };
        assert_int_equal(promtext_parse(page, sizeof page - 1, &rec_cb, &r, &e), 7);
        assert_int_equal(r.n_samples, 2);
        assert_int_equal(e.line, 0);
        buf_free(&r.out);

        r = (struct rec){ .stop_at = -ENOSPC, .stop_after = 3 };
        assert_int_equal(promtext_parse(page, sizeof page - 1, &rec_cb, &r, &e), -ENOSPC);
        assert_int_equal(e.line, 3);
        assert_int_equal(e.error, -ENOSPC);
        assert_non_null(strstr(e.message, "line 3: aborted by callback"));
        buf_free(&r.out);
}

/* HELP/TYPE callbacks that stop; return the value stored in userdata. */
static int stop_help(const char *name, const char *text, unsigned long line, void *userdata) {
        (void)name, (void)text, (void)line;
        return *(int *)userdata;
}
static int stop_type(const char *name, enum promtext_type t, unsigned long line, void *userdata) {
        (void)name, (void)t, (void)line;
        return *(int *)userdata;
}

static void test_callbacks_stop_comments(void **state) {
        (void)state;
        struct promtext_callbacks h = { .help = stop_help }, t = { .type = stop_type };
        struct promtext_error e;
        int v = 1;
        assert_int_equal(promtext_parse("# HELP m x\nbad line\n", 20, &h, &v, &e), 1);
        assert_int_equal(promtext_parse("# TYPE m gauge\nbad line\n", 24, &t, &v, &e), 1);
        v = -EIO;
        assert_int_equal(promtext_parse("\n# TYPE m gauge\n", 16, &t, &v, &e), -EIO);
        assert_int_equal(e.line, 2);
}

static void test_errors(void **state) {
        (void)state;
        static const struct { const char *in; int r; const char *msg; } cases[] = {
                { "# HELP\n", -EBADMSG, "line 1: HELP line without a metric name" },
                { "# TYPE  \n", -EBADMSG, "line 1: TYPE line without a metric name" },
                { "# TYPE 1abc gauge\n", -EBADMSG, "line 1: invalid metric name \"1abc\" in TYPE line" },
                { "# HELP a-b text\n", -EBADMSG, "line 1: invalid metric name \"a-b\" in HELP line" },
                { "# HELP foo bad \\t escape\n", -EBADMSG, "line 1: invalid escape sequence \"\\t\" in HELP text" },
                { "# HELP foo ends\\", -EBADMSG, "line 1: HELP text for \"foo\" ends in a backslash" },
                { "# TYPE foo\n", -EBADMSG, "line 1: TYPE line for \"foo\" without a type" },
                { "# TYPE foo gaugex\n", -EBADMSG, "line 1: unknown metric type \"gaugex\" in TYPE line" },
                { "# TYPE foo Gauge\n", -EBADMSG, "line 1: unknown metric type \"Gauge\" in TYPE line" },
                { "# TYPE foo gauge extra\n", -EBADMSG, "line 1: unexpected text after the type in TYPE line" },
                { "1foo 1\n", -EBADMSG, "line 1: invalid character '1' at the start of a metric name" },
                { "\x01 1\n", -EBADMSG, "line 1: invalid character 0x01 at the start of a metric name" },
                { "foo-bar 1\n", -EBADMSG, "line 1: invalid character '-' in metric name" },
                { "foo{\n", -EBADMSG, "line 1: label set not closed with '}'" },
                { "foo{a=\"b\"", -EBADMSG, "line 1: label set not closed with '}'" },
                { "foo{1a=\"b\"} 1\n", -EBADMSG, "line 1: invalid character '1' at the start of a label name" },
                { "foo{a:b=\"c\"} 1\n", -EBADMSG, "line 1: expected '=' after label name \"a\", got ':'" },
                { "foo{__name__=\"x\"} 1\n", -EBADMSG, "line 1: label name \"__name__\" is reserved" },
                { "foo{a \"b\"} 1\n", -EBADMSG, "line 1: expected '=' after label name \"a\", got '\"'" },
                { "foo{a", -EBADMSG, "line 1: expected '=' after label name \"a\"" },
                { "foo{a=b} 1\n", -EBADMSG, "line 1: label value not quoted (label \"a\")" },
                { "foo{a=", -EBADMSG, "line 1: label value not quoted (label \"a\")" },
                { "foo{a=\"b} 1\n", -EBADMSG, "line 1: label value not terminated (label \"a\")" },
                { "foo{a=\"b\\", -EBADMSG, "line 1: label value not terminated (label \"a\")" },
                { "foo{a=\"\\t\"} 1\n", -EBADMSG, "line 1: invalid escape sequence \"\\t\" in label value" },
                { "foo{a=\"\\\x7f\"} 1\n", -EBADMSG, "line 1: invalid escape sequence \"\\\" + 0x7f in label value" },
                { "foo{a=\"1\",a=\"2\"} 1\n", -EBADMSG, "line 1: duplicate label \"a\"" },
                { "foo{a=\"1\" b=\"2\"} 1\n", -EBADMSG, "line 1: expected ',' or '}' after label value, got 'b'" },
                { "foo{a=\"1\",,} 1\n", -EBADMSG, "line 1: invalid character ',' at the start of a label name" },
                { "foo\n", -EBADMSG, "line 1: missing value for \"foo\"" },
                { "foo{} \n", -EBADMSG, "line 1: missing value for \"foo\"" },
                { "foo abc\n", -EBADMSG, "line 1: invalid value \"abc\"" },
                { "foo 1e999\n", -EBADMSG, "line 1: value \"1e999\" out of range" },
                { "foo 1 12a\n", -EBADMSG, "line 1: invalid timestamp \"12a\"" },
                { "foo 1 -\n", -EBADMSG, "line 1: invalid timestamp \"-\"" },
                { "foo 1 1.5\n", -EBADMSG, "line 1: invalid timestamp \"1.5\"" },
                { "foo 1 9223372036854775808\n", -EBADMSG, "line 1: timestamp \"9223372036854775808\" out of range" },
                { "foo 1 -9223372036854775809\n", -EBADMSG, "line 1: timestamp \"-9223372036854775809\" out of range" },
                { "foo 1 2 3\n", -EBADMSG, "line 1: unexpected text \"3\" after timestamp" },
                { "foo 1 2 # comment\n", -EBADMSG, "line 1: unexpected text \"# comment\" after timestamp" },
                { "foo 1\nbar 2\n\r\nbaz{x=\"\\q\"} 3\r\n", -EBADMSG, "line 4: invalid escape sequence \"\\q\" in label value" },
                { "foo 1\nbar 2\rbaz 3\n", -EBADMSG, "line 2: invalid value \"2?baz\"" },
                { "foo{a=\"b\"} 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22\n", -EBADMSG,
                  "line 1: unexpected text \"3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 1\"... after timestamp" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct promtext_error e;
                struct rec r = {};
                int ret = parse_exact(cases[i].in, strlen(cases[i].in), &r, &e);
                if (ret != cases[i].r || strcmp(e.message, cases[i].msg) != 0)
                        fail_msg("case %zu: got %d \"%s\", want %d \"%s\"", i, ret, e.message, cases[i].r, cases[i].msg);
                assert_int_equal(e.error, cases[i].r);
                assert_true(e.line >= 1);
                buf_free(&r.out);
        }

        /* NUL bytes, which a C string literal cannot carry through strlen. */
        static const char nul[] = "foo 1\nbar{a=\"x\0y\"} 1\n";
        struct promtext_error e;
        struct rec r = {};
        assert_int_equal(parse_exact(nul, sizeof nul - 1, &r, &e), -EBADMSG);
        assert_string_equal(e.message, "line 2: NUL byte in line");
        assert_int_equal(e.line, 2);
        buf_free(&r.out);
}

static void test_every_prefix(void **state) {
        (void)state;
        /* Each prefix of a page, parsed from an exact-size buffer: never reads past the end. */
        static const char page[] =
                "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
                "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-a\",modelName=\"x \\\"y\\\\ \\n\"} 37 1712345678901\r\n"
                "h_bucket{le=\"+Inf\",} -Inf\n# HELP x a\\\\b\\n\nx NaN\n";
        for (size_t n = 0; n <= sizeof page - 1; n++) {
                struct promtext_error e;
                struct rec r = {};
                int ret = parse_exact(page, n, &r, &e);
                assert_true(ret == 0 || ret == -EBADMSG);
                buf_free(&r.out);
                struct promtext_gpu_summary s;
                char *copy = xmalloc(n);
                memcpy(copy, page, n);
                assert_int_equal(promtext_gpu_summary_parse(copy, n, &s, &e), ret);
                free(copy);
                promtext_gpu_summary_free(&s);
        }
}

static void test_many_gpus(void **state) {
        (void)state;
        /* Enough UUIDs and names to grow the hash indexes several times. */
        struct buf b = {};
        for (unsigned i = 0; i < 3000; i++) buf_printf(&b, "DCGM_FI_X%u{UUID=\"GPU-%u\"} %u\n", i % 700, i % 1000, i % 2);
        struct promtext_gpu_summary s;
        assert_int_equal(promtext_gpu_summary_parse(b.data, b.len, &s, NULL), 0);
        assert_int_equal(s.n_gpus, 1000);
        assert_int_equal(s.n_metrics, 700);
        for (unsigned i = 0; i < 1000; i++) {
                char u[32];
                snprintf(u, sizeof u, "GPU-%u", i);
                const struct promtext_gpu *g = promtext_gpu_summary_find(&s, u);
                assert_non_null(g);
                assert_int_equal(g->n_series, 3);
                assert_int_equal(g->n_nonzero, i % 2 ? 3 : 0);
        }
        promtext_gpu_summary_free(&s);
        buf_free(&b);
}

int main(int argc, char **argv) {
        static char dir[4096];
        if (argc > 1) testdata_dir = argv[1];
        else if (getenv("PROMTEXT_TESTDATA")) testdata_dir = getenv("PROMTEXT_TESTDATA");
        else {
                /* Fall back to the source tree: __FILE__ is relative to the build directory. */
                snprintf(dir, sizeof dir, "%s", __FILE__);
                char *slash = strrchr(dir, '/');
                if (slash) snprintf(slash, sizeof dir - (size_t)(slash - dir), "/testdata");
                else snprintf(dir, sizeof dir, "testdata");
                testdata_dir = dir;
        }

        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_dcgm_doc_line),
                cmocka_unit_test(test_dcgm_page),
                cmocka_unit_test(test_dcgm_all_zero_and_no_uuid),
                cmocka_unit_test(test_node_exporter_page),
                cmocka_unit_test(test_escapes_and_spacing),
                cmocka_unit_test(test_values),
                cmocka_unit_test(test_timestamps),
                cmocka_unit_test(test_types),
                cmocka_unit_test(test_lines),
                cmocka_unit_test(test_limits),
                cmocka_unit_test(test_callbacks_stop),
                cmocka_unit_test(test_callbacks_stop_comments),
                cmocka_unit_test(test_errors),
                cmocka_unit_test(test_every_prefix),
                cmocka_unit_test(test_many_gpus),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
