/* test_gpu_health.c: the gpu.* and nvlink.* judging helpers, the one GPU recovery verdict, and the
 * /proc/<pid>/cgroup parser, on real-world values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "basic/util.h"
#include "layer1_hardware/cgroup.h"
#include "layer1_hardware/gpu_health.h"
#include "nvml/nvml_lib.h"
#include "nvml/nvml_probe.h"

static void test_reasons_text(void **state) {
        (void)state;
        char b[160];
        assert_string_equal(gpu_clock_reasons_text(0, b, sizeof b), "none");
        assert_string_equal(gpu_clock_reasons_text(0x1, b, sizeof b), "idle");
        /* nvidia-smi -q -d PERFORMANCE on an HGX GPU hitting the PSU's power brake */
        assert_string_equal(gpu_clock_reasons_text(0x88, b, sizeof b), "HW slowdown, HW power brake slowdown");
        assert_string_equal(gpu_clock_reasons_text(0x24, b, sizeof b), "SW power cap, SW thermal slowdown");
        assert_string_equal(gpu_clock_reasons_text(0x1000 | 0x40, b, sizeof b), "HW thermal slowdown, 0x1000");
        char small[8];
        gpu_clock_reasons_text(0x88, small, sizeof small); /* truncates, never overflows */
        assert_true(strlen(small) < sizeof small);
}

static void test_slowdown_judge(void **state) {
        (void)state;
        assert_int_equal(gpu_slowdown_judge(0x1, true, 0x1), CHECK_PASS);                  /* idle */
        assert_int_equal(gpu_slowdown_judge(0x4, true, 0x4), CHECK_PASS);                  /* power cap: not a fault */
        assert_int_equal(gpu_slowdown_judge(0x2 | 0x10, true, 0x2), CHECK_PASS);           /* app clocks, sync boost */
        assert_int_equal(gpu_slowdown_judge(0x20, true, 0x0), CHECK_WARN);                 /* SW thermal */
        assert_int_equal(gpu_slowdown_judge(0x8, true, 0x1), CHECK_WARN);                  /* HW slowdown, then gone */
        assert_int_equal(gpu_slowdown_judge(0x0, true, 0x40), CHECK_WARN);                 /* came meanwhile */
        assert_int_equal(gpu_slowdown_judge(0x8, true, 0x48), CHECK_FAIL);                 /* held */
        assert_int_equal(gpu_slowdown_judge(0x80, true, 0x80), CHECK_FAIL);                /* power brake held */
        assert_int_equal(gpu_slowdown_judge(0x8, false, 0), CHECK_WARN);                   /* one reading: not sustained */
}

static void test_temperature_judge(void **state) {
        (void)state;
        /* H100 SXM: shutdown 92, slowdown 89, max operating 87, memory max 95 (nvidia-smi -q -d TEMPERATURE) */
        assert_int_equal(gpu_temperature_judge(45, 92, 89, 87), CHECK_PASS);
        assert_int_equal(gpu_temperature_judge(83, 92, 89, 87), CHECK_PASS);
        assert_int_equal(gpu_temperature_judge(84, 92, 89, 87), CHECK_WARN); /* within 5 C of slowdown */
        assert_int_equal(gpu_temperature_judge(87, 92, 89, 0), CHECK_WARN);
        assert_int_equal(gpu_temperature_judge(89, 92, 89, 87), CHECK_FAIL);
        assert_int_equal(gpu_temperature_judge(93, 92, 0, 0), CHECK_FAIL); /* past shutdown, slowdown unknown */
        assert_int_equal(gpu_temperature_judge(120, 0, 0, 0), CHECK_PASS); /* no thresholds: nothing to judge by */
        assert_int_equal(gpu_temperature_judge(80, 0, 0, 80), CHECK_WARN);
        assert_int_equal(gpu_memory_temperature_judge(60, 95), CHECK_PASS);
        assert_int_equal(gpu_memory_temperature_judge(90, 95), CHECK_WARN);
        assert_int_equal(gpu_memory_temperature_judge(99, 95), CHECK_WARN);
        assert_int_equal(gpu_memory_temperature_judge(99, 0), CHECK_PASS);
}

static void test_expected_links(void **state) {
        (void)state;
        /* NVML product names as nvidia-smi -L prints them */
        assert_int_equal(nvlink_expected_links("NVIDIA H100 80GB HBM3"), 18);
        assert_int_equal(nvlink_expected_links("NVIDIA H200"), 18);
        assert_int_equal(nvlink_expected_links("NVIDIA H20"), 18);
        assert_int_equal(nvlink_expected_links("NVIDIA H800"), 8);
        assert_int_equal(nvlink_expected_links("NVIDIA B200"), 18);
        assert_int_equal(nvlink_expected_links("NVIDIA GB200"), 18);
        assert_int_equal(nvlink_expected_links("NVIDIA A100-SXM4-80GB"), 12);
        assert_int_equal(nvlink_expected_links("NVIDIA A100-SXM4-40GB"), 12);
        assert_int_equal(nvlink_expected_links("NVIDIA A800-SXM4-80GB"), 8);
        assert_int_equal(nvlink_expected_links("Tesla V100-SXM2-32GB"), 6);
        assert_int_equal(nvlink_expected_links("NVIDIA H100 PCIe"), 0);
        assert_int_equal(nvlink_expected_links("NVIDIA H100 NVL"), 0);
        assert_int_equal(nvlink_expected_links("NVIDIA A100 80GB PCIe"), 0);
        assert_int_equal(nvlink_expected_links("NVIDIA L40S"), 0);
        assert_int_equal(nvlink_expected_links("NVIDIA H2000"), 0); /* not an H20 */
        assert_int_equal(nvlink_expected_links(NULL), 0);
}

/* Parses text; asserts the result and the pod and container it gives. */
static void expect_cgroup(const char *text, int want, const char *pod, const char *container) {
        _cleanup_free_ char *p = NULL, *c = NULL;
        assert_int_equal(cgroup_pod_container(text, strlen(text), &p, &c), want);
        if (pod) assert_string_equal(p, pod);
        else assert_null(p);
        if (container) assert_string_equal(c, container);
        else assert_null(c);
}

/* /proc/<pid>/stat: the state letter after the last ')', the name between, on real lines. */
static void test_proc_stat(void **state) {
        (void)state;
        char comm[PROC_COMM_MAX];
        /* a kernel thread of the driver's, as Linux 6.1 writes it */
        const char *l = "812 (nv_queue) D 2 0 0 0 -1 2129984 0 0 0 0 0 25 0 0 20 0 1 0 1043 0 0 "
                        "18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 3 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
        assert_int_equal(proc_stat_state(l, strlen(l), comm), 'D');
        assert_string_equal(comm, "nv_queue");
        /* a name with spaces and parentheses (UVM's queue, a process that renamed itself) */
        l = "915 (UVM global queue) S 2 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 1100 0 0\n";
        assert_int_equal(proc_stat_state(l, strlen(l), comm), 'S');
        assert_string_equal(comm, "UVM global queue");
        l = "70001 (pt_main) (x)) R 1 70001 70001 0 -1 4194560 120345 0 12 0 1500 800 0 0 20 0 24 0 1234";
        assert_int_equal(proc_stat_state(l, strlen(l), comm), 'R');
        assert_string_equal(comm, "pt_main) (x)");
        l = "1 (systemd) S";
        assert_int_equal(proc_stat_state(l, strlen(l), comm), 'S');
        l = "4242 (zomb\ti) Z 1 0";
        assert_int_equal(proc_stat_state(l, strlen(l), comm), 'Z');
        assert_string_equal(comm, "zomb?i");
        /* the name cut at PROC_COMM_MAX */
        _cleanup_free_ char *longname = xasprintf("7 (%0200d) I 2", 0);
        assert_int_equal(proc_stat_state(longname, strlen(longname), comm), 'I');
        assert_int_equal(strlen(comm), PROC_COMM_MAX - 1);
        /* not stat lines */
        static const char *const bad[] = { "", "812", "812 (nv_queue)", "812 (nv_queue) ", "812 (nv_queue) 5 2",
                                           "812 (nv_queue) DD 2", "(nv_queue) D 2", "812 nv_queue D 2",
                                           "812 (nv_queue D 2", "12345678901 (x) D 2", "0::/kubepods.slice\n" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(proc_stat_state(bad[i], strlen(bad[i]), comm), -EINVAL);
}

static void test_cgroup(void **state) {
        (void)state;
        const char *cid = "9f2c4b1a7e3d5f6a8b0c2d4e6f8a0b1c3d5e7f9a1b3c5d7e9f0a2b4c6d8e0f1a";
        _cleanup_free_ char *v2 = xasprintf("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-"
                                            "pod3e9b0c7d_6a2f_4b18_8e45_0c9d7f6a2b13.slice/cri-containerd-%s.scope\n", cid);
        expect_cgroup(v2, 1, "3e9b0c7d-6a2f-4b18-8e45-0c9d7f6a2b13", cid);
        /* guaranteed QoS pods sit right under kubepods.slice */
        _cleanup_free_ char *guaranteed = xasprintf("0::/kubepods.slice/kubepods-pod7C1E2A4B_0D3F_4A6E_9B21_5F8C3D2E1A90.slice/"
                                                    "crio-%s.scope\n", cid);
        expect_cgroup(guaranteed, 1, "7c1e2a4b-0d3f-4a6e-9b21-5f8c3d2e1a90", cid);
        /* cgroup v1 with the cgroupfs driver (docker-era and containerd without systemd) */
        _cleanup_free_ char *v1 = xasprintf("12:pids:/kubepods/burstable/pod0a1b2c3d-4e5f-6789-abcd-ef0123456789/%s\n"
                                            "11:memory:/kubepods/burstable/pod0a1b2c3d-4e5f-6789-abcd-ef0123456789/%s\n"
                                            "0::/\n", cid, cid);
        expect_cgroup(v1, 1, "0a1b2c3d-4e5f-6789-abcd-ef0123456789", cid);
        /* the pod's own cgroup (its sandbox, or a process moved there): no container */
        expect_cgroup("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0a1b2c3d_4e5f_6789_abcd_ef0123456789.slice\n",
                      1, "0a1b2c3d-4e5f-6789-abcd-ef0123456789", NULL);
        /* host processes */
        expect_cgroup("0::/system.slice/nvidia-persistenced.service\n", 0, NULL, NULL);
        expect_cgroup("0::/user.slice/user-1000.slice/session-3.scope\n", 0, NULL, NULL);
        /* "pod" outside kubepods, or not followed by a UID */
        expect_cgroup("0::/system.slice/pod3e9b0c7d-6a2f-4b18-8e45-0c9d7f6a2b13.scope\n", 0, NULL, NULL);
        expect_cgroup("0::/kubepods.slice/kubepods-podnotauid.slice\n", 0, NULL, NULL);
        expect_cgroup("", 0, NULL, NULL);
        /* not a cgroup file */
        expect_cgroup("garbage without colons\n", -EINVAL, NULL, NULL);
        expect_cgroup("0:only-one-colon\n", -EINVAL, NULL, NULL);
}

/* A failed query is evidence; one that is unsupported or was never asked is not. */
static void test_error_evidence(void **state) {
        (void)state;
        struct finding f = { 0 };
        assert_false(gpu_fact_error_evidence(&f, "GPU 0", "drain state", NVML_SUCCESS));
        assert_false(gpu_fact_error_evidence(&f, "GPU 0", "drain state", NVML_ERROR_NOT_SUPPORTED));
        assert_false(gpu_fact_error_evidence(&f, "GPU 0", "drain state", NVML_FACT_NOT_QUERIED));
        assert_true(gpu_fact_error_evidence(&f, "GPU 3 (?)", "temperature", NVML_ERROR_GPU_IS_LOST));
        assert_int_equal(f.n_evidence, 1);
        assert_string_equal(f.evidence[0], "GPU 3 (?): temperature unknown: the GPU has fallen off the bus or is otherwise "
                                           "inaccessible (NVML_ERROR_GPU_IS_LOST)");
        for (size_t i = 0; i < f.n_evidence; i++) free(f.evidence[i]);
        free(f.evidence);
}

/* The one recovery verdict the driver checks and the device plugin share: an H100 after Xid 154 (field 230 = 1), an
 * A100 whose row remapping failed, a V100 with a page retirement pending, a clean GPU, a driver that reads none. */
static void test_recovery_verdict(void **state) {
        (void)state;
        char why[200];
        struct gpu_recovery clean = { .remapped_rows_rc = NVML_SUCCESS, .retired_pending_rc = NVML_ERROR_NOT_SUPPORTED,
                                      .action_rc = NVML_SUCCESS, .action = NVML_GPU_RECOVERY_ACTION_NONE };
        assert_false(gpu_recovery_verdict(&clean, why, sizeof why));
        assert_string_equal(why, "");
        assert_int_equal(gpu_remap_judge(&clean), CHECK_PASS);
        assert_int_equal(gpu_retired_pages_judge(&clean), CHECK_SKIP);
        assert_int_equal(gpu_recovery_action_judge(&clean), CHECK_PASS);

        struct gpu_recovery r = clean;
        r.action = NVML_GPU_RECOVERY_ACTION_GPU_RESET; /* "GPU recovery action changed from 0x0 (None) to 0x1" */
        assert_true(gpu_recovery_verdict(&r, why, sizeof why));
        assert_string_equal(why, "NVML's recovery action asks for: GPU reset (field 230 = 1)");
        assert_int_equal(gpu_recovery_action_judge(&r), CHECK_FAIL);
        /* every action is one (the plugin once let drain-P2P and unknown values through; driver.recovery-action
         * failed on them) */
        for (uint64_t a = 1; a <= 7; a++) {
                r.action = a;
                assert_true(gpu_recovery_verdict(&r, why, sizeof why));
        }
        assert_string_equal(gpu_recovery_action_text(NVML_GPU_RECOVERY_ACTION_DRAIN_P2P), "drain peer-to-peer traffic");
        assert_string_equal(gpu_recovery_action_text(NVML_GPU_RECOVERY_ACTION_NODE_REBOOT), "node reboot");
        assert_string_equal(gpu_recovery_action_text(99), "unknown action");
        r.action_rc = NVML_ERROR_NOT_SUPPORTED; /* a driver before field 230: the value is not looked at */
        assert_false(gpu_recovery_verdict(&r, why, sizeof why));
        assert_int_equal(gpu_recovery_action_judge(&r), CHECK_SKIP);

        /* a pending remap is a warning (the GPU works until its reset), a failed one the verdict, named first */
        r = clean;
        r.remapped_pending = true;
        assert_int_equal(gpu_remap_judge(&r), CHECK_WARN);
        assert_false(gpu_recovery_verdict(&r, why, sizeof why));
        r.remapped_failure = true;
        r.remapped_uncorrectable = 512;
        r.action = NVML_GPU_RECOVERY_ACTION_GPU_RESET;
        assert_int_equal(gpu_remap_judge(&r), CHECK_FAIL);
        assert_true(gpu_recovery_verdict(&r, why, sizeof why));
        assert_string_equal(why, "row remapping failed (512 uncorrectable rows remapped): the GPU needs a reset and "
                                 "likely RMA");
        r.remapped_rows_rc = NVML_ERROR_NOT_SUPPORTED; /* Volta: no row remapping; what was read is not looked at */
        r.action_rc = NVML_ERROR_NOT_SUPPORTED;
        assert_int_equal(gpu_remap_judge(&r), CHECK_SKIP);
        assert_false(gpu_recovery_verdict(&r, why, sizeof why));
        r.retired_pending_rc = NVML_SUCCESS;
        r.retired_pending = true;
        assert_int_equal(gpu_retired_pages_judge(&r), CHECK_FAIL);
        assert_true(gpu_recovery_verdict(&r, why, 16)); /* cut to the buffer */
        assert_int_equal(strlen(why), 15);

        /* from the probed facts */
        struct nvml_gpu_facts g = { .remapped_rows_rc = NVML_SUCCESS, .remapped_failure = true,
                                    .recovery_action = { .rc = NVML_SUCCESS, .value = 2 } };
        g.health.retired_pending.rc = NVML_ERROR_NOT_SUPPORTED;
        r = gpu_recovery_of(&g);
        assert_true(r.remapped_failure);
        assert_int_equal(r.action, 2);
        assert_int_equal(gpu_retired_pages_judge(&r), CHECK_SKIP);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_reasons_text),     cmocka_unit_test(test_slowdown_judge),
                cmocka_unit_test(test_temperature_judge), cmocka_unit_test(test_expected_links),
                cmocka_unit_test(test_cgroup), cmocka_unit_test(test_proc_stat),           cmocka_unit_test(test_error_evidence),
                cmocka_unit_test(test_recovery_verdict),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
