/* test_labels.c: unit tests of GFD's product/machine sanitiser and architecture families. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "labels.h"

/* Asserts that gfd_sanitise(in) is want. */
static void check(const char *in, const char *want) {
        char *s = gfd_sanitise(in);
        assert_string_equal(s, want);
        free(s);
}

static void test_sanitise(void **state) {
        (void)state;
        check("NVIDIA H100 80GB HBM3", "NVIDIA-H100-80GB-HBM3");
        check("Tesla T4", "Tesla-T4");
        check("NVIDIA A100-SXM4-80GB", "NVIDIA-A100-SXM4-80GB");
        check("NVIDIA L40S", "NVIDIA-L40S");
        check("  NVIDIA   GeForce RTX 4090  ", "NVIDIA-GeForce-RTX-4090");
        check("NVIDIA RTX 6000 Ada Generation (PCIe)/SXM", "NVIDIA-RTX-6000-Ada-Generation-PCIeSXM");
        check("Quadro\tRTX", "QuadroRTX");                    /* a tab is removed, not a separator */
        check("GPU™ Über ünïcødé", "GPU-ber-ncd");            /* multi-byte characters go whole */
        check("a_b.c-d", "a_b.c-d");
        check("", "");
        check("   ", "");
        check("(){}[]", "");
        check("\xff\xfe bad utf8", "bad-utf8");
}

static void test_families(void **state) {
        (void)state;
        assert_string_equal(gfd_arch_family(7, 0), "volta");
        assert_string_equal(gfd_arch_family(7, 5), "turing");
        assert_string_equal(gfd_arch_family(8, 0), "ampere");
        assert_string_equal(gfd_arch_family(8, 6), "ampere");
        assert_string_equal(gfd_arch_family(8, 9), "ada-lovelace");
        assert_string_equal(gfd_arch_family(9, 0), "hopper");
        assert_string_equal(gfd_arch_family(10, 0), "blackwell");
        assert_string_equal(gfd_arch_family(12, 0), "blackwell");
        assert_string_equal(gfd_arch_family(13, 0), "rubin");
        assert_string_equal(gfd_arch_family(4, 0), "undefined");
        assert_string_equal(gfd_arch_family(11, 0), "undefined");
}

/* No NVML: labelling fails with the reason, as GFD. */
static void test_no_nvml(void **state) {
        (void)state;
        struct node_facts f = {0};
        f.nvml.load_error = (char *)"cannot load libnvidia-ml.so.1";
        struct label_options o = {0};
        struct label_set s;
        char *err = NULL;
        assert_int_equal(gfd_labels(&f, &o, &s, &err), -ENODEV);
        assert_non_null(strstr(err, "libnvidia-ml"));
        free(err);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sanitise),
                cmocka_unit_test(test_families),
                cmocka_unit_test(test_no_nvml),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
