/* test_runtimes.c: Docker's daemon.json and CRI-O drop-ins as nvidia-ctk writes them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "facts/node.h"
#include "facts/layer2_container.h"
#include "basic/util.h"
#include "layer2_container/mountinfo.h"

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

/* /proc/<pid>/mountinfo: real lines (Ubuntu 22.04, a kubelet node, an ext4 remounted read-only), hostile ones. */
static void test_mountinfo(void **state) {
        (void)state;
        const char *text =
                "23 28 0:22 / /proc rw,nosuid,nodev,noexec,relatime shared:13 - proc proc rw\n"
                "28 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 ro,errors=remount-ro\n"
                "\n"
                "1201 28 259:5 / /var/lib/kubelet ro,relatime shared:40 - xfs /dev/nvme1n1 ro,attr2,inode64\n"
                "1843 1201 0:58 / /var/lib/kubelet/pods/7c1e/volumes/kubernetes.io~projected/kube-api-access-7xk2p "
                "rw,relatime shared:780 - tmpfs tmpfs rw,size=1048576k,inode64\n"
                "1900 28 0:70 / /mnt/My\\040Disk rw,relatime - fuse.sshfs host:/a\\134b rw,user_id=0\n"
                "1901 28 259:6 /sub /data rw master:3 propagate_from:1 unbindable - ext4 /dev/sdb1 rw\n"
                "1902 28 259:7 / /data rw - ext4 /dev/sdc1 rw"; /* no final newline; hides 1901 */
        struct mount_entry *v = NULL;
        size_t n = 0;
        unsigned bad = 99;
        assert_int_equal(mountinfo_parse(text, strlen(text), &v, &n, &bad), 0);
        assert_int_equal(bad, 0);
        assert_int_equal(n, 7);
        assert_string_equal(v[1].mount_point, "/");
        assert_false(v[1].read_only);
        assert_true(v[1].sb_read_only);
        assert_int_equal(v[1].line, 2);
        assert_int_equal(v[2].line, 4); /* the empty line counted */
        assert_string_equal(v[4].mount_point, "/mnt/My Disk");
        assert_string_equal(v[4].source, "host:/a\\b");
        assert_string_equal(v[4].fstype, "fuse.sshfs");
        assert_string_equal(v[5].source, "/dev/sdb1");
        const struct mount_entry *e = mountinfo_find(v, n, "/var/lib/kubelet");
        assert_non_null(e);
        assert_string_equal(e->mount_point, "/var/lib/kubelet");
        assert_true(e->read_only);
        assert_string_equal(mountinfo_find(v, n, "/var/lib/containerd")->mount_point, "/");
        assert_string_equal(mountinfo_find(v, n, "/var/lib/kubelet-other")->mount_point, "/");
        assert_string_equal(mountinfo_find(v, n, "/data/x")->source, "/dev/sdc1");
        assert_string_equal(mountinfo_find(v, n, "/proc/1")->fstype, "proc");
        mount_entries_free(v, n);

        /* no root mount: nothing holds a path outside the mounts */
        const char *one = "23 28 0:22 / /proc rw - proc proc rw\n";
        assert_int_equal(mountinfo_parse(one, strlen(one), &v, &n, &bad), 0);
        assert_null(mountinfo_find(v, n, "/var/lib/kubelet"));
        mount_entries_free(v, n);
        assert_int_equal(mountinfo_parse("", 0, &v, &n, &bad), 0);
        assert_int_equal(n, 0);
        mount_entries_free(NULL, 0);

        /* not mountinfo: /proc/mounts' format, a missing separator or fields, bad numbers, a relative
         * mount point, a NUL; the line is named */
        static const char *const hostile[] = {
                "/dev/nvme0n1p2 / ext4 rw,relatime 0 0\n",
                "28 1 259:2 / / rw,relatime shared:1 ext4 /dev/nvme0n1p2 rw\n",
                "28 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2\n",
                "x 1 259:2 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n",
                "28 1 2592 / / rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n",
                "28 1 259:2 / data rw,relatime shared:1 - ext4 /dev/nvme0n1p2 rw\n",
                "28 1 259:2 / / rw - ext4 /dev/x rw\n28 1 259:2 / / rw,relatime shared:1 - ext4 /dev/\0 rw\n",
        };
        static const unsigned hostile_line[] = { 1, 1, 1, 1, 1, 1, 2 };
        for (size_t i = 0; i < ELEMENTSOF(hostile); i++) {
                size_t len = i == 6 ? 88 : strlen(hostile[i]); /* the last holds a NUL */
                v = (struct mount_entry *)1;
                assert_int_equal(mountinfo_parse(hostile[i], len, &v, &n, &bad), -EINVAL);
                assert_int_equal(bad, hostile_line[i]);
                assert_null(v);
                assert_int_equal(n, 0);
        }
        /* a line of thousands of fields is refused, not overflowed */
        _cleanup_free_ char *wide = xmalloc(20001);
        for (size_t i = 0; i < 20000; i++) wide[i] = i % 2 ? ' ' : 'a';
        wide[20000] = 0;
        assert_int_equal(mountinfo_parse(wide, 20000, &v, &n, &bad), -EINVAL);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_daemon_json),
                cmocka_unit_test(test_mountinfo),
                cmocka_unit_test(test_crio),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
