/* test_snapshot.c: snapshot redaction, writer, and refusal of truncated, corrupt and hostile archives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <libgen.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "basic/hostfs.h"
#include "basic/promtext.h"
#include "basic/toml.h"
#include "basic/yaml.h"
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

/* ---- format-aware redaction: every secret gone, the file still parses with the same structure ---- */

/* Fails the test when needle occurs in s. */
static void assert_absent(const char *s, const char *needle) {
        if (strstr(s, needle)) fail_msg("'%s' left in:\n%s", needle, s);
}

/* Returns the number of newlines in s. */
static size_t count_lines(const char *s) {
        size_t n = 0;
        for (; *s; s++) n += *s == '\n';
        return n;
}

/* Returns the whole file at path (malloc'd, NUL-terminated, length in *ret_len), or NULL when it
 * cannot be read. */
static char *slurp(const char *path, size_t *ret_len) {
        FILE *f = fopen(path, "rb");
        if (!f) return NULL;
        struct buf b = {0};
        char chunk[65536];
        size_t got;
        while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) buf_append(&b, chunk, got);
        fclose(f);
        buf_append(&b, "", 0);
        *ret_len = b.len;
        return b.data;
}

/* Returns the path of rel below tests/ in the source tree (malloc'd): from $GPUNODE_SOURCE_ROOT,
 * else from this file's path as compiled (relative to the build directory tests run in). */
static char *tests_path(const char *rel) {
        const char *root = getenv("GPUNODE_SOURCE_ROOT");
        if (root) return xasprintf("%s/tests/%s", root, rel);
        _cleanup_free_ char *self = xstrdup(__FILE__);
        return xasprintf("%s/../%s", dirname(self), rel);
}

/* Returns a file below tests/ read whole, or NULL when the source tree cannot be found. */
static char *read_source_file(const char *rel, size_t *ret_len) {
        _cleanup_free_ char *p = tests_path(rel);
        return slurp(p, ret_len);
}

/* Fails unless two TOML values have the same shape: tables with the same keys in the same order,
 * arrays of the same length, the same types all the way down (string contents may differ). */
static void assert_toml_same_shape(const struct toml_value *a, const struct toml_value *b, const char *where) {
        if (toml_type_of(a) != toml_type_of(b))
                fail_msg("%s: %s became %s", where, toml_type_name(toml_type_of(a)), toml_type_name(toml_type_of(b)));
        if (toml_type_of(a) == TOML_TABLE) {
                assert_int_equal(toml_table_size(a), toml_table_size(b));
                for (size_t i = 0; i < toml_table_size(a); i++) {
                        assert_int_equal(toml_table_key_len_at(a, i), toml_table_key_len_at(b, i));
                        assert_memory_equal(toml_table_key_at(a, i), toml_table_key_at(b, i), toml_table_key_len_at(a, i));
                        assert_toml_same_shape(toml_table_value_at(a, i), toml_table_value_at(b, i), toml_table_key_at(a, i));
                }
        } else if (toml_type_of(a) == TOML_ARRAY) {
                assert_int_equal(toml_array_len(a), toml_array_len(b));
                for (size_t i = 0; i < toml_array_len(a); i++)
                        assert_toml_same_shape(toml_array_at(a, i), toml_array_at(b, i), where);
        } else if (toml_type_of(a) != TOML_STRING) {
                double x, y;
                int64_t i, j;
                bool p, q;
                if (toml_int(a, &i)) assert_true(toml_int(b, &j) && i == j);
                if (toml_bool(a, &p)) assert_true(toml_bool(b, &q) && p == q);
                if (toml_double(a, &x) && x == x) assert_true(toml_double(b, &y) && x == y);
                if (toml_datetime(a)) assert_string_equal(toml_datetime(a), toml_datetime(b));
        }
}

/* Redacts TOML text: asserts the result parses and has in's shape. Returns the text and the
 * parsed document in *ret_doc. */
static char *redact_toml_checked(const char *in, size_t len, size_t *ret_count, struct toml_value **ret_doc) {
        struct buf out = {0};
        *ret_count = redact_text(in, len, &out);
        _cleanup_toml_ struct toml_value *a = NULL;
        struct toml_error err;
        assert_int_equal(toml_parse(in, len, &a, &err), 0);
        if (toml_parse(out.data, out.len, ret_doc, &err) < 0)
                fail_msg("redacted TOML does not parse: line %d, column %d: %s\n%s", err.line, err.column, err.message, out.data);
        assert_toml_same_shape(a, *ret_doc, "(document)");
        return out.data;
}

/* Returns the string at the key path of doc (NULL-terminated keys), "" when absent. */
#define TOML_STR(doc, ...) (toml_string(toml_get_path((doc), __VA_ARGS__, NULL)) ?: "")

/* containerd's CRI registry settings as they are written in the field: an auth table with a
 * multi-line basic and a multi-line literal string, an inline auth table, registry.headers with
 * Authorization, a mirror endpoint with credentials. The values go, the rest stays byte for byte. */
static void test_redact_toml_containerd(void **state) {
        (void)state;
        static const char in[] =
                "version = 2\n"
                "root = \"/var/lib/containerd\"\n"
                "\n"
                "[plugins]\n"
                "  [plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
                "    default_runtime_name = \"nvidia\"\n"
                "    [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\n"
                "      BinaryName = \"/usr/bin/nvidia-container-runtime\"\n"
                "      SystemdCgroup = true\n"
                "  # registry credentials (pushed by the node bootstrap)\n"
                "  [plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"registry.example.com\".auth]\n"
                "    username = \"robot$ci\"\n"
                "    password = \"\"\"\n"
                "s3cr3t-multiline-basic\n"
                "second-s3cr3t-line\"\"\"\n"
                "    identitytoken = '''s3cr3t-multiline-literal\n"
                "more'''\n"
                "  [plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"gcr.io\"]\n"
                "    auth = { username = \"_json_key\", password = \"s3cr3t-inline\", auth = \"czNjcjN0LWF1dGg=\" }\n"
                "  [plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"gcr.io\".tls]\n"
                "    ca_file = \"/etc/containerd/certs/gcr-ca.pem\"\n"
                "  [plugins.\"io.containerd.grpc.v1.cri\".registry.headers]\n"
                "    Authorization = [\"Bearer s3cr3t-header-token\"]\n"
                "    X-Meta-Source = [\"node-setup\"]\n"
                "  [plugins.\"io.containerd.grpc.v1.cri\".registry.mirrors.\"docker.io\"]\n"
                "    endpoint = [\"https://mirror-user:s3cr3t-mirror@mirror.example.com\", \"https://registry-1.docker.io\"]\n";
        size_t n;
        _cleanup_toml_ struct toml_value *doc = NULL;
        _cleanup_free_ char *out = redact_toml_checked(in, sizeof in - 1, &n, &doc);
        assert_absent(out, "s3cr3t");
        assert_absent(out, "czNjcjN0LWF1dGg");
        assert_int_equal(count_lines(out), count_lines(in)); /* a parse error further down keeps its line */
        const char *cri = "io.containerd.grpc.v1.cri";
        assert_string_equal(TOML_STR(doc, "plugins", cri, "registry", "configs", "registry.example.com", "auth", "password"),
                            "REDACTED");
        assert_string_equal(TOML_STR(doc, "plugins", cri, "registry", "configs", "registry.example.com", "auth", "identitytoken"),
                            "REDACTED");
        assert_string_equal(TOML_STR(doc, "plugins", cri, "registry", "configs", "gcr.io", "auth", "password"), "REDACTED");
        assert_string_equal(TOML_STR(doc, "plugins", cri, "registry", "configs", "gcr.io", "auth", "auth"), "REDACTED");
        assert_string_equal(TOML_STR(doc, "plugins", cri, "registry", "configs", "gcr.io", "tls", "ca_file"),
                            "/etc/containerd/certs/gcr-ca.pem");
        const struct toml_value *h = toml_get_path(doc, "plugins", cri, "registry", "headers", NULL);
        assert_string_equal(toml_string(toml_array_at(toml_table_get(h, "Authorization"), 0)), "REDACTED");
        assert_string_equal(toml_string(toml_array_at(toml_table_get(h, "X-Meta-Source"), 0)), "node-setup");
        const struct toml_value *e = toml_get_path(doc, "plugins", cri, "registry", "mirrors", "docker.io", "endpoint", NULL);
        assert_string_equal(toml_string(toml_array_at(e, 0)), "https://REDACTED@mirror.example.com");
        assert_string_equal(toml_string(toml_array_at(e, 1)), "https://registry-1.docker.io");
        assert_string_equal(TOML_STR(doc, "plugins", cri, "containerd", "runtimes", "nvidia", "options", "BinaryName"),
                            "/usr/bin/nvidia-container-runtime");
        /* everything but the values is as it was */
        assert_non_null(strstr(out, "  # registry credentials (pushed by the node bootstrap)\n"));
        assert_non_null(strstr(out, "    auth = { username = \"_json_key\", password = \"REDACTED\", auth = \"REDACTED\" }\n"));
        assert_string_equal(TOML_STR(doc, "plugins", cri, "registry", "configs", "registry.example.com", "auth", "username"),
                            "robot$ci");
        assert_non_null(strstr(out, "      BinaryName = \"/usr/bin/nvidia-container-runtime\"\n      SystemdCgroup = true\n"));
        assert_int_equal(n, 6);
}

/* TOML's corners: escaped and dotted keys, arrays of inline tables across lines with comments, a
 * datetime with a space, escapes and line-ending backslashes, arrays of tables. */
static void test_redact_toml_corners(void **state) {
        (void)state;
        static const char in[] =
                "# a comment with password = \"not-a-value\"\n"
                "\"pass\\u0077ord\" = \"s3cr3t-escaped-key\"\n"
                "a.b.token = 'lit-s3cr3t'\n"
                "arr = [ \"x\", # a comment with token = \"t\"\n"
                "  { password = \"s3cr3t-arr-inline\", keep = 1 }, ]\n"
                "dt = 1979-05-27 07:32:00Z\n"
                "s = \"quote \\\" and https://u:s3cr3t-esc@h/x\"\n"
                "ml = \"\"\"\\\n"
                "   line one \\\n"
                "   https://u:s3cr3t-ml-url@h/ \"\"\"\n"
                "lit = '''\n"
                "https://u:s3cr3t-lit-url@h'''\n"
                "nested = { inner = { client_secret = \"s3cr3t-nested\" }, n = [1, 2] }\n"
                "empty = \"\"\n"
                "[[servers]]\n"
                "secret = \"s3cr3t-aot\"\n"
                "[[servers]]\n"
                "name = \"b\"\n";
        size_t n;
        _cleanup_toml_ struct toml_value *doc = NULL;
        _cleanup_free_ char *out = redact_toml_checked(in, sizeof in - 1, &n, &doc);
        assert_absent(out, "s3cr3t");
        assert_int_equal(count_lines(out), count_lines(in));
        assert_string_equal(TOML_STR(doc, "password"), "REDACTED");
        assert_string_equal(TOML_STR(doc, "a", "b", "token"), "REDACTED");
        assert_string_equal(TOML_STR(doc, "s"), "quote \" and https://REDACTED@h/x");
        assert_string_equal(TOML_STR(doc, "ml"), "line one https://REDACTED@h/ ");
        assert_string_equal(TOML_STR(doc, "lit"), "https://REDACTED@h");
        assert_string_equal(TOML_STR(doc, "nested", "inner", "client_secret"), "REDACTED");
        assert_string_equal(TOML_STR(doc, "empty"), "");
        assert_string_equal(toml_datetime(toml_table_get(doc, "dt")), "1979-05-27T07:32:00Z");
        assert_string_equal(toml_string(toml_array_at(toml_table_get(doc, "arr"), 0)), "x");
        assert_non_null(strstr(out, "# a comment with password = \"not-a-value\"\n"));
        assert_non_null(strstr(out, "# a comment with token = \"t\"\n"));
        assert_int_equal(n, 8);
}

/* Every valid document of the TOML conformance corpus (tests/toml-test) comes out parseable with
 * the same shape: the TOML redactor never falls back to line rules on TOML. */
static void test_redact_toml_corpus(void **state) {
        (void)state;
        _cleanup_free_ char *dir = tests_path("toml-test/tests/valid");
        _cleanup_free_ char *cmd = xasprintf("find '%s' -name '*.toml' 2>/dev/null | sort", dir);
        FILE *f = popen(cmd, "r");
        assert_non_null(f);
        char line[4096];
        size_t files = 0;
        while (fgets(line, sizeof line, f)) {
                line[strcspn(line, "\n")] = 0;
                size_t len = 0;
                _cleanup_free_ char *in = slurp(line, &len);
                assert_non_null(in);
                _cleanup_toml_ struct toml_value *a = NULL;
                if (toml_parse(in, len, &a, NULL) < 0) continue; /* the parser's answers are tested by toml-conformance */
                struct buf out = {0};
                redact_text(in, len, &out);
                _cleanup_toml_ struct toml_value *b = NULL;
                struct toml_error err;
                if (toml_parse(out.data, out.len, &b, &err) < 0)
                        fail_msg("%s: redacted TOML does not parse: line %d: %s\n%s", line, err.line, err.message, out.data);
                assert_toml_same_shape(a, b, line);
                buf_free(&out);
                files++;
        }
        pclose(f);
        if (files == 0) print_message("toml-test corpus not found in %s: skipped\n", dir);
        else assert_true(files > 150);
}

/* A containerd config that is not valid TOML is redacted by lines: the multi-line password goes
 * whole and the parse error stays at its line and column. */
static void test_redact_toml_invalid(void **state) {
        (void)state;
        static const char in[] =
                "version = 2\n"
                "[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"r.example.com\".auth]\n"
                "  password = \"\"\"\n"
                "s3cr3t-first\n"
                "s3cr3t-second\"\"\"\n"
                "  auth = { password = \"s3cr3t-inline\" }\n"
                "[plugins.\"io.containerd.grpc.v1.cri\".containerd\n"
                "  default_runtime_name = \"nvidia\"\n";
        size_t n;
        _cleanup_free_ char *out = redacted(in, &n);
        assert_absent(out, "s3cr3t");
        assert_int_equal(count_lines(out), count_lines(in));
        struct toml_error e1, e2;
        struct toml_value *d = NULL;
        assert_int_equal(toml_parse(in, strlen(in), &d, &e1), -EINVAL);
        assert_int_equal(toml_parse(out, strlen(out), &d, &e2), -EINVAL);
        assert_int_equal(e1.line, e2.line);
        assert_int_equal(e1.column, e2.column);
        assert_string_equal(e1.message, e2.message);
        assert_non_null(strstr(out, "\n[plugins.\"io.containerd.grpc.v1.cri\".containerd\n  default_runtime_name = \"nvidia\"\n"));
        /* an unterminated credential string stays unterminated: the same error, without the secret */
        static const char open[] = "version = 2\n[plugins.x]\n  password = \"s3cr3t-unterminated\n    more = 1\n";
        _cleanup_free_ char *o2 = redacted(open, &n);
        assert_absent(o2, "s3cr3t");
        assert_int_equal(toml_parse(open, strlen(open), &d, &e1), -EINVAL);
        assert_int_equal(toml_parse(o2, strlen(o2), &d, &e2), -EINVAL);
        assert_int_equal(e1.line, e2.line);
        assert_int_equal(e1.column, e2.column);
        assert_string_equal(e1.message, e2.message);
        assert_string_equal(o2, "version = 2\n[plugins.x]\n  password = \"REDACTED\n    more = 1\n");
}

/* Fails unless two JSON values have the same shape: same keys, array lengths and types. */
static void assert_json_same_shape(json_t *a, json_t *b) {
        assert_int_equal(json_typeof(a), json_typeof(b));
        if (json_is_object(a)) {
                assert_int_equal(json_object_size(a), json_object_size(b));
                const char *k;
                json_t *v;
                json_object_foreach(a, k, v) {
                        json_t *w = json_object_get(b, k);
                        if (!w) fail_msg("key '%s' lost", k);
                        assert_json_same_shape(v, w);
                }
        } else if (json_is_array(a)) {
                assert_int_equal(json_array_size(a), json_array_size(b));
                for (size_t i = 0; i < json_array_size(a); i++) assert_json_same_shape(json_array_get(a, i), json_array_get(b, i));
        } else if (!json_is_string(a)) {
                assert_true(json_equal(a, b));
        }
}

/* Redacts JSON text: asserts the result loads with in's shape. Returns the text, the document in *ret_doc. */
static char *redact_json_checked(const char *in, size_t *ret_count, json_t **ret_doc) {
        struct buf out = {0};
        *ret_count = redact_text(in, strlen(in), &out);
        json_error_t e;
        json_t *a = json_loads(in, 0, &e);
        assert_non_null(a);
        *ret_doc = json_loads(out.data, 0, &e);
        if (!*ret_doc) fail_msg("redacted JSON does not load: %s\n%s", e.text, out.data);
        assert_json_same_shape(a, *ret_doc);
        json_decref(a);
        return out.data;
}

/* Docker's daemon.json on one line (as config management writes it) and a config.json with auths
 * and HttpHeaders, indented by four: values go, the text around them stays. */
static void test_redact_json_daemon(void **state) {
        (void)state;
        static const char daemon[] =
                "{\"default-runtime\":\"nvidia\",\"runtimes\":{\"nvidia\":{\"path\":\"nvidia-container-runtime\",\"args\":[]}},"
                "\"registry-mirrors\":[\"https://mirror:s3cr3t-mirror@mirror.example.com\"],"
                "\"proxies\":{\"http-proxy\":\"http://proxyuser:s3cr3t-proxy@proxy.corp:3128\",\"no-proxy\":\"localhost,10.0.0.0/8\"},"
                "\"auth\":\"czNjcjN0LWF1dGg=\",\"log-opts\":{\"max-size\":\"10m\"}}\n";
        size_t n;
        json_t *doc = NULL;
        _cleanup_free_ char *out = redact_json_checked(daemon, &n, &doc);
        assert_absent(out, "s3cr3t");
        assert_absent(out, "czNjcjN0LWF1dGg");
        assert_int_equal(n, 3);
        assert_string_equal(out,
                            "{\"default-runtime\":\"nvidia\",\"runtimes\":{\"nvidia\":{\"path\":\"nvidia-container-runtime\",\"args\":[]}},"
                            "\"registry-mirrors\":[\"https://REDACTED@mirror.example.com\"],"
                            "\"proxies\":{\"http-proxy\":\"http://REDACTED@proxy.corp:3128\",\"no-proxy\":\"localhost,10.0.0.0/8\"},"
                            "\"auth\":\"REDACTED\",\"log-opts\":{\"max-size\":\"10m\"}}\n");
        json_decref(doc);

        static const char config[] =
                "{\n"
                "    \"auths\": {\n"
                "        \"https://index.docker.io/v1/\": {\n"
                "            \"auth\": \"dXNlcjpzM2NyM3QtYXV0aHM=\",\n"
                "            \"identitytoken\": \"s3cr3t-idtoken\"\n"
                "        }\n"
                "    },\n"
                "    \"HttpHeaders\": {\n"
                "        \"Authorization\": \"Bearer s3cr3t-header\",\n"
                "        \"User-Agent\": \"Docker-Client/24.0.7 (linux)\"\n"
                "    },\n"
                "    \"proxies\": {\"default\": {\"httpsProxy\": \"http://u:s3cr3t-p%40ss@proxy:3128\"}},\n"
                "    \"detachKeys\": \"ctrl-e,e\"\n"
                "}\n";
        out = (free(out), redact_json_checked(config, &n, &doc));
        assert_absent(out, "s3cr3t");
        assert_absent(out, "dXNlcjpzM2NyM3QtYXV0aHM");
        assert_string_equal(out,
                            "{\n"
                            "    \"auths\": {\n"
                            "        \"https://index.docker.io/v1/\": {\n"
                            "            \"auth\": \"REDACTED\",\n"
                            "            \"identitytoken\": \"REDACTED\"\n"
                            "        }\n"
                            "    },\n"
                            "    \"HttpHeaders\": {\n"
                            "        \"Authorization\": \"REDACTED\",\n"
                            "        \"User-Agent\": \"Docker-Client/24.0.7 (linux)\"\n"
                            "    },\n"
                            "    \"proxies\": {\"default\": {\"httpsProxy\": \"http://REDACTED@proxy:3128\"}},\n"
                            "    \"detachKeys\": \"ctrl-e,e\"\n"
                            "}\n");
        json_decref(doc);
}

/* Returns a NUL-separated command line as one string with the NULs written as " | ". */
static char *cmdline_text(const char *data, size_t len) {
        struct buf b = {0};
        for (size_t i = 0; i < len; i++) {
                if (data[i]) buf_append(&b, data + i, 1);
                else if (i + 1 < len) buf_puts(&b, " | ");
        }
        buf_append(&b, "", 0);
        return b.data;
}

/* /proc/<pid>/cmdline as the kernel writes it: --flag=V, --flag V, KEY=V, a header given to -H,
 * a Bearer token, a URL with credentials, a whole shell command in one argument. */
static void test_redact_cmdline_secrets(void **state) {
        (void)state;
        static const char in[] =
                "/usr/bin/dockerd\0--config-file\0/etc/docker/daemon.json\0--basic-auth=admin:s3cr3t-basic\0"
                "--password\0s3cr3t-password\0AWS_SECRET_ACCESS_KEY=s3cr3t-aws\0--registry-mirror=https://u:s3cr3t-url@m.local\0"
                "-H\0Authorization: Bearer s3cr3t-header\0--auth-header\0Bearer\0s3cr3t-bearer-arg\0"
                "sh\0-c\0curl -sf -H 'Authorization: Basic s3cr3t-b64' --token s3cr3t-tok https://x/?access_token=s3cr3t-q&v=1\0"
                "--anonymous-auth=false\0--log-level=info\0";
        struct buf out = {0};
        size_t n = redact_cmdline(in, sizeof in - 1, &out);
        _cleanup_free_ char *text = cmdline_text(out.data, out.len);
        assert_absent(text, "s3cr3t");
        assert_string_equal(text,
                            "/usr/bin/dockerd | --config-file | /etc/docker/daemon.json | --basic-auth=REDACTED | "
                            "--password | REDACTED | AWS_SECRET_ACCESS_KEY=REDACTED | --registry-mirror=https://REDACTED@m.local | "
                            "-H | Authorization: Bearer REDACTED | --auth-header | Bearer | REDACTED | "
                            "sh | -c | curl -sf -H 'Authorization: Basic REDACTED' --token REDACTED https://x/?access_token=REDACTED&v=1 | "
                            "--anonymous-auth=false | --log-level=info");
        /* as many arguments as before, each still NUL-terminated */
        size_t nul_in = 0, nul_out = 0;
        for (size_t i = 0; i < sizeof in - 1; i++) nul_in += in[i] == 0;
        for (size_t i = 0; i < out.len; i++) nul_out += out.data[i] == 0;
        assert_int_equal(nul_in, nul_out);
        assert_int_equal(out.data[out.len - 1], 0);
        assert_int_equal(n, 9);
        buf_free(&out);
}

/* Credentials in URLs anywhere in plain text (a systemd drop-in, a script): only user:password goes. */
static void test_redact_urls(void **state) {
        (void)state;
        size_t n;
        _cleanup_free_ char *out = redacted(
                "[Service]\n"
                "Environment=\"HTTPS_PROXY=http://proxyuser:s3cr3t-proxy@proxy.corp:3128\"\n"
                "Environment=\"NO_PROXY=localhost,10.0.0.0/8\"\n"
                "Environment=\"FTP_PROXY=http://ftp:p&ss;w,rd@s3cr3t@ftp-proxy:21\"\n"
                "ExecStartPre=/usr/bin/git clone https://x-access-token:s3cr3t-gh@github.com/org/repo.git /opt/repo\n"
                "# see http://example.com/docs?user=a@b and mailto:ops@example.com\n"
                "ExecStart=/usr/bin/agent --endpoint=amqp://guest:s3cr3t-amqp@rabbit:5672/ --token-file=/run/agent/token\n",
                &n);
        assert_absent(out, "s3cr3t");
        assert_string_equal(out,
                            "[Service]\n"
                            "Environment=\"HTTPS_PROXY=http://REDACTED@proxy.corp:3128\"\n"
                            "Environment=\"NO_PROXY=localhost,10.0.0.0/8\"\n"
                            "Environment=\"FTP_PROXY=http://REDACTED@ftp-proxy:21\"\n"
                            "ExecStartPre=/usr/bin/git clone https://REDACTED@github.com/org/repo.git /opt/repo\n"
                            "# see http://example.com/docs?user=a@b and mailto:ops@example.com\n"
                            "ExecStart=/usr/bin/agent --endpoint=amqp://REDACTED@rabbit:5672/ --token-file=/run/agent/token\n");
        assert_int_equal(n, 4);
}

/* A Prometheus page: label values of credential-named labels and credentials in URLs go; the page
 * still parses to the same samples. */
static void test_redact_promtext(void **state) {
        (void)state;
        static const char in[] =
                "# HELP probe_info Probe target info.\n"
                "# TYPE probe_info gauge\n"
                "probe_info{target=\"https://scraper:s3cr3t-url@exporter:9100/metrics\",token=\"s3cr3t-label\",job=\"node\"} 1\n"
                "app_requests_total{api_key=\"s3cr3t-apikey\",method=\"GET\",path=\"/v1/x?access_token=s3cr3t-query\"} 12 1700000000000\n"
                "app_login{password=\"s3cr3t-with \\\"escaped\\\" quote\",user=\"bob\"} 0\n"
                "app_up 1\n";
        size_t n;
        _cleanup_free_ char *out = redacted(in, &n);
        assert_absent(out, "s3cr3t");
        assert_absent(out, "escaped");
        assert_string_equal(out,
                            "# HELP probe_info Probe target info.\n"
                            "# TYPE probe_info gauge\n"
                            "probe_info{target=\"https://REDACTED@exporter:9100/metrics\",token=\"REDACTED\",job=\"node\"} 1\n"
                            "app_requests_total{api_key=\"REDACTED\",method=\"GET\",path=\"/v1/x?access_token=REDACTED\"} 12 1700000000000\n"
                            "app_login{password=\"REDACTED\",user=\"bob\"} 0\n"
                            "app_up 1\n");
        assert_int_equal(promtext_parse(out, strlen(out), NULL, NULL, NULL), 0);
        /* real pages of dcgm-exporter and node_exporter hold nothing to redact: they stay as they are */
        static const char *const pages[] = {"unit/testdata/dcgm-exporter-2gpu.prom", "unit/testdata/node_exporter-1.5.0.prom"};
        for (size_t i = 0; i < ELEMENTSOF(pages); i++) {
                size_t len;
                _cleanup_free_ char *page = read_source_file(pages[i], &len);
                if (!page) {
                        print_message("%s not found: skipped\n", pages[i]);
                        continue;
                }
                struct buf o = {0};
                assert_int_equal(redact_text(page, len, &o), 0);
                assert_int_equal(o.len, len);
                assert_memory_equal(o.data, page, len);
                buf_free(&o);
        }
}

/* A kubeconfig with every kind of user (token, client key, basic auth, an OIDC auth-provider, an
 * exec plugin with a secret in its env, block scalars) and a server URL with credentials. */
static void test_redact_yaml_kubeconfig(void **state) {
        (void)state;
        static const char in[] =
                "apiVersion: v1\n"
                "kind: Config\n"
                "clusters:\n"
                "- cluster:\n"
                "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==\n"
                "    server: https://admin:s3cr3t-url@10.0.0.1:6443\n"
                "  name: prod\n"
                "users:\n"
                "- name: admin\n"
                "  user:\n"
                "    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==\n"
                "    client-key-data: s3cr3t-ckd\n"
                "    token: s3cr3t-token\n"
                "- name: basic\n"
                "  user:\n"
                "    username: admin\n"
                "    password: \"s3cr3t-pw\"\n"
                "- name: oidc\n"
                "  user:\n"
                "    auth-provider:\n"
                "      config:\n"
                "        client-id: kubernetes\n"
                "        client-secret: s3cr3t-cs\n"
                "        id-token: s3cr3t-idt\n"
                "        refresh-token: 's3cr3t-rt'\n"
                "        idp-issuer-url: https://issuer.example.com\n"
                "      name: oidc\n"
                "- name: exec\n"
                "  user:\n"
                "    exec:\n"
                "      apiVersion: client.authentication.k8s.io/v1beta1\n"
                "      command: aws\n"
                "      args: [\"eks\", \"get-token\", \"--cluster-name\", \"prod\"]\n"
                "      env:\n"
                "      - name: AWS_SECRET_ACCESS_KEY\n"
                "        value: s3cr3t-exec-env\n"
                "      - name: AWS_PROFILE\n"
                "        value: prod\n"
                "- name: block\n"
                "  user:\n"
                "    token: |\n"
                "      s3cr3t-block-1\n"
                "\n"
                "      s3cr3t-block-2\n"
                "    password: >-\n"
                "      s3cr3t-folded\n"
                "    username: \"multi\n"
                "      line\"\n"
                "    client-key-data: \"s3cr3t-open\n"
                "      s3cr3t-quote\"\n"
                "contexts:\n"
                "- context: {cluster: prod, user: admin}\n"
                "  name: prod\n"
                "current-context: prod\n";
        size_t n;
        _cleanup_free_ char *out = redacted(in, &n);
        assert_absent(out, "s3cr3t");
        assert_int_equal(count_lines(out), count_lines(in));
        json_t *a = NULL, *b = NULL;
        char *err = NULL;
        assert_int_equal(yaml_to_json(in, strlen(in), &a, &err), 0);
        if (yaml_to_json(out, strlen(out), &b, &err) < 0) fail_msg("redacted YAML does not parse: %s\n%s", err, out);
        assert_json_same_shape(a, b);
        json_t *users = json_object_get(b, "users");
        assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(users, 0), "user"), "token")), "REDACTED");
        json_t *env = json_object_get(json_object_get(json_object_get(json_array_get(users, 3), "user"), "exec"), "env");
        assert_string_equal(json_string_value(json_object_get(json_array_get(env, 0), "value")), "REDACTED");
        assert_string_equal(json_string_value(json_object_get(json_array_get(env, 1), "value")), "prod");
        json_t *blk = json_object_get(json_array_get(users, 4), "user");
        assert_string_equal(json_string_value(json_object_get(blk, "username")), "multi line");
        json_t *cluster = json_object_get(json_array_get(json_object_get(b, "clusters"), 0), "cluster");
        assert_string_equal(json_string_value(json_object_get(cluster, "server")), "https://REDACTED@10.0.0.1:6443");
        assert_non_null(strstr(out, "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==\n"));
        assert_non_null(strstr(out, "        client-id: kubernetes\n"));
        json_decref(a);
        json_decref(b);
}

/* Pods as the API server returns them: a Bearer token in a probe's shell command, httpHeaders with
 * Authorization, annotations holding a password and a URL with credentials. */
static void test_redact_api_pod(void **state) {
        (void)state;
        static const char in[] =
                "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":[{\"metadata\":{\"name\":\"app-0\",\"namespace\":\"default\","
                "\"annotations\":{\"example.com/db-config\":\"host=db port=5432 user=app password=s3cr3t-annot sslmode=require\","
                "\"example.com/backend\":\"postgres://app:s3cr3t-annurl@db:5432/app\",\"example.com/db-credentials\":\"s3cr3t-cred\","
                "\"prometheus.io/scrape\":\"true\"}},"
                "\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":\"nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5-3.4.0-ubuntu22.04\","
                "\"command\":[\"/bin/sh\",\"-c\",\"exec curl -sf -H 'Authorization: Bearer s3cr3t-cmd' http://127.0.0.1:9400/health\"],"
                "\"args\":[\"--registry=https://robot:s3cr3t-reg@nvcr.io\",\"--header\",\"Authorization: Bearer s3cr3t-arg\"],"
                "\"livenessProbe\":{\"httpGet\":{\"path\":\"/healthz\",\"port\":8080,\"httpHeaders\":["
                "{\"name\":\"Authorization\",\"value\":\"Bearer s3cr3t-hh\"},{\"name\":\"X-Probe\",\"value\":\"liveness\"}]}},"
                "\"readinessProbe\":{\"exec\":{\"command\":[\"sh\",\"-c\",\"test -n \\\"$(wget -qO- --header 'PRIVATE-TOKEN: s3cr3t-pt' http://x)\\\"\"]}}"
                "}]},\"status\":{\"phase\":\"Running\",\"message\":\"pulled https://robot:s3cr3t-status@nvcr.io\"}}]}";
        json_error_t e;
        json_t *doc = json_loads(in, 0, &e);
        assert_non_null(doc);
        json_t *orig = json_deep_copy(doc);
        size_t n = redact_api_json(doc);
        _cleanup_free_ char *out = json_dumps(doc, JSON_SORT_KEYS);
        assert_absent(out, "s3cr3t");
        assert_json_same_shape(orig, doc);
        json_t *pod = json_array_get(json_object_get(doc, "items"), 0);
        json_t *ann = json_object_get(json_object_get(pod, "metadata"), "annotations");
        assert_string_equal(json_string_value(json_object_get(ann, "example.com/db-config")),
                            "host=db port=5432 user=app password=REDACTED sslmode=require");
        assert_string_equal(json_string_value(json_object_get(ann, "example.com/backend")), "postgres://REDACTED@db:5432/app");
        assert_string_equal(json_string_value(json_object_get(ann, "prometheus.io/scrape")), "true");
        json_t *c = json_array_get(json_object_get(json_object_get(pod, "spec"), "containers"), 0);
        assert_string_equal(json_string_value(json_object_get(c, "image")), "nvcr.io/nvidia/k8s/dcgm-exporter:3.3.5-3.4.0-ubuntu22.04");
        assert_string_equal(json_string_value(json_array_get(json_object_get(c, "command"), 2)),
                            "exec curl -sf -H 'Authorization: Bearer REDACTED' http://127.0.0.1:9400/health");
        json_t *hh = json_object_get(json_object_get(json_object_get(c, "livenessProbe"), "httpGet"), "httpHeaders");
        assert_string_equal(json_string_value(json_object_get(json_array_get(hh, 0), "name")), "Authorization");
        assert_string_equal(json_string_value(json_object_get(json_array_get(hh, 0), "value")), "REDACTED");
        assert_string_equal(json_string_value(json_object_get(json_array_get(hh, 1), "value")), "liveness");
        assert_int_equal(n, 9);
        json_decref(orig);
        json_decref(doc);
}

/* The files of a healthy scenario (containerd config, CDI spec, kubelet checkpoint) hold no
 * secret: redaction leaves them byte for byte. */
static void test_redact_no_false_positives(void **state) {
        (void)state;
        static const char *const files[] = {
                "scenarios/k8s-healthy/root/etc/containerd/config.toml",
                "scenarios/k8s-healthy/root/etc/nvidia-container-runtime/config.toml",
                "scenarios/k8s-healthy/root/var/run/cdi/nvidia.yaml",
                "scenarios/k8s-healthy/root/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint",
                "scenarios/docker-daemon-json/root/etc/docker/daemon.json",
                "scenarios/crio-dropin-patched/root/etc/crio/crio.conf.d/10-crio.conf",
        };
        for (size_t i = 0; i < ELEMENTSOF(files); i++) {
                size_t len;
                _cleanup_free_ char *data = read_source_file(files[i], &len);
                if (!data) {
                        print_message("%s not found: skipped\n", files[i]);
                        continue;
                }
                struct buf o = {0};
                size_t n = redact_text(data, len, &o);
                if (n != 0 || o.len != len || memcmp(o.data, data, len) != 0)
                        fail_msg("%s: %zu value(s) redacted in a file without secrets:\n%s", files[i], n, o.data);
                buf_free(&o);
        }
}

/* PEM private keys: in a JSON string (with \n escapes), in a YAML block scalar under an ordinary
 * key, on lines of their own: the key material goes, certificates stay, the file still parses. */
static void test_redact_pem(void **state) {
        (void)state;
        static const char json[] =
                "{\"tls\": {\"key\": \"-----BEGIN EC PRIVATE KEY-----\\nMHcCAQEEIs3cr3tpemAAAA\\n-----END EC PRIVATE KEY-----\\n\",\n"
                "         \"cert\": \"-----BEGIN CERTIFICATE-----\\nMIIBkeepme\\n-----END CERTIFICATE-----\\n\"}}\n";
        size_t n;
        json_t *doc = NULL;
        _cleanup_free_ char *out = redact_json_checked(json, &n, &doc);
        assert_absent(out, "s3cr3t");
        assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "tls"), "key")),
                            "-----BEGIN EC PRIVATE KEY-----\nREDACTED\n-----END EC PRIVATE KEY-----\n");
        assert_non_null(strstr(out, "MIIBkeepme"));
        assert_non_null(strstr(out, "\n         \"cert\": ")); /* the text around stays */
        json_decref(doc);
        static const char yaml[] =
                "apiVersion: v1\n"
                "data:\n"
                "  server.conf: |\n"
                "    listen 443\n"
                "    -----BEGIN RSA PRIVATE KEY-----\n"
                "    MIIEs3cr3tline1\n"
                "    s3cr3tline2\n"
                "    -----END RSA PRIVATE KEY-----\n"
                "    end\n"
                "kind: ConfigMap\n";
        _cleanup_free_ char *y = redacted(yaml, &n);
        assert_absent(y, "s3cr3t");
        assert_int_equal(n, 1);
        json_t *a = NULL, *b = NULL;
        char *err = NULL;
        assert_int_equal(yaml_to_json(yaml, strlen(yaml), &a, &err), 0);
        if (yaml_to_json(y, strlen(y), &b, &err) < 0) fail_msg("redacted YAML does not parse: %s\n%s", err, y);
        assert_json_same_shape(a, b);
        assert_string_equal(json_string_value(json_object_get(json_object_get(b, "data"), "server.conf")),
                            "listen 443\n-----BEGIN RSA PRIVATE KEY-----\nREDACTED\n-----END RSA PRIVATE KEY-----\nend\n");
        json_decref(a);
        json_decref(b);
}

/* Returns the next number of a small deterministic generator (xorshift32). */
static uint32_t next_random(uint32_t *x) {
        *x ^= *x << 13;
        *x ^= *x >> 17;
        *x ^= *x << 5;
        return *x;
}

/* Mutated inputs (bytes replaced by quotes, newlines, backslashes and brackets, inserted, deleted,
 * cut short): redaction never fails (the sanitizer build checks the memory), TOML and JSON that
 * still parse come out parsing to the same shape, command lines keep their argument count. */
static void test_redact_mutations(void **state) {
        (void)state;
        static const char *const seeds[] = {
                "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry.configs.\"r\".auth]\n  password = \"\"\"\nx\ny\"\"\"\n"
                "  identitytoken = '''a\n'''\n  auth = { username = \"u\", password = \"p\" }\n"
                "[plugins.\"io.containerd.grpc.v1.cri\".registry.headers]\n  Authorization = [\"Bearer t\", 'Basic b']\n"
                "  endpoint = [\"https://u:p@m\", # c\n  \"x\" ]\ndt = 1979-05-27 07:32:00Z\n",
                "{\"auths\": {\"r\": {\"auth\": \"dXNlcg==\"}}, \"proxies\": {\"http-proxy\": \"http://u:p@h:1\"}, "
                "\"env\": [{\"name\": \"TOKEN\", \"value\": \"v\"}], \"args\": [\"--password\", \"p\", \"--token=t\"], \"n\": [1, 2.5, null]}\n",
                "users:\n- name: a\n  user:\n    token: |\n      abc\n    password: \"x\n      y\"\n    env:\n    - name: API_KEY\n"
                "      value: k\n-----BEGIN RSA PRIVATE KEY-----\nMII\n-----END RSA PRIVATE KEY-----\nserver: https://u:p@h\n",
                "# TYPE m gauge\nm{token=\"t\",url=\"https://u:p@h\",x=\"a\\\"b\"} 1\nCMD=curl -H 'Authorization: Bearer t' --password p\n",
        };
        static const char chars[] = "\"'\\\n{}[]=:#@/ -\r\t,.";
        uint32_t rng = 0x9e3779b9;
        size_t toml_ok = 0, json_ok = 0;
        for (size_t si = 0; si < ELEMENTSOF(seeds); si++) {
                for (int round = 0; round < 2500; round++) {
                        struct buf m = {0};
                        buf_puts(&m, seeds[si]);
                        for (uint32_t k = 0, ops = 1 + next_random(&rng) % 3; k < ops && m.len > 0; k++) {
                                size_t at = next_random(&rng) % m.len;
                                char c = chars[next_random(&rng) % (sizeof chars - 1)];
                                switch (next_random(&rng) % 4) {
                                case 0: m.data[at] = c; break;
                                case 1:
                                        buf_append(&m, "", 1);
                                        memmove(m.data + at + 1, m.data + at, m.len - at - 1);
                                        m.data[at] = c;
                                        break;
                                case 2:
                                        memmove(m.data + at, m.data + at + 1, m.len - at - 1);
                                        m.len--;
                                        break;
                                default: m.len = at; break;
                                }
                                m.data[m.len] = 0;
                        }
                        struct buf out = {0};
                        redact_text(m.data, m.len, &out);
                        assert_non_null(out.data);
                        _cleanup_toml_ struct toml_value *a = NULL, *b = NULL;
                        if (toml_parse(m.data, m.len, &a, NULL) == 0) {
                                struct toml_error err;
                                if (toml_parse(out.data, out.len, &b, &err) < 0)
                                        fail_msg("redacted TOML does not parse: %s\n--- in:\n%s\n--- out:\n%s", err.message, m.data, out.data);
                                assert_toml_same_shape(a, b, "(mutated)");
                                toml_ok++;
                        }
                        json_t *ja = m.len > 0 && m.data[0] == '{' ? json_loadb(m.data, m.len, 0, NULL) : NULL;
                        if (ja) {
                                json_t *jb = json_loadb(out.data, out.len, 0, NULL);
                                if (!jb) fail_msg("redacted JSON does not load:\n%s", out.data);
                                assert_json_same_shape(ja, jb);
                                json_decref(jb);
                                json_decref(ja);
                                json_ok++;
                        }
                        buf_free(&out);
                        redact_cmdline(m.data, m.len, &out);
                        size_t nul_in = 0, nul_out = 0;
                        for (size_t i = 0; i < m.len; i++) nul_in += m.data[i] == 0;
                        for (size_t i = 0; i < out.len; i++) nul_out += out.data[i] == 0;
                        assert_int_equal(nul_in, nul_out);
                        buf_free(&out);
                        buf_free(&m);
                }
        }
        /* enough mutants stay valid for the shape checks to mean something */
        print_message("%zu TOML and %zu JSON mutants still parsed\n", toml_ok, json_ok);
        assert_true(toml_ok > 200);
        assert_true(json_ok > 200);
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
                cmocka_unit_test(test_redact_toml_containerd),
                cmocka_unit_test(test_redact_toml_corners),
                cmocka_unit_test(test_redact_toml_corpus),
                cmocka_unit_test(test_redact_toml_invalid),
                cmocka_unit_test(test_redact_json_daemon),
                cmocka_unit_test(test_redact_cmdline_secrets),
                cmocka_unit_test(test_redact_urls),
                cmocka_unit_test(test_redact_promtext),
                cmocka_unit_test(test_redact_yaml_kubeconfig),
                cmocka_unit_test(test_redact_api_pod),
                cmocka_unit_test(test_redact_no_false_positives),
                cmocka_unit_test(test_redact_pem),
                cmocka_unit_test(test_redact_mutations),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
