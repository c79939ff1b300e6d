/* test_validate.c: gpunode validate against the fake libcuda (8 GPUs, every fault), the kernels' CPU references, the
 * report. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "basic/util.h"
#include "cuda/cuda_lib.h"
#include "validate/kernels_ref.h"
#include "validate/validate.h"

#define SCALE 100 /* FMA work and the stress time / 100: quick's 20 s stress takes 0.2 s */

static int counter;

/* Writes the fake CUDA description for n GPUs, fault (a JSON object text or NULL) on GPU fault_gpu, and a
 * fake NVML description (nvml_extra: JSON members added to every GPU, or NULL; no NVML when nvml is false).
 * Sets GPUNODE_FAKE_CUDA / GPUNODE_FAKE_NVML. Returns nothing. */
static void describe(int n, int fault_gpu, const char *fault, const char *top, bool nvml, const char *nvml_extra) {
        char cpath[64], npath[64];
        snprintf(cpath, sizeof cpath, "/tmp/test-validate-%d-%d-cuda.json", getpid(), ++counter);
        snprintf(npath, sizeof npath, "/tmp/test-validate-%d-%d-nvml.json", getpid(), counter);
        FILE *f = fopen(cpath, "w");
        FILE *g = fopen(npath, "w");
        assert_non_null(f);
        assert_non_null(g);
        fprintf(f, "{%s%s\"gpus\": [", top ? top : "", top ? ", " : "");
        fprintf(g, "{\"gpus\": [");
        for (int i = 0; i < n; i++) {
                fprintf(f,
                        "%s{\"name\": \"NVIDIA H100 80GB HBM3\", \"uuid\": \"GPU-%08x-aaaa-bbbb-cccc-dddddddddddd\", "
                        "\"pci_bus_id\": \"0000:%02X:00.0\", \"memory_mib\": 16, \"sm_count\": 2, \"memory_gbps\": "
                        "3000, "
                        "\"tflops\": 60, \"h2d_gbps\": 52, \"d2h_gbps\": 50, \"p2p_gbps\": 380%s%s}",
                        i ? ", " : "", i, 0x18 + i, i == fault_gpu && fault ? ", \"faults\": " : "",
                        i == fault_gpu && fault ? fault : "");
                fprintf(g,
                        "%s{\"name\": \"NVIDIA H100 80GB HBM3\", \"uuid\": \"GPU-%08x-aaaa-bbbb-cccc-dddddddddddd\", "
                        "\"pci_bus_id\": \"00000000:%02X:00.0\", \"pcie\": {\"width\": 16, \"width_max\": 16, \"gen\": "
                        "5, "
                        "\"gen_max\": 5, \"gen_gpu_max\": 5}, \"nvlinks\": [{\"active\": true}, {\"active\": true}], "
                        "\"temperature\": 40, \"power_mw\": 350000, \"clocks_event_reasons\": 0, "
                        "\"temperature_thresholds\": {\"slowdown\": 89}, \"processes\": []%s%s}",
                        i ? ", " : "", i, 0x18 + i, nvml_extra && (fault_gpu < 0 || i == fault_gpu) ? ", " : "",
                        nvml_extra && (fault_gpu < 0 || i == fault_gpu) ? nvml_extra : "");
        }
        fprintf(f, "]}\n");
        fprintf(g, "]}\n");
        fclose(f);
        fclose(g);
        setenv("GPUNODE_FAKE_CUDA", cpath, 1);
        setenv("GPUNODE_FAKE_NVML", nvml ? npath : "/nonexistent", 1);
}

/* Runs validate with the fakes. Returns the exit code, *ret the result. */
static int run(struct validate_result *ret, uint64_t timeout_ms, const char *const *gpus, size_t n_gpus, bool force,
               const char *cuda) {
        struct validate_options o = {
                .level = VALIDATE_QUICK,
                .cuda_library = cuda ? cuda : FAKE_CUDA_LIBRARY,
                .nvml_library = FAKE_NVML_LIBRARY,
                .node = "node-a",
                .timeout_ms = timeout_ms ? timeout_ms : 20000,
                .gpus = gpus,
                .n_gpus = n_gpus,
                .force = force,
                .scale = SCALE,
        };
        return validate_run(&o, ret);
}

/* Returns GPU index's test id in the report (NULL when absent). */
static json_t *test_of(json_t *rep, int index, const char *id) {
        size_t i, j;
        json_t *g, *t;
        json_array_foreach(json_object_get(rep, "gpus"), i, g) {
                if (json_integer_value(json_object_get(g, "index")) != index) continue;
                json_array_foreach(json_object_get(g, "tests"), j,
                                   t) if (streq(json_string_value(json_object_get(t, "id")), id)) return t;
        }
        return NULL;
}

static const char *status_of(json_t *rep, int index, const char *id) {
        json_t *t = test_of(rep, index, id);
        return t ? json_string_value(json_object_get(t, "status")) : "absent";
}

static const char *gpu_verdict(json_t *rep, int index) {
        return json_string_value(
                json_object_get(json_array_get(json_object_get(rep, "gpus"), (size_t)index), "verdict"));
}

/* The pattern algorithm: known words, and a flipped bit found at its index with the value read. */
static void test_pattern_reference(void **state) {
        assert_int_equal(kernel_pattern_word(PATTERN_WALKING_ONES, 0, 0), 1);
        assert_int_equal(kernel_pattern_word(PATTERN_WALKING_ONES, 0, 33), 2);
        assert_int_equal(kernel_pattern_word(PATTERN_WALKING_ZEROS, 0, 31), 0x7fffffffu);
        assert_int_equal(kernel_pattern_word(PATTERN_ADDRESS, 0, 5), 20);
        assert_int_equal(kernel_pattern_word(PATTERN_ADDRESS, 0, (1ull << 32) + 1), 4 ^ 1);
        assert_int_not_equal(kernel_pattern_word(PATTERN_RANDOM, 1, 7), kernel_pattern_word(PATTERN_RANDOM, 2, 7));
        uint32_t buf[1000];
        uint64_t res[KERNEL_PATTERN_RESULT_WORDS] = { 0 };
        kernel_pattern_run(buf, 1000, PATTERN_RANDOM, 9, 0, res);
        buf[123] ^= 0x10;
        kernel_pattern_run(buf, 1000, PATTERN_RANDOM, 9, 1, res);
        assert_int_equal(res[0], 1);
        assert_int_equal(res[1], 123);
        assert_int_equal(res[2], kernel_pattern_word(PATTERN_RANDOM, 9, 123) ^ 0x10);
}

/* The FMA algorithm: exact start (11.5), the fixed point 36, and the bits depend on fusing. */
static void test_fma_reference(void **state) {
        assert_true(kernel_fma_thread(0, 0) == 11.5f);
        assert_true(kernel_fma_thread(65536, 0) == 11.5f);
        float v = kernel_fma_thread(3, 20000);
        assert_true(fabsf(v - 36.0f) < 0.01f);
        /* the same chains with a rounded multiply before the add give other bits for some thread: the test sees
         * a GPU that does not fuse */
        int differ = 0;
        for (uint64_t t = 0; t < 64 && !differ; t++) {
                float x[8];
                x[0] = (float)(uint32_t)t * 0x1p-16f + 1.0f;
                for (int k = 1; k < 8; k++) x[k] = x[0] + 0.125f * (float)k;
                for (int i = 0; i < 2 * 64; i++)
                        for (int k = 0; k < 8; k++) {
                                volatile float m = x[k] * (1.0f - 0x1p-10f);
                                x[k] = m + 0x1p-10f * (float)(k + 1);
                        }
                float unfused = ((x[0] + x[1]) + (x[2] + x[3])) + ((x[4] + x[5]) + (x[6] + x[7]));
                differ = memcmp(&unfused, &(float){ kernel_fma_thread(t, 64) }, 4) != 0;
        }
        assert_true(differ);
        assert_non_null(strstr(validate_kernels_ptx, ".target sm_80"));
        assert_non_null(strstr(validate_kernels_ptx, ".entry gpunode_fma("));
}

/* Specifications, PCIe arithmetic, the rating rule. */
static void test_specs(void **state) {
        assert_true(validate_product_lookup("NVIDIA H200")->memory_gbps == 4800);
        assert_true(validate_product_lookup("NVIDIA H100 80GB HBM3")->memory_gbps == 3350);
        assert_true(validate_product_lookup("NVIDIA H100 PCIe")->nvlink_gbps == 0);
        assert_true(validate_product_lookup("NVIDIA A100-SXM4-80GB")->memory_gbps == 2039);
        assert_true(validate_product_lookup("NVIDIA L40S")->memory_gbps == 864);
        assert_true(validate_product_lookup("NVIDIA L4")->memory_gbps == 300);
        assert_null(validate_product_lookup("Fake GPU 9000"));
        assert_true(fabs(validate_pcie_gbps(5, 16) - 63.015) < 0.01);
        assert_true(validate_pcie_gbps(0, 16) == 0);
        assert_string_equal(validate_rate(90, 100, 0.8, 0.6), "pass");
        assert_string_equal(validate_rate(70, 100, 0.8, 0.6), "warn");
        assert_string_equal(validate_rate(50, 100, 0.8, 0.6), "fail");
        assert_string_equal(validate_rate(50, 0, 0.8, 0.6), "info");
}

/* 8 healthy GPUs: every test passes with the configured figures; the schema's fields; a few seconds. */
static void test_eight_gpus_pass(void **state) {
        describe(8, -1, NULL, NULL, true, NULL);
        struct validate_result r;
        uint64_t t0 = monotonic_ms();
        int code = run(&r, 0, NULL, 0, false, NULL);
        uint64_t ms = monotonic_ms() - t0;
        print_message("quick level, 8 fake GPUs: %.2f s\n", (double)ms / 1000);
        json_t *rep = r.report;
        if (code != 0) json_dumpf(rep, stderr, JSON_INDENT(2));
        assert_int_equal(code, 0);
        assert_false(r.abandoned);
        assert_string_equal(json_string_value(json_object_get(rep, "schema")), "gpunode.validate/v1");
        assert_string_equal(json_string_value(json_object_get(rep, "node")), "node-a");
        assert_string_equal(json_string_value(json_object_get(rep, "level")), "quick");
        assert_string_equal(json_string_value(json_object_get(rep, "verdict")), "pass");
        assert_non_null(json_string_value(json_object_get(rep, "time")));
        assert_true(json_is_number(json_object_get(rep, "duration_s")));
        assert_int_equal(json_array_size(json_object_get(rep, "gpus")), 8);
        assert_int_equal(json_array_size(json_object_get(rep, "pairs")), 28);
        json_t *g0 = json_array_get(json_object_get(rep, "gpus"), 0);
        assert_string_equal(json_string_value(json_object_get(g0, "uuid")), "GPU-00000000-aaaa-bbbb-cccc-dddddddddddd");
        assert_string_equal(json_string_value(json_object_get(g0, "pci_bus_id")), "0000:18:00.0");
        static const char *const ids[] = { "memory.pattern", "memory.bandwidth", "compute.fma",
                                           "pcie.h2d",       "pcie.d2h",         "stress.sustained" };
        for (int k = 0; k < 8; k++)
                for (size_t i = 0; i < ELEMENTSOF(ids); i++) {
                        json_t *t = test_of(rep, k, ids[i]);
                        assert_non_null(t);
                        assert_string_equal(json_string_value(json_object_get(t, "status")), "pass");
                        static const char *const keys[] = { "id",   "status",   "summary", "value",
                                                            "unit", "expected", "ratio",   "evidence" };
                        for (size_t j = 0; j < ELEMENTSOF(keys); j++) assert_non_null(json_object_get(t, keys[j]));
                }
        /* figures are the fake's configuration: 3000 GB/s memory, 52/50 GB/s PCIe over a 63 GB/s Gen5 x16 link */
        assert_true(json_number_value(json_object_get(test_of(rep, 3, "memory.bandwidth"), "value")) == 3000);
        assert_true(json_number_value(json_object_get(test_of(rep, 3, "memory.bandwidth"), "expected")) == 3350);
        assert_true(json_number_value(json_object_get(test_of(rep, 3, "pcie.h2d"), "value")) == 52);
        assert_true(fabs(json_number_value(json_object_get(test_of(rep, 3, "pcie.h2d"), "expected")) - 63.015) < 0.01);
        json_t *p = json_array_get(json_object_get(rep, "pairs"), 0);
        assert_string_equal(json_string_value(json_object_get(p, "link")), "nvlink");
        assert_true(json_number_value(json_object_get(json_array_get(json_object_get(p, "tests"), 0), "value")) == 380);
        assert_int_equal(json_array_size(json_object_get(p, "tests")), 2);
        _cleanup_free_ char *text = validate_render_text(rep);
        assert_non_null(strstr(text, "gpunode validate on node-a, level quick: pass"));
        assert_non_null(strstr(text, "pass  memory.bandwidth"));
        _cleanup_free_ char *prom = validate_render_prometheus(rep);
        assert_non_null(strstr(prom, "gpunode_validate_verdict{node=\"node-a\",level=\"quick\"} 0\n"));
        assert_non_null(strstr(prom,
                               "gpunode_validate_test_value{node=\"node-a\",gpu=\"3\",UUID=\"GPU-00000003-aaaa-bbbb-"
                               "cccc-dddddddddddd\",test=\"memory.bandwidth\",unit=\"GB/s\"} 3000\n"));
        json_decref(rep);
        assert_true(ms < 15000);
}

/* A weak bit: memory.pattern fails naming the offset; the other GPUs pass. */
static void test_bit_flip(void **state) {
        describe(2, 1, "{\"bit_flips\": [{\"offset\": 4096, \"mask\": 4}]}", NULL, true, NULL);
        struct validate_result r;
        assert_int_equal(run(&r, 0, NULL, 0, false, NULL), 2);
        assert_string_equal(status_of(r.report, 1, "memory.pattern"), "fail");
        assert_string_equal(status_of(r.report, 0, "memory.pattern"), "pass");
        json_t *t = test_of(r.report, 1, "memory.pattern");
        assert_int_equal(json_integer_value(json_object_get(t, "value")), 3); /* once per pattern */
        json_t *first = json_array_get(json_object_get(json_object_get(t, "evidence"), "first_mismatches"), 0);
        assert_int_equal(json_integer_value(json_object_get(first, "offset")), 4096);
        assert_string_equal(json_string_value(json_object_get(first, "xor")), "0x00000004");
        assert_string_equal(gpu_verdict(r.report, 1), "fail");
        assert_string_equal(gpu_verdict(r.report, 0), "pass");
        json_decref(r.report);
}

/* A sticky CUDA_ERROR_ILLEGAL_ADDRESS: that GPU's context is dead and its later tests skipped; the others go on. */
static void test_sticky(void **state) {
        describe(3, 2, "{\"sticky_error\": {\"entry\": \"gpunode_pattern\", \"code\": 700}}", NULL, true, NULL);
        struct validate_result r;
        assert_int_equal(run(&r, 0, NULL, 0, false, NULL), 2);
        json_t *t = test_of(r.report, 2, "memory.pattern");
        assert_string_equal(json_string_value(json_object_get(t, "status")), "fail");
        assert_string_equal(json_string_value(json_object_get(json_object_get(t, "evidence"), "cuda_error")),
                            "CUDA_ERROR_ILLEGAL_ADDRESS");
        assert_string_equal(status_of(r.report, 2, "compute.fma"), "skip");
        assert_string_equal(status_of(r.report, 2, "stress.sustained"), "skip");
        assert_string_equal(status_of(r.report, 0, "compute.fma"), "pass");
        assert_string_equal(status_of(r.report, 1, "stress.sustained"), "pass");
        json_t *g2 = json_array_get(json_object_get(r.report, "gpus"), 2);
        assert_string_equal(json_string_value(json_object_get(json_object_get(g2, "context_dead"), "error")),
                            "CUDA_ERROR_ILLEGAL_ADDRESS");
        assert_int_equal(json_array_size(json_object_get(r.report, "pairs")), 1); /* 0-1 only */
        json_decref(r.report);
}

/* A hung FMA kernel: reported with GPU and test within the timeout, the others finish, the run is abandoned. */
static void test_hang(void **state) {
        describe(3, 1, "{\"hang\": {\"entry\": \"gpunode_fma\", \"seconds\": 60}}", NULL, true, NULL);
        struct validate_result r;
        uint64_t t0 = monotonic_ms();
        assert_int_equal(run(&r, 1000, NULL, 0, false, NULL), 2);
        uint64_t ms = monotonic_ms() - t0;
        assert_true(ms < 6000);
        assert_true(r.abandoned);
        json_t *t = test_of(r.report, 1, "compute.fma");
        assert_string_equal(json_string_value(json_object_get(t, "status")), "fail");
        assert_non_null(strstr(json_string_value(json_object_get(t, "summary")), "GPU 1: compute.fma did not finish"));
        assert_string_equal(status_of(r.report, 0, "stress.sustained"), "pass");
        assert_string_equal(status_of(r.report, 2, "stress.sustained"), "pass");
        json_decref(r.report);
}

/* A launch error is named and the GPU's next tests still run; a JIT error carries the driver's log. */
static void test_launch_and_jit_errors(void **state) {
        describe(2, 0, "{\"launch_error\": {\"entry\": \"gpunode_fma\", \"code\": 701}}", NULL, true, NULL);
        struct validate_result r;
        assert_int_equal(run(&r, 0, NULL, 0, false, NULL), 2);
        json_t *t = test_of(r.report, 0, "compute.fma");
        assert_string_equal(json_string_value(json_object_get(t, "status")), "fail");
        assert_non_null(strstr(json_string_value(json_object_get(t, "summary")), "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"));
        assert_string_equal(status_of(r.report, 0, "pcie.h2d"), "pass");
        json_decref(r.report);

        describe(2, 1, "{\"jit_error\": true}", NULL, true, NULL);
        assert_int_equal(run(&r, 0, NULL, 0, false, NULL), 2);
        t = test_of(r.report, 1, "setup");
        assert_non_null(t);
        assert_non_null(strstr(json_string_value(json_object_get(t, "summary")), "CUDA_ERROR_INVALID_PTX"));
        assert_non_null(strstr(json_string_value(json_object_get(t, "summary")), "ptxas fatal"));
        assert_string_equal(gpu_verdict(r.report, 0), "pass");
        json_decref(r.report);
}

/* Silent data corruption in one GPU's FMA output: it fails, named; the others pass. */
static void test_fma_corruption(void **state) {
        describe(3, 2, "{\"fma_corrupt_thread\": 5}", NULL, true, NULL);
        struct validate_result r;
        assert_int_equal(run(&r, 0, NULL, 0, false, NULL), 2);
        json_t *t = test_of(r.report, 2, "compute.fma");
        assert_string_equal(json_string_value(json_object_get(t, "status")), "fail");
        assert_non_null(strstr(json_string_value(json_object_get(t, "summary")), "GPU 2"));
        assert_true(json_is_true(json_object_get(json_object_get(t, "evidence"), "cross_gpu_mismatch")));
        assert_string_equal(status_of(r.report, 0, "compute.fma"), "pass");
        json_decref(r.report);
}

/* No peer access on an NVLink product: its pairs fail, the others pass. */
static void test_no_peer(void **state) {
        describe(3, 1, NULL, NULL, true, NULL);
        /* peer_access is a GPU key, not a fault: rewrite GPU 1's description */
        const char *path = getenv("GPUNODE_FAKE_CUDA");
        _cleanup_free_ char *cmd =
                xasprintf("sed -i 's/\"p2p_gbps\": 380}, {\"name\": \"NVIDIA H100 80GB HBM3\", \"uuid\": "
                          "\"GPU-00000001/\"p2p_gbps\": 380}, {\"peer_access\": false, \"name\": \"NVIDIA "
                          "H100 80GB HBM3\", \"uuid\": \"GPU-00000001/' %s",
                          path);
        assert_int_equal(system(cmd), 0);
        struct validate_result r;
        assert_int_equal(run(&r, 0, NULL, 0, false, NULL), 2);
        size_t i;
        json_t *p;
        int failed = 0;
        json_array_foreach(json_object_get(r.report, "pairs"), i, p) {
                bool with1 = json_integer_value(json_object_get(p, "a")) == 1 ||
                             json_integer_value(json_object_get(p, "b")) == 1;
                assert_string_equal(json_string_value(json_object_get(p, "verdict")), with1 ? "fail" : "pass");
                failed += with1;
        }
        assert_int_equal(failed, 2);
        json_decref(r.report);
}

/* Cannot run: library absent, cuInit failing, no GPU (69); a --gpu naming nothing (64). */
static void test_cannot_run(void **state) {
        struct validate_result r;
        describe(1, -1, NULL, NULL, false, NULL);
        assert_int_equal(run(&r, 0, NULL, 0, false, "/nonexistent/libcuda.so.1"), VALIDATE_EXIT_UNAVAILABLE);
        assert_string_equal(json_string_value(json_object_get(r.report, "verdict")), "error");
        assert_non_null(strstr(
                json_string_value(json_object_get(json_array_get(json_object_get(r.report, "errors"), 0), "error")),
                "/nonexistent/libcuda.so.1"));
        json_decref(r.report);
        describe(1, -1, NULL, "\"init_error\": 802", false, NULL);
        assert_int_equal(run(&r, 0, NULL, 0, false, NULL), VALIDATE_EXIT_UNAVAILABLE);
        assert_non_null(strstr(
                json_string_value(json_object_get(json_array_get(json_object_get(r.report, "errors"), 0), "error")),
                "CUDA_ERROR_SYSTEM_NOT_READY"));
        json_decref(r.report);
        describe(0, -1, NULL, NULL, false, NULL);
        assert_int_equal(run(&r, 0, NULL, 0, false, NULL), VALIDATE_EXIT_UNAVAILABLE);
        json_decref(r.report);
        describe(2, -1, NULL, NULL, false, NULL);
        const char *sel[] = { "9" };
        assert_int_equal(run(&r, 0, sel, 1, false, NULL), VALIDATE_EXIT_USAGE);
        assert_non_null(strstr(
                json_string_value(json_object_get(json_array_get(json_object_get(r.report, "errors"), 0), "error")),
                "--gpu 9: no such GPU"));
        json_decref(r.report);
        /* a UUID selects one GPU; without NVML the PCIe tests give figures, no verdict */
        const char *uuid[] = { "GPU-00000001-aaaa-bbbb-cccc-dddddddddddd" };
        assert_int_equal(run(&r, 0, uuid, 1, false, NULL), 0);
        assert_int_equal(json_array_size(json_object_get(r.report, "gpus")), 1);
        assert_string_equal(status_of(r.report, 1, "pcie.h2d"), "info");
        json_decref(r.report);
}

/* A GPU with a compute process is refused (degraded), validated with --force; a hardware slowdown under stress fails.
 */
static void test_refused_and_slowdown(void **state) {
        struct validate_result r;
        describe(2, 1, NULL, NULL, true, "\"processes\": [{\"pid\": 4242, \"used_memory\": 1048576}]");
        assert_int_equal(run(&r, 0, NULL, 0, false, NULL), 1);
        assert_string_equal(gpu_verdict(r.report, 1), "refused");
        assert_string_equal(gpu_verdict(r.report, 0), "pass");
        json_decref(r.report);
        assert_int_equal(run(&r, 0, NULL, 0, true, NULL), 0);
        json_decref(r.report);
        describe(2, 0, NULL, NULL, true, "\"clocks_event_reasons\": 8");
        assert_int_equal(run(&r, 0, NULL, 0, false, NULL), 2);
        assert_string_equal(status_of(r.report, 0, "stress.sustained"), "fail");
        assert_string_equal(status_of(r.report, 1, "stress.sustained"), "pass");
        json_decref(r.report);
}

/* The command: a hang exits in bounded time with the report on stdout (exit 2); bad options exit 64. */
static void test_command(void **state) {
        describe(2, 0, "{\"hang\": {\"entry\": \"gpunode_copy\", \"seconds\": 60}}", NULL, true, NULL);
        setenv("GPUNODE_VALIDATE_TEST_SCALE", "100", 1);
        uint64_t t0 = monotonic_ms();
        _cleanup_free_ char *cmd =
                xasprintf("%s validate --cuda-library %s --nvml-library %s --timeout 1s --output json "
                          "--node n > /tmp/test-validate-%d.out 2>/dev/null",
                          GPUNODE_BINARY, FAKE_CUDA_LIBRARY, FAKE_NVML_LIBRARY, getpid());
        int st = system(cmd);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 2);
        assert_true(monotonic_ms() - t0 < 8000);
        _cleanup_free_ char *out = xasprintf("/tmp/test-validate-%d.out", getpid());
        json_t *rep = json_load_file(out, 0, NULL);
        assert_non_null(rep);
        assert_string_equal(status_of(rep, 0, "memory.bandwidth"), "fail");
        assert_string_equal(status_of(rep, 1, "memory.bandwidth"), "pass");
        json_decref(rep);
        unlink(out);
        _cleanup_free_ char *bad = xasprintf("%s validate --level medium 2>/dev/null", GPUNODE_BINARY);
        st = system(bad);
        assert_int_equal(WEXITSTATUS(st), 64);
}

/* Removes the descriptions this process wrote. */
static int cleanup(void **state) {
        _cleanup_free_ char *cmd = xasprintf("rm -f /tmp/test-validate-%d-*", getpid());
        return system(cmd) == 0 ? 0 : 0;
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_pattern_reference),
                cmocka_unit_test(test_fma_reference),
                cmocka_unit_test(test_specs),
                cmocka_unit_test(test_eight_gpus_pass),
                cmocka_unit_test(test_bit_flip),
                cmocka_unit_test(test_sticky),
                cmocka_unit_test(test_launch_and_jit_errors),
                cmocka_unit_test(test_fma_corruption),
                cmocka_unit_test(test_no_peer),
                cmocka_unit_test(test_cannot_run),
                cmocka_unit_test(test_refused_and_slowdown),
                cmocka_unit_test(test_command),
                cmocka_unit_test(test_hang), /* last: its worker sleeps in the fake until the process ends */
        };
        return cmocka_run_group_tests(tests, NULL, cleanup);
}
