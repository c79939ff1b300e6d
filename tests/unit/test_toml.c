/* test_toml.c: unit tests for the TOML parser with real containerd and toolkit configs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "basic/toml.h"
#include "basic/util.h"

/* What nvidia-ctk writes into a containerd v2 config (reference/container-toolkit.md),
 * embedded in the settings a kubeadm node usually has. */
static const char CONTAINERD_V2[] =
        "# containerd config, patched by nvidia-ctk runtime configure\n"
        "version = 2\n"
        "root = \"/var/lib/containerd\"\n"
        "state = \"/run/containerd\"\n"
        "oom_score = 0\n"
        "\n"
        "[grpc]\n"
        "  address = \"/run/containerd/containerd.sock\"\n"
        "  max_recv_message_size = 16777216\n"
        "\n"
        "[plugins]\n"
        "  [plugins.\"io.containerd.grpc.v1.cri\"]\n"
        "    sandbox_image = \"registry.k8s.io/pause:3.9\"\n"
        "    enable_cdi = true\n"
        "    cdi_spec_dirs = [\"/etc/cdi\", \"/var/run/cdi\"]\n"
        "    [plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
        "      default_runtime_name = \"runc\"\n"
        "      snapshotter = \"overlayfs\"\n"
        "      [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes]\n"
        "        [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]\n"
        "          privileged_without_host_devices = false\n"
        "          runtime_type = \"io.containerd.runc.v2\"\n"
        "          [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\n"
        "            BinaryName = \"/usr/bin/nvidia-container-runtime\"\n"
        "            SystemdCgroup = true\n"
        "        [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
        "          runtime_type = \"io.containerd.runc.v2\"\n"
        "          [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n"
        "            BinaryName = \"/usr/bin/runc\"\n"
        "            SystemdCgroup = true\n";

/* A containerd 2.x (config version 3) file as the GPU Operator's toolkit leaves it: a drop-in
 * import, CDI on, the nvidia runtimes under io.containerd.cri.v1.runtime. */
static const char CONTAINERD_V3[] =
        "version = 3\n"
        "imports = [\"/etc/containerd/conf.d/*.toml\"]\n"
        "\n"
        "[plugins.'io.containerd.cri.v1.images']\n"
        "  snapshotter = 'overlayfs'\n"
        "  [plugins.'io.containerd.cri.v1.images'.pinned_images]\n"
        "    sandbox = 'registry.k8s.io/pause:3.10'\n"
        "\n"
        "[plugins.'io.containerd.cri.v1.runtime']\n"
        "  enable_cdi = true\n"
        "  cdi_spec_dirs = ['/etc/cdi', '/var/run/cdi']\n"
        "  [plugins.'io.containerd.cri.v1.runtime'.containerd]\n"
        "    default_runtime_name = 'nvidia'\n"
        "    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia]\n"
        "      runtime_type = 'io.containerd.runc.v2'\n"
        "      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia.options]\n"
        "        BinaryName = '/usr/local/nvidia/toolkit/nvidia-container-runtime'\n"
        "    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia-cdi]\n"
        "      runtime_type = 'io.containerd.runc.v2'\n"
        "      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia-cdi.options]\n"
        "        BinaryName = '/usr/local/nvidia/toolkit/nvidia-container-runtime.cdi'\n"
        "    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia-legacy]\n"
        "      runtime_type = 'io.containerd.runc.v2'\n"
        "      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia-legacy.options]\n"
        "        BinaryName = '/usr/local/nvidia/toolkit/nvidia-container-runtime.legacy'\n"
        "\n"
        "[plugins.'io.containerd.grpc.v1.cri']\n"
        "  disable_tcp_service = true\n";

/* The toolkit's own /etc/nvidia-container-runtime/config.toml as packaged. */
static const char TOOLKIT_CONFIG[] =
        "#accept-nvidia-visible-devices-as-volume-mounts = false\n"
        "#accept-nvidia-visible-devices-envvar-when-unprivileged = true\n"
        "disable-require = false\n"
        "supported-driver-capabilities = \"compat32,compute,display,graphics,ngx,utility,video\"\n"
        "#swarm-resource = \"DOCKER_RESOURCE_GPU\"\n"
        "\n"
        "[nvidia-container-cli]\n"
        "#debug = \"/var/log/nvidia-container-toolkit.log\"\n"
        "environment = []\n"
        "#ldcache = \"/etc/ld.so.cache\"\n"
        "ldconfig = \"@/sbin/ldconfig.real\"\n"
        "load-kmods = true\n"
        "#no-cgroups = false\n"
        "#path = \"/usr/bin/nvidia-container-cli\"\n"
        "#root = \"/run/nvidia/driver\"\n"
        "#user = \"root:video\"\n"
        "\n"
        "[nvidia-container-runtime]\n"
        "#debug = \"/var/log/nvidia-container-runtime.log\"\n"
        "log-level = \"info\"\n"
        "mode = \"auto\"\n"
        "runtimes = [\"docker-runc\", \"runc\", \"crun\"]\n"
        "\n"
        "[nvidia-container-runtime.modes]\n"
        "\n"
        "[nvidia-container-runtime.modes.cdi]\n"
        "annotation-prefixes = [\"cdi.k8s.io/\"]\n"
        "default-kind = \"nvidia.com/gpu\"\n"
        "spec-dirs = [\"/etc/cdi\", \"/var/run/cdi\"]\n"
        "\n"
        "[nvidia-container-runtime.modes.csv]\n"
        "mount-spec-path = \"/etc/nvidia-container-runtime/host-files-for-container.d\"\n"
        "\n"
        "[nvidia-container-runtime-hook]\n"
        "path = \"nvidia-container-runtime-hook\"\n"
        "skip-mode-detection = false\n"
        "\n"
        "[nvidia-ctk]\n"
        "path = \"nvidia-ctk\"\n";

#define CRI_V2 "io.containerd.grpc.v1.cri"
#define CRI_V3 "io.containerd.cri.v1.runtime"

/* Parses a NUL-terminated document that must be valid. Returns it; fails the test otherwise. */
static struct toml_value *parse_ok(const char *text) {
        struct toml_value *v = NULL;
        struct toml_error err;
        int r = toml_parse(text, strlen(text), &v, &err);
        if (r < 0) fail_msg("unexpected parse error %d:%d: %s", err.line, err.column, err.message);
        assert_non_null(v);
        return v;
}

/* Parses a document that must be invalid. Returns the error; fails the test otherwise. */
static struct toml_error parse_bad(const char *text, size_t len) {
        struct toml_value *v = (struct toml_value *)0x1;
        struct toml_error err;
        assert_int_equal(toml_parse(text, len, &v, &err), -EINVAL);
        assert_null(v);
        return err;
}

/* Returns true when two values are equal (tables compared key by key, any order). */
static bool values_equal(const struct toml_value *a, const struct toml_value *b) {
        if (toml_type_of(a) != toml_type_of(b)) return false;
        switch (toml_type_of(a)) {
        case TOML_TABLE:
                if (toml_table_size(a) != toml_table_size(b)) return false;
                for (size_t i = 0; i < toml_table_size(a); i++) {
                        const struct toml_value *other = toml_table_getn(b, toml_table_key_at(a, i), toml_table_key_len_at(a, i));
                        if (!other || !values_equal(toml_table_value_at(a, i), other)) return false;
                }
                return true;
        case TOML_ARRAY:
                if (toml_array_len(a) != toml_array_len(b)) return false;
                for (size_t i = 0; i < toml_array_len(a); i++)
                        if (!values_equal(toml_array_at(a, i), toml_array_at(b, i))) return false;
                return true;
        case TOML_STRING:
                return toml_string_len(a) == toml_string_len(b) && memcmp(toml_string(a), toml_string(b), toml_string_len(a)) == 0;
        case TOML_INTEGER: {
                int64_t x = 0, y = 0;
                return toml_int(a, &x) && toml_int(b, &y) && x == y;
        }
        case TOML_FLOAT: {
                double x = 0, y = 0;
                return toml_double(a, &x) && toml_double(b, &y) && (x == y || (isnan(x) && isnan(y)));
        }
        case TOML_BOOL: {
                bool x = false, y = false;
                return toml_bool(a, &x) && toml_bool(b, &y) && x == y;
        }
        default:
                return streq(toml_datetime(a), toml_datetime(b));
        }
}

/* A patched containerd v2 config: the nvidia runtime by path, values, document order. */
static void test_containerd_v2(void **state) {
        (void)state;
        _cleanup_toml_ struct toml_value *doc = parse_ok(CONTAINERD_V2);
        int64_t version = 0;
        assert_true(toml_int(toml_table_get(doc, "version"), &version));
        assert_int_equal(version, 2);

        const char *const path[] = { "plugins", CRI_V2, "containerd", "runtimes", "nvidia", "options", "BinaryName", NULL };
        assert_string_equal(toml_string(toml_get_pathv(doc, path)), "/usr/bin/nvidia-container-runtime");
        assert_string_equal(toml_string(toml_get_path(doc, "plugins", CRI_V2, "containerd", "runtimes", "nvidia",
                                                      "runtime_type", NULL)),
                            "io.containerd.runc.v2");
        assert_string_equal(toml_string(toml_get_path(doc, "plugins", CRI_V2, "containerd", "default_runtime_name", NULL)), "runc");
        bool cdi = false;
        assert_true(toml_bool(toml_get_path(doc, "plugins", CRI_V2, "enable_cdi", NULL), &cdi));
        assert_true(cdi);
        const struct toml_value *dirs = toml_get_path(doc, "plugins", CRI_V2, "cdi_spec_dirs", NULL);
        assert_int_equal(toml_array_len(dirs), 2);
        assert_string_equal(toml_string(toml_array_at(dirs, 1)), "/var/run/cdi");

        /* Runtimes come back in document order. */
        const struct toml_value *runtimes = toml_get_path(doc, "plugins", CRI_V2, "containerd", "runtimes", NULL);
        assert_int_equal(toml_table_size(runtimes), 2);
        assert_string_equal(toml_table_key_at(runtimes, 0), "nvidia");
        assert_string_equal(toml_table_key_at(runtimes, 1), "runc");
        assert_int_equal(toml_type_of(toml_table_value_at(runtimes, 1)), TOML_TABLE);
        assert_null(toml_table_key_at(runtimes, 2));

        /* The dotted plugin name is one key, not a path. */
        assert_null(toml_get_path(doc, "plugins", "io", NULL));
        assert_null(toml_get_path(doc, "plugins", CRI_V2, "containerd", "runtimes", "nvidia-cdi", NULL));
}

/* A containerd 2.x (v3) config with the GPU Operator's three runtimes and an import. */
static void test_containerd_v3(void **state) {
        (void)state;
        _cleanup_toml_ struct toml_value *doc = parse_ok(CONTAINERD_V3);
        int64_t version = 0;
        assert_true(toml_int(toml_table_get(doc, "version"), &version));
        assert_int_equal(version, 3);
        const struct toml_value *imports = toml_table_get(doc, "imports");
        assert_int_equal(toml_type_of(imports), TOML_ARRAY);
        assert_string_equal(toml_string(toml_array_at(imports, 0)), "/etc/containerd/conf.d/*.toml");

        const struct toml_value *runtimes = toml_get_path(doc, "plugins", CRI_V3, "containerd", "runtimes", NULL);
        assert_int_equal(toml_table_size(runtimes), 3);
        assert_string_equal(toml_table_key_at(runtimes, 0), "nvidia");
        assert_string_equal(toml_table_key_at(runtimes, 1), "nvidia-cdi");
        assert_string_equal(toml_table_key_at(runtimes, 2), "nvidia-legacy");
        assert_string_equal(toml_string(toml_get_path(runtimes, "nvidia-cdi", "options", "BinaryName", NULL)),
                            "/usr/local/nvidia/toolkit/nvidia-container-runtime.cdi");
        assert_string_equal(toml_string(toml_get_path(doc, "plugins", CRI_V3, "containerd", "default_runtime_name", NULL)), "nvidia");
        bool b = false;
        assert_true(toml_bool(toml_get_path(doc, "plugins", CRI_V3, "enable_cdi", NULL), &b));
        assert_true(b);
        assert_true(toml_bool(toml_get_path(doc, "plugins", CRI_V2, "disable_tcp_service", NULL), &b));
        assert_string_equal(toml_string(toml_get_path(doc, "plugins", "io.containerd.cri.v1.images", "pinned_images", "sandbox", NULL)),
                            "registry.k8s.io/pause:3.10");
        /* The plugins table was created implicitly, in the order its children appeared. */
        const struct toml_value *plugins = toml_table_get(doc, "plugins");
        assert_int_equal(toml_table_size(plugins), 3);
        assert_string_equal(toml_table_key_at(plugins, 0), "io.containerd.cri.v1.images");
        assert_string_equal(toml_table_key_at(plugins, 2), CRI_V2);
}

/* The same nvidia runtime settings spelled with headers, dotted keys, inline tables and a mix:
 * all four must decode to the same tree. */
static void test_same_settings_spelled_differently(void **state) {
        (void)state;
        static const char *const spellings[] = {
                "version = 2\n"
                "[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
                "default_runtime_name = \"nvidia\"\n"
                "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]\n"
                "runtime_type = \"io.containerd.runc.v2\"\n"
                "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\n"
                "BinaryName = \"/usr/bin/nvidia-container-runtime\"\n",

                "version = 2\n"
                "[plugins]\n"
                "\"io.containerd.grpc.v1.cri\".containerd.default_runtime_name = \"nvidia\"\n"
                "\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.runtime_type = \"io.containerd.runc.v2\"\n"
                "\"io.containerd.grpc.v1.cri\" . containerd . runtimes . nvidia . options . BinaryName = "
                "'/usr/bin/nvidia-container-runtime'\n",

                "version = 2\n"
                "plugins = { \"io.containerd.grpc.v1.cri\" = { containerd = { default_runtime_name = \"nvidia\", "
                "runtimes = { nvidia = { runtime_type = \"io.containerd.runc.v2\", options = { BinaryName = "
                "\"/usr/bin/nvidia-container-runtime\" } } } } } }\n",

                "version = 2 # v2 layout\r\n"
                "[plugins.\"io.containerd.grpc.v1.cri\"]\r\n"
                "containerd.default_runtime_name = \"nvidia\"\r\n"
                "containerd.runtimes.nvidia = { runtime_type = \"io.containerd.runc.v2\", options.BinaryName = "
                "\"\"\"/usr/bin/nvidia-container-runtime\"\"\" }\r\n",
        };
        _cleanup_toml_ struct toml_value *first = parse_ok(spellings[0]);
        for (size_t i = 1; i < ELEMENTSOF(spellings); i++) {
                _cleanup_toml_ struct toml_value *doc = parse_ok(spellings[i]);
                assert_true(values_equal(first, doc));
                assert_string_equal(toml_string(toml_get_path(doc, "plugins", CRI_V2, "containerd", "runtimes", "nvidia",
                                                              "options", "BinaryName", NULL)),
                                    "/usr/bin/nvidia-container-runtime");
        }
}

/* The toolkit's own config.toml: dashed keys, empty arrays, commented-out settings. */
static void test_toolkit_config(void **state) {
        (void)state;
        _cleanup_toml_ struct toml_value *doc = parse_ok(TOOLKIT_CONFIG);
        bool b = true;
        assert_true(toml_bool(toml_table_get(doc, "disable-require"), &b));
        assert_false(b);
        assert_string_equal(toml_string(toml_get_path(doc, "nvidia-container-cli", "ldconfig", NULL)), "@/sbin/ldconfig.real");
        assert_int_equal(toml_type_of(toml_get_path(doc, "nvidia-container-cli", "environment", NULL)), TOML_ARRAY);
        assert_int_equal(toml_array_len(toml_get_path(doc, "nvidia-container-cli", "environment", NULL)), 0);
        assert_string_equal(toml_string(toml_get_path(doc, "nvidia-container-runtime", "mode", NULL)), "auto");
        const struct toml_value *rt = toml_get_path(doc, "nvidia-container-runtime", "runtimes", NULL);
        assert_int_equal(toml_array_len(rt), 3);
        assert_string_equal(toml_string(toml_array_at(rt, 2)), "crun");
        assert_string_equal(toml_string(toml_get_path(doc, "nvidia-container-runtime", "modes", "cdi", "default-kind", NULL)),
                            "nvidia.com/gpu");
        assert_null(toml_get_path(doc, "nvidia-container-cli", "debug", NULL)); /* commented out */
        assert_int_equal(toml_table_size(doc), 6);
}

/* A drop-in written by nvidia-ctk --set-as-default, merged over the main file. */
static void test_merge_dropin(void **state) {
        (void)state;
        _cleanup_toml_ struct toml_value *main_doc = parse_ok(CONTAINERD_V2);
        _cleanup_toml_ struct toml_value *dropin = parse_ok(
                "version = 2\n"
                "[plugins.\"io.containerd.grpc.v1.cri\"]\n"
                "cdi_spec_dirs = [\"/etc/cdi\"]\n"
                "[plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
                "default_runtime_name = \"nvidia\"\n"
                "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia-cdi]\n"
                "runtime_type = \"io.containerd.runc.v2\"\n"
                "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia-cdi.options]\n"
                "BinaryName = \"/usr/bin/nvidia-container-runtime.cdi\"\n"
                "[grpc]\n"
                "address = { socket = \"/run/containerd/other.sock\" }\n");
        assert_int_equal(toml_merge(main_doc, dropin), 0);

        const struct toml_value *containerd = toml_get_path(main_doc, "plugins", CRI_V2, "containerd", NULL);
        assert_string_equal(toml_string(toml_table_get(containerd, "default_runtime_name")), "nvidia");
        assert_string_equal(toml_string(toml_table_get(containerd, "snapshotter")), "overlayfs"); /* kept */
        const struct toml_value *runtimes = toml_table_get(containerd, "runtimes");
        assert_int_equal(toml_table_size(runtimes), 3);
        assert_string_equal(toml_table_key_at(runtimes, 0), "nvidia");
        assert_string_equal(toml_table_key_at(runtimes, 1), "runc");
        assert_string_equal(toml_table_key_at(runtimes, 2), "nvidia-cdi"); /* new keys go last */
        assert_string_equal(toml_string(toml_get_path(runtimes, "nvidia", "options", "BinaryName", NULL)),
                            "/usr/bin/nvidia-container-runtime");
        assert_string_equal(toml_string(toml_get_path(runtimes, "nvidia-cdi", "options", "BinaryName", NULL)),
                            "/usr/bin/nvidia-container-runtime.cdi");
        /* Arrays are replaced, not appended to. */
        assert_int_equal(toml_array_len(toml_get_path(main_doc, "plugins", CRI_V2, "cdi_spec_dirs", NULL)), 1);
        /* A leaf replaced by a table, and the replaced key keeps its place. */
        const struct toml_value *grpc = toml_table_get(main_doc, "grpc");
        assert_string_equal(toml_table_key_at(grpc, 0), "address");
        assert_string_equal(toml_string(toml_get_path(grpc, "address", "socket", NULL)), "/run/containerd/other.sock");
        /* src is untouched, and merging it again changes nothing. */
        assert_int_equal(toml_table_size(toml_get_path(dropin, "plugins", CRI_V2, "containerd", "runtimes", NULL)), 1);
        _cleanup_toml_ struct toml_value *once = parse_ok("");
        assert_int_equal(toml_merge(once, main_doc), 0);
        assert_true(values_equal(once, main_doc));
        assert_int_equal(toml_merge(once, dropin), 0);
        assert_true(values_equal(once, main_doc));

        /* src may be dst itself, or lie inside it. */
        assert_int_equal(toml_merge(once, once), 0);
        assert_true(values_equal(once, main_doc));
        _cleanup_toml_ struct toml_value *nested = parse_ok("a.a.b = 1\na.c = 2\n");
        assert_int_equal(toml_merge(nested, toml_table_get(nested, "a")), 0);
        int64_t i = 0;
        assert_true(toml_int(toml_get_path(nested, "a", "b", NULL), &i)); /* root.a gains b from a.a */
        assert_int_equal(i, 1);
        assert_true(toml_int(toml_table_get(nested, "c"), &i));
        assert_int_equal(i, 2);

        assert_int_equal(toml_merge(main_doc, toml_table_get(main_doc, "version")), -EINVAL);
        assert_int_equal(toml_merge((struct toml_value *)toml_table_get(main_doc, "version"), dropin), -EINVAL);
        assert_int_equal(toml_merge(NULL, dropin), -EINVAL);
}

struct error_case {
        const char *text;
        int line, column;
        const char *message; /* a part of the message */
};

/* Invalid inputs fail with -EINVAL at the right line and column, with a clear message. */
static void test_errors(void **state) {
        (void)state;
        static const struct error_case cases[] = {
                { "a = 1\na = 2\n", 2, 1, "duplicate key 'a'" },
                { "[plugins]\nx = 1\n[plugins]\n", 3, 2, "table [plugins] is defined more than once" },
                { "[a]\nb.c = 1\n[a.b]\n", 3, 4, "cannot define [a.b]: it is already a table made by dotted keys" },
                { "[a.b.c]\n[a]\nb.c.d = 1\n", 3, 3, "cannot add keys to 'b.c' with a dotted key: it is already a table defined by a [header]" },
                { "a = {b = 1}\n[a.c]\n", 2, 2, "'a' is already an inline table" },
                { "name = \"unterminated\nx = 1\n", 1, 8, "unterminated string" },
                { "s = \"\"\"never\nclosed\n", 1, 5, "unterminated multi-line string" },
                { "a = 1\nb = \xff\n", 2, 5, "invalid UTF-8" },
                { "# comment \xc3\x28\n", 1, 11, "invalid UTF-8" },
                { "a = \"x\x01\"\n", 1, 7, "control character U+0001" },
                { "a = 1\rb = 2\n", 1, 6, "carriage return" },
                { "x = [1,\n2\n", 1, 5, "unterminated array" },
                { "a = { b = 1,\n c = 2 }\n", 1, 13, "expected a key before the end of the line" },
                { "a = { b = 1, }\n", 1, 14, "trailing comma" },
                { "k = \"\xc3\xbc\" x\n", 1, 9, "expected a newline after the value, found 'x'" },
                { "v = 2023-02-29\n", 1, 5, "no such day" },
                { "v = 07:32\n", 1, 5, "seconds included" },
                { "v = 1979-05-27T07:32:00Zx\n", 1, 5, "unexpected text after it" },
                { "v = 9223372036854775808\n", 1, 5, "out of range" },
                { "v = 1e999\n", 1, 5, "out of range" },
                { "v = 0x\n", 1, 5, "invalid hexadecimal integer" },
                { "v = -0x1\n", 1, 5, "sign is not allowed" },
                { "v = 012\n", 1, 5, "leading zeros" },
                { "v = TRUE\n", 1, 5, "invalid value 'TRUE'" },
                { "a = 1\r\nb = \r\n", 2, 5, "expected a value before the end of the line" },
                { "\xef\xbb\xbf" "a = 1\na = 2", 2, 1, "duplicate key" },
                { "a = \"\\q\"\n", 1, 6, "invalid escape sequence '\\q'" },
                { "a = \"\\uD800\"\n", 1, 6, "not a Unicode scalar value" },
                { "\"\"\"k\"\"\" = 1\n", 1, 1, "multi-line string cannot be a key" },
                { "[a\nb = 1\n", 1, 3, "expected ']' to close the header [a" },
                { "[[a]\n", 1, 4, "expected ']]'" },
                { "a = [1]\n[[a]]\n", 2, 3, "cannot define [[a]]: it is already an array" },
                { "x = 1 # ok\ny = # missing\n", 2, 5, "expected a value before the comment" },
                { "a = ", 1, 5, "expected a value before the end of input" },
                { "= 1\n", 1, 1, "expected a key, found '='" },
                { "\xce\xbc = 1\n", 1, 1, "bare keys are ASCII" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct toml_error err = parse_bad(cases[i].text, strlen(cases[i].text));
                if (err.line != cases[i].line || err.column != cases[i].column || !strstr(err.message, cases[i].message))
                        fail_msg("case %zu: got %d:%d \"%s\", want %d:%d \"%s\"", i, err.line, err.column, err.message,
                                 cases[i].line, cases[i].column, cases[i].message);
        }
        /* A runtime table defined twice in a real config: the message names the whole table. */
        struct buf b = {0};
        buf_puts(&b, CONTAINERD_V2);
        buf_puts(&b, "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]\n");
        struct toml_error dup = parse_bad(b.data, b.len);
        buf_free(&b);
        assert_int_equal(dup.line, 31);
        assert_int_equal(dup.column, 58);
        assert_string_equal(dup.message, "table [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia] is defined more than once");

        /* ret_error may be NULL; on success it is zeroed. */
        struct toml_value *v;
        assert_int_equal(toml_parse("a = 1\na = 2\n", 12, &v, NULL), -EINVAL);
        struct toml_error err = { 5, 5, "stale" };
        assert_int_equal(toml_parse("a = 1", 5, &v, &err), 0);
        assert_int_equal(err.line, 0);
        assert_string_equal(err.message, "");
        toml_free(v);
        /* An embedded NUL is a control character, not the end of the input. */
        err = parse_bad("a = 1\0b = 2", 11);
        assert_int_equal(err.line, 1);
        assert_int_equal(err.column, 6);
}

/* Returns a malloc'd copy of n bytes with no terminating NUL, so ASan catches any over-read. */
static char *exact_copy(const char *s, size_t n) {
        char *c = xmalloc(n);
        memcpy(c, s, n);
        return c;
}

/* The parser reads exactly len bytes: every prefix of real configs parses or fails cleanly. */
static void test_not_nul_terminated(void **state) {
        (void)state;
        /* The length is the input's end, whatever follows it. */
        struct toml_value *v = NULL;
        assert_int_equal(toml_parse("a = 1\nb = oops", 6, &v, NULL), 0);
        assert_int_equal(toml_table_size(v), 1);
        toml_free(v);
        assert_int_equal(toml_parse(NULL, 0, &v, NULL), 0);
        assert_int_equal(toml_table_size(v), 0);
        toml_free(v);

        /* Every prefix of real configs, from a buffer that ends exactly there: errors or a parse,
         * never a read past the end. */
        const char *docs[] = { CONTAINERD_V2, CONTAINERD_V3, TOOLKIT_CONFIG,
                               "a = \"\"\"x\\\n  y\"\"\"\nb = '''z'''\nc = [1, {d = 2e3}]\nt = 1979-05-27 07:32:00.5-07:00\n" };
        for (size_t d = 0; d < ELEMENTSOF(docs); d++) {
                size_t len = strlen(docs[d]);
                size_t ok = 0;
                for (size_t n = 0; n <= len; n++) {
                        _cleanup_free_ char *buf = exact_copy(docs[d], n);
                        struct toml_error err;
                        if (toml_parse(buf, n, &v, &err) == 0) {
                                ok++;
                                toml_free(v);
                        } else
                                assert_true(err.line >= 1 && err.column >= 1 && err.message[0]);
                }
                assert_true(ok > 0);
        }
}

/* Nesting stops at TOML_MAX_DEPTH with an error, however deep the hostile input goes. */
static void test_depth_limit(void **state) {
        (void)state;
        struct buf b = {0};
        /* TOML_MAX_DEPTH nested arrays are fine, one more is not. */
        buf_puts(&b, "a = ");
        for (int i = 0; i < TOML_MAX_DEPTH; i++) buf_puts(&b, "[");
        for (int i = 0; i < TOML_MAX_DEPTH; i++) buf_puts(&b, "]");
        _cleanup_toml_ struct toml_value *deep = parse_ok(b.data);
        assert_int_equal(toml_array_len(toml_table_get(deep, "a")), 1);
        buf_free(&b);
        buf_puts(&b, "a = ");
        for (int i = 0; i <= TOML_MAX_DEPTH; i++) buf_puts(&b, "[");
        for (int i = 0; i <= TOML_MAX_DEPTH; i++) buf_puts(&b, "]");
        struct toml_error err = parse_bad(b.data, b.len);
        assert_int_equal(err.line, 1);
        assert_int_equal(err.column, 5 + TOML_MAX_DEPTH);
        assert_non_null(strstr(err.message, "nesting deeper than 128"));
        buf_free(&b);

        /* Hostile depth fails fast without deep recursion. */
        size_t n = 1000000;
        char *s = xmalloc(n);
        /* One fill, then the prefix: gcc's -Warray-bounds misjudges two memsets into this buffer. */
        memset(s, '{', n);
        memset(s, '[', n / 2);
        memcpy(s, "a=", 2);
        err = parse_bad(s, n);
        assert_non_null(strstr(err.message, "nesting deeper"));
        memcpy(s, "a=", 2);
        for (size_t i = 2; i + 5 < n; i += 5) memcpy(s + i, "{b = ", 5);
        err = parse_bad(s, n);
        assert_non_null(strstr(err.message, "nesting deeper"));
        free(s);

        /* Headers and dotted keys count too. */
        buf_puts(&b, "[k");
        for (int i = 1; i < TOML_MAX_DEPTH; i++) buf_puts(&b, ".k");
        buf_puts(&b, "]\nx = 1\n");
        _cleanup_toml_ struct toml_value *headers = parse_ok(b.data);
        assert_int_equal(toml_table_size(toml_table_get(headers, "k")), 1);
        buf_free(&b);
        buf_puts(&b, "[k");
        for (int i = 1; i < TOML_MAX_DEPTH; i++) buf_puts(&b, ".k");
        buf_puts(&b, "]\nx.y = 1\n");
        err = parse_bad(b.data, b.len);
        assert_int_equal(err.line, 2);
        assert_non_null(strstr(err.message, "nesting deeper"));
        buf_free(&b);
        buf_puts(&b, "k");
        for (int i = 0; i < 1000; i++) buf_puts(&b, ".k");
        buf_puts(&b, " = 1\n");
        err = parse_bad(b.data, b.len);
        assert_non_null(strstr(err.message, "more than 128 parts"));
        buf_free(&b);
}

/* 100k keys, many sub-tables and a long array of tables parse and look up correctly. */
static void test_large_tables(void **state) {
        (void)state;
        enum { N = 100000 };
        struct buf b = {0};
        for (int i = 0; i < N; i++) buf_printf(&b, "key%d = %d\n", i, i);
        for (int i = 0; i < N; i += 1000) buf_printf(&b, "[t.sub%d]\nv = %d\n", i, i);
        for (int i = 0; i < N; i += 100) buf_puts(&b, "[[aot]]\nx = 1\n");
        _cleanup_toml_ struct toml_value *doc = parse_ok(b.data);
        assert_int_equal(toml_table_size(doc), N + 2);
        for (int i = 0; i < N; i += 7) {
                char key[32];
                int64_t v = -1;
                snprintf(key, sizeof(key), "key%d", i);
                assert_true(toml_int(toml_table_get(doc, key), &v));
                assert_int_equal(v, i);
                assert_string_equal(toml_table_key_at(doc, (size_t)i), key);
        }
        assert_null(toml_table_get(doc, "key100000"));
        assert_int_equal(toml_table_size(toml_table_get(doc, "t")), N / 1000);
        assert_int_equal(toml_array_len(toml_table_get(doc, "aot")), N / 100);
        /* A duplicate at the very end is still found. */
        buf_printf(&b, "[t.sub0]\n");
        struct toml_error err = parse_bad(b.data, b.len);
        assert_non_null(strstr(err.message, "[t.sub0] is defined more than once"));
        buf_free(&b);
}

/* Every scalar kind: integer bounds and bases, floats, dates and times, string escapes. */
static void test_values(void **state) {
        (void)state;
        _cleanup_toml_ struct toml_value *doc = parse_ok(
                "min = -9223372036854775808\n"
                "max = +9_223_372_036_854_775_807\n"
                "hex = 0xDEAD_beef\n"
                "oct = 0o755\n"
                "bin = 0b1101\n"
                "pi = 3.141_592\n"
                "exp = -2E-2\n"
                "inf = -inf\n"
                "nan = +nan\n"
                "odt = 1979-05-27 07:32:00.999999z\n"
                "ldt = 1979-05-27t07:32:00\n"
                "ld = 1979-05-27\n"
                "lt = 00:32:00.5\n"
                "off = 1979-05-27T00:32:00-07:00\n"
                "nul = \"a\\u0000b\"\n"
                "esc = \"tab\\there \\\"q\\\" \\\\ \\U0001F600\"\n"
                "win = 'C:\\Users\\nodeadmin'\n"
                "ml = \"\"\"\nline one \\\n    still one\r\nline two\"\"\"\n"
                "mll = '''\n  raw ''quoted'' \\n'''''\n"
                "empty = \"\"\n");
        int64_t i = 0;
        assert_true(toml_int(toml_table_get(doc, "min"), &i));
        assert_true(i == INT64_MIN);
        assert_true(toml_int(toml_table_get(doc, "max"), &i));
        assert_true(i == INT64_MAX);
        assert_true(toml_int(toml_table_get(doc, "hex"), &i));
        assert_int_equal(i, 0xdeadbeef);
        assert_true(toml_int(toml_table_get(doc, "oct"), &i));
        assert_int_equal(i, 0755);
        assert_true(toml_int(toml_table_get(doc, "bin"), &i));
        assert_int_equal(i, 13);
        double d = 0;
        assert_true(toml_double(toml_table_get(doc, "pi"), &d));
        assert_true(d == 3.141592);
        assert_true(toml_double(toml_table_get(doc, "exp"), &d));
        assert_true(d == -0.02);
        assert_true(toml_double(toml_table_get(doc, "inf"), &d));
        assert_true(isinf(d) && d < 0);
        assert_true(toml_double(toml_table_get(doc, "nan"), &d));
        assert_true(isnan(d));
        assert_int_equal(toml_type_of(toml_table_get(doc, "odt")), TOML_DATETIME);
        assert_string_equal(toml_datetime(toml_table_get(doc, "odt")), "1979-05-27T07:32:00.999999Z");
        assert_int_equal(toml_type_of(toml_table_get(doc, "ldt")), TOML_DATETIME_LOCAL);
        assert_string_equal(toml_datetime(toml_table_get(doc, "ldt")), "1979-05-27T07:32:00");
        assert_int_equal(toml_type_of(toml_table_get(doc, "ld")), TOML_DATE_LOCAL);
        assert_string_equal(toml_datetime(toml_table_get(doc, "ld")), "1979-05-27");
        assert_int_equal(toml_type_of(toml_table_get(doc, "lt")), TOML_TIME_LOCAL);
        assert_string_equal(toml_datetime(toml_table_get(doc, "lt")), "00:32:00.5");
        assert_string_equal(toml_datetime(toml_table_get(doc, "off")), "1979-05-27T00:32:00-07:00");
        const struct toml_value *nul = toml_table_get(doc, "nul");
        assert_int_equal(toml_string_len(nul), 3);
        assert_memory_equal(toml_string(nul), "a\0b", 4);
        assert_string_equal(toml_string(toml_table_get(doc, "esc")), "tab\there \"q\" \\ \xf0\x9f\x98\x80");
        assert_string_equal(toml_string(toml_table_get(doc, "win")), "C:\\Users\\nodeadmin");
        assert_string_equal(toml_string(toml_table_get(doc, "ml")), "line one still one\nline two");
        assert_string_equal(toml_string(toml_table_get(doc, "mll")), "  raw ''quoted'' \\n''");
        assert_string_equal(toml_string(toml_table_get(doc, "empty")), "");

        /* Keys with NUL bytes are reachable by length. */
        _cleanup_toml_ struct toml_value *k = parse_ok("\"a\\u0000b\" = 1\n");
        assert_int_equal(toml_table_key_len_at(k, 0), 3);
        assert_non_null(toml_table_getn(k, "a\0b", 3));
        assert_null(toml_table_get(k, "a"));
}

/* Accessors return NULL or false, never crash, on the wrong type, NULL or out of range. */
static void test_wrong_types(void **state) {
        (void)state;
        _cleanup_toml_ struct toml_value *doc = parse_ok("s = \"x\"\ni = 1\nf = 1.5\nb = true\na = [1]\nt.k = 1\nd = 2024-01-01\n");
        int64_t i = 42;
        bool b = false;
        double d = 0;
        assert_null(toml_string(toml_table_get(doc, "i")));
        assert_int_equal(toml_string_len(toml_table_get(doc, "i")), 0);
        assert_false(toml_int(toml_table_get(doc, "s"), &i));
        assert_false(toml_int(toml_table_get(doc, "f"), &i));
        assert_int_equal(i, 42);
        assert_false(toml_double(toml_table_get(doc, "i"), &d));
        assert_false(toml_bool(toml_table_get(doc, "s"), &b));
        assert_null(toml_datetime(toml_table_get(doc, "s")));
        assert_null(toml_table_get(toml_table_get(doc, "a"), "k"));
        assert_null(toml_array_at(toml_table_get(doc, "t"), 0));
        assert_null(toml_array_at(toml_table_get(doc, "a"), 1));
        assert_int_equal(toml_array_len(toml_table_get(doc, "t")), 0);
        assert_int_equal(toml_table_size(toml_table_get(doc, "a")), 0);
        assert_null(toml_table_value_at(doc, 100));
        assert_int_equal(toml_table_key_len_at(doc, 100), 0);
        assert_int_equal(toml_type_of(NULL), TOML_NONE);
        assert_string_equal(toml_type_name(TOML_NONE), "none");
        assert_string_equal(toml_type_name(toml_type_of(toml_table_get(doc, "d"))), "date-local");
        assert_null(toml_get_path(doc, "s", "deeper", NULL));
        assert_null(toml_get_path(NULL, "s", NULL));
        assert_ptr_equal(toml_get_path(doc, NULL), doc);
        assert_null(toml_table_get(NULL, "s"));
        assert_null(toml_table_get(doc, NULL));
        assert_false(toml_int(NULL, &i));
        toml_free(NULL);
}

/* Runs the tests. Returns 0 when all pass (cmocka's count of failures otherwise). */
int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_containerd_v2),
                cmocka_unit_test(test_containerd_v3),
                cmocka_unit_test(test_same_settings_spelled_differently),
                cmocka_unit_test(test_toolkit_config),
                cmocka_unit_test(test_merge_dropin),
                cmocka_unit_test(test_errors),
                cmocka_unit_test(test_not_nul_terminated),
                cmocka_unit_test(test_depth_limit),
                cmocka_unit_test(test_large_tables),
                cmocka_unit_test(test_values),
                cmocka_unit_test(test_wrong_types),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
