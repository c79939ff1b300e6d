/* test_fabric_manager.c: the fabric manager log and dpkg status parsers with real lines, the probe's bounded read through hostfs, and the fabric-manager and nvswitch checks' verdicts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>

#include "basic/hostfs.h"
#include "basic/util.h"
#include "engine/check.h"
#include "diagnose/registry.h"
#include "facts/node.h"
#include "layer1_hardware/kmsg.h"

static char *root;

/* Writes a file below the test root, creating its directories. */
static void put(const char *rel, const char *content, size_t len) {
        _cleanup_free_ char *p = xasprintf("%s/%s", root, rel);
        _cleanup_free_ char *cmd = xasprintf("mkdir -p \"$(dirname %s)\"", p);
        assert_int_equal(system(cmd), 0);
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        assert_int_equal(fwrite(content, 1, len, f), len);
        fclose(f);
}

static int setup(void **state) {
        (void)state;
        static char tmpl[64];
        strcpy(tmpl, "/tmp/gpunode-fm-XXXXXX");
        root = mkdtemp(tmpl);
        assert_non_null(root);
        assert_int_equal(hostfs_init(root), 0);
        return 0;
}

static int teardown(void **state) {
        (void)state;
        hostfs_done();
        _cleanup_free_ char *cmd = xasprintf("rm -rf %s", root);
        return system(cmd);
}

/* Lines from leptonai/gpud's fabric manager tests and NVIDIA/gpu-operator#544, NVIDIA/nvtrust#55,
 * akash-network/website#632 (the version mismatch in both spellings). */
static const char *LOG =
        "[Jul 23 2024 07:50:01] [INFO] [tid 801] Fabric Manager version 535.129.03 is running with the following "
        "configuration options\n"
        "[Jul 23 2024 07:53:55] [ERROR] [tid 841] detected NVSwitch fatal error 20034 on fid 0 on NVSwitch pci bus id "
        "00000000:86:00.0 physical id 3 port 33\n"
        "[Sep 08 2025 23:21:50] [ERROR] detected number of NVSwitches don't match with any supported system topology, "
        "aborting fabric manager\n"
        "[Feb 25 2025 13:59:45] [INFO] [tid 1803] Received an inband message:  Message header details: magic Id:adbc "
        "request Id:1fdba18d7da4ef9e status:0 type:4 length:14\n"
        "Message payload details:Team release request: Team Handle:99c9f23d49236386 Flags:0\n"
        "\n"
        "[Jan 30 2025 10:15:00] [INFO] [tid 12300] Fabric Manager version 550.54.15 is running with the following "
        "configuration options\n"
        "[Jul 09 2024 18:14:07] [ERROR] [tid 12727] detected NVSwitch non-fatal error 12028 on fid 0 on NVSwitch pci "
        "bus id 00000000:86:00.0 physical id 3 port 61\n"
        "[Sep 17 2024 06:01:46] [ERROR] [tid 1230079] failed to find the GPU handle 5410063385821516767 in the "
        "multicast team request setup 6130285411925746235.\n"
        "[Jan 30 2025 10:15:30] [ERROR] [tid 12345] request to query NVSwitch device information from NVSwitch driver "
        "failed with error:WARNING Nothing to do [NV_WARN_NOTHING_TO_DO]\n"
        "Nov 05 13:55:26 node1 nv-fabricmanager[104230]: fabric manager NVIDIA GPU driver interface version 550.127.05 "
        "doesn't match with driver version 550.120. Please update with the matching NVIDIA driver package.\r\n"
        "[Feb 27 2025 14:10:02] [INFO] [tid 1808] multicast group 1 is allocated.\n"
        "[Feb 27 2025 14:10:03] [WARNING] [tid 1808] an unknown warning\n"
        "[Feb 27 2025 14:10:04] [ERROR] [tid 1808] something else went wrong";

static void test_log_scan(void **state) {
        (void)state;
        struct fm_log_facts l = { 0 };
        fm_log_scan(LOG, strlen(LOG), &l);
        assert_int_equal(l.lines, 14);
        assert_int_equal(l.starts, 2);
        assert_int_equal(l.start_lineno, 7);
        assert_string_equal(l.running_version, "550.54.15");
        assert_int_equal(l.errors_before_start, 2);
        assert_int_equal(l.errors, 5);
        assert_int_equal(l.kind_count[FM_LOG_NVSWITCH_NON_FATAL], 1);
        assert_int_equal(l.kind_count[FM_LOG_MULTICAST], 1);
        assert_int_equal(l.kind_count[FM_LOG_NVSWITCH_QUERY_FAILED], 1);
        assert_int_equal(l.kind_count[FM_LOG_VERSION_MISMATCH], 1);
        assert_int_equal(l.kind_count[FM_LOG_ERROR], 1);
        assert_int_equal(l.kind_count[FM_LOG_NVSWITCH_FATAL], 0); /* before the last start */
        assert_int_equal(l.kind_count[FM_LOG_TOPOLOGY_MISMATCH], 0);
        assert_string_equal(l.mismatch_fm, "550.127.05");
        assert_string_equal(l.mismatch_driver, "550.120");
        assert_int_equal(l.n_kept, 5);
        assert_int_equal(l.kept[0].lineno, 8);
        assert_int_equal(l.kept[3].kind, FM_LOG_VERSION_MISMATCH);
        /* the \r is dropped, the line kept whole */
        assert_non_null(strstr(l.kept[3].text, "Please update with the matching NVIDIA driver package."));
        assert_null(strchr(l.kept[3].text, '\r'));
        assert_int_equal(l.kept[4].lineno, 14);
        for (int k = 0; k < _FM_LOG_KIND_MAX; k++) assert_string_not_equal(fm_log_kind_name(k), "?");
        assert_string_equal(fm_log_kind_name(_FM_LOG_KIND_MAX), "?");
        struct fabric_manager_facts f = { .log = l };
        fabric_manager_facts_free(&f);
}

/* The original spelling (NVIDIA/gpu-operator#544), and a mismatch line before any start: counted. */
static void test_log_mismatch_only(void **state) {
        (void)state;
        const char *log = "nv-fabricmanager[3228]: fabric manager NVIDIA GPU driver interface version 530.30.02 don't "
                          "match with driver version 530.41.03. Please update with matching NVIDIA driver package.\n";
        struct fm_log_facts l = { 0 };
        fm_log_scan(log, strlen(log), &l);
        assert_int_equal(l.starts, 0);
        assert_null(l.running_version);
        assert_int_equal(l.errors, 1);
        assert_string_equal(l.mismatch_fm, "530.30.02");
        assert_string_equal(l.mismatch_driver, "530.41.03");
        struct fabric_manager_facts f = { .log = l };
        fabric_manager_facts_free(&f);
}

/* Only the last FM_LOG_KEPT error lines are kept; all are counted; bytes outside ASCII become '?'. */
static void test_log_bounded(void **state) {
        (void)state;
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        FILE *m = open_memstream(&text, &len);
        for (int i = 0; i < 1000; i++) fprintf(m, "[ERROR] failed to do thing %d \x01\xff\n", i);
        fputs("Fabric Manager version not-a-version is running\n", m);
        fclose(m);
        struct fm_log_facts l = { 0 };
        fm_log_scan(text, len, &l);
        assert_int_equal(l.errors, 1000);
        assert_int_equal(l.n_kept, FM_LOG_KEPT);
        assert_int_equal(l.kept[FM_LOG_KEPT - 1].lineno, 1000);
        assert_non_null(strstr(l.kept[FM_LOG_KEPT - 1].text, "thing 999 ??"));
        assert_int_equal(l.starts, 0); /* no version: no start */
        struct fabric_manager_facts f = { .log = l };
        fabric_manager_facts_free(&f);
}

static const char *DPKG = "Package: nvidia-fabricmanager-dev-550\n"
                          "Status: install ok installed\n"
                          "Version: 550.90.07-1\n"
                          "\n"
                          "Package: libnvidia-nscq-550\n"
                          "Status: install ok installed\n"
                          "Version: 550.90.07-1\n"
                          "\n"
                          "Package: nvidia-fabricmanager-535\n"
                          "Status: deinstall ok config-files\n"
                          "Version: 535.129.03-1\n"
                          "\n"
                          "Package: nvidia-fabricmanager-550\n"
                          "Status: install ok installed\n"
                          "Priority: optional\n"
                          "Section: multiverse/devel\n"
                          "Architecture: amd64\n"
                          "Version: 550.54.15-1\n"
                          "Description: Fabric Manager for NVSwitch based systems.\n"
                          " continuation line\n";

/* Finds the fabric manager package in a status file's text, as the probe does from the file read once. */
static void scan(const char *text, size_t len, struct fm_package_facts *ret) {
        struct dpkg_status dpkg;
        dpkg_status_parse(text, len, &dpkg);
        fm_package_find(&dpkg, ret);
        dpkg_status_free(&dpkg);
}

/* Runs the probe as probe_all does: dpkg's status file read once first. */
static void probe(struct fabric_manager_facts *ret) {
        struct dpkg_status dpkg;
        dpkg_status_read(&dpkg);
        probe_fabric_manager(&dpkg, ret);
        dpkg_status_free(&dpkg);
}

static void test_dpkg(void **state) {
        (void)state;
        struct fm_package_facts p = { 0 };
        scan(DPKG, strlen(DPKG), &p);
        assert_string_equal(p.name, "nvidia-fabricmanager-550");
        assert_string_equal(p.raw_version, "550.54.15-1");
        assert_string_equal(p.version, "550.54.15");
        struct fabric_manager_facts f = { .package = p };
        fabric_manager_facts_free(&f);
        /* 580 and later: one package without the branch, an epoch */
        const char *d = "Package: nvidia-fabricmanager\nVersion: 1:580.65.06-0ubuntu1\nStatus: install ok installed\n";
        p = (struct fm_package_facts){ 0 };
        scan(d, strlen(d), &p);
        assert_string_equal(p.name, "nvidia-fabricmanager");
        assert_string_equal(p.version, "580.65.06");
        f = (struct fabric_manager_facts){ .package = p };
        fabric_manager_facts_free(&f);
        /* none installed */
        d = "Package: nvidia-fabricmanager-550\nStatus: deinstall ok config-files\nVersion: 550.54.15-1\n\nPackage: "
            "nvidia-fabricmanagerx\nStatus: install ok installed\nVersion: 1\n";
        p = (struct fm_package_facts){ 0 };
        scan(d, strlen(d), &p);
        assert_null(p.name);
        assert_null(p.version);
        scan("", 0, &p);
        assert_null(p.name);
}

/* The probe through hostfs: the package, the log's tail only when it is large, the config's log path. */
static void test_probe(void **state) {
        (void)state;
        struct fabric_manager_facts f;
        probe(&f);
        assert_int_equal(f.package.rc, -ENOENT);
        assert_int_equal(f.log.rc, -ENOENT);
        assert_non_null(strstr(f.log.error, "/var/log/fabricmanager.log"));
        fabric_manager_facts_free(&f);

        put("var/lib/dpkg/status", DPKG, strlen(DPKG));
        /* 2 MiB of old lines, then the last start and one error */
        size_t big = 2u << 20;
        char *text = xmalloc(big + 400);
        size_t len = 0;
        while (len < big)
                len += (size_t)snprintf(text + len, 64, "[ERROR] [tid 1] failed to do an old thing %zu\n", len);
        len += (size_t)snprintf(
                text + len, 400,
                "[INFO] Fabric Manager version 550.54.15 is running with the following configuration options\n"
                "[ERROR] [tid 2] failed to find the GPU handle 1 in the multicast team request setup 2.\n");
        put("var/log/fabricmanager.log", text, len);
        free(text);
        probe(&f);
        assert_int_equal(f.package.rc, 0);
        assert_string_equal(f.package.version, "550.54.15");
        assert_int_equal(f.log.rc, 0);
        assert_true(f.log.tail_only);
        assert_int_equal(f.log.size, len);
        assert_true(f.log.lines < 30000); /* about 1 MiB of ~45-byte lines, not 2 */
        assert_string_equal(f.log.running_version, "550.54.15");
        assert_int_equal(f.log.errors, 1);
        assert_int_equal(f.log.kind_count[FM_LOG_MULTICAST], 1);
        assert_true(f.log.errors_before_start > 10000);
        fabric_manager_facts_free(&f);

        /* the config moves the log; an empty LOG_FILE_NAME sends it to syslog */
        const char *cfg = "LOG_LEVEL=4\nLOG_FILE_NAME=/var/log/fm/other.log\nLOG_APPEND_TO_LOG=1\n";
        put("usr/share/nvidia/nvswitch/fabricmanager.cfg", cfg, strlen(cfg));
        probe(&f);
        assert_string_equal(f.log.path, "/var/log/fm/other.log");
        assert_int_equal(f.log.rc, -ENOENT);
        fabric_manager_facts_free(&f);
        cfg = "LOG_FILE_NAME=\n";
        put("usr/share/nvidia/nvswitch/fabricmanager.cfg", cfg, strlen(cfg));
        probe(&f);
        assert_int_equal(f.log.rc, -ENOENT);
        assert_non_null(strstr(f.log.error, "syslog"));
        fabric_manager_facts_free(&f);
}

/* Runs one check over facts; returns its status and fills *ret_summary (freed by the caller). */
static enum check_status run(const char *id, const struct node_facts *facts, char **ret_summary) {
        const struct check_def *d = check_find(id);
        assert_non_null(d);
        struct finding f = { .def = d };
        d->run(facts, &f);
        assert_non_null(f.summary);
        *ret_summary = f.summary;
        for (size_t i = 0; i < f.n_evidence; i++) free(f.evidence[i]);
        free(f.evidence);
        free(f.remedy);
        return f.status;
}

static void test_checks(void **state) {
        (void)state;
        struct node_facts facts = { 0 };
        facts.pci.n_nvswitches = 4;
        facts.driver.version = (char *)"550.54.15";
        struct fm_log_facts *l = &facts.fabric_manager.log;
        struct fm_package_facts *p = &facts.fabric_manager.package;
        char *sum = NULL;

        /* nothing on the host: skip */
        l->rc = p->rc = -ENOENT;
        l->error = (char *)"/var/log/fabricmanager.log: does not exist";
        l->path = (char *)"/var/log/fabricmanager.log";
        assert_int_equal(run("fabric-manager.version-match", &facts, &sum), CHECK_SKIP);
        free(sum);
        assert_int_equal(run("fabric-manager.log-errors", &facts, &sum), CHECK_SKIP);
        free(sum);

        /* the package matches, the log's start does not */
        p->rc = 0;
        p->name = (char *)"nvidia-fabricmanager-550";
        p->version = (char *)"550.54.15";
        p->raw_version = (char *)"550.54.15-1";
        assert_int_equal(run("fabric-manager.version-match", &facts, &sum), CHECK_PASS);
        free(sum);
        l->rc = 0;
        l->running_version = (char *)"550.90.07";
        l->start_lineno = 1;
        assert_int_equal(run("fabric-manager.version-match", &facts, &sum), CHECK_FAIL);
        assert_non_null(strstr(sum, "550.90.07"));
        free(sum);
        l->running_version = (char *)"550.54.15";
        assert_int_equal(run("fabric-manager.version-match", &facts, &sum), CHECK_PASS);
        free(sum);
        assert_int_equal(run("fabric-manager.log-errors", &facts, &sum), CHECK_PASS);
        free(sum);

        /* a warning kind, then a failing one */
        l->errors = 1;
        l->kind_count[FM_LOG_MULTICAST] = 1;
        l->n_kept = 1;
        l->kept[0] = (struct fm_log_line){ .lineno = 3, .kind = FM_LOG_MULTICAST };
        assert_int_equal(run("fabric-manager.log-errors", &facts, &sum), CHECK_WARN);
        free(sum);
        l->errors = 2;
        l->kind_count[FM_LOG_TOPOLOGY_MISMATCH] = 1;
        assert_int_equal(run("fabric-manager.log-errors", &facts, &sum), CHECK_FAIL);
        assert_non_null(strstr(sum, "topology"));
        free(sum);

        /* an unreadable log warns */
        l->rc = -EACCES;
        l->running_version = NULL;
        l->error = (char *)"/var/log/fabricmanager.log: Permission denied";
        assert_int_equal(run("fabric-manager.log-errors", &facts, &sum), CHECK_WARN);
        free(sum);
        p->name = NULL;
        assert_int_equal(run("fabric-manager.version-match", &facts, &sum), CHECK_WARN);
        free(sum);

        /* no NVSwitch: every one skips */
        facts.pci.n_nvswitches = 0;
        assert_int_equal(run("fabric-manager.version-match", &facts, &sum), CHECK_SKIP);
        free(sum);
        assert_int_equal(run("fabric-manager.log-errors", &facts, &sum), CHECK_SKIP);
        free(sum);
        assert_int_equal(run("nvswitch.sxid-errors", &facts, &sum), CHECK_SKIP);
        free(sum);
}

/* nvswitch.sxid-errors over real lines. */
static void test_sxid_check(void **state) {
        (void)state;
        struct node_facts facts = { 0 };
        facts.pci.n_nvswitches = 4;
        facts.kmsg.source = (char *)"/dev/kmsg";
        char *sum = NULL;
        /* unreadable log */
        facts.kmsg.rc = -EPERM;
        facts.kmsg.error = (char *)"/dev/kmsg: Operation not permitted";
        assert_int_equal(run("nvswitch.sxid-errors", &facts, &sum), CHECK_WARN);
        free(sum);
        facts.kmsg.rc = 0;
        static const struct {
                const char *log;
                enum check_status want;
                const char *says;
        } t[] = {
                { "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15\n", CHECK_PASS, "no SXid" },
                { "nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 44 Minion Link DLREQ interrupt\n",
                  CHECK_WARN, "non-fatal SXid 22013" },
                { "nvidia-nvswitch3: SXid (PCI:0000:c8:00.0): 12028, Non-fatal, Link 46 egress non-posted PRIV error "
                  "(First)\n",
                  CHECK_FAIL, "SXid 12028" },
                { "[ 1108.858286] nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 24007, Fatal, Link 28 sourcetrack timeout "
                  "error (First)\n"
                  "nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 44 Minion Link DLREQ interrupt\n",
                  CHECK_FAIL, "fatal SXid 24007" },
                { "nvidia-nvswitch1: SXid (PCI:0000:84:00.0): 12020, Fatal, Link 3 egress sequence ID error\n",
                  CHECK_FAIL, "always-fatal" },
        };
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                facts.kmsg.scan = kmsg_scan_new();
                kmsg_scan_feed(facts.kmsg.scan, t[i].log, strlen(t[i].log));
                kmsg_scan_finish(facts.kmsg.scan);
                enum check_status st = run("nvswitch.sxid-errors", &facts, &sum);
                if (st != t[i].want || !strstr(sum, t[i].says))
                        fail_msg("%s: %s: %s", t[i].log, check_status_name(st), sum);
                free(sum);
                kmsg_scan_free(facts.kmsg.scan);
        }
        /* SXid lines with no NVSwitch on the PCI bus (an unreadable sysfs) are still judged */
        facts.pci.n_nvswitches = 0;
        facts.kmsg.scan = kmsg_scan_new();
        const char *l =
                "nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 24007, Fatal, Link 28 sourcetrack timeout error (First)\n";
        kmsg_scan_feed(facts.kmsg.scan, l, strlen(l));
        assert_int_equal(run("nvswitch.sxid-errors", &facts, &sum), CHECK_FAIL);
        free(sum);
        kmsg_scan_free(facts.kmsg.scan);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_log_scan),
                cmocka_unit_test(test_log_mismatch_only),
                cmocka_unit_test(test_log_bounded),
                cmocka_unit_test(test_dpkg),
                cmocka_unit_test_setup_teardown(test_probe, setup, teardown),
                cmocka_unit_test(test_checks),
                cmocka_unit_test(test_sxid_check),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
