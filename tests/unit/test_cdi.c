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

/* Returns a spec of n devices, as YAML (nvidia-ctk's layout) or JSON: device i with device node
 * /dev/nvidia<i> (device 0 also /dev/nvidiactl), or with a name only when bare; then extra_nodes
 * device nodes /dev/x<i> and /dev/nvidiactl again in the spec-wide containerEdits. Free with free(). */
static char *big_spec(bool json, size_t n, bool bare, size_t extra_nodes) {
        struct buf b = {0};
        buf_puts(&b, json ? "{\"cdiVersion\":\"0.5.0\",\"kind\":\"nvidia.com/gpu\",\"devices\":[" : "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices:\n");
        for (size_t i = 0; i < n; i++) {
                const char *ctl = i ? "" : json ? ",{\"path\":\"/dev/nvidiactl\"}" : "    - path: /dev/nvidiactl\n";
                if (json && bare) buf_printf(&b, "%s{\"name\":\"%zu\"}", i ? "," : "", i);
                else if (json)
                        buf_printf(&b, "%s{\"name\":\"%zu\",\"containerEdits\":{\"deviceNodes\":[{\"path\":\"/dev/nvidia%zu\"}%s]}}",
                                   i ? "," : "", i, i, ctl);
                else if (bare) buf_printf(&b, "- name: '%zu'\n", i);
                else buf_printf(&b, "- name: '%zu'\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia%zu\n%s", i, i, ctl);
        }
        buf_puts(&b, json ? "],\"containerEdits\":{\"deviceNodes\":[{\"path\":\"/dev/nvidiactl\"}"
                          : "containerEdits:\n  deviceNodes:\n  - path: /dev/nvidiactl\n");
        for (size_t i = 0; i < extra_nodes; i++) {
                if (json) buf_printf(&b, ",{\"path\":\"/dev/x%zu\"}", i);
                else buf_printf(&b, "  - path: /dev/x%zu\n", i);
        }
        if (json) buf_puts(&b, "]}}");
        return b.data;
}

/* 40,000 device nodes, YAML and JSON: parsed whole, in order, each once (the parse is linear;
 * bench/bench_cdi.py measures it: 9.8 s before, 0.3-0.6 s for the whole check after). */
static void test_many_device_nodes(void **state) {
        for (int json = 0; json < 2; json++) {
                _cleanup_free_ char *text = big_spec(json, 40000, false, 0);
                const char *path = json ? "/etc/cdi/big.json" : "/etc/cdi/big.yaml";
                struct cdi_spec s;
                assert_int_equal(cdi_parse_spec(path, text, strlen(text), json, &s), 0);
                assert_null(s.error);
                assert_int_equal(s.n_devices, 40000);
                assert_int_equal(s.n_device_nodes, 40001); /* /dev/nvidiactl once */
                assert_string_equal(s.devices[39999], "39999");
                assert_string_equal(s.device_nodes[0], "/dev/nvidia0");
                assert_string_equal(s.device_nodes[1], "/dev/nvidiactl");
                assert_string_equal(s.device_nodes[40000], "/dev/nvidia39999");
                cdi_spec_free(&s);
        }
}

/* What one spec may cost is bounded, and a spec over a bound is refused by name: its size, the
 * number of devices and of device nodes (before, lists stopped silently at 100,000). */
static void test_bounds(void **state) {
        struct cdi_spec s;
        for (int json = 0; json < 2; json++) {
                const char *path = json ? "/etc/cdi/big.json" : "/etc/cdi/big.yaml";
                _cleanup_free_ char *nodes = big_spec(json, 1, false, 99999); /* 100,001: nvidia0, nvidiactl, 99,999 */
                assert_int_equal(cdi_parse_spec(path, nodes, strlen(nodes), json, &s), -EINVAL);
                assert_non_null(s.error);
                assert_true(startswith(s.error, path));
                assert_non_null(strstr(s.error, ": more than 100000 device nodes"));
                cdi_spec_free(&s);
                _cleanup_free_ char *fits = big_spec(json, 1, false, 99998);
                assert_int_equal(cdi_parse_spec(path, fits, strlen(fits), json, &s), 0);
                assert_int_equal(s.n_device_nodes, 100000);
                cdi_spec_free(&s);
        }
        _cleanup_free_ char *devices = big_spec(true, 100001, true, 0);
        assert_int_equal(cdi_parse_spec("/etc/cdi/many.json", devices, strlen(devices), true, &s), -EINVAL);
        assert_string_equal(s.error, "/etc/cdi/many.json: more than 100000 devices, refused (a node's spec lists hundreds)");
        cdi_spec_free(&s);
        /* 4 MiB and one byte: refused before any parsing */
        size_t n = (4u << 20) + 1;
        _cleanup_free_ char *huge = xmalloc(n);
        memset(huge, ' ', n);
        assert_int_equal(cdi_parse_spec("/etc/cdi/huge.yaml", huge, n, false, &s), -EINVAL);
        assert_string_equal(s.error, "/etc/cdi/huge.yaml: 4194305 bytes, more than the 4 MiB a CDI spec may hold");
        cdi_spec_free(&s);
}

/* A YAML mapping of 50,000 keys parses in linear time (libfyaml's own duplicate-key check compares
 * every key with every other and ran past the parser's 10 s); duplicates are still refused. */
static void test_yaml_keys(void **state) {
        struct buf b = {0};
        buf_puts(&b, "kind: nvidia.com/gpu\nannotations:\n");
        for (int i = 0; i < 50000; i++) buf_printf(&b, "  k%d: v\n", i);
        struct cdi_spec s;
        assert_int_equal(cdi_parse_spec("/etc/cdi/keys.yaml", b.data, b.len, false, &s), 0);
        assert_string_equal(s.kind, "nvidia.com/gpu");
        cdi_spec_free(&s);
        buf_puts(&b, "  k17: again\n");
        assert_int_equal(cdi_parse_spec("/etc/cdi/keys.yaml", b.data, b.len, false, &s), -EINVAL);
        assert_string_equal(s.error, "/etc/cdi/keys.yaml: invalid YAML at line 50003: duplicate key 'k17'");
        cdi_spec_free(&s);
        buf_free(&b);
        const char *flow = "{kind: a, devices: [], kind: b}";
        assert_int_equal(cdi_parse_spec("/etc/cdi/flow.yaml", flow, strlen(flow), false, &s), -EINVAL);
        assert_string_equal(s.error, "/etc/cdi/flow.yaml: invalid YAML at line 1: duplicate key 'kind'");
        cdi_spec_free(&s);
}

/* A YAML document whose parse needs more than the child's 256 MiB (a flow sequence of 1.5 million
 * scalars: libfyaml spends about 270 bytes on each 2-byte item) is refused by name, not parsed at any
 * cost. Not under AddressSanitizer (the bound is off there: its allocator aborts instead of failing). */
static void test_yaml_memory_bound(void **state) {
#if defined(__SANITIZE_ADDRESS__)
        skip();
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
        skip();
#endif
#endif
        struct buf b = {0};
        buf_puts(&b, "kind: nvidia.com/gpu\ndevices: [");
        for (int i = 0; i < 1500000; i++) buf_puts(&b, i ? ",1" : "1");
        buf_puts(&b, "]\n");
        struct cdi_spec s;
        assert_int_equal(cdi_parse_spec("/etc/cdi/flow.yaml", b.data, b.len, false, &s), -EINVAL);
        assert_non_null(strstr(s.error, "/etc/cdi/flow.yaml: the YAML parser needs more than 256 MiB for this document"));
        cdi_spec_free(&s);
        buf_free(&b);
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
                cmocka_unit_test(test_many_device_nodes),
                cmocka_unit_test(test_bounds),
                cmocka_unit_test(test_yaml_keys),
                cmocka_unit_test(test_yaml_memory_bound),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
