/* test_labels.c: unit tests of GFD's product/machine sanitiser, architecture families and MIG profile names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "layer3_kubernetes/gfd_labels.h"
#include "engine/check.h"
#include "facts/layer3_kubernetes.h"
#include "nvml/nvml_facts_json.h"
#include "nvml/nvml_probe.h"

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

/* Asserts that go-nvlib's name for (gi, ci, MIG memory MiB) on a GPU of gpu_mib MiB is want. */
static void profile(unsigned gi, unsigned ci, uint64_t mb, uint64_t gpu_mib, const char *want) {
        char buf[32];
        assert_int_equal(nvml_mig_profile_name(gi, ci, mb, gpu_mib << 20, buf, sizeof buf), 0);
        assert_string_equal(buf, want);
}

/* Real profiles (`nvidia-smi mig -lgip`: GPU instance profile, compute instance profile, memory). */
static void test_mig_profile_names(void **state) {
        (void)state;
        /* A100-SXM4-80GB: 81920 MiB */
        profile(NVML_GPU_INSTANCE_PROFILE_1_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, 9728, 81920, "1g.10gb");
        profile(NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, 9728, 81920, "1g.10gb+me");
        profile(NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, 19968, 81920, "1g.20gb");
        profile(NVML_GPU_INSTANCE_PROFILE_2_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE, 19968, 81920, "2g.20gb");
        profile(NVML_GPU_INSTANCE_PROFILE_3_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE, 40192, 81920, "3g.40gb");
        profile(NVML_GPU_INSTANCE_PROFILE_4_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE, 40192, 81920, "4g.40gb");
        profile(NVML_GPU_INSTANCE_PROFILE_7_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE, 81152, 81920, "7g.80gb");
        /* compute instances smaller than their GPU instance */
        profile(NVML_GPU_INSTANCE_PROFILE_7_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, 81152, 81920, "1c.7g.80gb");
        profile(NVML_GPU_INSTANCE_PROFILE_3_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE, 40192, 81920, "2c.3g.40gb");
        /* A100-SXM4-40GB: 40960 MiB */
        profile(NVML_GPU_INSTANCE_PROFILE_1_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, 4864, 40960, "1g.5gb");
        profile(NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, 4864, 40960, "1g.5gb+me");
        profile(NVML_GPU_INSTANCE_PROFILE_2_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE, 9984, 40960, "2g.10gb");
        profile(NVML_GPU_INSTANCE_PROFILE_3_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE, 20096, 40960, "3g.20gb");
        profile(NVML_GPU_INSTANCE_PROFILE_4_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE, 20096, 40960, "4g.20gb");
        profile(NVML_GPU_INSTANCE_PROFILE_7_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE, 40320, 40960, "7g.40gb");
        /* H100 80GB HBM3: 81559 MiB (not a whole number of GiB: rounded up to 80) */
        profile(NVML_GPU_INSTANCE_PROFILE_1_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, 9984, 81559, "1g.10gb");
        profile(NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, 9984, 81559, "1g.10gb+me");
        profile(NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, 20096, 81559, "1g.20gb");
        profile(NVML_GPU_INSTANCE_PROFILE_2_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE, 20096, 81559, "2g.20gb");
        profile(NVML_GPU_INSTANCE_PROFILE_3_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE, 40448, 81559, "3g.40gb");
        profile(NVML_GPU_INSTANCE_PROFILE_4_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE, 40448, 81559, "4g.40gb");
        profile(NVML_GPU_INSTANCE_PROFILE_7_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE, 81152, 81559, "7g.80gb");
        /* the attribute suffixes of newer profiles (go-nvlib mig_profile.go) */
        profile(NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, 9984, 81559, "1g.10gb-me");
        profile(NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME, NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE, 20096, 81559, "2g.20gb+me.all");
        profile(NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX, NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE, 40448, 81559, "4g.40gb+gfx");
        profile(NVML_GPU_INSTANCE_PROFILE_7_SLICE, NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE_NVL, 81152, 81559, "7g.80gb");

        /* what go-nvlib cannot name */
        char buf[32] = "x";
        assert_int_equal(nvml_mig_profile_name(NVML_GPU_INSTANCE_PROFILE_3_SLICE_GFX, 0, 40448, 81559ULL << 20, buf, sizeof buf), -EINVAL);
        assert_string_equal(buf, "");
        assert_int_equal(nvml_mig_profile_name(NVML_GPU_INSTANCE_PROFILE_COUNT, 0, 40448, 81559ULL << 20, buf, sizeof buf), -EINVAL);
        assert_int_equal(nvml_mig_profile_name(0, NVML_COMPUTE_INSTANCE_PROFILE_COUNT, 9984, 81559ULL << 20, buf, sizeof buf), -EINVAL);
        assert_int_equal(nvml_mig_profile_name(0, 0, 9984, 0, buf, sizeof buf), -EINVAL);

        /* from the attributes alone: slices and memory, no suffix */
        struct nvml_mig_attributes a = {.gi_slices = 3, .ci_slices = 3, .memory_mb = 40192};
        assert_int_equal(nvml_mig_name_from_attributes(&a, 81920ULL << 20, buf, sizeof buf), 0);
        assert_string_equal(buf, "3g.40gb");
        a = (struct nvml_mig_attributes){.gi_slices = 7, .ci_slices = 2, .memory_mb = 81152};
        assert_int_equal(nvml_mig_name_from_attributes(&a, 81559ULL << 20, buf, sizeof buf), 0);
        assert_string_equal(buf, "2c.7g.80gb");
        a.gi_slices = 0;
        assert_int_equal(nvml_mig_name_from_attributes(&a, 81559ULL << 20, buf, sizeof buf), -EINVAL);

        /* GFD's resource name: '+' becomes '.' */
        struct nvml_mig_facts m = {.profile_rc = NVML_SUCCESS, .profile = "1g.10gb+me.all"};
        assert_int_equal(gfd_mig_name(&m, buf, sizeof buf), 0);
        assert_string_equal(buf, "1g.10gb.me.all");
        m.profile_rc = NVML_ERROR_NO_PERMISSION;
        assert_int_equal(gfd_mig_name(&m, buf, sizeof buf), -EINVAL);
}

/* gfd.labels judges the product label with the sanitiser `gpunode labels` writes it with: a name
 * with a tab (GFD drops the tab: "NVIDIA H100\t80GB" is "NVIDIA-H10080GB") is no mismatch. */
static void test_check_agrees_with_labels(void **state) {
        static const char desc[] = "{\"driver_version\": \"550.54.15\", \"cuda_driver_version\": 12040, \"gpus\": ["
                                   "{\"name\": \"NVIDIA H100\\t80GB HBM3\", \"uuid\": \"GPU-1\", \"pci_bus_id\": \"00000000:18:00.0\"}]}";
        struct node_facts facts = {0};
        char *err = NULL;
        assert_int_equal(nvml_facts_from_json(desc, strlen(desc), &facts.nvml.facts, &err), 0);
        _cleanup_free_ char *product = gfd_sanitise(facts.nvml.facts->gpus[0].name);
        assert_string_equal(product, "NVIDIA-H10080GB-HBM3");
        struct kube_facts kube = {0};
        struct kube_kv labels[] = {{"nvidia.com/gpu.product", product}};
        kube.api.node_name = "n";
        kube.api.node.labels = labels;
        kube.api.node.n_labels = ELEMENTSOF(labels);
        facts.kube = &kube;
        const struct check_def *def = check_find("gfd.labels");
        assert_non_null(def);
        struct finding f = {.def = def};
        def->run(&facts, &f);
        for (size_t i = 0; i < f.n_evidence; i++)
                if (strstr(f.evidence[i], "gpu.product=")) fail_msg("product judged a mismatch: %s", f.evidence[i]);
        free(f.summary);
        free(f.remedy);
        for (size_t i = 0; i < f.n_evidence; i++) free(f.evidence[i]);
        free(f.evidence);
        nvml_facts_free(facts.nvml.facts);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sanitise),
                cmocka_unit_test(test_families),
                cmocka_unit_test(test_no_nvml),
                cmocka_unit_test(test_mig_profile_names),
                cmocka_unit_test(test_check_agrees_with_labels),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
