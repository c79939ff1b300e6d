/* test_labels.c: unit tests of GFD's product/machine sanitiser, architecture families and MIG profile names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "layer3_kubernetes/gfd_labels.h"
#include "engine/check.h"
#include "diagnose/registry.h"
#include "facts/layer3_kubernetes.h"
#include "nvml/nvml_facts_json.h"

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

/* The config spaces GFD's own tests read (k8s-device-plugin internal/vgpu/pciutil.go NewMockNvidiaPCI): a
 * passed-through T4 (no vGPU capability) and a vGPU guest whose host runs 460.16, branch r460_00. */
static void test_vgpu_config(void **state) {
        static const uint8_t passthrough[256] = {
                "\xde\x10\x8a\x11\x07\x04\x10\x00\xa1\x00\x00\x03\x00\xf8\x00\x00"
                "\x00\x00\x00\xec\x0c\x00\x00\xe0\x00\x00\x00\x00\x0c\x00\x00\xea"
                "\x00\x00\x00\x00\x01\xc1\x00\x00\x00\x00\x00\x00\xde\x10\x14\x10"
                "\x00\x00\x00\xee\x60\x00\x00\x00\x00\x00\x00\x00\x05\x01\x00\x00"
                "\xde\x10\x14\x10\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
                "\x01\x00\x00\x00\x01\x00\x00\x00\xce\xd6\x23\x00\x00\x00\x00\x00"
                "\x01\x68\x03\x00\x08\x00\x00\x00\x05\x78\x81\x00\x00\x70\xe6\xfe"
                "\x00\x00\x00\x00\x00\x43\x00\x00\x10\xb4\x02\x00\xe1\x8d\x64\x00"
                "\x10\x29\x00\x00\x03\x3d\x45\x10\x00\x00\x01\x11\x00\x00\x00\x00"
                "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x13\x00\x00\x00"
                "\x00\x00\x00\x00\x0e\x00\x00\x00\x03\x00\x3e\x00\x00\x00\x00\x00"
                "\x00\x00\x00\x00\x09\x00\x14\x01\x00\x00\x00\x00\x00\x00\x00\x00"
                "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
                "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
                "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
                "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        };
        static const uint8_t vgpu[256] = {
                "\xde\x10\xb8\x1e\x02\x05\xff\x06\xa1\x00\x00\x03\x00\x00\x00\x00"
                "\x00\x00\x00\xfc\x0c\x00\x00\xd0\x00\x00\x00\x00\x04\x00\x00\xfa"
                "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\xde\x10\x0f\x13"
                "\x00\x00\x00\x00\xd0\x00\x00\x00\x00\x00\x00\x00\x0a\x01\x00\x00"
                "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
                "\x01\x00\x00\x00\x01\x00\x00\x00\xce\xd6\x23\x00\x00\x00\x00\x00"
                "\x00\x00\x00\x00\x00\x00\x00\x00\x05\x00\x81\x00\x00\x00\xe0\xfe"
                "\x00\x00\x00\x00\x4e\x40\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
                "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
                "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
                "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
                "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
                "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
                "\x09\x68\x1b\x56\x46\x00\x16\x34\x36\x30\x2e\x31\x36\x00\x00\x00"
                "\x00\x72\x34\x36\x30\x5f\x30\x30\x00\x00\x00\x00\x00\x00\x00\x00"
                "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        };
        bool is_vgpu;
        int info_rc;
        char version[16], branch[16];
        assert_int_equal(gfd_vgpu_parse_config(passthrough, sizeof passthrough, &is_vgpu, &info_rc, version, branch), 0);
        assert_false(is_vgpu);
        assert_int_equal(gfd_vgpu_parse_config(vgpu, sizeof vgpu, &is_vgpu, &info_rc, version, branch), 1);
        assert_true(is_vgpu);
        assert_int_equal(info_rc, 0);
        assert_string_equal(version, "460.16");
        assert_string_equal(branch, "r460_00");
        /* read without privileges: 64 bytes, GFD cannot tell */
        assert_int_equal(gfd_vgpu_parse_config(vgpu, 64, &is_vgpu, &info_rc, version, branch), -EINVAL);
        /* a looped capability chain ends; a capability past the end is none */
        uint8_t loop[256] = {0};
        loop[6] = 0x10;
        loop[0x34] = 0x40;
        loop[0x40] = 0x01;
        loop[0x41] = 0x40;
        assert_int_equal(gfd_vgpu_parse_config(loop, sizeof loop, &is_vgpu, &info_rc, version, branch), 0);
        loop[0x40] = 0x09;
        loop[0x42] = 0xf0;
        loop[0x43] = 'V';
        loop[0x44] = 'F';
        assert_int_equal(gfd_vgpu_parse_config(loop, sizeof loop, &is_vgpu, &info_rc, version, branch), 0);
        assert_false(is_vgpu);
        /* a vGPU whose records never reach record 0 */
        loop[0x42] = 0x10;
        loop[0x45] = 0x03;
        loop[0x46] = 0x00;
        assert_int_equal(gfd_vgpu_parse_config(loop, sizeof loop, &is_vgpu, &info_rc, version, branch), 1);
        assert_int_equal(info_rc, -EBADMSG);
}

/* gpu.mode and gpu.clique as GFD computes them: one class for all GPUs, else unknown; a class that
 * cannot be read is unknown; an all-zero cluster UUID is no clique. */
static void test_mode_and_clique(void **state) {
        struct nvml_gpu_facts gpus[2] = {
                {.pci_rc = NVML_SUCCESS, .pci_bus_id_legacy = "0000:18:00.0", .fabric_rc = NVML_SUCCESS,
                 .fabric_state = NVML_GPU_FABRIC_STATE_COMPLETED, .fabric_status = NVML_SUCCESS,
                 .fabric_cluster_uuid = "00000000-0000-0000-0000-000000000000"},
                {.pci_rc = NVML_SUCCESS, .pci_bus_id_legacy = "0000:2a:00.0", .fabric_rc = NVML_SUCCESS,
                 .fabric_state = NVML_GPU_FABRIC_STATE_COMPLETED, .fabric_status = NVML_SUCCESS,
                 .fabric_cluster_uuid = "00000000-0000-0000-0000-000000000000"},
        };
        struct nvml_facts n = {.init_rc = NVML_SUCCESS, .n_gpus = 2, .gpus = gpus};
        struct pci_function fn[2] = {{.address = "0000:18:00.0", .class_code = 0x030200},
                                     {.address = "0000:2a:00.0", .class_code = 0x030200}};
        struct node_facts facts = {.pci = {.gpus = fn, .n_gpus = 2}, .nvml = {.facts = &n}};
        assert_string_equal(gfd_gpu_mode(&facts), "compute");
        fn[1].class_code = 0x030000;
        assert_string_equal(gfd_gpu_mode(&facts), "unknown");
        fn[0].class_code = 0x030000;
        assert_string_equal(gfd_gpu_mode(&facts), "graphics");
        facts.pci.n_gpus = 1; /* the second GPU's class was not read */
        assert_string_equal(gfd_gpu_mode(&facts), "unknown");
        char buf[64];
        assert_int_equal(gfd_clique(&n, buf, sizeof buf), -ENOENT);
        assert_string_equal(buf, "");
        snprintf(gpus[0].fabric_cluster_uuid, sizeof gpus[0].fabric_cluster_uuid, "6b1bd5c2-7f45-4b2e-9b66-0c1a3e2f4d5e");
        gpus[0].fabric_clique_id = 32766;
        assert_int_equal(gfd_clique(&n, buf, sizeof buf), 0); /* the all-zero GPU is not attached */
        assert_string_equal(buf, "6b1bd5c2-7f45-4b2e-9b66-0c1a3e2f4d5e.32766");

        /* gfd.labels: an old GFD's all-zero clique label contradicts NVML */
        snprintf(gpus[0].fabric_cluster_uuid, sizeof gpus[0].fabric_cluster_uuid, "00000000-0000-0000-0000-000000000000");
        gpus[0].fabric_clique_id = 0;
        gpus[0].name_rc = gpus[1].name_rc = NVML_SUCCESS;
        snprintf(gpus[0].name, sizeof gpus[0].name, "NVIDIA H100 80GB HBM3");
        snprintf(gpus[1].name, sizeof gpus[1].name, "NVIDIA H100 80GB HBM3");
        n.device_count = 2;
        struct kube_facts kube = {0};
        struct kube_kv labels[] = {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
                                   {"nvidia.com/gpu.clique", "00000000-0000-0000-0000-000000000000.0"}};
        kube.api.node_name = "n";
        kube.api.node.labels = labels;
        kube.api.node.n_labels = ELEMENTSOF(labels);
        facts.kube = &kube;
        const struct check_def *def = check_find("gfd.labels");
        struct finding f = {.def = def};
        def->run(&facts, &f);
        assert_int_equal(f.status, CHECK_FAIL);
        bool named = false;
        for (size_t i = 0; i < f.n_evidence; i++) named |= strstr(f.evidence[i], "gpu.clique=00000000") != NULL;
        assert_true(named);
        free(f.summary);
        free(f.remedy);
        for (size_t i = 0; i < f.n_evidence; i++) free(f.evidence[i]);
        free(f.evidence);
}

/* gfd.labels agrees with the labeler on GFD's MIG-INVALID labels (single strategy, MIG-enabled GPUs without
 * MIG devices: count 0, memory 0): a warning about the layout, not label mismatches; where the MIG devices
 * fit the single strategy the INVALID product is a mismatch. */
static void test_check_mig_invalid(void **state) {
        static struct nvml_gpu_facts gpus[2];
        for (int i = 0; i < 2; i++) {
                gpus[i] = (struct nvml_gpu_facts){.name_rc = NVML_SUCCESS, .mig_rc = NVML_SUCCESS, .mig_current = 1,
                                                  .mig_pending = 1, .mig_max_rc = NVML_SUCCESS, .mig_devices_rc = NVML_SUCCESS,
                                                  .memory_rc = NVML_SUCCESS, .memory_total = 81559ull << 20};
                snprintf(gpus[i].name, sizeof gpus[i].name, "NVIDIA H100 80GB HBM3");
        }
        struct nvml_facts n = {.init_rc = NVML_SUCCESS, .n_gpus = 2, .gpus = gpus, .device_count = 2};
        struct kube_facts kube = {0};
        struct kube_kv labels[] = {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3-MIG-INVALID"},
                                   {"nvidia.com/gpu.count", "0"}, {"nvidia.com/gpu.memory", "0"},
                                   {"nvidia.com/mig.strategy", "single"}};
        kube.api.node_name = "n";
        kube.api.node.labels = labels;
        kube.api.node.n_labels = ELEMENTSOF(labels);
        struct node_facts facts = {.nvml = {.facts = &n}, .kube = &kube};
        assert_int_equal(gfd_mig_single_invalid(&n), 1);
        const struct check_def *def = check_find("gfd.labels");
        struct finding f = {.def = def};
        def->run(&facts, &f);
        if (f.status != CHECK_WARN) fail_msg("%s", f.summary);
        assert_non_null(strstr(f.summary, "MIG-INVALID"));
        free(f.summary);
        free(f.remedy);
        for (size_t i = 0; i < f.n_evidence; i++) free(f.evidence[i]);
        free(f.evidence);
        /* one 7g.80gb on each GPU: the single strategy fits, INVALID contradicts NVML */
        for (int i = 0; i < 2; i++) {
                gpus[i].mig[0] = (struct nvml_mig_facts){.profile_rc = NVML_SUCCESS, .profile = "7g.80gb"};
                gpus[i].n_mig = 1;
        }
        assert_int_equal(gfd_mig_single_invalid(&n), 0);
        f = (struct finding){.def = def};
        def->run(&facts, &f);
        assert_int_equal(f.status, CHECK_FAIL);
        free(f.summary);
        free(f.remedy);
        for (size_t i = 0; i < f.n_evidence; i++) free(f.evidence[i]);
        free(f.evidence);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_sanitise),
                cmocka_unit_test(test_families),
                cmocka_unit_test(test_no_nvml),
                cmocka_unit_test(test_mig_profile_names),
                cmocka_unit_test(test_check_agrees_with_labels),
                cmocka_unit_test(test_vgpu_config),
                cmocka_unit_test(test_mode_and_clique),
                cmocka_unit_test(test_check_mig_invalid),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
