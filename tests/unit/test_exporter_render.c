/* test_exporter_render.c: the exporter's renderer: label escaping, value formatting, DCGM line layout, gzip framing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <zlib.h>

#include "exporter/exporter.h"
#include "basic/promtext.h"

/* Returns the escaped form of s (static buffer). */
static const char *esc(const char *s) {
        static char out[256];
        struct buf b = { 0 };
        exp_escape_label(&b, s);
        snprintf(out, sizeof out, "%s", b.data ? b.data : "");
        buf_free(&b);
        return out;
}

static void test_escape(void **state) {
        (void)state;
        assert_string_equal(esc(""), "");
        assert_string_equal(esc("NVIDIA H100 80GB HBM3"), "NVIDIA H100 80GB HBM3");
        assert_string_equal(esc("a\"b"), "a\\\"b");
        assert_string_equal(esc("a\\b"), "a\\\\b");
        assert_string_equal(esc("line\nnext"), "line\\nnext");
        assert_string_equal(esc("\"\\\n"), "\\\"\\\\\\n");
}

/* Returns the formatted value (static buffer). */
static const char *fmt(double v, bool is_double) {
        static char out[64];
        struct buf b = { 0 };
        exp_format_value(&b, v, is_double);
        snprintf(out, sizeof out, "%s", b.data);
        buf_free(&b);
        return out;
}

static void test_format(void **state) {
        (void)state;
        assert_string_equal(fmt(0, false), "0");
        assert_string_equal(fmt(1980, false), "1980");
        assert_string_equal(fmt(123456789012345.0, false), "123456789012345");
        assert_string_equal(fmt(-3, false), "-3");
        assert_string_equal(fmt(71.5, true), "71.500000");
        assert_string_equal(fmt(0, true), "0.000000");
        assert_string_equal(fmt(NAN, true), "NaN");
}

static void test_gpu_lines(void **state) {
        (void)state;
        struct exp_gpu g[2];
        memset(g, 0, sizeof g);
        for (unsigned i = 0; i < 2; i++) {
                g[i].index = i;
                g[i].identified = true;
                snprintf(g[i].uuid, sizeof g[i].uuid, "GPU-%u", i);
                snprintf(g[i].pci_bus_id, sizeof g[i].pci_bus_id, "00000000:1%u:00.0", i);
                snprintf(g[i].name, sizeof g[i].name, "Model \"X\"");
        }
        g[0].sampled = true;
        g[0].has[EXP_GPU_TEMP] = true;
        g[0].value[EXP_GPU_TEMP] = 37;
        g[0].has[EXP_POWER_USAGE] = true;
        g[0].value[EXP_POWER_USAGE] = 71;
        g[1].sampled = false; /* lost: no DCGM series */
        snprintf(g[1].problem, sizeof g[1].problem, "GPU is lost");
        struct exp_sample s = { .nvml_up = true, .n_gpus = 2, .gpus = g };
        snprintf(s.driver_version, sizeof s.driver_version, "580.105.08");
        struct exp_render_options o = { .hostname = "node-1", .hostname_label = "Hostname" };
        struct buf b = { 0 };
        exp_render_gpus(&b, &s, &o);
        assert_non_null(strstr(b.data,
                "# HELP DCGM_FI_DEV_GPU_TEMP GPU temperature (in C).\n# TYPE DCGM_FI_DEV_GPU_TEMP gauge\n"
                "DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"GPU-0\",pci_bus_id=\"00000000:10:00.0\",device=\"nvidia0\","
                "modelName=\"Model \\\"X\\\"\",Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"580.105.08\"} 37\n"));
        assert_non_null(strstr(b.data, "} 71.000000\n"));
        assert_null(strstr(b.data, "GPU-1"));
        assert_null(strstr(b.data, "DCGM_FI_DEV_SM_CLOCK")); /* no value anywhere: no HELP either */

        struct exp_stats st = { .samples_total = 3 };
        exp_render_self(&b, &s, &st, &o);
        exp_render_ages(&b, 1.5, -1);
        assert_non_null(strstr(b.data, "gpunode_exporter_gpu_up{gpu=\"1\",uuid=\"GPU-1\",pci_bus_id=\"00000000:11:00.0\",reason=\"GPU is lost\"} 0\n"));
        assert_non_null(strstr(b.data, "gpunode_exporter_sample_age_seconds 1.500\n"));
        /* The whole page parses as Prometheus text; GPU 0 has its series, the lost GPU 1 none. */
        struct promtext_gpu_summary sum = { 0 };
        struct promtext_error err;
        assert_int_equal(promtext_gpu_summary_parse(b.data, b.len, &sum, &err), 0);
        assert_int_equal(sum.n_gpus, 1);
        assert_non_null(promtext_gpu_summary_find(&sum, "GPU-0"));
        assert_int_equal(promtext_gpu_summary_find(&sum, "GPU-0")->n_series, 2);
        assert_int_equal(sum.n_dcgm_no_uuid, 0);
        promtext_gpu_summary_free(&sum);
        buf_free(&b);

        /* Without a host name the label is gone. */
        o.hostname = NULL;
        exp_render_gpus(&b, &s, &o);
        assert_null(strstr(b.data, "Hostname"));
        buf_free(&b);
}

/* A GPU in MIG mode: one line per GPU instance, GPU_I_PROFILE and GPU_I_ID between modelName and Hostname. */
static void test_mig_lines(void **state) {
        (void)state;
        struct exp_gpu g[2];
        memset(g, 0, sizeof g);
        for (unsigned i = 0; i < 2; i++) {
                g[i].index = i;
                g[i].identified = g[i].sampled = true;
                snprintf(g[i].uuid, sizeof g[i].uuid, "GPU-%u", i);
                snprintf(g[i].pci_bus_id, sizeof g[i].pci_bus_id, "00000000:1%u:00.0", i);
                snprintf(g[i].name, sizeof g[i].name, "NVIDIA A100-SXM4-80GB");
                g[i].has[EXP_GPU_TEMP] = g[i].has[EXP_FB_FREE] = g[i].has[EXP_FB_USED] = g[i].has[EXP_GPU_UTIL] = true;
                g[i].value[EXP_GPU_TEMP] = 30 + i;
                g[i].value[EXP_FB_FREE] = 81000;
                g[i].value[EXP_FB_USED] = 3;
                g[i].value[EXP_GPU_UTIL] = 50;
        }
        /* GPU 0: two GPU instances, the second without a known profile or memory. GPU 1: MIG off. */
        g[0].n_instances = 2;
        g[0].instances[0] = (struct exp_gpu_instance){ .id = 2, .profile = "3g.40gb", .has_fb = true, .fb_free = 40179, .fb_used = 13 };
        g[0].instances[1] = (struct exp_gpu_instance){ .id = 9, .profile = "" };
        struct exp_sample s = { .nvml_up = true, .n_gpus = 2, .gpus = g };
        snprintf(s.driver_version, sizeof s.driver_version, "550.90.07");
        struct exp_render_options o = { .hostname = "node-1", .hostname_label = "Hostname" };
        struct buf b = { 0 };
        exp_render_gpus(&b, &s, &o);
        const char *head0 = "{gpu=\"0\",UUID=\"GPU-0\",pci_bus_id=\"00000000:10:00.0\",device=\"nvidia0\","
                            "modelName=\"NVIDIA A100-SXM4-80GB\",";
        char want[512];
        /* GPU-wide values repeat on each instance, labels in dcgm-exporter's order. */
        snprintf(want, sizeof want, "DCGM_FI_DEV_GPU_TEMP%sGPU_I_PROFILE=\"3g.40gb\",GPU_I_ID=\"2\",Hostname=\"node-1\","
                 "DCGM_FI_DRIVER_VERSION=\"550.90.07\"} 30\n", head0);
        assert_non_null(strstr(b.data, want));
        snprintf(want, sizeof want, "DCGM_FI_DEV_GPU_TEMP%sGPU_I_PROFILE=\"\",GPU_I_ID=\"9\",Hostname=\"node-1\","
                 "DCGM_FI_DRIVER_VERSION=\"550.90.07\"} 30\n", head0);
        assert_non_null(strstr(b.data, want));
        /* The framebuffer is the instance's own; an instance without memory has none. */
        snprintf(want, sizeof want, "DCGM_FI_DEV_FB_FREE%sGPU_I_PROFILE=\"3g.40gb\",GPU_I_ID=\"2\",Hostname=\"node-1\","
                 "DCGM_FI_DRIVER_VERSION=\"550.90.07\"} 40179\n", head0);
        assert_non_null(strstr(b.data, want));
        assert_null(strstr(b.data, "GPU_I_ID=\"9\",Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"550.90.07\"} 81000"));
        assert_null(strstr(b.data, "GPU_I_ID=\"2\",Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"550.90.07\"} 81000"));
        /* No series for the MIG GPU as a whole, and no utilization on instances; GPU 1 keeps both. */
        snprintf(want, sizeof want, "DCGM_FI_DEV_GPU_TEMP%sHostname=", head0);
        assert_null(strstr(b.data, want));
        assert_null(strstr(b.data, "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\""));
        assert_non_null(strstr(b.data,
                "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-1\",pci_bus_id=\"00000000:11:00.0\",device=\"nvidia1\","
                "modelName=\"NVIDIA A100-SXM4-80GB\",Hostname=\"node-1\",DCGM_FI_DRIVER_VERSION=\"550.90.07\"} 50\n"));
        /* One HELP per metric, whatever the mix. */
        const char *p = strstr(b.data, "# HELP DCGM_FI_DEV_GPU_TEMP ");
        assert_non_null(p);
        assert_null(strstr(p + 1, "# HELP DCGM_FI_DEV_GPU_TEMP "));
        struct promtext_gpu_summary sum = { 0 };
        struct promtext_error err;
        assert_int_equal(promtext_gpu_summary_parse(b.data, b.len, &sum, &err), 0);
        assert_int_equal(sum.n_gpus, 2);
        promtext_gpu_summary_free(&sum);
        buf_free(&b);

        /* The value accessor: instances take the GPU's values except framebuffer and utilization. */
        double v = 0;
        assert_false(exp_gpu_value(&g[0], -1, EXP_GPU_TEMP, &v));
        assert_true(exp_gpu_value(&g[0], 0, EXP_GPU_TEMP, &v));
        assert_true(v == 30);
        assert_true(exp_gpu_value(&g[0], 0, EXP_FB_USED, &v));
        assert_true(v == 13);
        assert_false(exp_gpu_value(&g[0], 0, EXP_FB_RESERVED, &v));
        assert_false(exp_gpu_value(&g[0], 1, EXP_FB_FREE, &v));
        assert_false(exp_gpu_value(&g[0], 0, EXP_GPU_UTIL, &v));
        assert_true(exp_gpu_value(&g[1], -1, EXP_GPU_UTIL, &v));
        assert_true(v == 50);
        /* A lowercase hostname label (dcgm-exporter >= 4.8) keeps its place after the MIG labels. */
        o.hostname_label = "hostname";
        exp_render_gpus(&b, &s, &o);
        assert_non_null(strstr(b.data, "GPU_I_PROFILE=\"3g.40gb\",GPU_I_ID=\"2\",hostname=\"node-1\",DCGM_FI_DRIVER_VERSION="));
        buf_free(&b);
}

/* err_msg is dcgm-exporter's text, not gpunode's catalog wording: dashboards match on it. */
static void test_dcgm_xid_err_msg(void **state) {
        (void)state;
        assert_string_equal(exp_dcgm_xid_err_msg(0), "No Error");
        assert_string_equal(exp_dcgm_xid_err_msg(48), "Double Bit ECC Error");
        assert_string_equal(exp_dcgm_xid_err_msg(79), "GPU has fallen off the bus");
        assert_string_equal(exp_dcgm_xid_err_msg(119), "GSP RPC Timeout");
        assert_string_equal(exp_dcgm_xid_err_msg(172), "Uncorrectable SRAM Error");
        assert_string_equal(exp_dcgm_xid_err_msg(173), "Unknown Error");
        assert_string_equal(exp_dcgm_xid_err_msg(-1), "Unknown Error");
        for (int x = 0; x < 173; x++) assert_true(exp_dcgm_xid_err_msg(x)[0] != 0);
}

static void test_gzip_framing(void **state) {
        (void)state;
        const char page[] = "# TYPE a gauge\na 1\n", tail[] = "b 2\n";
        unsigned char *gz = NULL;
        size_t gz_len = 0;
        uint32_t crc = 0;
        assert_int_equal(exp_gzip_open(page, strlen(page), &gz, &gz_len, &crc), 0);
        unsigned char *all = malloc(gz_len + sizeof tail + 13);
        memcpy(all, gz, gz_len);
        int n = exp_gzip_close(tail, strlen(tail), crc, strlen(page), all + gz_len);
        assert_true(n > 0);
        char out[128];
        z_stream z = { 0 };
        assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
        z.next_in = all;
        z.avail_in = (uInt)(gz_len + (size_t)n);
        z.next_out = (Bytef *)out;
        z.avail_out = sizeof out;
        assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END); /* CRC and length verified by zlib */
        assert_int_equal(z.avail_in, 0);
        out[sizeof out - z.avail_out] = 0;
        inflateEnd(&z);
        assert_string_equal(out, "# TYPE a gauge\na 1\nb 2\n");
        free(all);
        free(gz);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_escape),
                cmocka_unit_test(test_format),
                cmocka_unit_test(test_gpu_lines),
                cmocka_unit_test(test_mig_lines),
                cmocka_unit_test(test_gzip_framing),
                cmocka_unit_test(test_dcgm_xid_err_msg),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
