/* test_sxid.c: the SXid line parser and catalog against real nvidia-nvswitch kernel log lines, and the kernel log scanner's per-NVSwitch SXid statistics. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "basic/util.h"
#include "layer1_hardware/kmsg.h"
#include "nvidia/sxid.h"

/* Real lines: NVIDIA/nvtrust#124 (a boot's 22013 burst), GPUd's SXid tests and dmesg scan
 * (leptonai/gpud PR #338), NVSentinel's test injection, the brief's two examples. */
static const struct {
        const char *line;
        const char *pci;
        int instance, sxid;
        enum sxid_line_kind kind;
        int link;
        const char *desc;
} lines[] = {
        { "[   38.175561] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Data {0x0000002b, 0x0000002b, 0x00000000, "
          "0x0000002b, 0x80005302, 0x00000000, 0x00000000, 0x00000000, 0x00000000}",
          "0000:04:00", 3, 22013, SXID_LINE_DETAIL, -1, "Data {0x0000002b," },
        { "[   38.178720] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 44 Minion Link DLREQ "
          "interrupt",
          "0000:04:00", 3, 22013, SXID_LINE_NON_FATAL, 44, "Minion Link DLREQ interrupt" },
        { "[   38.180708] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Severity 0 Engine instance 44 Sub-engine "
          "instance 00",
          "0000:04:00", 3, 22013, SXID_LINE_DETAIL, -1, "Severity 0" },
        { "[ 1108.858286] nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 24007, Fatal, Link 28 sourcetrack timeout error "
          "(First)",
          "0000:c3:00", 0, 24007, SXID_LINE_FATAL, 28, "sourcetrack timeout error (First)" },
        { "kern  :err   : 2025-01-25T10:34:54,859532+00:00 nvidia-nvswitch1: SXid (PCI:0000:84:00.0): 12028, Data "
          "{0x000001c0, 0x00bd5c8a, 0x00000500, 0x00000064, 0x00000000, 0x40008000, 0x5a001100, 0x00000000, "
          "0x00000000}",
          "0000:84:00", 1, 12028, SXID_LINE_DETAIL, -1, "Data {" },
        { "[131453.740743] nvidia-nvswitch0: SXid (PCI:0000:00:00.0): 20034, Fatal, Link 30 LTSSM Fault Up",
          "0000:00:00", 0, 20034, SXID_LINE_FATAL, 30, "LTSSM Fault Up" },
        { "nvidia-nvswitch3: SXid (PCI:0000:c8:00.0): 12028, Non-fatal, Link 46 egress non-posted PRIV error (First)",
          "0000:c8:00", 3, 12028, SXID_LINE_NON_FATAL, 46, "egress non-posted PRIV error (First)" },
        { "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 24007, Fatal, Link 04 sourcetrack timeout error", "0000:05:00", 3,
          24007, SXID_LINE_FATAL, 4, "sourcetrack timeout error" },
        { "kernel: [123.456790] nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 28006, Non-fatal, Link 29 MC TS crumbstore "
          "MCTO",
          "0000:c3:00", 0, 28006, SXID_LINE_NON_FATAL, 29, "MC TS crumbstore MCTO" },
        /* no instance prefix, a device-level headline without a link, "Nonfatal" spelling */
        { "SXid (PCI:0000:06:00.0): 10004, Host_thermal_event_start", "0000:06:00", -1, 10004, SXID_LINE_OTHER, -1,
          "Host_thermal_event_start" },
        { "nvidia-nvswitch12: SXid (PCI:0001:8a:00.0): 20001, Nonfatal, Link 7 TX Replay Error", "0001:8a:00", 12,
          20001, SXID_LINE_NON_FATAL, 7, "TX Replay Error" },
        { "nvidia-nvswitch2: SXid (PCI:0000:89:00.0): 12028", "0000:89:00", 2, 12028, SXID_LINE_OTHER, -1, "" },
};

static void test_parse_real(void **state) {
        (void)state;
        for (size_t i = 0; i < ELEMENTSOF(lines); i++) {
                struct sxid_line sl;
                const char *l = lines[i].line;
                assert_int_equal(sxid_parse_line(l, strlen(l), &sl), 0);
                assert_string_equal(sl.pci, lines[i].pci);
                assert_int_equal(sl.instance, lines[i].instance);
                assert_int_equal(sl.sxid, lines[i].sxid);
                assert_int_equal(sl.kind, lines[i].kind);
                assert_int_equal(sl.link, lines[i].link);
                assert_true(sl.desc_off + sl.desc_len == strlen(l));
                assert_memory_equal(l + sl.desc_off, lines[i].desc, strlen(lines[i].desc));
        }
}

static void test_parse_bad(void **state) {
        (void)state;
        static const char *const bad[] = {
                "",
                "nvidia-nvswitch0: probe of 0000:05:00.0 failed",
                "NVRM: Xid (PCI:0000:07:00): 48, pid='<unknown>'",
                "nvidia-nvswitch0: SXid (PCI:zz:00.0): 24007, Fatal",
                "nvidia-nvswitch0: SXid (PCI:0000:05:00.0) 24007, Fatal",
                "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): , Fatal",
                "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 1234567, Fatal",
                "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 0, Fatal",
                "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 24007x, Fatal",
                "nvidia-nvswitch0: SXid (PCI:0000:05:00.0",
                "SXid (",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                struct sxid_line sl;
                assert_int_equal(sxid_parse_line(bad[i], strlen(bad[i]), &sl), -EINVAL);
        }
        assert_int_equal(sxid_parse_line(NULL, 0, NULL), -EINVAL);
        /* len bounds the read: the number cut off is no SXid */
        const char *l = "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 24007, Fatal";
        struct sxid_line sl;
        assert_int_equal(sxid_parse_line(l, 40, &sl), -EINVAL);
        /* "nvswitch" without "nvidia-" gives no instance */
        l = "xnvswitch3: SXid (PCI:0000:05:00.0): 24007, Fatal, Link 1 x";
        assert_int_equal(sxid_parse_line(l, strlen(l), &sl), 0);
        assert_int_equal(sl.instance, -1);
}

/* The guide's classes and what each line asks for. */
static void test_verdicts(void **state) {
        (void)state;
        static const struct {
                int sxid;
                enum sxid_line_kind kind;
                enum sxid_verdict want;
        } t[] = {
                { 24007, SXID_LINE_FATAL, SXID_VERDICT_RESET },
                { 24007, SXID_LINE_NON_FATAL, SXID_VERDICT_WARN }, /* the line wins */
                { 24007, SXID_LINE_DETAIL, SXID_VERDICT_RESET },   /* no word: the catalog's class */
                { 20034, SXID_LINE_FATAL, SXID_VERDICT_RESET },
                { 12020, SXID_LINE_FATAL, SXID_VERDICT_REBOOT }, /* always fatal */
                { 23001, SXID_LINE_DETAIL, SXID_VERDICT_REBOOT },
                { 22003, SXID_LINE_OTHER, SXID_VERDICT_REBOOT },
                { 22013, SXID_LINE_NON_FATAL, SXID_VERDICT_WARN },
                { 22013, SXID_LINE_DETAIL, SXID_VERDICT_WARN },
                { 11012, SXID_LINE_NON_FATAL, SXID_VERDICT_WARN },  /* corrected ECC */
                { 12028, SXID_LINE_NON_FATAL, SXID_VERDICT_RESET }, /* non-fatal, yet GPU access hangs */
                { 12028, SXID_LINE_DETAIL, SXID_VERDICT_RESET },
                { 19084, SXID_LINE_NON_FATAL, SXID_VERDICT_RESET },
                { 11004, SXID_LINE_NON_FATAL, SXID_VERDICT_RESET },
                { 20012, SXID_LINE_NON_FATAL, SXID_VERDICT_WARN },
                { 22012, SXID_LINE_FATAL, SXID_VERDICT_RESET },
                { 22012, SXID_LINE_DETAIL, SXID_VERDICT_RESET },
                { 99999, SXID_LINE_FATAL, SXID_VERDICT_RESET }, /* unknown: the line decides */
                { 99999, SXID_LINE_NON_FATAL, SXID_VERDICT_WARN },
                { 28006, SXID_LINE_OTHER, SXID_VERDICT_WARN },
        };
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                if (sxid_verdict_for(t[i].sxid, t[i].kind) != t[i].want)
                        fail_msg("SXid %d %s: %s, want %s", t[i].sxid, sxid_line_kind_name(t[i].kind),
                                 sxid_verdict_name(sxid_verdict_for(t[i].sxid, t[i].kind)),
                                 sxid_verdict_name(t[i].want));
        }
        assert_false(sxid_is_known(99999));
        assert_int_equal(sxid_lookup(99999)->sxid, 0);
        assert_int_equal(sxid_lookup(99999)->cls, SXID_CLASS_UNKNOWN);
        assert_string_equal(sxid_lookup(24007)->name, "sourcetrack timeout error");
        assert_int_equal(sxid_lookup(12020)->cls, SXID_CLASS_ALWAYS_FATAL);
}

static void test_table(void **state) {
        (void)state;
        const struct sxid_info *t;
        size_t n = sxid_catalog(&t);
        assert_true(n >= 90);
        for (size_t i = 0; i < n; i++) {
                assert_true(t[i].sxid >= 10000 && t[i].sxid < 100000);
                if (i > 0) assert_true(t[i].sxid > t[i - 1].sxid);
                assert_ptr_equal(sxid_lookup(t[i].sxid), &t[i]);
                assert_true(t[i].name && *t[i].name && t[i].remedy_text && *t[i].remedy_text);
                assert_int_not_equal(t[i].cls, SXID_CLASS_UNKNOWN);
                if (t[i].cls == SXID_CLASS_ALWAYS_FATAL) assert_true(t[i].needs_reset);
        }
        for (int c = 0; c < _SXID_CLASS_MAX; c++) assert_string_not_equal(sxid_class_name(c), "?");
        for (int v = 0; v < _SXID_VERDICT_MAX; v++) assert_string_not_equal(sxid_verdict_name(v), "?");
        for (int k = 0; k < _SXID_LINE_KIND_MAX; k++) assert_string_not_equal(sxid_line_kind_name(k), "?");
        assert_string_equal(sxid_class_name(_SXID_CLASS_MAX), "?");
        assert_string_equal(sxid_verdict_name(-1), "?");
        assert_string_equal(sxid_line_kind_name(_SXID_LINE_KIND_MAX), "?");
}

/* Returns a scan of text, finished. */
static struct kmsg_scan *scan(const char *text) {
        struct kmsg_scan *s = kmsg_scan_new();
        kmsg_scan_feed(s, text, strlen(text));
        kmsg_scan_finish(s);
        return s;
}

/* NVIDIA/nvtrust#124: three lines per occurrence, one headline each. */
static void test_scan_nonfatal_burst(void **state) {
        (void)state;
        _cleanup_kmsg_scan_ struct kmsg_scan *s =
                scan("[   38.174242] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  570.195.03  Release "
                     "Build  (dvs-builder@U22-I3-H04-03-1)  Sat Sep 20 00:47:16 UTC 2025\n"
                     "[   38.175561] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Data {0x0000002b, 0x0000002b, "
                     "0x00000000, 0x0000002b, 0x80005302, 0x00000000, 0x00000000, 0x00000000, 0x00000000}\n"
                     "[   38.178720] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 44 Minion Link "
                     "DLREQ interrupt\n"
                     "[   38.180708] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Severity 0 Engine instance 44 "
                     "Sub-engine instance 00\n"
                     "[   38.183583] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Data {0x0000002c, 0x0000002c, "
                     "0x00000000, 0x0000002c, 0x80005302, 0x00000000, 0x00000000, 0x00000000, 0x00000000}\n"
                     "[   38.187830] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Non-fatal, Link 45 Minion Link "
                     "DLREQ interrupt\n"
                     "[   38.189818] nvidia-nvswitch3: SXid (PCI:0000:04:00.0): 22013, Severity 0 Engine instance 45 "
                     "Sub-engine instance 00\n");
        const struct kmsg_summary *sum = kmsg_scan_summary(s);
        assert_int_equal(sum->n_switches, 1);
        assert_int_equal(sum->n_gpus, 0);
        const struct kmsg_switch *sw = sum->switches[0];
        assert_string_equal(sw->pci, "0000:04:00");
        assert_int_equal(sw->instance, 3);
        assert_int_equal(sw->sxid_lines, 6);
        assert_int_equal(sw->n_sxids, 1);
        const struct kmsg_sxid_stat *st = kmsg_switch_sxid(sw, 22013);
        assert_non_null(st);
        assert_null(kmsg_switch_sxid(sw, 24007));
        assert_int_equal(st->lines, 6);
        assert_int_equal(st->non_fatal, 2);
        assert_int_equal(st->fatal, 0);
        assert_int_equal(kmsg_sxid_occurrences(st), 2);
        assert_int_equal(st->link, 45);
        assert_int_equal(st->worst, SXID_VERDICT_WARN);
        assert_int_equal(sw->worst, SXID_VERDICT_WARN);
        /* first and last are headlines */
        assert_int_equal(st->first.lineno, 3);
        assert_int_equal(st->last.lineno, 6);
        assert_string_equal(st->first.ts, "38.178720");
        assert_int_equal(sum->ev[KMSG_EV_SXID].count, 6);
        assert_string_equal(sum->ev[KMSG_EV_SXID].value, "0000:04:00");
        assert_string_equal(sum->ev[KMSG_EV_SXID].value2, "22013");
        assert_int_equal(sum->ev[KMSG_EV_DRIVER_LOADED].count, 1);
}

/* A fatal SXid and its details, a non-fatal one on another switch, a details-only one. */
static void test_scan_fatal(void **state) {
        (void)state;
        _cleanup_kmsg_scan_ struct kmsg_scan *s =
                scan("6,900,5000000,-;nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 24007, Fatal, Link 28 sourcetrack "
                     "timeout error (First)\n"
                     "6,901,5000100,-;nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 24007, Severity 1 Engine instance 28 "
                     "Sub-engine instance 00\n"
                     "Jan 25 10:34:54 node kernel: nvidia-nvswitch1: SXid (PCI:0000:84:00.0): 12028, Data {0x000001c0, "
                     "0x00bd5c8a}\n"
                     "Jan 25 10:34:54 node kernel: nvidia-nvswitch1: SXid (PCI:0000:84:00.0): 12028, Data {0x000001c1, "
                     "0x00bd5c8a}\n"
                     "[ 2000.1] nvidia-nvswitch0: SXid (PCI:0000:c3:00.0): 20001, Non-fatal, Link 3 TX Replay Error\n");
        const struct kmsg_summary *sum = kmsg_scan_summary(s);
        assert_int_equal(sum->n_switches, 2);
        const struct kmsg_switch *a = sum->switches[0], *b = sum->switches[1];
        assert_string_equal(a->pci, "0000:c3:00");
        assert_int_equal(a->n_sxids, 2);
        const struct kmsg_sxid_stat *st = kmsg_switch_sxid(a, 24007);
        assert_int_equal(st->fatal, 1);
        assert_int_equal(kmsg_sxid_occurrences(st), 1);
        assert_int_equal(st->worst, SXID_VERDICT_RESET);
        assert_int_equal(st->worst_line.lineno, 1);
        assert_string_equal(st->worst_line.ts, "5.000000");
        assert_non_null(strstr(st->worst_line.text, "Fatal, Link 28"));
        assert_int_equal(a->worst, SXID_VERDICT_RESET);
        assert_int_equal(kmsg_switch_sxid(a, 20001)->worst, SXID_VERDICT_WARN);
        assert_string_equal(b->pci, "0000:84:00");
        assert_int_equal(b->instance, 1);
        st = kmsg_switch_sxid(b, 12028);
        assert_int_equal(kmsg_sxid_occurrences(st), 2);  /* no headline: its lines */
        assert_int_equal(st->worst, SXID_VERDICT_RESET); /* 12028 stalls NVLink traffic */
        assert_int_equal(st->last.lineno, 4);
}

/* A headline decides over the detail line before it; later headlines only raise it. */
static void test_scan_headline_wins(void **state) {
        (void)state;
        _cleanup_kmsg_scan_ struct kmsg_scan *s =
                scan("nvidia-nvswitch2: SXid (PCI:0000:05:00.0): 24007, Data {0x1}\n"
                     "nvidia-nvswitch2: SXid (PCI:0000:05:00.0): 24007, Non-fatal, Link 4 sourcetrack timeout error\n"
                     "nvidia-nvswitch2: SXid (PCI:0000:05:00.0): 24007, Data {0x2}\n");
        const struct kmsg_sxid_stat *st = kmsg_switch_sxid(kmsg_scan_summary(s)->switches[0], 24007);
        assert_int_equal(st->worst, SXID_VERDICT_WARN);
        assert_int_equal(st->worst_line.lineno, 2);
        assert_int_equal(st->last.lineno, 2);
        assert_int_equal(st->first.lineno, 2);
        const char *fatal =
                "nvidia-nvswitch2: SXid (PCI:0000:05:00.0): 24007, Fatal, Link 4 sourcetrack timeout error\n";
        kmsg_scan_feed(s, fatal, strlen(fatal));
        kmsg_scan_finish(s);
        st = kmsg_switch_sxid(kmsg_scan_summary(s)->switches[0], 24007);
        assert_int_equal(st->worst, SXID_VERDICT_RESET);
        assert_int_equal(st->worst_line.lineno, 4);
        assert_int_equal(kmsg_sxid_occurrences(st), 2);
}

/* Bounded: switches and SXid numbers beyond the limits are counted, not kept. */
static void test_scan_limits(void **state) {
        (void)state;
        _cleanup_kmsg_scan_ struct kmsg_scan *s = kmsg_scan_new();
        char line[160];
        for (int i = 0; i < KMSG_MAX_SWITCHES + 6; i++) {
                int n = snprintf(line, sizeof line,
                                 "nvidia-nvswitch%d: SXid (PCI:0000:%02x:00.0): 20001, Non-fatal, Link 1 x\n", i, i);
                kmsg_scan_feed(s, line, (size_t)n);
        }
        for (int i = 0; i < KMSG_MAX_SXIDS_PER_SWITCH + 3; i++) {
                int n = snprintf(line, sizeof line,
                                 "nvidia-nvswitch0: SXid (PCI:0000:00:00.0): %d, Non-fatal, Link 1 x\n", 30000 + i);
                kmsg_scan_feed(s, line, (size_t)n);
        }
        kmsg_scan_finish(s);
        const struct kmsg_summary *sum = kmsg_scan_summary(s);
        assert_int_equal(sum->n_switches, KMSG_MAX_SWITCHES);
        assert_int_equal(sum->switches_untracked_events, 6);
        const struct kmsg_switch *sw = sum->switches[0];
        assert_int_equal(sw->n_sxids, KMSG_MAX_SXIDS_PER_SWITCH);
        assert_int_equal(sw->sxids_untracked, 4); /* 20001 took one slot */
        assert_int_equal(sw->sxid_lines, KMSG_MAX_SXIDS_PER_SWITCH + 4);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse_real),
                cmocka_unit_test(test_parse_bad),
                cmocka_unit_test(test_verdicts),
                cmocka_unit_test(test_table),
                cmocka_unit_test(test_scan_nonfatal_burst),
                cmocka_unit_test(test_scan_fatal),
                cmocka_unit_test(test_scan_headline_wins),
                cmocka_unit_test(test_scan_limits),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
