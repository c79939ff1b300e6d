/* test_containerd.c: containerd config resolution: versions, imports (globs, relative, cycles, order), merge rules, errors. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <sys/stat.h>
#include <time.h>

#include "facts/node.h"
#include "facts/layer2_container.h"
#include "basic/hostfs.h"
#include "basic/toml.h"
#include "basic/util.h"
#include "engine/check.h"
#include "diagnose/registry.h"

static char *root;

/* Writes a file below the test root, creating its directories. */
static void put(const char *rel, const char *content) {
        _cleanup_free_ char *p = xasprintf("%s/%s", root, rel);
        _cleanup_free_ char *cmd = xasprintf("mkdir -p \"$(dirname %s)\"", p);
        assert_int_equal(system(cmd), 0);
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fputs(content, f);
        fclose(f);
}

static int setup(void **state) {
        static char tmpl[64];
        strcpy(tmpl, "/tmp/gpunode-ctd-XXXXXX");
        root = mkdtemp(tmpl);
        assert_non_null(root);
        assert_int_equal(hostfs_init(root), 0);
        return 0;
}

static int teardown(void **state) {
        hostfs_done();
        _cleanup_free_ char *cmd = xasprintf("rm -rf %s", root);
        return system(cmd);
}

/* Resolves /etc/containerd/config.toml below the root into *c. */
static void resolve(struct containerd_facts *c) {
        *c = (struct containerd_facts){0};
        c->config_path = xstrdup("/etc/containerd/config.toml");
        containerd_resolve(c);
}

static const struct ctd_runtime *runtime(const struct containerd_facts *c, const char *name) {
        for (size_t i = 0; i < c->n_runtimes; i++)
                if (streq(c->runtimes[i].name, name)) return &c->runtimes[i];
        return NULL;
}

/* The v2 example nvidia-ctk writes (reference/container-toolkit.md). */
static const char *V2_PATCHED =
        "version = 2\n"
        "[plugins]\n"
        "  [plugins.\"io.containerd.grpc.v1.cri\"]\n"
        "    [plugins.\"io.containerd.grpc.v1.cri\".containerd]\n"
        "      default_runtime_name = \"runc\"\n"
        "      [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes]\n"
        "        [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]\n"
        "          runtime_type = \"io.containerd.runc.v2\"\n"
        "          [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\n"
        "            BinaryName = \"/usr/bin/nvidia-container-runtime\"\n"
        "        [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]\n"
        "          runtime_type = \"io.containerd.runc.v2\"\n"
        "          [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\n"
        "            BinaryName = \"/usr/bin/runc\"\n";

static void test_v2_main(void **state) {
        put("etc/containerd/config.toml", V2_PATCHED);
        put("usr/bin/nvidia-container-runtime", "#!/bin/sh\n");
        _cleanup_free_ char *p = xasprintf("%s/usr/bin/nvidia-container-runtime", root);
        chmod(p, 0755);
        struct containerd_facts c;
        resolve(&c);
        assert_int_equal(c.rc, 0);
        assert_int_equal(c.version, 2);
        assert_string_equal(c.cri_plugin, "io.containerd.grpc.v1.cri");
        assert_false(c.deep_merge);
        assert_int_equal(c.n_files, 1);
        assert_true(c.files[0].mentions_nvidia);
        const struct ctd_runtime *nv = runtime(&c, "nvidia");
        assert_non_null(nv);
        assert_string_equal(nv->runtime_type, "io.containerd.runc.v2");
        assert_string_equal(nv->binary_name, "/usr/bin/nvidia-container-runtime");
        assert_int_equal(nv->binary_rc, 0);
        assert_int_equal(runtime(&c, "runc")->binary_rc, -ENOENT);
        assert_string_equal(c.default_runtime, "runc");
        assert_int_equal(c.enable_cdi, -1);
        containerd_facts_free(&c);
}

/* Dotted keys and inline tables spell the same settings. */
static void test_v2_dotted_inline(void **state) {
        put("etc/containerd/config.toml",
            "version = 2\n"
            "[plugins.\"io.containerd.grpc.v1.cri\"]\n"
            "enable_cdi = true\n"
            "containerd.default_runtime_name = \"nvidia\"\n"
            "containerd.runtimes.nvidia = { runtime_type = \"io.containerd.runc.v2\", options = { BinaryName = \"nvidia-container-runtime\" } }\n");
        struct containerd_facts c;
        resolve(&c);
        assert_int_equal(c.rc, 0);
        assert_string_equal(c.default_runtime, "nvidia");
        assert_int_equal(c.enable_cdi, 1);
        assert_string_equal(runtime(&c, "nvidia")->binary_name, "nvidia-container-runtime");
        containerd_facts_free(&c);
}

/* containerd 2.x: v3, the toolkit 1.18 drop-in through a glob import, merged key by key. */
static void test_v3_dropin_glob(void **state) {
        put("etc/containerd/config.toml",
            "version = 3\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n"
            "[plugins.\"io.containerd.cri.v1.runtime\".containerd]\n  default_runtime_name = \"runc\"\n"
            "[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.runc]\n  runtime_type = \"io.containerd.runc.v2\"\n");
        put("etc/containerd/conf.d/99-nvidia.toml",
            "version = 3\n[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.nvidia]\n"
            "  runtime_type = \"io.containerd.runc.v2\"\n"
            "  [plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.nvidia.options]\n"
            "    BinaryName = \"/usr/bin/nvidia-container-runtime\"\n");
        put("etc/containerd/conf.d/10-first.toml", "version = 3\n[plugins.\"io.containerd.cri.v1.runtime\"]\nenable_cdi = false\n");
        put("etc/containerd/conf.d/README", "not toml\n");
        struct containerd_facts c;
        resolve(&c);
        assert_int_equal(c.rc, 0);
        assert_int_equal(c.version, 3);
        assert_true(c.deep_merge);
        assert_int_equal(c.n_files, 3);
        assert_string_equal(c.files[1].path, "/etc/containerd/conf.d/10-first.toml");
        assert_string_equal(c.files[2].path, "/etc/containerd/conf.d/99-nvidia.toml");
        assert_string_equal(c.files[2].imported_by, "/etc/containerd/config.toml");
        assert_non_null(runtime(&c, "runc"));
        const struct ctd_runtime *nv = runtime(&c, "nvidia");
        assert_non_null(nv);
        assert_string_equal(nv->binary_file, "/etc/containerd/conf.d/99-nvidia.toml");
        assert_string_equal(c.default_runtime, "runc");
        assert_string_equal(c.default_runtime_file, "/etc/containerd/config.toml");
        assert_int_equal(c.enable_cdi, 0);
        assert_int_equal(c.n_stray, 0);
        containerd_facts_free(&c);
}

/* containerd 1.x: a drop-in's CRI table replaces the main file's whole. */
static void test_v2_plugin_replaced(void **state) {
        put("etc/containerd/config.toml", "version = 2\nimports = [\"conf.d/nvidia.toml\"]\n"
                                          "[plugins.\"io.containerd.grpc.v1.cri\".containerd]\ndefault_runtime_name = \"nvidia\"\n"
                                          "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\n"
                                          "BinaryName = \"/usr/bin/nvidia-container-runtime\"\n");
        put("etc/containerd/conf.d/nvidia.toml", "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\nconfig_path = \"/x\"\n");
        struct containerd_facts c;
        resolve(&c);
        assert_int_equal(c.rc, 0);
        assert_int_equal(c.n_files, 2);
        assert_string_equal(c.cri_owner, "/etc/containerd/conf.d/nvidia.toml"); /* relative import joined */
        assert_null(runtime(&c, "nvidia"));
        assert_null(c.default_runtime);
        assert_true(c.files[0].mentions_nvidia);
        containerd_facts_free(&c);
}

/* A drop-in the main file does not import is stray; `imports` under a table is misplaced. */
static void test_stray_and_misplaced(void **state) {
        put("etc/containerd/config.toml", "version = 3\n[plugins.\"io.containerd.cri.v1.images\"]\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n");
        put("etc/containerd/conf.d/99-nvidia.toml", "version = 3\n[plugins.\"io.containerd.cri.v1.runtime\".containerd.runtimes.nvidia]\n"
                                                   "runtime_type = \"io.containerd.runc.v2\"\n");
        struct containerd_facts c;
        resolve(&c);
        assert_int_equal(c.rc, 0);
        assert_int_equal(c.n_files, 1);
        assert_int_equal(c.n_stray, 1);
        assert_true(c.stray[0].mentions_nvidia);
        assert_string_equal(c.misplaced_imports, "plugins.\"io.containerd.cri.v1.images\"");
        containerd_facts_free(&c);
}

/* Cycles end; a missing plain import and a higher drop-in version stop loading. */
static void test_cycles_missing_version(void **state) {
        put("etc/containerd/config.toml", "version = 2\nimports = [\"a.toml\", \"./config.toml\"]\n");
        put("etc/containerd/a.toml", "version = 2\nimports = [\"/etc/containerd/config.toml\", \"../containerd/a.toml\"]\n");
        struct containerd_facts c;
        resolve(&c);
        assert_int_equal(c.rc, 0);
        assert_int_equal(c.n_files, 2);
        containerd_facts_free(&c);

        put("etc/containerd/a.toml", "version = 2\nimports = [\"/etc/containerd/missing.toml\"]\n");
        resolve(&c);
        assert_int_equal(c.rc, -ENOENT);
        assert_non_null(strstr(c.error, "/etc/containerd/missing.toml (imported by /etc/containerd/a.toml)"));
        containerd_facts_free(&c);

        put("etc/containerd/a.toml", "version = 3\n");
        resolve(&c);
        assert_int_equal(c.rc, -EINVAL);
        assert_non_null(strstr(c.error, "drop-in version 3 is higher"));
        containerd_facts_free(&c);
}

/* v1 (no version key): plugins.cri; an older drop-in migrates into a v3 main file. */
static void test_v1_and_migration(void **state) {
        put("etc/containerd/config.toml", "disabled_plugins = [\"cri\"]\n[plugins.cri.containerd.runtimes.nvidia]\nruntime_type = \"io.containerd.runc.v2\"\n");
        struct containerd_facts c;
        resolve(&c);
        assert_int_equal(c.version, 1);
        assert_string_equal(c.cri_plugin, "cri");
        assert_true(c.cri_disabled);
        assert_non_null(runtime(&c, "nvidia"));
        containerd_facts_free(&c);

        put("etc/containerd/config.toml", "version = 3\nimports = [\"/etc/containerd/old.toml\"]\n");
        put("etc/containerd/old.toml", "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\n"
                                       "BinaryName = \"/usr/bin/nvidia-container-runtime\"\n");
        resolve(&c);
        assert_int_equal(c.rc, 0);
        assert_non_null(runtime(&c, "nvidia"));
        containerd_facts_free(&c);
}

/* A TOML error names file, line and column. */
static void test_toml_error(void **state) {
        struct runtime_config_file f;
        const char *text = "version = 2\n[plugins\n";
        assert_int_equal(containerd_parse_file("/etc/containerd/config.toml", text, strlen(text), &f, NULL), -EINVAL);
        assert_non_null(strstr(f.error, "/etc/containerd/config.toml: line 2, column"));
        runtime_config_file_free(&f);
        text = "version = 7\n";
        assert_int_equal(containerd_parse_file("/x.toml", text, strlen(text), &f, NULL), -EINVAL);
        runtime_config_file_free(&f);
}

/* Runs the check id on a node whose only layer 2 fact is containerd c; returns its status and, in
 * *ret_summary (malloc'd), its summary. */
static enum check_status judge(const char *id, const struct containerd_facts *c, char **ret_summary) {
        struct runtime_facts rt = {.containerd = *c, .infiniband_rc = -ENOENT};
        struct node_facts facts = {.runtime = &rt};
        const struct check_def *d = check_find(id);
        assert_non_null(d);
        struct finding f = {.def = d};
        d->run(&facts, &f);
        *ret_summary = f.summary;
        free(f.remedy);
        for (size_t i = 0; i < f.n_evidence; i++) free(f.evidence[i]);
        free(f.evidence);
        return f.status;
}

/* Runs the containerd probe as probe_all does: dpkg's status file read once first. */
static void probe(struct containerd_facts *ret) {
        struct dpkg_status dpkg;
        dpkg_status_read(&dpkg);
        probe_containerd(&dpkg, ret);
        dpkg_status_free(&dpkg);
}

/* A config.toml that is a symlink loop is a config containerd cannot load, not "no config: never patched". */
static void test_config_symlink_loop(void **state) {
        put("etc/containerd/placeholder", "");
        _cleanup_free_ char *p = xasprintf("%s/etc/containerd/config.toml", root);
        assert_int_equal(symlink("config.toml", p), 0);
        struct containerd_facts c;
        probe(&c);
        assert_true(c.present);
        assert_int_equal(c.rc, -ELOOP);
        _cleanup_free_ char *sum = NULL;
        assert_int_equal(judge("container-toolkit.runtime-config", &c, &sum), CHECK_FAIL);
        assert_non_null(strstr(sum, "symlink loop"));
        _cleanup_free_ char *sum2 = NULL;
        judge("container-toolkit.nvidia-runtime", &c, &sum2);
        assert_null(strstr(sum2, "never patched"));
        containerd_facts_free(&c);
}

/* A config over gpunode's own read cap is "cannot tell", not "containerd cannot load its config". */
static void test_config_too_large(void **state) {
        _cleanup_free_ char *big = xmalloc((1u << 20) + 4096);
        memset(big, '#', (1u << 20) + 4095);
        big[0] = '\n';
        big[(1u << 20) + 4095] = 0;
        put("etc/containerd/config.toml", big);
        struct containerd_facts c;
        probe(&c);
        assert_true(c.present);
        assert_int_equal(c.rc, -EFBIG);
        _cleanup_free_ char *sum = NULL;
        assert_int_equal(judge("container-toolkit.runtime-config", &c, &sum), CHECK_WARN);
        assert_null(strstr(sum, "containerd cannot load"));
        assert_non_null(strstr(sum, "cannot tell"));
        _cleanup_free_ char *sum2 = NULL;
        judge("container-toolkit.nvidia-runtime", &c, &sum2);
        assert_null(strstr(sum2, "never patched"));
        containerd_facts_free(&c);
}

/* An import glob of wildcard folders over symlink loops (a/b -> .., proc/<pid>/root and cwd -> /) ends within
 * a bound and says it was cut, naming the pattern. */
static void test_glob_symlink_loops(void **state) {
        const char *pattern = "/*/*/*/*/*/*/*/x.toml";
        _cleanup_free_ char *main_cfg = xasprintf("version = 2\nimports = [\"%s\"]\n", pattern);
        put("etc/containerd/config.toml", main_cfg);
        put("a/placeholder", "");
        _cleanup_free_ char *ab = xasprintf("%s/a/b", root);
        assert_int_equal(symlink("..", ab), 0);
        for (int pid = 1; pid <= 200; pid++) {
                _cleanup_free_ char *rel = xasprintf("proc/%d/placeholder", pid);
                put(rel, "");
                _cleanup_free_ char *r = xasprintf("%s/proc/%d/root", root, pid);
                _cleanup_free_ char *cwd = xasprintf("%s/proc/%d/cwd", root, pid);
                assert_int_equal(symlink("/", r), 0);
                assert_int_equal(symlink("/", cwd), 0);
        }
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        struct containerd_facts c;
        resolve(&c);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        if (secs > 2.0) fail_msg("the glob took %.1f s", secs);
        assert_int_equal(c.rc, 0);
        assert_non_null(c.imports_cut);
        assert_non_null(strstr(c.imports_cut, pattern));
        c.present = true;
        _cleanup_free_ char *sum = NULL;
        assert_int_equal(judge("container-toolkit.runtime-config", &c, &sum), CHECK_WARN);
        assert_non_null(strstr(sum, pattern));
        containerd_facts_free(&c);
}

/* The drop-in replaces the whole CRI table (a registry setting only) and the main file has the nvidia runtime. */
static const char *IMPORT_MAIN = "version = 2\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n"
                                 "[plugins.\"io.containerd.grpc.v1.cri\".containerd]\ndefault_runtime_name = \"nvidia\"\n"
                                 "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]\n"
                                 "runtime_type = \"io.containerd.runc.v2\"\n"
                                 "[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\n"
                                 "BinaryName = \"/usr/bin/nvidia-container-runtime\"\n";
static const char *IMPORT_DROPIN = "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".registry]\nconfig_path = \"/etc/containerd/certs.d\"\n";

/* Resolves with containerd's version set as the probe would have found it. */
static void resolve_as(struct containerd_facts *c, int major, int minor) {
        *c = (struct containerd_facts){.major = major, .minor = minor};
        c->config_path = xstrdup("/etc/containerd/config.toml");
        containerd_resolve(c);
}

/* The merge rule follows containerd's version, not the config's: with the same v2 files, 1.x loses the
 * main file's nvidia runtime to the drop-in's CRI table, 2.x merges key by key and keeps it; unknown,
 * gpunode assumes 1.x and records that 2.x would differ. */
static void test_merge_by_containerd_version(void **state) {
        put("etc/containerd/config.toml", IMPORT_MAIN);
        put("etc/containerd/conf.d/10-registry.toml", IMPORT_DROPIN);
        struct containerd_facts c;
        resolve_as(&c, 1, 7);
        assert_int_equal(c.rc, 0);
        assert_false(c.deep_merge);
        assert_false(c.merge_assumed);
        assert_null(c.merge_other);
        assert_null(runtime(&c, "nvidia"));
        assert_string_equal(c.cri_owner, "/etc/containerd/conf.d/10-registry.toml");
        containerd_facts_free(&c);

        resolve_as(&c, 2, 0);
        assert_int_equal(c.rc, 0);
        assert_true(c.deep_merge);
        const struct ctd_runtime *nv = runtime(&c, "nvidia");
        assert_non_null(nv);
        assert_string_equal(nv->binary_file, "/etc/containerd/config.toml");
        assert_string_equal(c.default_runtime, "nvidia");
        containerd_facts_free(&c);

        resolve_as(&c, 0, 0);
        assert_int_equal(c.rc, 0);
        assert_true(c.merge_assumed);
        assert_false(c.deep_merge);
        assert_non_null(c.merge_other);
        assert_non_null(strstr(c.merge_other, "containerd 1.x's rule gives no nvidia runtime"));
        assert_non_null(strstr(c.merge_other, "2.x's gives the nvidia runtime from /etc/containerd/config.toml"));
        c.present = true;
        _cleanup_free_ char *sum = NULL;
        assert_int_equal(judge("container-toolkit.nvidia-runtime", &c, &sum), CHECK_WARN);
        assert_non_null(strstr(sum, "cannot tell"));
        containerd_facts_free(&c);

        /* containerd 1.x refuses a version 3 config */
        put("etc/containerd/config.toml", "version = 3\n");
        resolve_as(&c, 1, 7);
        assert_int_equal(c.rc, -EINVAL);
        assert_non_null(strstr(c.error, "unsupported config version"));
        containerd_facts_free(&c);
}

/* runtime_type io.containerd.runtime.v1.linux runs options.Runtime (what the toolkit writes into a v1
 * config), not BinaryName: a config patched so is healthy under containerd 1.x, and removed in 2.x. */
static void test_v1_linux_runtime(void **state) {
        put("etc/containerd/config.toml",
            "[plugins]\n  [plugins.cri]\n    [plugins.cri.containerd]\n      default_runtime_name = \"nvidia\"\n"
            "      [plugins.cri.containerd.runtimes.nvidia]\n        runtime_type = \"io.containerd.runtime.v1.linux\"\n"
            "        [plugins.cri.containerd.runtimes.nvidia.options]\n          Runtime = \"/usr/bin/nvidia-container-runtime\"\n");
        put("usr/bin/nvidia-container-runtime", "#!/bin/sh\n");
        _cleanup_free_ char *bin = xasprintf("%s/usr/bin/nvidia-container-runtime", root);
        assert_int_equal(chmod(bin, 0755), 0);
        struct containerd_facts c;
        resolve_as(&c, 1, 6);
        assert_int_equal(c.rc, 0);
        assert_int_equal(c.version, 1);
        const struct ctd_runtime *nv = runtime(&c, "nvidia");
        assert_non_null(nv);
        assert_string_equal(nv->binary_key, "Runtime");
        assert_string_equal(nv->binary_name, "/usr/bin/nvidia-container-runtime");
        assert_int_equal(nv->binary_rc, 0);
        c.present = true;
        _cleanup_free_ char *sum = NULL, *sum2 = NULL, *sum3 = NULL;
        enum check_status st = judge("container-toolkit.nvidia-runtime", &c, &sum);
        if (st != CHECK_PASS) fail_msg("%s", sum);
        assert_int_equal(judge("container-toolkit.runtime-binary", &c, &sum2), CHECK_PASS);
        c.major = 2; /* the same config under containerd 2.x */
        assert_int_equal(judge("container-toolkit.nvidia-runtime", &c, &sum3), CHECK_FAIL);
        assert_non_null(strstr(sum3, "removed"));
        containerd_facts_free(&c);
}

/* containerd's version as dpkg and its releases write it (dpkg's status file itself: test_dpkg.c). */
static void test_dpkg_version(void **state) {
        int major, minor;
        assert_int_equal(containerd_parse_version("1.6.20~ds1-1+b1", &major, &minor), 0);
        assert_int_equal(major, 1);
        assert_int_equal(minor, 6);
        assert_int_equal(containerd_parse_version("1:2.0.4-1", &major, &minor), 0);
        assert_int_equal(major, 2);
        assert_int_equal(containerd_parse_version("v1.7.24", &major, &minor), 0);
        assert_int_equal(minor, 7);
        assert_int_equal(containerd_parse_version("(devel)", &major, &minor), -EINVAL);
        assert_int_equal(containerd_parse_version("1", &major, &minor), -EINVAL);
        assert_int_equal(containerd_parse_version("", &major, &minor), -EINVAL);
}

/* The probe reads the version of the package that owns the binary, and says "cannot tell" for a binary
 * no package lists. */
static void test_probe_version(void **state) {
        put("usr/bin/containerd", "\x7f" "ELF");
        _cleanup_free_ char *bin = xasprintf("%s/usr/bin/containerd", root);
        assert_int_equal(chmod(bin, 0755), 0);
        put("etc/containerd/config.toml", "version = 2\n");
        struct containerd_facts c;
        probe(&c);
        assert_int_equal(c.major, 0);
        assert_non_null(strstr(c.version_from, "cannot tell"));
        containerd_facts_free(&c);
        put("var/lib/dpkg/info/containerd.io.list", "/.\n/usr\n/usr/bin\n/usr/bin/containerd\n/usr/bin/ctr\n");
        put("var/lib/dpkg/status", "Package: containerd.io\nStatus: install ok installed\nVersion: 2.0.5-1\n");
        probe(&c);
        assert_int_equal(c.major, 2);
        assert_int_equal(c.minor, 0);
        assert_string_equal(c.version_text, "2.0.5-1");
        assert_true(c.deep_merge); /* a v2 config under containerd 2.x */
        containerd_facts_free(&c);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_setup_teardown(test_v2_main, setup, teardown),
                cmocka_unit_test_setup_teardown(test_v2_dotted_inline, setup, teardown),
                cmocka_unit_test_setup_teardown(test_v3_dropin_glob, setup, teardown),
                cmocka_unit_test_setup_teardown(test_v2_plugin_replaced, setup, teardown),
                cmocka_unit_test_setup_teardown(test_stray_and_misplaced, setup, teardown),
                cmocka_unit_test_setup_teardown(test_cycles_missing_version, setup, teardown),
                cmocka_unit_test_setup_teardown(test_v1_and_migration, setup, teardown),
                cmocka_unit_test(test_toml_error),
                cmocka_unit_test_setup_teardown(test_config_symlink_loop, setup, teardown),
                cmocka_unit_test_setup_teardown(test_config_too_large, setup, teardown),
                cmocka_unit_test_setup_teardown(test_glob_symlink_loops, setup, teardown),
                cmocka_unit_test_setup_teardown(test_merge_by_containerd_version, setup, teardown),
                cmocka_unit_test_setup_teardown(test_v1_linux_runtime, setup, teardown),
                cmocka_unit_test(test_dpkg_version),
                cmocka_unit_test_setup_teardown(test_probe_version, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
