/* test_kfmt.c: unit tests for the /proc and sysfs format parsers, with lines from real hosts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>

#include "basic/hostfs.h"
#include "basic/kfmt.h"
#include "basic/util.h"

static void test_numbered_state(void **state) {
        char *text;
        assert_int_equal(kfmt_numbered_state("4: ACTIVE", &text), 4);
        assert_string_equal(text, "ACTIVE");
        free(text);
        assert_int_equal(kfmt_numbered_state("5: LinkUp", &text), 5);
        assert_string_equal(text, "LinkUp");
        free(text);
        assert_int_equal(kfmt_numbered_state("4: PortConfigurationTraining  ", &text), 4);
        assert_string_equal(text, "PortConfigurationTraining");
        free(text);
        assert_int_equal(kfmt_numbered_state("1: DOWN", &text), 1);
        free(text);
        assert_int_equal(kfmt_numbered_state("ACTIVE", &text), -EINVAL);
        assert_null(text);
        assert_int_equal(kfmt_numbered_state(": x", &text), -EINVAL);
        assert_int_equal(kfmt_numbered_state("x4: ACTIVE", &text), -EINVAL);
        assert_int_equal(kfmt_numbered_state("9999: big", &text), -EINVAL);
        assert_int_equal(kfmt_numbered_state("", &text), -EINVAL);
}

static void test_driver_version(void **state) {
        bool open = true;
        char *v = kfmt_driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024", &open);
        assert_string_equal(v, "550.54.15");
        assert_false(open);
        free(v);
        v = kfmt_driver_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  "
                                "(dvs-builder@U16-I3-B13-4-3)  Thu Oct 23 00:06:03 UTC 2025", &open);
        assert_string_equal(v, "580.95.05");
        assert_true(open);
        free(v);
        v = kfmt_driver_version("NVRM version: NVIDIA UNIX aarch64 Kernel Module  535.161.08  Tue Mar  5 22:42:03 UTC 2024", &open);
        assert_string_equal(v, "535.161.08");
        free(v);
        assert_null(kfmt_driver_version("GCC version:  gcc version 12.2.0", &open));
        assert_null(kfmt_driver_version("NVRM version: garbage", &open));
        assert_null(kfmt_driver_version("NVRM version: 1. .2 x86_64", &open));
        assert_null(kfmt_driver_version("", &open));
}

static void test_info_value(void **state) {
        const char *info = "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 0\nGPU UUID: \t GPU-d0f25a6f-9a3f-61b9-c128-3d14759651d7\n"
                           "Video BIOS: \t 96.00.74.00.0d\nBus Type: \t PCIe\nBus Location: \t 0000:18:00.0\n"
                           "Device Minor: \t 6\nGPU Excluded:\t No";
        char *v = kfmt_info_value(info, "Model");
        assert_string_equal(v, "NVIDIA H100 80GB HBM3");
        free(v);
        v = kfmt_info_value(info, "GPU UUID");
        assert_string_equal(v, "GPU-d0f25a6f-9a3f-61b9-c128-3d14759651d7");
        free(v);
        v = kfmt_info_value(info, "Device Minor");
        assert_string_equal(v, "6");
        free(v);
        v = kfmt_info_value(info, "GPU Excluded");
        assert_string_equal(v, "No");
        free(v);
        assert_null(kfmt_info_value(info, "GPU"));
        assert_null(kfmt_info_value(info, "Missing"));
        assert_null(kfmt_info_value("", "Model"));
}

static void test_lockdown_and_efivar(void **state) {
        char *v = kfmt_lockdown("none [integrity] confidentiality");
        assert_string_equal(v, "integrity");
        free(v);
        v = kfmt_lockdown("[none] integrity confidentiality");
        assert_string_equal(v, "none");
        free(v);
        assert_null(kfmt_lockdown("none integrity"));
        assert_null(kfmt_lockdown("[]"));
        assert_null(kfmt_lockdown("[unterminated"));
        const char on[] = {6, 0, 0, 0, 1}, off[] = {6, 0, 0, 0, 0}, bad[] = {6, 0, 0, 0, 7};
        assert_int_equal(kfmt_efivar_bool(on, 5), 1);
        assert_int_equal(kfmt_efivar_bool(off, 5), 0);
        assert_int_equal(kfmt_efivar_bool(bad, 5), -EINVAL);
        assert_int_equal(kfmt_efivar_bool(on, 4), -EINVAL);
}

/* /proc/stat's btime, as Linux 6.1 writes the file (cpu lines first, btime among the counters). */
static void test_proc_stat_btime(void **state) {
        (void)state;
        static const char real[] = "cpu  10132153 290696 3084719 46828483 16683 0 25195 0 0 0\n"
                                   "cpu0 1393280 32966 572056 13343292 6130 0 17875 0 0 0\n"
                                   "intr 199292223 33 9 0 0 0 0 3 0 1 0 0 0 156 0 0 0\n"
                                   "ctxt 2084421\nbtime 1725000000\nprocesses 26442\nprocs_running 1\n";
        assert_int_equal(kfmt_proc_stat_btime(real), 1725000000);
        assert_int_equal(kfmt_proc_stat_btime("btime 42"), 42);
        static const char *const bad[] = { "", "cpu 1 2 3\n", "btime\n", "btime -5\n", "btime 0\n", "btime 12x\n",
                                           "xbtime 5\n", "btime 99999999999999999999\n" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) assert_int_equal(kfmt_proc_stat_btime(bad[i]), -EINVAL);
}

static void test_proc_modules(void **state) {
        const char *text = "nvidia_uvm 1830912 4 - Live 0x0000000000000000 (POE)\n"
                           "nvidia_drm 77824 0 - Live 0x0000000000000000 (POE)\n"
                           "nvidia 56659968 157 nvidia_uvm,nvidia_peermem,nvidia_modeset, Live 0x0000000000000000 (POE)\n"
                           "\n"
                           "ib_core 434176 9 rdma_ucm,ib_ipoib,nvidia_peermem,mlx5_ib, Live 0x0000000000000000\n";
        char **v;
        size_t n = kfmt_proc_modules(text, &v);
        assert_int_equal(n, 4);
        assert_string_equal(v[0], "nvidia_uvm");
        assert_string_equal(v[2], "nvidia");
        assert_string_equal(v[3], "ib_core");
        assert_null(v[4]);
        strv_free(v);
        n = kfmt_proc_modules("", &v);
        assert_int_equal(n, 0);
        strv_free(v);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_numbered_state),
                cmocka_unit_test(test_driver_version),
                cmocka_unit_test(test_info_value),
                cmocka_unit_test(test_lockdown_and_efivar),
                cmocka_unit_test(test_proc_modules),
                cmocka_unit_test(test_proc_stat_btime),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
