/* test_xid.c: the Xid catalog: the classifications gpunode relies on, table consistency, NVLink5 severity from the line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "basic/util.h"
#include "layer1_hardware/kmsg.h"
#include "nvidia/xid.h"

/* The classifications the brief and reference/xid-catalog.md name. */
static void test_known(void **state) {
        (void)state;
        static const struct {
                int xid;
                enum xid_action action;
                enum xid_severity severity;
                enum xid_remedy remedy;
        } t[] = {
                { 13, XID_ACTION_RESTART_APP, XID_APPLICATION, XID_REMEDY_RESTART_APP },
                { 31, XID_ACTION_RESTART_APP, XID_APPLICATION, XID_REMEDY_RESTART_APP },
                { 32, XID_ACTION_RESTART_APP, XID_APPLICATION, XID_REMEDY_RESTART_APP },
                { 43, XID_ACTION_IGNORE, XID_APPLICATION, XID_REMEDY_RESTART_APP },
                { 45, XID_ACTION_WORKFLOW_XID_45, XID_APPLICATION, XID_REMEDY_RESTART_APP },
                { 48, XID_ACTION_WORKFLOW_XID_48, XID_CRITICAL, XID_REMEDY_RESET_GPU },
                { 61, XID_ACTION_CONTACT_SUPPORT, XID_CRITICAL, XID_REMEDY_RESET_GPU },
                { 62, XID_ACTION_RESET_GPU, XID_CRITICAL, XID_REMEDY_RESET_GPU },
                { 63, XID_ACTION_IGNORE, XID_INFO, XID_REMEDY_NONE },
                { 64, XID_ACTION_RESET_GPU, XID_CRITICAL, XID_REMEDY_REBOOT_NODE },
                { 68, XID_ACTION_RESTART_APP, XID_APPLICATION, XID_REMEDY_RESTART_APP },
                { 69, XID_ACTION_RESTART_APP, XID_APPLICATION, XID_REMEDY_RESTART_APP },
                { 74, XID_ACTION_WORKFLOW_NVLINK_ERR, XID_CRITICAL, XID_REMEDY_RESET_GPU },
                { 79, XID_ACTION_RESTART_BM, XID_CRITICAL, XID_REMEDY_REBOOT_NODE },
                { 92, XID_ACTION_IGNORE, XID_INFO, XID_REMEDY_NONE },
                { 94, XID_ACTION_RESTART_APP, XID_APPLICATION, XID_REMEDY_RESTART_APP },
                { 95, XID_ACTION_RESET_GPU, XID_CRITICAL, XID_REMEDY_REBOOT_NODE },
                { 109, XID_ACTION_RESET_GPU, XID_CRITICAL, XID_REMEDY_RESET_GPU },
                { 119, XID_ACTION_RESET_GPU, XID_CRITICAL, XID_REMEDY_RESET_GPU },
                { 120, XID_ACTION_RESET_GPU, XID_CRITICAL, XID_REMEDY_RESET_GPU },
                { 121, XID_ACTION_IGNORE, XID_INFO, XID_REMEDY_NONE },
                { 140, XID_ACTION_RESET_GPU, XID_CRITICAL, XID_REMEDY_RESET_GPU },
                { 143, XID_ACTION_RESET_GPU, XID_CRITICAL, XID_REMEDY_RESET_GPU },
                { 144, XID_ACTION_WORKFLOW_NVLINK5_ERR, XID_WARNING, XID_REMEDY_RESET_GPU },
                { 150, XID_ACTION_WORKFLOW_NVLINK5_ERR, XID_WARNING, XID_REMEDY_RESET_GPU },
                { 154, XID_ACTION_XID_154, XID_INFO, XID_REMEDY_NONE },
        };
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                const struct xid_info *e = xid_lookup(t[i].xid);
                assert_true(xid_is_known(t[i].xid));
                assert_int_equal(e->xid, t[i].xid);
                assert_int_equal(e->action, t[i].action);
                assert_int_equal(e->severity, t[i].severity);
                assert_int_equal(e->remedy, t[i].remedy);
        }
        assert_string_equal(xid_lookup(79)->name, "GPU_HAS_FALLEN_OFF_THE_BUS");
        assert_string_equal(xid_lookup(48)->name, "GPU_ECC_DBE");
        assert_non_null(strstr(xid_lookup(154)->remedy_text, "230"));
}

static void test_unknown(void **state) {
        (void)state;
        static const int t[] = { 0, -1, 1, 9, 91, 173, 999, 9999, 1 << 30, -2147483647 - 1 };
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                const struct xid_info *e = xid_lookup(t[i]);
                assert_non_null(e);
                assert_false(xid_is_known(t[i]));
                assert_int_equal(e->xid, 0);
                assert_int_equal(e->severity, XID_UNKNOWN);
                assert_non_null(strstr(e->meaning, "not in gpunode's catalog"));
                assert_int_equal(xid_severity_for_line(t[i], "Fatal", 5), XID_UNKNOWN);
        }
        /* unknown ranks as a warning: above application errors, below critical */
        assert_true(XID_UNKNOWN > XID_APPLICATION && XID_UNKNOWN < XID_CRITICAL);
}

/* Every entry complete, sorted, named; every remedy/action/severity has a name. */
static void test_table(void **state) {
        (void)state;
        const struct xid_info *t;
        size_t n = xid_catalog(&t);
        assert_true(n >= 100);
        for (size_t i = 0; i < n; i++) {
                assert_true(t[i].xid > 0);
                if (i > 0) assert_true(t[i].xid > t[i - 1].xid);
                assert_ptr_equal(xid_lookup(t[i].xid), &t[i]);
                assert_true(t[i].name && *t[i].name);
                assert_true(t[i].meaning && *t[i].meaning);
                assert_true(t[i].remedy_text && *t[i].remedy_text);
                assert_string_not_equal(xid_action_name(t[i].action), "?");
                assert_string_not_equal(xid_severity_name(t[i].severity), "?");
                assert_string_not_equal(xid_remedy_name(t[i].remedy), "?");
                assert_int_not_equal(t[i].severity, XID_UNKNOWN);
                /* NVIDIA's RESTART_APP is an application error in gpunode; RESET_GPU and
                 * RESTART_BM are critical, except the retirement event (reset at leisure) */
                if (t[i].action == XID_ACTION_RESTART_APP) assert_int_equal(t[i].severity, XID_APPLICATION);
                if (t[i].action == XID_ACTION_RESTART_BM) assert_int_equal(t[i].severity, XID_CRITICAL);
                if (t[i].action == XID_ACTION_RESET_GPU && t[i].xid != 156)
                        assert_int_equal(t[i].severity, XID_CRITICAL);
                if (t[i].severity == XID_CRITICAL) assert_int_not_equal(t[i].remedy, XID_REMEDY_NONE);
        }
        for (int a = 0; a < _XID_ACTION_MAX; a++) assert_string_not_equal(xid_action_name(a), "?");
        for (int s = 0; s < _XID_SEVERITY_MAX; s++) assert_string_not_equal(xid_severity_name(s), "?");
        for (int r = 0; r < _XID_REMEDY_MAX; r++) assert_string_not_equal(xid_remedy_name(r), "?");
        assert_string_equal(xid_action_name(_XID_ACTION_MAX), "?");
        assert_string_equal(xid_severity_name(-1), "?");
        assert_string_equal(xid_remedy_name(_XID_REMEDY_MAX), "?");
        assert_string_equal(xid_action_name(XID_ACTION_RESTART_BM), "RESTART_BM");
        assert_string_equal(xid_severity_name(XID_CRITICAL), "critical");
}

/* NVLink5: the line decides. */
static void test_nvlink5(void **state) {
        (void)state;
        static const struct {
                int xid;
                const char *line;
                enum xid_severity want;
        } t[] = {
                { 145, "NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008)", XID_WARNING },
                { 149, "NVRM: Xid (PCI:0000:00:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x025001c6 0x00000000)", XID_CRITICAL },
                { 144, "NVRM: Xid (PCI:0000:00:00): 144, SAW_MVB Non-fatal XC0", XID_WARNING },
                { 146, "NVRM: Xid (PCI:0000:00:00): 146, TLW NonFatal XC0", XID_WARNING },
                { 147, "NVRM: Xid (PCI:0000:00:00): 147, TREX Fatal", XID_CRITICAL },
                { 148, "NVRM: Xid (PCI:0000:00:00): 148, NVLPW_CTRL something", XID_WARNING },
                { 150, "Fatality Fatally unfatal", XID_WARNING },
                { 150, "", XID_WARNING },
                { 150, "x,Fatal,", XID_CRITICAL },
                { 143, "Nonfatal", XID_CRITICAL },      /* not NVLink5: catalog severity */
                { 13, "Fatal", XID_APPLICATION },
        };
        for (size_t i = 0; i < ELEMENTSOF(t); i++)
                assert_int_equal(xid_severity_for_line(t[i].xid, t[i].line, strlen(t[i].line)), t[i].want);
        assert_int_equal(xid_severity_for_line(149, NULL, 0), XID_WARNING);
        /* len bounds the read */
        assert_int_equal(xid_severity_for_line(149, "Fatal", 4), XID_WARNING);
        assert_true(xid_is_nvlink5(144) && xid_is_nvlink5(150));
        assert_false(xid_is_nvlink5(143) || xid_is_nvlink5(151));
}

/* Xid 154 (GPUd's test lines, NVIDIA/open-gpu-kernel-modules#1080): the action it changed to decides. */
static void test_xid154(void **state) {
        (void)state;
        static const struct {
                const char *line;
                enum xid_severity want;
                int action;
                const char *name, *remedy;
        } t[] = {
                { "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)",
                  XID_CRITICAL, 1, "GPU Reset Required", "reset it" },
                { "[171167.621162] NVRM: Xid (PCI:0009:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)",
                  XID_CRITICAL, 4, "Drain and Reset", "drain and reset" },
                { "[171168.537473] NVRM: Xid (PCI:0018:01:00): 154, GPU recovery action changed from 0x4 (Drain and Reset) to 0x1 (GPU Reset Required)",
                  XID_CRITICAL, 1, "GPU Reset Required", "reset it" },
                { "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)",
                  XID_CRITICAL, 2, "Node Reboot Required", "reboot it" },
                { "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x3 (Drain P2P)",
                  XID_CRITICAL, 3, "Drain P2P", "peer-to-peer" },
                { "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)",
                  XID_INFO, 0, "None", "field 230" },
                { "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed", XID_INFO, -1, "", "field 230" },
                { "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to 0xzz", XID_INFO, -1, "", "field 230" },
                /* nine hex digits do not fit the 32-bit action: refused, not wrapped to 0x1 */
                { "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x100000001 (x)", XID_INFO, -1,
                  "", "field 230" },
        };
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                const char *l = t[i].line;
                char name[64];
                assert_int_equal(xid_severity_for_line(154, l, strlen(l)), t[i].want);
                assert_int_equal(xid154_action(l, strlen(l), name, sizeof name), t[i].action);
                assert_string_equal(name, t[i].name);
                if (!strstr(xid_remedy_for_line(154, l, strlen(l)), t[i].remedy))
                        fail_msg("%s: remedy %s", l, xid_remedy_for_line(154, l, strlen(l)));
        }
        /* the name is cut to the buffer, NUL-terminated */
        char small[4];
        assert_int_equal(xid154_action(t[0].line, strlen(t[0].line), small, sizeof small), 1);
        assert_string_equal(small, "GPU");
        assert_int_equal(xid154_action(NULL, 0, small, sizeof small), -1);
        /* the catalog entry alone stays informational: the line decides */
        assert_int_equal(xid_lookup(154)->severity, XID_INFO);
        assert_int_equal(xid_severity_for_line(154, NULL, 0), XID_INFO);
}

/* Xid 154 is a state: the scanner keeps the last line's severity, not the worst seen. */
static void test_xid154_state(void **state) {
        (void)state;
        _cleanup_kmsg_scan_ struct kmsg_scan *s = kmsg_scan_new();
        const char *a = "[171167.621162] NVRM: Xid (PCI:0009:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x4 (Drain and Reset)\n"
                        "[171168.537473] NVRM: Xid (PCI:0009:01:00): 154, GPU recovery action changed from 0x4 (Drain and Reset) to 0x1 (GPU Reset Required)\n";
        kmsg_scan_feed(s, a, strlen(a));
        const struct kmsg_xid_stat *st = kmsg_gpu_xid(kmsg_summary_gpu(kmsg_scan_summary(s), "0009:01:00"), 154);
        assert_int_equal(st->worst, XID_CRITICAL);
        assert_int_equal(st->worst_line.lineno, 2);
        const char *b = "[171999.000001] NVRM: Xid (PCI:0009:01:00): 154, GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)\n";
        kmsg_scan_feed(s, b, strlen(b));
        kmsg_scan_finish(s);
        st = kmsg_gpu_xid(kmsg_summary_gpu(kmsg_scan_summary(s), "0009:01:00"), 154);
        assert_int_equal(st->count, 3);
        assert_int_equal(st->worst, XID_INFO);
        assert_int_equal(st->worst_line.lineno, 3);
        /* other Xids keep their worst line */
        _cleanup_kmsg_scan_ struct kmsg_scan *t = kmsg_scan_new();
        const char *c = "NVRM: Xid (PCI:0000:00:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x025001c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)\n"
                        "NVRM: Xid (PCI:0000:00:00): 149, NETIR_LINK_EVT Nonfatal XC0 i0 Link 00 (0x025001c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)\n";
        kmsg_scan_feed(t, c, strlen(c));
        kmsg_scan_finish(t);
        st = kmsg_gpu_xid(kmsg_summary_gpu(kmsg_scan_summary(t), "0000:00:00"), 149);
        assert_int_equal(st->worst, XID_CRITICAL);
        assert_int_equal(st->worst_line.lineno, 1);
        assert_int_equal(st->last.lineno, 2);
}

/* Xid 146 (TLW): NVIDIA's NVLink catalog acts on the error status, the second number in the parentheses. */
static void test_xid146(void **state) {
        (void)state;
        static const struct {
                const char *line;
                enum xid_severity want;
                const char *remedy;
        } t[] = {
                { "NVRM: Xid (PCI:0000:9a:00): 146, TLW_TX Fatal XC0 i0 Link 07 (0x0000000c 0x00000004 0x00000000 0x00000000 0x00000000 0x00000000)",
                  XID_CRITICAL, "reset it" },
                { "NVRM: Xid (PCI:0000:9a:00): 146, TLW_CTRL Nonfatal XC0 i0 Link 01 (0x00000009 0x00000002 0x00000000 0x00000000 0x00000000 0x00000000)",
                  XID_WARNING, "contact NVIDIA support" },
                { "NVRM: Xid (PCI:0000:9a:00): 146, TLW_RX Nonfatal XC0 i0 Link 01 (0x0000000a 0x80000000 0x00000000 0x00000000 0x00000000 0x00000000)",
                  XID_WARNING, "software-reported" },
                { "NVRM: Xid (PCI:0000:9a:00): 146, TLW_RX Nonfatal XC0 i0 Link 01 (0x0000000a 0x00000001 0x00000000 0x00000000 0x00000000 0x00000000)",
                  XID_INFO, "no action" },
                /* no status: the Fatal/Nonfatal word, as for 144-150 */
                { "NVRM: Xid (PCI:0000:9a:00): 146, TLW Fatal XC0 i0 Link 01", XID_CRITICAL, "NVLink5" },
                { "NVRM: Xid (PCI:0000:9a:00): 146, TLW Nonfatal XC0 (0x0000000a)", XID_WARNING, "NVLink5" },
                { "NVRM: Xid (PCI:0000:9a:00): 146, TLW Nonfatal XC0 (0x0000000a 0xz)", XID_WARNING, "NVLink5" },
        };
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                const char *l = t[i].line;
                if (xid_severity_for_line(146, l, strlen(l)) != t[i].want)
                        fail_msg("%s: %s", l, xid_severity_name(xid_severity_for_line(146, l, strlen(l))));
                if (!strstr(xid_remedy_for_line(146, l, strlen(l)), t[i].remedy))
                        fail_msg("%s: remedy %s", l, xid_remedy_for_line(146, l, strlen(l)));
        }
        /* the error status is 146's alone: 145's line still goes by its word */
        const char *l = "NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000004 0x00000001 0x00000000 0x00100000 0x00000004)";
        assert_int_equal(xid_severity_for_line(145, l, strlen(l)), XID_WARNING);
}

/* An unknown Xid asks for NVIDIA support, as NVIDIA's catalog does for codes it does not use. */
static void test_unknown_contact_support(void **state) {
        (void)state;
        const struct xid_info *e = xid_lookup(999);
        assert_int_equal(e->action, XID_ACTION_CONTACT_SUPPORT);
        assert_int_equal(e->remedy, XID_REMEDY_CONTACT_SUPPORT);
        assert_non_null(strstr(e->remedy_text, "contact NVIDIA support"));
        const char *l = "NVRM: Xid (PCI:0000:3a:00): 999, pid='<unknown>', name=<unknown>, Ch 00000010";
        assert_string_equal(xid_remedy_for_line(999, l, strlen(l)), e->remedy_text);
        assert_string_equal(xid_remedy_for_line(48, NULL, 0), xid_lookup(48)->remedy_text);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_known),
                cmocka_unit_test(test_unknown),
                cmocka_unit_test(test_table),
                cmocka_unit_test(test_nvlink5),
                cmocka_unit_test(test_xid154),
                cmocka_unit_test(test_xid154_state),
                cmocka_unit_test(test_xid146),
                cmocka_unit_test(test_unknown_contact_support),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
