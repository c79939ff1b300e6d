/* test_snapshot.c: snapshot redaction, writer, and refusal of truncated, corrupt and hostile archives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "basic/hostfs.h"
#include "snapshot/snapshot.h"
#include "basic/util.h"

/* ---- helpers ---- */

/* An archive being crafted in memory. */
struct craft {
        struct archive *a;
        struct buf out;
};

/* libarchive write callback: appends to the buffer. */
static la_ssize_t craft_write(struct archive *a, void *data, const void *buf, size_t n) {
        (void)a;
        buf_append(&((struct craft *)data)->out, buf, n);
        return (la_ssize_t)n;
}

/* Starts a gzip'd pax archive in memory. */
static void craft_begin(struct craft *c) {
        *c = (struct craft){.a = archive_write_new()};
        archive_write_set_format_pax_restricted(c->a);
        archive_write_add_filter_gzip(c->a);
        archive_write_set_bytes_in_last_block(c->a, 1);
        assert_int_equal(archive_write_open(c->a, c, NULL, craft_write, NULL), ARCHIVE_OK);
}

/* Adds a member; data NULL with size: a header declaring size bytes and no data (use last). */
static void craft_add(struct craft *c, const char *name, unsigned type, const char *data, la_int64_t size,
                      const char *link, bool hard) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, name);
        archive_entry_set_filetype(e, type);
        archive_entry_set_perm(e, 0644);
        archive_entry_set_size(e, size);
        if (link && hard) archive_entry_set_hardlink(e, link);
        else if (link) archive_entry_set_symlink(e, link);
        if (type == AE_IFCHR) archive_entry_set_rdev(e, makedev(1, 3));
        assert_true(archive_write_header(c->a, e) >= ARCHIVE_WARN);
        if (data && size > 0) archive_write_data(c->a, data, (size_t)size);
        archive_entry_free(e);
}

/* Ends the archive. Returns the bytes (caller frees c->out). */
static void craft_end(struct craft *c) {
        archive_write_close(c->a);
        archive_write_free(c->a);
}

/* A private folder with "out" (the extraction target) and "outside" (must stay empty). */
struct box {
        char *base, *out, *outside;
};

static void box_new(struct box *b) {
        b->base = xstrdup("/tmp/gpunode-test-snapshot-XXXXXX");
        assert_non_null(mkdtemp(b->base));
        b->out = xasprintf("%s/out", b->base);
        b->outside = xasprintf("%s/outside", b->base);
        assert_int_equal(mkdir(b->out, 0700), 0);
        assert_int_equal(mkdir(b->outside, 0700), 0);
}

/* Returns the number of entries in dir. */
static int count_entries(const char *dir) {
        _cleanup_strv_free_ char **v = NULL;
        assert_int_equal(hostfs_init("/"), 0);
        int n = hostfs_list(dir, true, &v);
        hostfs_done();
        return n;
}

/* Asserts that nothing was written beside out, then removes the box. */
static void box_done(struct box *b) {
        assert_int_equal(count_entries(b->outside), 0);
        assert_int_equal(count_entries(b->base), 2); /* out and outside only */
        assert_int_equal(snapshot_remove_dir(b->base), 0);
        assert_int_equal(access(b->base, F_OK), -1);
        free(b->base);
        free(b->out);
        free(b->outside);
}

/* Extracts the crafted archive into a box; expects r and an error naming `needle`. */
static void expect_refused(struct craft *c, int want, const char *needle, const struct snapshot_limits *lim) {
        struct box b;
        box_new(&b);
        char *err = NULL;
        int r = snapshot_extract_memory(c->out.data, c->out.len, b.out, lim, &err);
        if (r != want) fail_msg("extract returned %d (%s), wanted %d", r, err ? err : "", want);
        assert_non_null(err);
        if (!strstr(err, needle)) fail_msg("error '%s' does not name '%s'", err, needle);
        free(err);
        box_done(&b);
        buf_free(&c->out);
}

/* ---- hostile and broken archives ---- */

static void test_dotdot(void **state) {
        (void)state;
        struct craft c;
        craft_begin(&c);
        craft_add(&c, "root/../../outside/evil", AE_IFREG, "x", 1, NULL, false);
        craft_end(&c);
        expect_refused(&c, -EINVAL, "root/../../outside/evil", NULL);
}

static void test_absolute(void **state) {
        (void)state;
        struct craft c;
        craft_begin(&c);
        craft_add(&c, "/tmp/gpunode-test-absolute-evil", AE_IFREG, "x", 1, NULL, false);
        craft_end(&c);
        expect_refused(&c, -EINVAL, "absolute", NULL);
        assert_int_equal(access("/tmp/gpunode-test-absolute-evil", F_OK), -1);
}

static void test_symlink_then_file_through_it(void **state) {
        (void)state;
        struct box b;
        box_new(&b);
        struct craft c;
        craft_begin(&c);
        craft_add(&c, "root/", AE_IFDIR, NULL, 0, NULL, false);
        craft_add(&c, "root/escape", AE_IFLNK, NULL, 0, b.outside, false);
        craft_add(&c, "root/escape/pwned", AE_IFREG, "x", 1, NULL, false);
        craft_end(&c);
        char *err = NULL;
        int r = snapshot_extract_memory(c.out.data, c.out.len, b.out, NULL, &err);
        assert_true(r < 0);
        assert_non_null(strstr(err, "root/escape/pwned"));
        free(err);
        buf_free(&c.out);
        box_done(&b); /* outside is still empty */
}

static void test_relative_symlink_escape(void **state) {
        (void)state;
        struct craft c;
        craft_begin(&c);
        craft_add(&c, "root/up", AE_IFLNK, NULL, 0, "../../outside", false);
        craft_add(&c, "root/up/pwned", AE_IFREG, "x", 1, NULL, false);
        craft_end(&c);
        expect_refused(&c, -EINVAL, "root/up/pwned", NULL);
}

static void test_huge_member(void **state) {
        (void)state;
        struct craft c;
        craft_begin(&c);
        craft_add(&c, "root/proc/modules", AE_IFREG, NULL, (la_int64_t)2 << 30, NULL, false); /* 2 GiB declared */
        archive_write_free(c.a); /* no data: the archive ends inside the member */
        expect_refused(&c, -EFBIG, "root/proc/modules", NULL);
}

static void test_total_too_large(void **state) {
        (void)state;
        struct craft c;
        craft_begin(&c);
        static char data[4096];
        for (int i = 0; i < 4; i++) {
                _cleanup_free_ char *n = xasprintf("root/f%d", i);
                craft_add(&c, n, AE_IFREG, data, sizeof data, NULL, false);
        }
        craft_end(&c);
        struct snapshot_limits lim = {.member_max = 1 << 20, .total_max = 10000, .members_max = 100};
        expect_refused(&c, -EFBIG, "root/f2", &lim);
}

static void test_million_members(void **state) {
        (void)state;
        struct craft c;
        craft_begin(&c);
        for (int i = 0; i < 1000000; i++) craft_add(&c, "root/d/", AE_IFDIR, NULL, 0, NULL, false);
        craft_end(&c);
        expect_refused(&c, -E2BIG, "more than 200000 members", NULL);
}

static void test_special_files(void **state) {
        (void)state;
        static const struct {
                unsigned type;
                const char *needle;
        } kinds[] = {{AE_IFCHR, "character device"}, {AE_IFBLK, "block device"}, {AE_IFIFO, "FIFO"}};
        for (size_t i = 0; i < ELEMENTSOF(kinds); i++) {
                struct craft c;
                craft_begin(&c);
                craft_add(&c, "root/dev/thing", kinds[i].type, NULL, 0, NULL, false);
                craft_end(&c);
                expect_refused(&c, -EINVAL, kinds[i].needle, NULL);
        }
        struct craft c;
        craft_begin(&c);
        craft_add(&c, "root/a", AE_IFREG, "x", 1, NULL, false);
        craft_add(&c, "root/b", AE_IFREG, NULL, 0, "/etc/passwd", true);
        craft_end(&c);
        expect_refused(&c, -EINVAL, "hard link", NULL);
}

static void test_foreign_members(void **state) {
        (void)state;
        struct craft c;
        craft_begin(&c);
        craft_add(&c, "etc/passwd", AE_IFREG, "x", 1, NULL, false);
        craft_end(&c);
        expect_refused(&c, -EINVAL, "etc/passwd", NULL);
        craft_begin(&c);
        craft_add(&c, "kmsg", AE_IFLNK, NULL, 0, "/etc/shadow", false);
        craft_end(&c);
        expect_refused(&c, -EINVAL, "kmsg", NULL);
}

/* A valid small archive, then truncated at every 97th byte and corrupted in the middle. */
static void test_truncated_and_corrupt(void **state) {
        (void)state;
        struct craft c;
        craft_begin(&c);
        static char data[20000];
        for (size_t i = 0; i < sizeof data; i++) data[i] = (char)(i * 7 + i / 13);
        craft_add(&c, "root/", AE_IFDIR, NULL, 0, NULL, false);
        craft_add(&c, "root/a", AE_IFREG, data, sizeof data, NULL, false);
        craft_add(&c, "MANIFEST.json", AE_IFREG, "{}", 2, NULL, false);
        craft_end(&c);
        struct box b;
        box_new(&b);
        char *err = NULL;
        assert_int_equal(snapshot_extract_memory(c.out.data, c.out.len, b.out, NULL, &err), 0);
        box_done(&b);
        for (size_t cut = 1; cut < c.out.len - 8; cut += 97) {
                box_new(&b);
                err = NULL;
                int r = snapshot_extract_memory(c.out.data, cut, b.out, NULL, &err);
                if (r == 0) fail_msg("truncated at %zu of %zu accepted", cut, c.out.len);
                assert_non_null(err);
                free(err);
                box_done(&b);
        }
        c.out.data[c.out.len / 2] ^= 0x5a;
        c.out.data[c.out.len / 2 + 1] ^= 0xa5;
        box_new(&b);
        err = NULL;
        assert_true(snapshot_extract_memory(c.out.data, c.out.len, b.out, NULL, &err) < 0);
        free(err);
        box_done(&b);
        buf_free(&c.out);
        /* Not an archive at all. */
        box_new(&b);
        err = NULL;
        assert_true(snapshot_extract_memory("hello, world", 12, b.out, NULL, &err) < 0);
        free(err);
        box_done(&b);
}

/* ---- redaction ---- */

/* Returns redact_text's output for in. */
static char *redacted(const char *in, size_t *ret_count) {
        struct buf out = {0};
        *ret_count = redact_text(in, strlen(in), &out);
        return out.data;
}

static void test_redact_text(void **state) {
        (void)state;
        size_t n;
        _cleanup_free_ char *k = redacted("users:\n- name: a\n  user:\n    token: sha256~abc\n    client-key-data: LS0t\n"
                                          "    client-certificate-data: LS0x\nclusters:\n- cluster:\n    server: https://x\n", &n);
        assert_int_equal(n, 3);
        assert_string_equal(k, "users:\n- name: a\n  user:\n    token: REDACTED\n    client-key-data: REDACTED\n"
                               "    client-certificate-data: REDACTED\nclusters:\n- cluster:\n    server: https://x\n");
        _cleanup_free_ char *t = redacted("[auth]\npassword = \"hunter2\"\nusername = \"bob\"\nTOKEN=abc\n", &n);
        assert_int_equal(n, 2);
        assert_string_equal(t, "[auth]\npassword = \"REDACTED\"\nusername = \"bob\"\nTOKEN=REDACTED\n");
        _cleanup_free_ char *j = redacted("{\n  \"auth\": \"dXNlcjpwYXNz\",\n  \"x\": 1\n}", &n);
        assert_int_equal(n, 1);
        assert_string_equal(j, "{\n  \"auth\": \"REDACTED\",\n  \"x\": 1\n}");
        _cleanup_free_ char *p = redacted("a\n-----BEGIN RSA PRIVATE KEY-----\nMIIE\nabcd\n-----END RSA PRIVATE KEY-----\nb\n", &n);
        assert_int_equal(n, 1);
        assert_string_equal(p, "a\n-----BEGIN RSA PRIVATE KEY-----\nREDACTED\n-----END RSA PRIVATE KEY-----\nb\n");
        _cleanup_free_ char *none = redacted("token:\n  nested: 1\nsecret: {}\nmax_tokens_hint 3\n", &n);
        assert_int_equal(n, 0);
        assert_string_equal(none, "token:\n  nested: 1\nsecret: {}\nmax_tokens_hint 3\n");
}

static void test_redact_cmdline(void **state) {
        (void)state;
        static const char in[] = "kubelet\0--token=abc\0--password\0hunter2\0--v=2\0API_KEY=k\0";
        struct buf out = {0};
        assert_int_equal(redact_cmdline(in, sizeof in - 1, &out), 3);
        static const char want[] = "kubelet\0--token=REDACTED\0--password\0REDACTED\0--v=2\0API_KEY=REDACTED\0";
        assert_int_equal(out.len, sizeof want - 1);
        assert_memory_equal(out.data, want, sizeof want - 1);
        buf_free(&out);
}

static void test_redact_rules(void **state) {
        (void)state;
        const char *why;
        assert_int_equal(redact_rule("/proc/1/environ", &why), REDACT_OMIT);
        assert_int_equal(redact_rule("/proc/self/task/7/environ", &why), REDACT_OMIT);
        assert_int_equal(redact_rule("/proc/1/comm", &why), REDACT_NONE);
        assert_int_equal(redact_rule("/var/run/secrets/kubernetes.io/serviceaccount/namespace", &why), REDACT_REPLACE);
        assert_int_equal(redact_rule("/run/secrets/x", &why), REDACT_REPLACE);
        assert_int_equal(redact_rule("/etc/kubernetes/pki/ca.crt", &why), REDACT_REPLACE);
        assert_int_equal(redact_rule("/etc/ssl/private/server.key", &why), REDACT_REPLACE);
        assert_int_equal(redact_rule("/etc/kubernetes/kubelet.conf", &why), REDACT_FILTER);
        assert_int_equal(redact_rule("/sys/bus/pci/devices/0000:18:00.0/class", &why), REDACT_NONE);
}

/* The writer on a root with secrets: what comes out of the archive is redacted. */
static void test_writer_redacts(void **state) {
        (void)state;
        struct box b;
        box_new(&b);
        _cleanup_free_ char *root = xasprintf("%s/node", b.outside);
        _cleanup_free_ char *cmd = xasprintf(
                "set -e; r=%s; mkdir -p $r/proc/42 $r/var/run/secrets/kubernetes.io/serviceaccount $r/etc/kubernetes/pki $r/sys/x; "
                "printf 'A=1\\0SECRET=hunter2\\0' > $r/proc/42/environ; echo nvidia-smi > $r/proc/42/comm; "
                "echo sa-token-value > $r/var/run/secrets/kubernetes.io/serviceaccount/token; "
                "printf -- '-----BEGIN PRIVATE KEY-----\\nkeybytes\\n-----END PRIVATE KEY-----\\n' > $r/etc/kubernetes/pki/apiserver.key; "
                "printf 'users:\\n- user:\\n    token: tok-value\\n    client-key-data: ckd-value\\nclusters:\\n- cluster:\\n    server: https://k\\n' > $r/etc/kubernetes/kubelet.conf; "
                "echo 0x030200 > $r/sys/x/class; ln -s ../../etc/kubernetes $r/sys/x/link",
                root);
        assert_int_equal(system(cmd), 0);
        assert_int_equal(hostfs_init(root), 0);
        _cleanup_free_ char *archive = xasprintf("%s/snap.tar.gz", b.base);
        struct snapshot_writer *w = NULL;
        char *err = NULL;
        assert_int_equal(snapshot_writer_open(archive, &w, &err), 0);
        static const char *const paths[] = {"/proc/42/environ", "/proc/42/comm", "/proc", "/var/run/secrets/kubernetes.io/serviceaccount/token",
                                            "/etc/kubernetes/pki/apiserver.key", "/sys/x/link/kubelet.conf", "/sys/x/class", "/no/such"};
        for (size_t i = 0; i < ELEMENTSOF(paths); i++) assert_int_equal(snapshot_add_host_path(w, paths[i]), 0);
        const char *api = "{\"kind\":\"Node\",\"metadata\":{\"annotations\":{\"token\":\"api-secret\"},\"name\":\"n\"}}";
        assert_int_equal(snapshot_add_api(w, "nodes/n.json", api, strlen(api)), 0);
        assert_int_equal(snapshot_add_api(w, "../evil.json", api, strlen(api)), -EINVAL);
        assert_int_equal(snapshot_add_api(w, "nodes/n.json", api, strlen(api)), -EEXIST);
        assert_int_equal(snapshot_add_kmsg(w, "/dev/kmsg", "6,1,2,-;hello\n", 14, NULL), 0);
        assert_int_equal(snapshot_add_nvml(w, NULL, "libnvidia-ml.so.1", NULL, -ENOENT, "not there"), 0);
        size_t members = 0;
        assert_int_equal(snapshot_writer_finish(w, "n", root, &members, &err), 0);
        hostfs_done();
        assert_true(members > 5);

        /* Read back: secrets gone, structure kept. */
        _cleanup_free_ char *ext = xasprintf("%s/ext", b.base);
        assert_int_equal(mkdir(ext, 0700), 0);
        assert_int_equal(snapshot_extract_file(archive, ext, NULL, &err), 0);
        _cleanup_free_ char *check = xasprintf(
                "set -e; e=%s; ! test -e $e/root/proc/42/environ; grep -qx nvidia-smi $e/root/proc/42/comm; "
                "grep -qx REDACTED $e/root/var/run/secrets/kubernetes.io/serviceaccount/token; "
                "grep -qx REDACTED $e/root/etc/kubernetes/pki/apiserver.key; ! grep -rq keybytes $e; "
                "test -L $e/root/sys/x/link; grep -q 'server: https://k' $e/root/etc/kubernetes/kubelet.conf; "
                "! grep -rqE 'hunter2|sa-token-value|tok-value|ckd-value|api-secret' $e; grep -q REDACTED $e/api/nodes/n.json; "
                "grep -q '\"/proc/42/environ\"' $e/MANIFEST.json; grep -q 'values-replaced' $e/MANIFEST.json; "
                "grep -q 'sha256' $e/MANIFEST.json",
                ext);
        if (system(check) != 0) fail_msg("redaction check failed: %s", check);
        assert_int_equal(snapshot_remove_dir(ext), 0);
        unlink(archive);
        assert_int_equal(snapshot_remove_dir(root), 0);
        box_done(&b);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_dotdot),
                cmocka_unit_test(test_absolute),
                cmocka_unit_test(test_symlink_then_file_through_it),
                cmocka_unit_test(test_relative_symlink_escape),
                cmocka_unit_test(test_huge_member),
                cmocka_unit_test(test_total_too_large),
                cmocka_unit_test(test_million_members),
                cmocka_unit_test(test_special_files),
                cmocka_unit_test(test_foreign_members),
                cmocka_unit_test(test_truncated_and_corrupt),
                cmocka_unit_test(test_redact_text),
                cmocka_unit_test(test_redact_rules),
                cmocka_unit_test(test_redact_cmdline),
                cmocka_unit_test(test_writer_redacts),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
