/* test_runtimes.c: Docker's daemon.json and CRI-O drop-ins as nvidia-ctk writes them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "facts/node.h"
#include "facts/layer2_container.h"
#include "basic/util.h"

static void test_daemon_json(void **state) {
        /* `nvidia-ctk runtime configure --runtime=docker --set-as-default` on an existing file */
        const char *j = "{\n    \"data-root\": \"/var/lib/docker\",\n    \"default-runtime\": \"nvidia\",\n"
                        "    \"features\": {\"cdi\": true},\n    \"runtimes\": {\n        \"nvidia\": {\n"
                        "            \"args\": [],\n            \"path\": \"nvidia-container-runtime\"\n        }\n    }\n}\n";
        struct docker_facts d = {0};
        char *err = NULL;
        assert_int_equal(docker_parse_daemon_json(j, strlen(j), &d, &err), 0);
        assert_true(d.has_nvidia);
        assert_string_equal(d.nvidia_path, "nvidia-container-runtime");
        assert_string_equal(d.default_runtime, "nvidia");
        assert_true(d.cdi_feature);
        docker_facts_free(&d);

        j = "{}";
        assert_int_equal(docker_parse_daemon_json(j, strlen(j), &d, &err), 0);
        assert_false(d.has_nvidia);
        docker_facts_free(&d);

        j = "{\n  \"runtimes\": {\n    \"nvidia\": {\"path\": \"x\"},\n  }\n}";
        assert_int_equal(docker_parse_daemon_json(j, strlen(j), &d, &err), -EINVAL);
        assert_non_null(strstr(err, "line 4"));
        free(err);
        j = "[1]";
        assert_int_equal(docker_parse_daemon_json(j, strlen(j), &d, &err), -EINVAL);
        free(err);
        docker_facts_free(&d);
}

static void test_crio(void **state) {
        struct crio_facts c = {0};
        struct runtime_config_file base = {.path = xstrdup("/etc/crio/crio.conf")};
        const char *t = "[crio]\n[crio.runtime]\ndefault_runtime = \"crun\"\n[crio.runtime.runtimes.crun]\n"
                        "runtime_path = \"/usr/bin/crun\"\n";
        assert_int_equal(crio_apply_file(&c, &base, t, strlen(t)), 0);
        assert_false(c.has_nvidia);
        assert_string_equal(c.default_runtime, "crun");

        /* the drop-in nvidia-ctk writes: /etc/crio/crio.conf.d/99-nvidia.conf */
        struct runtime_config_file drop = {.path = xstrdup("/etc/crio/crio.conf.d/99-nvidia.conf")};
        t = "\n[crio]\n\n  [crio.runtime]\n    default_runtime = \"nvidia\"\n\n    [crio.runtime.runtimes]\n\n"
            "      [crio.runtime.runtimes.nvidia]\n        runtime_path = \"/usr/bin/nvidia-container-runtime\"\n"
            "        runtime_type = \"oci\"\n";
        assert_int_equal(crio_apply_file(&c, &drop, t, strlen(t)), 0);
        assert_true(drop.mentions_nvidia);
        assert_true(c.has_nvidia);
        assert_string_equal(c.nvidia_path, "/usr/bin/nvidia-container-runtime");
        assert_string_equal(c.nvidia_file, "/etc/crio/crio.conf.d/99-nvidia.conf");
        assert_string_equal(c.default_runtime, "nvidia");
        assert_string_equal(c.default_runtime_file, "/etc/crio/crio.conf.d/99-nvidia.conf");

        struct runtime_config_file bad = {.path = xstrdup("/etc/crio/crio.conf.d/50-bad.conf")};
        t = "[crio.runtime\n";
        assert_int_equal(crio_apply_file(&c, &bad, t, strlen(t)), -EINVAL);
        assert_non_null(strstr(bad.error, "/etc/crio/crio.conf.d/50-bad.conf: line 1, column"));
        runtime_config_file_free(&base);
        runtime_config_file_free(&drop);
        runtime_config_file_free(&bad);
        crio_facts_free(&c);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_daemon_json),
                cmocka_unit_test(test_crio),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
