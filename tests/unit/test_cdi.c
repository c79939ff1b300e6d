/* test_cdi.c: CDI spec parsing (YAML as nvidia-ctk writes it, JSON), and driver versions in library paths. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "facts/node.h"
#include "facts/layer2_container.h"
#include "basic/util.h"

char *cdi_path_driver_version(const char *path);

/* Abridged from `nvidia-ctk cdi generate` (toolkit 1.17, driver 550.54.15, one GPU). */
static const char *YAML_SPEC =
        "---\n"
        "cdiVersion: 0.5.0\n"
        "containerEdits:\n"
        "  deviceNodes:\n"
        "  - path: /dev/nvidia-modeset\n"
        "  - path: /dev/nvidia-uvm\n"
        "  - path: /dev/nvidiactl\n"
        "  env:\n"
        "  - NVIDIA_VISIBLE_DEVICES=void\n"
        "  hooks:\n"
        "  - args:\n"
        "    - nvidia-cdi-hook\n"
        "    - update-ldcache\n"
        "    - --folder\n"
        "    - /usr/lib/x86_64-linux-gnu\n"
        "    hookName: createContainer\n"
        "    path: /usr/bin/nvidia-cdi-hook\n"
        "  mounts:\n"
        "  - containerPath: /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15\n"
        "    hostPath: /usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15\n"
        "    options:\n"
        "    - ro\n"
        "    - nosuid\n"
        "    - nodev\n"
        "    - bind\n"
        "  - containerPath: /lib/firmware/nvidia/550.54.15/gsp_ga10x.bin\n"
        "    hostPath: /lib/firmware/nvidia/550.54.15/gsp_ga10x.bin\n"
        "    options: [ro, nosuid, nodev, bind]\n"
        "devices:\n"
        "- containerEdits:\n"
        "    deviceNodes:\n"
        "    - path: /dev/nvidia0\n"
        "  name: '0'\n"
        "- containerEdits:\n"
        "    deviceNodes:\n"
        "    - path: /dev/nvidia0\n"
        "  name: GPU-5e2d1c00-a13f-61b9-c128-3d1475965100\n"
        "- containerEdits:\n"
        "    deviceNodes:\n"
        "    - path: /dev/nvidia0\n"
        "  name: all\n"
        "kind: nvidia.com/gpu\n";

static void test_yaml(void **state) {
        struct cdi_spec s;
        assert_int_equal(cdi_parse_spec("/var/run/cdi/nvidia.yaml", YAML_SPEC, strlen(YAML_SPEC), false, &s), 0);
        assert_string_equal(s.kind, "nvidia.com/gpu");
        assert_string_equal(s.cdi_version, "0.5.0");
        assert_int_equal(s.n_devices, 3);
        assert_string_equal(s.devices[0], "0");
        assert_string_equal(s.devices[1], "GPU-5e2d1c00-a13f-61b9-c128-3d1475965100");
        assert_int_equal(s.n_device_nodes, 4); /* three common, /dev/nvidia0 once */
        assert_int_equal(s.n_mounts, 2);
        assert_int_equal(s.n_hooks, 1);
        assert_string_equal(s.hooks[0], "/usr/bin/nvidia-cdi-hook");
        cdi_spec_free(&s);
}

static void test_json(void **state) {
        const char *j = "{\"cdiVersion\":\"0.6.0\",\"kind\":\"nvidia.com/gpu\",\"devices\":[{\"name\":\"0\",\"containerEdits\":"
                        "{\"deviceNodes\":[{\"path\":\"/dev/nvidia0\",\"hostPath\":\"/run/nvidia/driver/dev/nvidia0\"}]}}],"
                        "\"containerEdits\":{\"mounts\":[{\"hostPath\":\"/run/nvidia/driver/usr/lib64/libcuda.so.535.129.03\","
                        "\"containerPath\":\"/usr/lib64/libcuda.so.535.129.03\"}]}}";
        struct cdi_spec s;
        assert_int_equal(cdi_parse_spec("/etc/cdi/nvidia.json", j, strlen(j), true, &s), 0);
        assert_int_equal(s.n_devices, 1);
        assert_string_equal(s.device_nodes[0], "/run/nvidia/driver/dev/nvidia0");
        assert_string_equal(s.mounts[0], "/run/nvidia/driver/usr/lib64/libcuda.so.535.129.03");
        cdi_spec_free(&s);
}

static void test_errors(void **state) {
        struct cdi_spec s;
        const char *bad = "kind: nvidia.com/gpu\ndevices: [\n";
        assert_int_equal(cdi_parse_spec("/etc/cdi/x.yaml", bad, strlen(bad), false, &s), -EINVAL);
        assert_non_null(strstr(s.error, "/etc/cdi/x.yaml: invalid YAML at line "));
        cdi_spec_free(&s);
        bad = "{\"kind\": \"nvidia.com/gpu\",";
        assert_int_equal(cdi_parse_spec("/etc/cdi/x.json", bad, strlen(bad), true, &s), -EINVAL);
        assert_non_null(strstr(s.error, "line 1, column"));
        cdi_spec_free(&s);
        bad = "cdiVersion: 0.5.0\n";
        assert_int_equal(cdi_parse_spec("/etc/cdi/x.yaml", bad, strlen(bad), false, &s), -EINVAL);
        cdi_spec_free(&s);
        bad = "- a\n- b\n";
        assert_int_equal(cdi_parse_spec("/etc/cdi/x.yaml", bad, strlen(bad), false, &s), -EINVAL);
        cdi_spec_free(&s);
        /* aliases are never expanded (no billion laughs): an alias reads as null */
        bad = "kind: x\ndevices: &a [*a, {name: '1'}]\n";
        assert_int_equal(cdi_parse_spec("/etc/cdi/x.yaml", bad, strlen(bad), false, &s), 0);
        assert_int_equal(s.n_devices, 1);
        cdi_spec_free(&s);
}

static void test_versions(void **state) {
        char *v;
        assert_string_equal(v = cdi_path_driver_version("/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"), "550.54.15");
        free(v);
        assert_string_equal(v = cdi_path_driver_version("/usr/lib64/libnvidia-ml.so.535.104"), "535.104");
        free(v);
        assert_string_equal(v = cdi_path_driver_version("/lib/firmware/nvidia/535.129.03/gsp_ga10x.bin"), "535.129.03");
        free(v);
        assert_null(cdi_path_driver_version("/usr/lib/x86_64-linux-gnu/libcuda.so.1"));
        assert_null(cdi_path_driver_version("/usr/lib/x86_64-linux-gnu/libc.so.6"));
        assert_null(cdi_path_driver_version("/usr/lib/x86_64-linux-gnu/libnvidia-egl-wayland.so.1.1.13"));
        assert_null(cdi_path_driver_version("/usr/bin/nvidia-smi"));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_yaml),
                cmocka_unit_test(test_json),
                cmocka_unit_test(test_errors),
                cmocka_unit_test(test_versions),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
