/* test_dpkg.c: dpkg's status file parser with real stanzas (Debian 12, Ubuntu 22.04 with NVIDIA's repository), and
 * its one read through hostfs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "basic/dpkg.h"
#include "basic/hostfs.h"
#include "basic/util.h"

/* Stanzas as dpkg writes them: a removed containerd.io that left its config files, Debian's containerd with a
 * multi-line Description (whose continuation line looks like a field), multi-arch libc6 twice, NVIDIA's fabric
 * manager on a held package. */
static const char STATUS[] = "Package: containerd.io\n"
                             "Status: deinstall ok config-files\n"
                             "Priority: optional\n"
                             "Section: devel\n"
                             "Architecture: amd64\n"
                             "Version: 1.7.25-1\n"
                             "Conffiles:\n"
                             " /etc/containerd/config.toml 3f0b8c8e6c1b8d4c0a4f1d7f9e3a2b1c obsolete\n"
                             "Description: An open and reliable container runtime\n"
                             "\n"
                             "Package: containerd\n"
                             "Status: install ok installed\n"
                             "Priority: optional\n"
                             "Section: admin\n"
                             "Installed-Size: 120424\n"
                             "Maintainer: Debian Go Packaging Team <team+pkg-go@tracker.debian.org>\n"
                             "Architecture: amd64\n"
                             "Source: containerd (1.6.20~ds1-1)\n"
                             "Version: 1.6.20~ds1-1+b1\n"
                             "Depends: runc (>= 1.0.0~rc2~), libc6 (>= 2.34), libseccomp2 (>= 2.5.0)\n"
                             "Description: open and reliable container runtime\n"
                             " containerd is an industry-standard container runtime with an emphasis on\n"
                             " Package: not-a-package\n"
                             " simplicity, robustness and portability.\n"
                             "Homepage: https://containerd.io\n"
                             "\n"
                             "Package: libc6\n"
                             "Status: install ok installed\n"
                             "Multi-Arch: same\n"
                             "Architecture: amd64\n"
                             "Version: 2.36-9+deb12u7\n"
                             "\n"
                             "Package: libc6\n"
                             "Status: install ok installed\n"
                             "Multi-Arch: same\n"
                             "Architecture: i386\n"
                             "Version: 2.36-9+deb12u7\n"
                             "\n"
                             "Package: nvidia-fabricmanager-550\n"
                             "Status: hold ok installed\n"
                             "Priority: optional\n"
                             "Section: multiverse/devel\n"
                             "Architecture: amd64\n"
                             "Version: 550.54.15-1\n"
                             "Description: Fabric Manager for NVSwitch based systems.\n"
                             " Fabric Manager for NVSwitch based systems.\n";

/* The stanzas in order, the installed ones found, the removed one not, a continuation line never a field. */
static void test_parse_real(void **state) {
        (void)state;
        struct dpkg_status s;
        dpkg_status_parse(STATUS, strlen(STATUS), &s);
        assert_int_equal(s.rc, 0);
        assert_int_equal(s.n_packages, 5);
        assert_string_equal(s.packages[0].name, "containerd.io");
        assert_string_equal(s.packages[0].version, "1.7.25-1");
        assert_false(s.packages[0].installed);
        assert_string_equal(s.packages[1].name, "containerd");
        assert_true(s.packages[1].installed);
        assert_string_equal(s.packages[4].name, "nvidia-fabricmanager-550");
        assert_true(s.packages[4].installed); /* held, still installed */

        const struct dpkg_package *p = dpkg_status_installed(&s, "containerd");
        assert_non_null(p);
        assert_string_equal(p->version, "1.6.20~ds1-1+b1");
        assert_null(dpkg_status_installed(&s, "containerd.io")); /* only its config files left */
        assert_null(dpkg_status_installed(&s, "contain"));       /* names match whole */
        assert_null(dpkg_status_installed(&s, "not-a-package")); /* a Description line */
        assert_ptr_equal(dpkg_status_installed(&s, "libc6"), &s.packages[2]);
        assert_null(dpkg_status_installed(NULL, "libc6"));
        dpkg_status_free(&s);
        assert_int_equal(s.n_packages, 0);
        assert_null(s.packages);
}

/* What dpkg never writes but a hand-edited or damaged file holds: CRLF lines, field names in another case,
 * blanks around values, a separator of blanks, a stanza without Package or Version, a file cut short. */
static void test_parse_edges(void **state) {
        (void)state;
        const char *t =
                "package:  nvidia-fabricmanager \r\nSTATUS: install ok installed\r\nVersion:\t1:580.65.06-0ubuntu1 "
                "\r\n \t\r\nStatus: install ok installed\nVersion: 1\n\n\n"
                "Package: noversion\nStatus: install ok installed\n\n"
                "Package: half\nStatus: install ok half-configured\nVersion: 2\n\n"
                "Package: notinstalled\nStatus: install ok notinstalled\nVersion: 3\n\n"
                "Package: empty\nStatus: install ok installed\nVersion: \n";
        struct dpkg_status s;
        dpkg_status_parse(t, strlen(t), &s);
        assert_int_equal(s.n_packages, 5);
        const struct dpkg_package *p = dpkg_status_installed(&s, "nvidia-fabricmanager");
        assert_non_null(p);
        assert_string_equal(p->version, "1:580.65.06-0ubuntu1");
        assert_null(s.packages[1].version);
        assert_null(dpkg_status_installed(&s, "noversion"));
        assert_null(dpkg_status_installed(&s, "half"));
        assert_null(dpkg_status_installed(&s, "notinstalled"));
        assert_null(dpkg_status_installed(&s, "empty"));
        dpkg_status_free(&s);

        /* cut short inside containerd's stanza: its Status is there, its Version not yet */
        const char *cut = strstr(STATUS, "Version: 1.6.20");
        dpkg_status_parse(STATUS, (size_t)(cut - STATUS), &s);
        assert_int_equal(s.n_packages, 2);
        assert_null(dpkg_status_installed(&s, "containerd"));
        dpkg_status_free(&s);

        dpkg_status_parse("", 0, &s);
        assert_int_equal(s.n_packages, 0);
        dpkg_status_free(&s);
        dpkg_status_parse("\0\0\nPackage: x\0y\n", 15, &s); /* NULs: a line of them is no field, a name stops at one */
        assert_int_equal(s.n_packages, 1);
        assert_string_equal(s.packages[0].name, "x");
        dpkg_status_free(&s);
        /* a name that a NUL empties names no package; blanks before a NUL are trimmed (a fuzzer's find) */
        static const char nul_names[] = "Package:\0\0` \nVersion: 1\n\nPackage: y \0z\nVersion: 2 \0\n";
        dpkg_status_parse(nul_names, sizeof nul_names - 1, &s);
        assert_int_equal(s.n_packages, 1);
        assert_string_equal(s.packages[0].name, "y");
        assert_string_equal(s.packages[0].version, "2");
        dpkg_status_free(&s);
}

/* The read through hostfs: no file is -ENOENT and no package; a file is parsed. */
static void test_read(void **state) {
        (void)state;
        char tmpl[] = "/tmp/gpunode-dpkg-XXXXXX";
        char *root = mkdtemp(tmpl);
        assert_non_null(root);
        assert_int_equal(hostfs_init(root), 0);
        struct dpkg_status s;
        dpkg_status_read(&s);
        assert_int_equal(s.rc, -ENOENT);
        assert_int_equal(s.n_packages, 0);
        assert_null(dpkg_status_installed(&s, "containerd"));
        dpkg_status_free(&s);

        _cleanup_free_ char *dir = xasprintf("%s/var/lib/dpkg", root);
        _cleanup_free_ char *cmd = xasprintf("mkdir -p %s", dir);
        assert_int_equal(system(cmd), 0);
        _cleanup_free_ char *path = xasprintf("%s/status", dir);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        assert_int_equal(fwrite(STATUS, 1, strlen(STATUS), f), strlen(STATUS));
        fclose(f);
        dpkg_status_read(&s);
        assert_int_equal(s.rc, 0);
        assert_int_equal(s.n_packages, 5);
        assert_non_null(dpkg_status_installed(&s, "nvidia-fabricmanager-550"));
        dpkg_status_free(&s);

        _cleanup_free_ char *rm = xasprintf("rm -rf %s", root);
        assert_int_equal(system(rm), 0);
        hostfs_done();
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_real),
                cmocka_unit_test(test_parse_edges),
                cmocka_unit_test(test_read),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
