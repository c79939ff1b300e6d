/* test_hostfs.c: the root prefix: reads stay inside the root, loops and huge files are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <fcntl.h>
#include <sys/stat.h>

#include "basic/hostfs.h"
#include "basic/read_cap.h"
#include "basic/util.h"

static char tmpl[] = "/tmp/gpunode-hostfs-XXXXXX";
static char *root;

static void put(const char *rel, const char *content) {
        _cleanup_free_ char *p = xasprintf("%s/%s", root, rel);
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fputs(content, f);
        fclose(f);
}

static int setup(void **state) {
        root = mkdtemp(tmpl);
        assert_non_null(root);
        _cleanup_free_ char *cmd = xasprintf("mkdir -p %s/etc %s/proc/driver/nvidia %s/sys/class/net", root, root, root);
        assert_int_equal(system(cmd), 0);
        put("etc/hostname", "node-a\n");
        put("proc/driver/nvidia/version", "NVRM version: x 1.2\nsecond\n");
        _cleanup_free_ char *a = xasprintf("%s/sys/class/net/loop-a", root), *b = xasprintf("%s/sys/class/net/loop-b", root);
        assert_int_equal(symlink("loop-b", a), 0);
        assert_int_equal(symlink("loop-a", b), 0);
        _cleanup_free_ char *esc = xasprintf("%s/etc/escape", root), *abs = xasprintf("%s/etc/abs", root);
        assert_int_equal(symlink("../../../../../../etc/hostname", esc), 0);
        assert_int_equal(symlink("/etc/hostname", abs), 0);
        assert_int_equal(hostfs_init(root), 0);
        return 0;
}

static int teardown(void **state) {
        hostfs_done();
        _cleanup_free_ char *cmd = xasprintf("rm -rf %s", root);
        return system(cmd);
}

static void test_read(void **state) {
        char *s;
        size_t len;
        assert_int_equal(hostfs_read("/etc/hostname", 1024, &s, &len), 0);
        assert_int_equal(len, 7);
        assert_string_equal(s, "node-a\n");
        free(s);
        assert_int_equal(hostfs_read_line("/proc/driver/nvidia/version", &s), 0);
        assert_string_equal(s, "NVRM version: x 1.2");
        free(s);
        assert_int_equal(hostfs_read("/proc/driver/nvidia/version", 5, &s, &len), -EFBIG);
        assert_int_equal(hostfs_read("/nope", 5, &s, &len), -ENOENT);
        assert_int_equal(hostfs_read("/etc", 5, &s, &len), -EINVAL);
}

static void test_links_stay_inside_root(void **state) {
        char *s;
        /* Both a ".." chain and an absolute link resolve inside the root: to its etc/hostname. */
        assert_int_equal(hostfs_read_line("/etc/escape", &s), 0);
        assert_string_equal(s, "node-a");
        free(s);
        assert_int_equal(hostfs_read_line("/etc/abs", &s), 0);
        assert_string_equal(s, "node-a");
        free(s);
        assert_int_equal(hostfs_read_line("/sys/class/net/loop-a", &s), -ELOOP);
        char **names;
        int n = hostfs_list("/sys/class/net", false, &names);
        assert_int_equal(n, 2);
        assert_string_equal(names[0], "loop-a");
        strv_free(names);
        assert_int_equal(hostfs_readlink_basename("/sys/class/net/loop-a", &s), 0);
        assert_string_equal(s, "loop-b");
        free(s);
}

static void test_u64(void **state) {
        uint64_t v;
        put("etc/num", "0x10de\n");
        assert_int_equal(hostfs_read_u64("/etc/num", &v), 0);
        assert_int_equal(v, 0x10de);
        put("etc/num", "banana\n");
        assert_int_equal(hostfs_read_u64("/etc/num", &v), -EINVAL);
        put("etc/num", "");
        assert_int_equal(hostfs_read_u64("/etc/num", &v), -EINVAL);
}

/* Without hostfs_init() every read fails: nothing falls back to the machine's own "/". */
static void test_no_root_no_reads(void **state) {
        hostfs_done();
        char *text = NULL;
        assert_int_equal(hostfs_open("/etc/hostname", O_RDONLY), -EBADF);
        assert_int_equal(hostfs_read("/proc/self/status", 1 << 20, &text, NULL), -EBADF);
        assert_null(text);
        assert_false(hostfs_exists("/"));
        assert_int_equal(hostfs_init(root), 0);
}

/* read_fd_capped(): a pipe of 40000 bytes read whole, refused past a cap (-EFBIG), or cut at it with truncate
 * (the rest left for the next read); an empty one is "". */
static void test_read_capped(void **state) {
        (void)state;
        int p[2];
        assert_int_equal(pipe(p), 0);
        char *data = xmalloc(40000);
        memset(data, 'a', 40000);
        assert_int_equal(write(p[1], data, 40000), 40000);
        close(p[1]);
        free(data);
        char *s;
        size_t len;
        assert_int_equal(read_fd_capped(p[0], 30000, true, &s, &len), 0);
        assert_int_equal(len, 30000);
        assert_int_equal(strlen(s), 30000);
        free(s);
        assert_int_equal(read_fd_capped(p[0], 5000, false, &s, &len), -EFBIG); /* 10000 left */
        close(p[0]);

        assert_int_equal(pipe(p), 0);
        assert_int_equal(write(p[1], "abc", 3), 3);
        close(p[1]);
        assert_int_equal(read_fd_capped(p[0], 3, false, &s, NULL), 0); /* exactly the cap */
        assert_string_equal(s, "abc");
        free(s);
        assert_int_equal(read_fd_capped(p[0], 3, false, &s, &len), 0); /* at its end */
        assert_string_equal(s, "");
        assert_int_equal(len, 0);
        free(s);
        close(p[0]);
        assert_int_equal(read_fd_capped(-1, 3, true, &s, &len), -EBADF);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_read),
                cmocka_unit_test(test_read_capped),
                cmocka_unit_test(test_links_stay_inside_root),
                cmocka_unit_test(test_u64),
                cmocka_unit_test(test_no_root_no_reads),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
