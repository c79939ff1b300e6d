/* test_kmsg.c: the kernel log scanner against every line of reference/kernel-log-lines.txt, in every prefix format and chunking. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/socket.h>

#include "layer1_hardware/kmsg.h"
#include "basic/util.h"

/* ---- the reference lines (kernel-log-lines.txt, every non-comment line, verbatim) ---- */

struct line_case {
        const char *raw;                /* verbatim */
        size_t prefix;                  /* bytes of raw that are a prefix already */
        enum kmsg_event_kind kind;
        const char *value, *value2;     /* expected ev[kind].value/value2 */
        enum xid_severity severity;     /* for Xids */
        bool fob;                       /* also a fallen-off-the-bus event */
};

#define DMESG_T 27      /* strlen("[Wed Jul 31 23:14:18 2024] ") */

static const struct line_case cases[] = {
        { "[Wed Jul 31 23:14:18 2024] NVRM: Xid (PCI:0000:00:05): 43, pid=1045242, name=pt_main_thread, Ch 00000008",
          DMESG_T, KMSG_EV_XID, "0000:00:05", "43", XID_APPLICATION, false },
        { "[Mon Aug  5 03:54:13 2024] NVRM: Xid (PCI:0000:00:07): 31, pid=2512125, name=python3.10, Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_8 faulted @ 0x73ac_1c000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE",
          DMESG_T, KMSG_EV_XID, "0000:00:07", "31", XID_APPLICATION, false },
        { "[Fri Aug  9 13:32:56 2024] NVRM: Xid (PCI:0000:00:08): 94, pid='<unknown>', name=<unknown>, Contained: SM (0x1). RST: No, D-RST: No",
          DMESG_T, KMSG_EV_XID, "0000:00:08", "94", XID_APPLICATION, false },
        { "NVRM: Xid (PCI:0000:07:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x7fffa8860 partition 7, subpartition 1.",
          0, KMSG_EV_XID, "0000:07:00", "48", XID_CRITICAL, false },
        { "NVRM: Xid (PCI:0000:07:00): 64, pid='<unknown>', name=<unknown>, Dynamic Page Retirement: Blacklisting failed.",
          0, KMSG_EV_XID, "0000:07:00", "64", XID_CRITICAL, false },
        { "NVRM: Xid (PCI:0000:cb:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter",
          0, KMSG_EV_XID, "0000:cb:00", "13", XID_APPLICATION, false },
        { "NVRM: Xid (PCI:0000:cb:00): 109, pid=1797828, name=pt_main_thread, Ch 00000008, errorString CTX SWITCH TIMEOUT, Info 0x58005",
          0, KMSG_EV_XID, "0000:cb:00", "109", XID_CRITICAL, false },
        { "NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU4 GSP! Expected function 103 (GSP_RM_ALLOC) (0x2081 0x4).",
          0, KMSG_EV_XID, "0000:9b:00", "119", XID_CRITICAL, false },
        { "kernel: NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149",
          8, KMSG_EV_XID, "0000:dc:00", "45", XID_APPLICATION, false },
        { "NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)",
          0, KMSG_EV_XID, "0018:01:00", "145", XID_WARNING, false },
        { "NVRM: Xid (PCI:0000:00:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x025001c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
          0, KMSG_EV_XID, "0000:00:00", "149", XID_CRITICAL, false },
        /* NVSentinel's test data: a non-zero domain, a device number past 0x1f, no function. */
        { "NVRM: Xid (PCI:0001:ab:cd): 69, pid='<unknown>', name=<unknown>, Graphics Exception: ChID 0010, Class 0000c997, Offset 00000000, Data 00000000",
          0, KMSG_EV_XID, "0001:ab:cd", "69", XID_APPLICATION, false },
        { "NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus",
          0, KMSG_EV_XID, "0000:44:00", "79", XID_CRITICAL, true },
        { "NVRM: Xid (PCI:0000:3b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.",
          0, KMSG_EV_XID, "0000:3b:00", "79", XID_CRITICAL, true },
        { "NVRM: API mismatch: the client 'kwin_wayland' (pid 1005) has the version 595.84, but this kernel module has the version 595.80.",
          0, KMSG_EV_API_MISMATCH, "595.84", "595.80", 0, false },
        { "nvidia-container-cli: initialization error: nvml error: driver/library version mismatch",
          0, KMSG_EV_LIB_MISMATCH, "", "", 0, false },
        { "modprobe: ERROR: could not insert 'nvidia': Key was rejected by service",
          0, KMSG_EV_MODULE_KEY_REJECTED, "nvidia", "", 0, false },
        { "modprobe: ERROR: could not insert 'nvidia': Required key not available",
          0, KMSG_EV_MODULE_KEY_REJECTED, "nvidia", "", 0, false },
        { "Loading of module with unavailable key is rejected",
          0, KMSG_EV_MODULE_KEY_REJECTED, "", "", 0, false },
        { "Lockdown: modprobe: unsigned module loading is restricted; see man kernel_lockdown.7",
          0, KMSG_EV_LOCKDOWN, "", "", 0, false },
        { "modprobe: ERROR: could not insert 'nvidia': Operation not permitted",
          0, KMSG_EV_MODULE_LOAD_FAILED, "nvidia", "Operation not permitted", 0, false },
        { "ERROR: The kernel module failed to load, because it was not signed by a key that is trusted by the kernel.",
          0, KMSG_EV_MODULE_KEY_REJECTED, "", "", 0, false },
        { "nvidia: module verification failed: signature and/or required key missing - tainting kernel",
          0, KMSG_EV_MODULE_TAINTED, "nvidia", "", 0, false },
        { "Error! Your kernel headers for kernel 6.6.15-amd64 cannot be found at /lib/modules/6.6.15-amd64/build or /lib/modules/6.6.15-amd64/source.",
          0, KMSG_EV_HEADERS_MISSING, "6.6.15-amd64", "", 0, false },
        { "make[1]: *** /lib/modules/5.15.0-60-generic/build: No such file or directory.  Stop.",
          0, KMSG_EV_HEADERS_MISSING, "5.15.0-60-generic", "", 0, false },
        { "cudaGetDeviceProperties returned 802 -> system not yet initialized",
          0, KMSG_EV_CUDA_802, "", "", 0, false },
        { "nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context",
          0, KMSG_EV_PEERMEM_ERROR, "", "", 0, false },
};

/* The multi-line forms, verbatim. */
static const char *const fob3[] = {
        "NVRM: The NVIDIA GPU 0000:b3:00.0",
        "NVRM: (PCI ID: 10de:26b5) installed in this system has",
        "NVRM: fallen off the bus and is not responding to commands.",
};
static const char *const api4[] = {
        "NVRM: API mismatch: the client has the version 367.44, but",
        "NVRM: this kernel module has the version 367.35.  Please",
        "NVRM: make sure that this kernel module and all NVIDIA driver",
        "NVRM: components have the same version.",
};

/* ---- prefix formats ---- */

enum fmt {
        FMT_BARE,
        FMT_DMESG,
        FMT_DMESG_T,
        FMT_SYSLOG,
        FMT_RSYSLOG,            /* syslog keeping the kernel's [ts] */
        FMT_JOURNAL_ISO,
        FMT_JOURNAL_MONO,       /* journalctl -o short-monotonic */
        FMT_KMSG,               /* /dev/kmsg record with continuation lines */
        FMT_KMSG_CALLER,        /* /dev/kmsg with a caller field */
        FMT_KERNEL,             /* "kernel: " only */
        FMT_CRLF,
        _FMT_MAX,
};

static const char *const fmt_ts[_FMT_MAX] = {
        [FMT_BARE] = "", [FMT_DMESG] = "123.456789", [FMT_DMESG_T] = "Wed Jul 31 23:14:18 2024",
        [FMT_SYSLOG] = "Jul 31 23:14:18", [FMT_RSYSLOG] = "Jul  1 03:04:05", [FMT_JOURNAL_ISO] = "2024-07-31T23:14:18+0000",
        [FMT_JOURNAL_MONO] = "123.456789", [FMT_KMSG] = "5.678901", [FMT_KMSG_CALLER] = "0.000042",
        [FMT_KERNEL] = "", [FMT_CRLF] = "",
};

/* Appends msg as one line in format f (continuation lines included) to b, with '\n'. */
static void add_line(struct buf *b, enum fmt f, const char *msg) {
        switch (f) {
        case FMT_BARE: buf_printf(b, "%s\n", msg); break;
        case FMT_DMESG: buf_printf(b, "[  123.456789] %s\n", msg); break;
        case FMT_DMESG_T: buf_printf(b, "[Wed Jul 31 23:14:18 2024] %s\n", msg); break;
        case FMT_SYSLOG: buf_printf(b, "Jul 31 23:14:18 gpu-node-7 kernel: %s\n", msg); break;
        case FMT_RSYSLOG: buf_printf(b, "Jul  1 03:04:05 gpu-node-7 kernel: [  123.456789] %s\n", msg); break;
        case FMT_JOURNAL_ISO: buf_printf(b, "2024-07-31T23:14:18+0000 gpu-node-7 kernel: %s\n", msg); break;
        case FMT_JOURNAL_MONO: buf_printf(b, "[  123.456789] gpu-node-7 kernel: %s\n", msg); break;
        case FMT_KMSG:
                buf_printf(b, "6,1234,5678901,-;%s\n SUBSYSTEM=pci\n DEVICE=+pci:0000:07:00.0\n", msg);
                break;
        case FMT_KMSG_CALLER: buf_printf(b, "4,77,42,c,caller=T1234;%s\n", msg); break;
        case FMT_KERNEL: buf_printf(b, "kernel: %s\n", msg); break;
        case FMT_CRLF: buf_printf(b, "%s\r\n", msg); break;
        default: fail();
        }
}

/* Returns a scan of len bytes fed in one go and finished. */
static struct kmsg_scan *scan_all(const char *data, size_t len) {
        struct kmsg_scan *s = kmsg_scan_new();
        kmsg_scan_feed(s, data, len);
        kmsg_scan_finish(s);
        return s;
}

/* Asserts that only the kinds in mask were seen, each once. */
static void assert_only(const struct kmsg_summary *sum, unsigned mask) {
        for (int k = 0; k < _KMSG_EV_MAX; k++) {
                if (sum->ev[k].count != ((mask >> k) & 1u))
                        fail_msg("kind %s: count %" PRIu64 ", expected %u", kmsg_event_kind_name(k), sum->ev[k].count,
                                 (mask >> k) & 1u);
        }
}

/* Every reference line, with its own prefix and in every format, alone. */
static void test_reference_lines(void **state) {
        (void)state;
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                const struct line_case *c = &cases[i];
                const char *msg = c->raw + c->prefix;
                for (int f = -1; f < _FMT_MAX; f++) {
                        struct buf b = {0};
                        if (f < 0) buf_printf(&b, "%s\n", c->raw);
                        else add_line(&b, f, msg);
                        struct kmsg_scan *s = scan_all(b.data, b.len);
                        const struct kmsg_summary *sum = kmsg_scan_summary(s);
                        unsigned mask = 1u << c->kind;
                        if (c->fob) mask |= 1u << KMSG_EV_FALLEN_OFF_BUS;
                        if (mask != 0) assert_only(sum, mask);
                        const struct kmsg_event_stat *e = &sum->ev[c->kind];
                        assert_string_equal(e->value, c->value);
                        assert_string_equal(e->value2, c->value2);
                        assert_string_equal(e->first.text, msg);
                        assert_int_equal(e->first.lineno, 1);
                        assert_int_equal(e->first.seq, 1);
                        if (f >= 0) assert_string_equal(e->first.ts, fmt_ts[f]);
                        assert_int_equal(sum->bytes, b.len);
                        if (c->kind == KMSG_EV_XID) {
                                int xid = atoi(c->value2);
                                const struct kmsg_gpu *g = kmsg_summary_gpu(sum, c->value);
                                assert_non_null(g);
                                assert_int_equal(sum->n_gpus, 1);
                                assert_int_equal(g->xid_count, 1);
                                const struct kmsg_xid_stat *st = kmsg_gpu_xid(g, xid);
                                assert_non_null(st);
                                assert_int_equal(st->count, 1);
                                assert_int_equal(st->worst, c->severity);
                                assert_int_equal(g->worst, c->severity);
                                assert_int_equal(g->n_recent, 1);
                                assert_int_equal(kmsg_gpu_recent(g, 0)->xid, xid);
                                assert_null(kmsg_gpu_recent(g, 1));
                                assert_int_equal(g->fallen_off_bus, c->fob ? 1 : 0);
                                if (c->fob) assert_string_equal(sum->ev[KMSG_EV_FALLEN_OFF_BUS].value, c->value);
                        } else
                                assert_int_equal(sum->n_gpus, 0);
                        kmsg_scan_free(s);
                        buf_free(&b);
                }
        }
}

/* Builds the multi-line form lines[] in format f. */
static void build(struct buf *b, enum fmt f, const char *const *lines, size_t n) {
        for (size_t i = 0; i < n; i++) add_line(b, f, lines[i]);
}

/* Checks the fallen-off-the-bus 3-line form was found once, with its address. */
static void check_fob(struct kmsg_scan *s, enum fmt f) {
        const struct kmsg_summary *sum = kmsg_scan_summary(s);
        assert_only(sum, 1u << KMSG_EV_FALLEN_OFF_BUS);
        const struct kmsg_event_stat *e = &sum->ev[KMSG_EV_FALLEN_OFF_BUS];
        assert_string_equal(e->value, "0000:b3:00");
        assert_string_equal(e->first.ts, fmt_ts[f]);
        assert_int_equal(e->first.lineno, 1);
        assert_string_equal(e->first.text, "NVRM: The NVIDIA GPU 0000:b3:00.0 NVRM: (PCI ID: 10de:26b5) installed in this "
                                           "system has NVRM: fallen off the bus and is not responding to commands.");
        const struct kmsg_gpu *g = kmsg_summary_gpu(sum, "0000:b3:00.0");
        assert_non_null(g);
        assert_int_equal(g->fallen_off_bus, 1);
        assert_int_equal(g->xid_count, 0);
}

/* Checks the API mismatch 4-line form was found once, with both versions. */
static void check_api(struct kmsg_scan *s, enum fmt f) {
        const struct kmsg_summary *sum = kmsg_scan_summary(s);
        assert_only(sum, 1u << KMSG_EV_API_MISMATCH);
        const struct kmsg_event_stat *e = &sum->ev[KMSG_EV_API_MISMATCH];
        assert_string_equal(e->value, "367.44");
        assert_string_equal(e->value2, "367.35");
        assert_string_equal(e->first.ts, fmt_ts[f]);
        assert_int_equal(e->first.lineno, 1);
        assert_string_equal(e->first.text, "NVRM: API mismatch: the client has the version 367.44, but NVRM: this kernel "
                                           "module has the version 367.35.  Please");
}

/* The multi-line forms split at every byte boundary, and fed byte by byte, in every format. */
static void test_multiline_every_split(void **state) {
        (void)state;
        for (int form = 0; form < 2; form++) {
                for (int f = 0; f < _FMT_MAX; f++) {
                        struct buf b = {0};
                        if (form == 0) build(&b, f, fob3, ELEMENTSOF(fob3));
                        else build(&b, f, api4, ELEMENTSOF(api4));
                        for (size_t cut = 0; cut <= b.len; cut++) {
                                struct kmsg_scan *s = kmsg_scan_new();
                                kmsg_scan_feed(s, b.data, cut);
                                kmsg_scan_feed(s, b.data + cut, b.len - cut);
                                kmsg_scan_finish(s);
                                if (form == 0) check_fob(s, f);
                                else check_api(s, f);
                                kmsg_scan_free(s);
                        }
                        struct kmsg_scan *s = kmsg_scan_new();
                        for (size_t i = 0; i < b.len; i++) kmsg_scan_feed(s, b.data + i, 1);
                        kmsg_scan_finish(s);
                        if (form == 0) check_fob(s, f);
                        else check_api(s, f);
                        kmsg_scan_free(s);
                        buf_free(&b);
                }
        }
}

/* Three chunks: many pairs of cut points over the 3-line form in /dev/kmsg format. */
static void test_multiline_two_cuts(void **state) {
        (void)state;
        struct buf b = {0};
        build(&b, FMT_KMSG, fob3, ELEMENTSOF(fob3));
        for (size_t c1 = 0; c1 <= b.len; c1 += 3)
                for (size_t c2 = c1; c2 <= b.len; c2 += 5) {
                        struct kmsg_scan *s = kmsg_scan_new();
                        kmsg_scan_feed(s, b.data, c1);
                        kmsg_scan_feed(s, b.data + c1, c2 - c1);
                        kmsg_scan_feed(s, b.data + c2, b.len - c2);
                        kmsg_scan_finish(s);
                        check_fob(s, FMT_KMSG);
                        kmsg_scan_free(s);
                }
        buf_free(&b);
}

/* Multi-line forms count only over consecutive lines. */
static void test_multiline_consecutive_only(void **state) {
        (void)state;
        /* A line between the first and the last: the address is not carried over; the lone
         * "fallen off the bus" still counts (a GPU did fall off), without an address. */
        const char *fob_broken = "NVRM: The NVIDIA GPU 0000:b3:00.0\n"
                                 "usb 1-1: new high-speed USB device number 2 using xhci_hcd\n"
                                 "NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
                                 "NVRM: fallen off the bus and is not responding to commands.\n";
        struct kmsg_scan *s = scan_all(fob_broken, strlen(fob_broken));
        const struct kmsg_summary *sum = kmsg_scan_summary(s);
        assert_int_equal(sum->ev[KMSG_EV_FALLEN_OFF_BUS].count, 1);
        assert_string_equal(sum->ev[KMSG_EV_FALLEN_OFF_BUS].value, "");
        assert_int_equal(sum->ev[KMSG_EV_FALLEN_OFF_BUS].first.lineno, 4);
        assert_int_equal(sum->n_gpus, 0);
        kmsg_scan_free(s);

        /* The first line alone (e.g. the "not supported" message) is no event. */
        const char *unsupported = "NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:1db6)\n"
                                  "NVRM: installed in this system is not supported by the\n"
                                  "NVRM: NVIDIA 535.54.03 driver release.\n";
        s = scan_all(unsupported, strlen(unsupported));
        assert_only(kmsg_scan_summary(s), 0);
        kmsg_scan_free(s);

        /* API mismatch interrupted: reported with the client version only. */
        const char *api_broken = "NVRM: API mismatch: the client has the version 367.44, but\n"
                                 "audit: type=1400 audit(1.2:3): apparmor=\"STATUS\"\n"
                                 "NVRM: this kernel module has the version 367.35.  Please\n";
        s = scan_all(api_broken, strlen(api_broken));
        sum = kmsg_scan_summary(s);
        assert_only(sum, 1u << KMSG_EV_API_MISMATCH);
        assert_string_equal(sum->ev[KMSG_EV_API_MISMATCH].value, "367.44");
        assert_string_equal(sum->ev[KMSG_EV_API_MISMATCH].value2, "");
        kmsg_scan_free(s);

        /* API mismatch first line at the very end of the input: finish() reports it. */
        s = kmsg_scan_new();
        kmsg_scan_feed(s, api4[0], strlen(api4[0]));
        sum = kmsg_scan_summary(s);
        assert_int_equal(sum->ev[KMSG_EV_API_MISMATCH].count, 0);
        kmsg_scan_finish(s);
        assert_int_equal(sum->ev[KMSG_EV_API_MISMATCH].count, 1);
        assert_int_equal(sum->lines, 1);
        kmsg_scan_free(s);

        /* /dev/kmsg continuation lines do not break adjacency (FMT_KMSG above), but an empty
         * line does. */
        const char *fob_gap = "NVRM: The NVIDIA GPU 0000:b3:00.0\n\nNVRM: (PCI ID: 10de:26b5) installed in this system has\n";
        s = scan_all(fob_gap, strlen(fob_gap));
        assert_only(kmsg_scan_summary(s), 0);
        kmsg_scan_free(s);
}

/* The whole reference file as one log: totals, per-GPU order (48 then 64). */
static void test_whole_file(void **state) {
        (void)state;
        struct buf b = {0};
        for (int f = 0; f < _FMT_MAX; f++) {
                b.len = 0;
                for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                        if (i == 5) build(&b, f, fob3, ELEMENTSOF(fob3));
                        if (i == 15) build(&b, f, api4, ELEMENTSOF(api4));
                        add_line(&b, f, cases[i].raw + cases[i].prefix);
                }
                /* fed in odd-sized chunks */
                struct kmsg_scan *s = kmsg_scan_new();
                for (size_t off = 0; off < b.len; off += 97)
                        kmsg_scan_feed(s, b.data + off, b.len - off < 97 ? b.len - off : 97);
                kmsg_scan_finish(s);
                const struct kmsg_summary *sum = kmsg_scan_summary(s);
                assert_int_equal(sum->ev[KMSG_EV_XID].count, 14);
                assert_int_equal(sum->ev[KMSG_EV_FALLEN_OFF_BUS].count, 3);
                assert_int_equal(sum->ev[KMSG_EV_API_MISMATCH].count, 2);
                assert_int_equal(sum->ev[KMSG_EV_MODULE_KEY_REJECTED].count, 4);
                assert_int_equal(sum->ev[KMSG_EV_HEADERS_MISSING].count, 2);
                assert_int_equal(sum->ev[KMSG_EV_LOCKDOWN].count, 1);
                assert_int_equal(sum->ev[KMSG_EV_MODULE_LOAD_FAILED].count, 1);
                assert_int_equal(sum->ev[KMSG_EV_MODULE_TAINTED].count, 1);
                assert_int_equal(sum->ev[KMSG_EV_LIB_MISMATCH].count, 1);
                assert_int_equal(sum->ev[KMSG_EV_CUDA_802].count, 1);
                assert_int_equal(sum->ev[KMSG_EV_PEERMEM_ERROR].count, 1);
                assert_int_equal(sum->n_gpus, 13); /* 12 Xid addresses (07 and cb twice) + b3 */
                const struct kmsg_gpu *g = kmsg_summary_gpu(sum, "PCI:0000:07:00");
                assert_non_null(g);
                assert_true(kmsg_gpu_xid_before(g, 48, 64));
                assert_false(kmsg_gpu_xid_before(g, 64, 48));
                assert_int_equal(kmsg_gpu_recent(g, 0)->xid, 48);
                assert_int_equal(kmsg_gpu_recent(g, 1)->xid, 64);
                assert_true(kmsg_gpu_recent(g, 0)->line.seq < kmsg_gpu_recent(g, 1)->line.seq);
                g = kmsg_summary_gpu(sum, "0000:cb:00");
                assert_true(kmsg_gpu_xid_before(g, 13, 109));
                assert_int_equal(g->worst, XID_CRITICAL);
                assert_int_equal(sum->ev[KMSG_EV_XID].first.seq < sum->ev[KMSG_EV_XID].last.seq, 1);
                /* 34 reference lines (+2 continuation lines each for kmsg) */
                assert_int_equal(sum->lines, f == FMT_KMSG ? 102 : 34);
                kmsg_scan_free(s);
        }
        buf_free(&b);
}

/* More real shapes: UUID mapping, RmInitAdapter, driver load, Xid without "PCI:", function suffix. */
static void test_more_shapes(void **state) {
        (void)state;
        const char *log =
                "[    5.101010] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"
                "[    5.202020] NVRM: GPU at PCI:0000:9B:00: GPU-8ff9e7c1-0d8d-4b5c-9a0e-3c7f5b2e1a10\n"
                "[    6.000000] NVRM: GPU 0000:01:00.0: RmInitAdapter failed! (0x22:0x56:667)\n"
                "[    7.000000] NVRM: Xid (0000:9b:00): 119, pid=1, name=x, Timeout\n"
                "[    8.000000] NVRM: Xid (PCI:0000:9b:00.0): 120, GSP error\n"
                "[    9.000000] NVRM: GPU at PCI:0000:3b:00: GPU has fallen off the bus.\n"
                "[   10.000000] NVRM: Xid (PCI:0000:9b:00): 9999, something new\n"
                "[   11.000000] NVRM: Xid (PCI:0000:9b:00): 0, bogus\n"
                "[   12.000000] NVRM: Xid (PCI:zz): 13, bogus\n"
                "Jul 31 23:14:18 node dkms[4242]: Error! Your kernel headers for kernel 6.1.0-18-cloud-amd64 cannot be found.\n"
                "Jul 31 23:14:19 node kernel: NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  580.95.05  Release Build  (dvs-builder@U16-I3-B03-4-3)\n";
        struct kmsg_scan *s = scan_all(log, strlen(log));
        const struct kmsg_summary *sum = kmsg_scan_summary(s);
        assert_int_equal(sum->ev[KMSG_EV_DRIVER_LOADED].count, 2);
        assert_string_equal(sum->ev[KMSG_EV_DRIVER_LOADED].first.ts, "5.101010");
        assert_string_equal(sum->ev[KMSG_EV_DRIVER_LOADED].value, "580.95.05");
        assert_int_equal(sum->ev[KMSG_EV_GPU_UUID].count, 1);
        assert_string_equal(sum->ev[KMSG_EV_GPU_UUID].value, "0000:9b:00");
        assert_int_equal(sum->ev[KMSG_EV_RM_INIT_FAILED].count, 1);
        assert_string_equal(sum->ev[KMSG_EV_RM_INIT_FAILED].value, "0000:01:00");
        assert_int_equal(sum->ev[KMSG_EV_FALLEN_OFF_BUS].count, 1);
        assert_string_equal(sum->ev[KMSG_EV_FALLEN_OFF_BUS].value, "0000:3b:00");
        assert_int_equal(sum->ev[KMSG_EV_HEADERS_MISSING].count, 1);
        assert_string_equal(sum->ev[KMSG_EV_HEADERS_MISSING].value, "6.1.0-18-cloud-amd64");
        assert_string_equal(sum->ev[KMSG_EV_HEADERS_MISSING].first.text,
                            "Error! Your kernel headers for kernel 6.1.0-18-cloud-amd64 cannot be found.");
        assert_int_equal(sum->ev[KMSG_EV_XID].count, 3);
        const struct kmsg_gpu *g = kmsg_summary_gpu(sum, "0000:9b:00");
        assert_non_null(g);
        assert_string_equal(g->uuid, "GPU-8ff9e7c1-0d8d-4b5c-9a0e-3c7f5b2e1a10");
        assert_int_equal(g->xid_count, 3);
        assert_non_null(kmsg_gpu_xid(g, 119));
        assert_non_null(kmsg_gpu_xid(g, 120));
        assert_int_equal(kmsg_gpu_xid(g, 9999)->worst, XID_UNKNOWN);
        assert_null(kmsg_gpu_xid(g, 13));
        assert_int_equal(g->worst, XID_CRITICAL);
        assert_true(kmsg_gpu_xid_before(g, 119, 9999));
        assert_false(kmsg_gpu_xid_before(g, 119, 13));
        assert_int_equal(kmsg_summary_gpu(sum, "0000:3b:00")->fallen_off_bus, 1);
        assert_null(kmsg_summary_gpu(sum, "nonsense"));
        assert_null(kmsg_summary_gpu(sum, "0000:01:00"));  /* RmInit does not make a GPU entry */
        kmsg_scan_free(s);
}

static void test_pci_normalize(void **state) {
        (void)state;
        static const struct { const char *in; int consumed; const char *out; } t[] = {
                { "PCI:0000:07:00", 14, "0000:07:00" },
                { "pci:0000:07:00)", 14, "0000:07:00" },
                { "0000:B3:00.0", 12, "0000:b3:00" },
                { "0000:b3:00.0 (PCI ID", 12, "0000:b3:00" },
                { "07:00", 5, "0000:07:00" },
                { "07:00.1", 7, "0000:07:00" },
                { "0018:01:00", 10, "0018:01:00" },
                { "10000:e1:00", 11, "10000:e1:00" },
                { "123:7:0", 7, "0123:07:00" },
                { "0000:9b:00: GPU-x", 10, "0000:9b:00" },
                { "0000:07:00.9", 10, "0000:07:00" },   /* not a function digit: left unread */
        };
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                char out[KMSG_PCI_MAX];
                assert_int_equal(kmsg_pci_normalize(t[i].in, strlen(t[i].in), out), t[i].consumed);
                assert_string_equal(out, t[i].out);
        }
        static const char *const bad[] = { "", "PCI:", "xyz", "0000:07", "000:07", "0000:07:20", "0000:123:00",
                                           "123456789:00:00", ":07:00", "07" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                char out[KMSG_PCI_MAX];
                assert_int_equal(kmsg_pci_normalize(bad[i], strlen(bad[i]), out), -EINVAL);
        }
        /* n bounds the read: "0000:07:00" cut to 7 bytes is "0000:07", invalid */
        char out[KMSG_PCI_MAX];
        assert_int_equal(kmsg_pci_normalize("0000:07:00", 7, out), -EINVAL);
}

/* Deterministic pseudo-random numbers (xorshift64). */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) {
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        return rng_state;
}

/* Asserts the summary's strings are terminated and bounded, counters consistent. */
static void check_invariants(const struct kmsg_summary *sum) {
        assert_true(sum->n_gpus <= KMSG_MAX_GPUS);
        for (int k = 0; k < _KMSG_EV_MAX; k++) {
                assert_true(strlen(sum->ev[k].first.text) <= KMSG_TEXT_MAX);
                assert_true(strlen(sum->ev[k].last.text) <= KMSG_TEXT_MAX);
                assert_true(strlen(sum->ev[k].value) < KMSG_VALUE_MAX);
                for (const char *p = sum->ev[k].last.text; *p; p++) assert_true((unsigned char)*p >= 0x20);
        }
        for (size_t i = 0; i < sum->n_gpus; i++) {
                const struct kmsg_gpu *g = sum->gpus[i];
                assert_int_equal(strlen(g->pci) >= 10, 1);
                assert_true(g->n_xids <= KMSG_MAX_XIDS_PER_GPU);
                assert_true(g->n_recent <= KMSG_RECENT_XIDS);
                uint64_t total = g->xids_untracked;
                for (size_t j = 0; j < g->n_xids; j++) total += g->xids[j].count;
                assert_int_equal(total, g->xid_count);
                for (size_t j = 1; j < g->n_recent; j++)
                        assert_true(kmsg_gpu_recent(g, j - 1)->line.seq < kmsg_gpu_recent(g, j)->line.seq);
        }
}

/* Random bytes (NULs and all) and random mixes of pattern fragments, in random chunks. */
static void test_garbage(void **state) {
        (void)state;
        size_t n = 4u << 20;
        _cleanup_free_ char *data = xmalloc(n);
        size_t nl = 0;
        for (size_t i = 0; i < n; i++) {
                data[i] = (char)(rnd() & 0xff);
                if (data[i] == '\n') nl++;
        }
        struct kmsg_scan *s = kmsg_scan_new();
        for (size_t off = 0; off < n;) {
                size_t c = 1 + rnd() % 8192;
                if (c > n - off) c = n - off;
                kmsg_scan_feed(s, data + off, c);
                off += c;
        }
        kmsg_scan_finish(s);
        const struct kmsg_summary *sum = kmsg_scan_summary(s);
        assert_int_equal(sum->bytes, n);
        assert_int_equal(sum->lines, nl + (data[n - 1] != '\n'));
        check_invariants(sum);
        kmsg_scan_free(s);

        static const char *const frag[] = {
                "NVRM: Xid (", "PCI:", "0000:", "07:", "00", ".0", ")", ": ", "48", "79", "145", ",", " Fatal ",
                " Nonfatal ", "\n", "\n", "\n", "The NVIDIA GPU ", "fallen off the bus", "API mismatch: ",
                "has the version ", "kernel module has the version ", "367.35", "GPU at PCI:", "GPU-", "abcdef-12",
                "could not insert '", "nvidia", "'", "[  1.0] ", "6,1,2,-;", " KEY=v\n", "\r", "\xff\xfe", "\0",
                "/lib/modules/", "/build", ": No such file or directory", "kernel headers for kernel ",
                " cannot be found", "loading NVIDIA UNIX", "Kernel Module", "  ", "\xe2\x82\xac", "Jul 31 23:14:18 h k: ",
                "\nNVRM: Xid (PCI:0000:07:00): 48, ", "\nNVRM: Xid (PCI:0000:08:00): 149, x Fatal",
                "\nNVRM: The NVIDIA GPU 0000:b3:00.0\nNVRM: x\n", "\nNVRM: API mismatch: the client has the version 1.2\n",
        };
        struct buf b = {0};
        for (int i = 0; i < 200000; i++) {
                size_t k = rnd() % ELEMENTSOF(frag);
                buf_append(&b, frag[k], frag[k][0] ? strlen(frag[k]) : 1);
        }
        s = kmsg_scan_new();
        for (size_t off = 0; off < b.len;) {
                size_t c = 1 + rnd() % 300;
                if (c > b.len - off) c = b.len - off;
                kmsg_scan_feed(s, b.data + off, c);
                off += c;
        }
        kmsg_scan_finish(s);
        sum = kmsg_scan_summary(s);
        assert_true(sum->ev[KMSG_EV_XID].count > 0);
        check_invariants(sum);
        kmsg_scan_free(s);
        buf_free(&b);
}

/* NUL bytes and invalid UTF-8 inside an event line: found, and kept text is clean. */
static void test_nul_bytes(void **state) {
        (void)state;
        static const char line[] = "NVRM: Xid (PCI:0000:07:00): 48, \0\0 DBE \xff\xc3\xa9 end\n\0\0\0\n";
        struct kmsg_scan *s = scan_all(line, sizeof line - 1);
        const struct kmsg_summary *sum = kmsg_scan_summary(s);
        assert_int_equal(sum->ev[KMSG_EV_XID].count, 1);
        assert_string_equal(sum->ev[KMSG_EV_XID].first.text, "NVRM: Xid (PCI:0000:07:00): 48, ?? DBE ?\xc3\xa9 end");
        assert_int_equal(sum->lines, 2);
        kmsg_scan_free(s);
}

/* Overlong lines: cut at KMSG_LINE_MAX, counted, the next line intact, in any chunking. */
static void test_long_lines(void **state) {
        (void)state;
        const size_t big = 10u << 20;
        static const char xid[] = "NVRM: Xid (PCI:0000:07:00): 79, GPU has fallen off the bus.\n";
        struct buf b = {0};
        char *pad = xmalloc(big);
        memset(pad, 'a', big);

        /* 10 MB line, then an Xid line */
        buf_append(&b, pad, big);
        buf_append(&b, "\n", 1);
        buf_append(&b, xid, sizeof xid - 1);
        for (int chunking = 0; chunking < 3; chunking++) {
                struct kmsg_scan *s = kmsg_scan_new();
                size_t step = chunking == 0 ? b.len : chunking == 1 ? 4096 : KMSG_LINE_MAX + 1;
                for (size_t off = 0; off < b.len; off += step)
                        kmsg_scan_feed(s, b.data + off, b.len - off < step ? b.len - off : step);
                kmsg_scan_finish(s);
                const struct kmsg_summary *sum = kmsg_scan_summary(s);
                assert_int_equal(sum->overlong_lines, 1);
                assert_int_equal(sum->lines, 2);
                assert_int_equal(sum->ev[KMSG_EV_XID].count, 1);
                assert_int_equal(sum->ev[KMSG_EV_XID].first.lineno, 2);
                assert_int_equal(sum->bytes, b.len);
                kmsg_scan_free(s);
        }

        /* a 10 MB line that starts with an Xid: its first KMSG_LINE_MAX bytes are scanned */
        b.len = 0;
        buf_append(&b, xid, sizeof xid - 2);
        buf_append(&b, pad, big);
        for (int chunking = 0; chunking < 2; chunking++) {
                struct kmsg_scan *s = kmsg_scan_new();
                size_t step = chunking == 0 ? b.len : 65536;
                for (size_t off = 0; off < b.len; off += step)
                        kmsg_scan_feed(s, b.data + off, b.len - off < step ? b.len - off : step);
                kmsg_scan_finish(s);        /* no final newline */
                const struct kmsg_summary *sum = kmsg_scan_summary(s);
                assert_int_equal(sum->overlong_lines, 1);
                assert_int_equal(sum->lines, 1);
                assert_int_equal(sum->ev[KMSG_EV_XID].count, 1);
                assert_int_equal(strlen(sum->ev[KMSG_EV_XID].first.text), KMSG_TEXT_MAX);
                kmsg_scan_free(s);
        }

        /* exactly KMSG_LINE_MAX is not overlong, one more byte is */
        for (size_t extra = 0; extra < 2; extra++) {
                for (int split = 0; split < 2; split++) {
                        b.len = 0;
                        buf_append(&b, pad, KMSG_LINE_MAX + extra);
                        buf_append(&b, "\n", 1);
                        struct kmsg_scan *s = kmsg_scan_new();
                        size_t cut = split ? 100 : b.len;
                        kmsg_scan_feed(s, b.data, cut);
                        kmsg_scan_feed(s, b.data + cut, b.len - cut);
                        kmsg_scan_finish(s);
                        assert_int_equal(kmsg_scan_summary(s)->overlong_lines, extra);
                        assert_int_equal(kmsg_scan_summary(s)->lines, 1);
                        kmsg_scan_free(s);
                }
        }
        free(pad);
        buf_free(&b);
}

/* The summary stays within its bounds whatever comes. */
static void test_event_bounds(void **state) {
        (void)state;
        struct buf b = {0};
        /* 1000 GPUs */
        for (int i = 0; i < 1000; i++)
                buf_printf(&b, "NVRM: Xid (PCI:%04x:%02x:00): 13, pid=1\n", i / 256, i % 256);
        struct kmsg_scan *s = scan_all(b.data, b.len);
        const struct kmsg_summary *sum = kmsg_scan_summary(s);
        assert_int_equal(sum->n_gpus, KMSG_MAX_GPUS);
        assert_int_equal(sum->gpus_untracked_events, 1000 - KMSG_MAX_GPUS);
        assert_int_equal(sum->ev[KMSG_EV_XID].count, 1000);
        assert_string_equal(sum->gpus[0]->pci, "0000:00:00");
        assert_string_equal(sum->gpus[255]->pci, "0000:ff:00");
        check_invariants(sum);
        kmsg_scan_free(s);

        /* 100 distinct Xid numbers on one GPU */
        b.len = 0;
        for (int x = 1; x <= 100; x++) buf_printf(&b, "NVRM: Xid (PCI:0000:07:00): %d, x\n", x);
        s = scan_all(b.data, b.len);
        sum = kmsg_scan_summary(s);
        assert_int_equal(sum->gpus[0]->n_xids, KMSG_MAX_XIDS_PER_GPU);
        assert_int_equal(sum->gpus[0]->xids_untracked, 100 - KMSG_MAX_XIDS_PER_GPU);
        assert_int_equal(sum->gpus[0]->xid_count, 100);
        assert_int_equal(sum->gpus[0]->worst, XID_CRITICAL);     /* Xid 48 among them */
        check_invariants(sum);
        kmsg_scan_free(s);

        /* 1000 events on one GPU: the last KMSG_RECENT_XIDS kept, in order */
        b.len = 0;
        for (int i = 1; i <= 1000; i++) buf_printf(&b, "NVRM: Xid (PCI:0000:07:00): %d, event %d\n", i % 2 ? 48 : 64, i);
        s = scan_all(b.data, b.len);
        sum = kmsg_scan_summary(s);
        const struct kmsg_gpu *g = sum->gpus[0];
        assert_int_equal(g->n_recent, KMSG_RECENT_XIDS);
        for (size_t i = 0; i < KMSG_RECENT_XIDS; i++) {
                const struct kmsg_xid_event *e = kmsg_gpu_recent(g, i);
                assert_int_equal(e->line.lineno, 1000 - KMSG_RECENT_XIDS + 1 + i);
                char want[64];
                snprintf(want, sizeof want, "NVRM: Xid (PCI:0000:07:00): %d, event %zu", (int)((e->line.lineno % 2) ? 48 : 64),
                         (size_t)e->line.lineno);
                assert_string_equal(e->line.text, want);
        }
        assert_int_equal(kmsg_gpu_xid(g, 48)->count, 500);
        assert_int_equal(kmsg_gpu_xid(g, 48)->first.lineno, 1);
        assert_int_equal(kmsg_gpu_xid(g, 64)->last.lineno, 1000);
        assert_true(kmsg_gpu_xid_before(g, 48, 64));
        assert_true(kmsg_gpu_xid_before(g, 64, 48));   /* 64 at line 2, 48 at line 3 */
        check_invariants(sum);
        kmsg_scan_free(s);

        /* a long Xid line is kept cut at KMSG_TEXT_MAX bytes, at a character boundary */
        b.len = 0;
        buf_puts(&b, "NVRM: Xid (PCI:0000:07:00): 31, ");
        for (int i = 0; i < 400; i++) buf_puts(&b, "\xc3\xa9");
        buf_puts(&b, "\n");
        s = scan_all(b.data, b.len);
        size_t tl = strlen(kmsg_scan_summary(s)->ev[KMSG_EV_XID].first.text);
        assert_true(tl <= KMSG_TEXT_MAX && tl >= KMSG_TEXT_MAX - 1);
        assert_true(tl % 2 == 32 % 2);  /* 32 ASCII bytes, then whole 2-byte characters */
        kmsg_scan_free(s);

        /* the memory bound, whatever the input: the scanner plus KMSG_MAX_GPUS GPUs */
        assert_true(sizeof(struct kmsg_summary) + KMSG_LINE_MAX + KMSG_MAX_GPUS * sizeof(struct kmsg_gpu) < (16u << 20));
        buf_free(&b);
}

/* /dev/kmsg record helpers: feed_record and read_fd over record-preserving sockets and a pipe. */
static void test_records(void **state) {
        (void)state;
        static const char *const recs[] = {
                "6,1,5678901,-;NVRM: Xid (PCI:0000:07:00): 48, DBE",
                "6,2,5678902,-;NVRM: Xid (PCI:0000:07:00): 64, failed\n SUBSYSTEM=pci\n DEVICE=+pci:0000:07:00.0\n",
                "4,3,5678903,-;NVRM: The NVIDIA GPU 0000:b3:00.0\n",
                "4,4,5678904,-;NVRM: (PCI ID: 10de:26b5) installed in this system has\n SUBSYSTEM=pci\n",
                "4,5,5678905,-;NVRM: fallen off the bus and is not responding to commands.",
        };
        struct kmsg_scan *s = kmsg_scan_new();
        for (size_t i = 0; i < ELEMENTSOF(recs); i++) kmsg_scan_feed_record(s, recs[i], strlen(recs[i]));
        kmsg_scan_finish(s);
        const struct kmsg_summary *sum = kmsg_scan_summary(s);
        assert_int_equal(sum->ev[KMSG_EV_XID].count, 2);
        assert_int_equal(sum->ev[KMSG_EV_FALLEN_OFF_BUS].count, 1);
        assert_string_equal(sum->ev[KMSG_EV_FALLEN_OFF_BUS].value, "0000:b3:00");
        assert_string_equal(sum->ev[KMSG_EV_XID].last.ts, "5.678902");
        assert_true(kmsg_gpu_xid_before(kmsg_summary_gpu(sum, "0000:07:00"), 48, 64));
        kmsg_scan_free(s);

        /* SOCK_SEQPACKET keeps record boundaries like /dev/kmsg */
        for (int nonblock = 0; nonblock < 2; nonblock++) {
                int sv[2];
                assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
                for (size_t i = 0; i < ELEMENTSOF(recs); i++)
                        assert_int_equal(write(sv[1], recs[i], strlen(recs[i])), (ssize_t)strlen(recs[i]));
                if (nonblock) fcntl(sv[0], F_SETFL, O_NONBLOCK);        /* EAGAIN ends the read */
                else close(sv[1]);                                      /* EOF ends the read */
                s = kmsg_scan_new();
                assert_int_equal(kmsg_scan_read_fd(s, sv[0], true), 0);
                kmsg_scan_finish(s);
                sum = kmsg_scan_summary(s);
                assert_int_equal(sum->ev[KMSG_EV_XID].count, 2);
                assert_int_equal(sum->ev[KMSG_EV_FALLEN_OFF_BUS].count, 1);
                assert_int_equal(sum->lines, 8);
                kmsg_scan_free(s);
                close(sv[0]);
                if (nonblock) close(sv[1]);
        }

        /* a plain stream (a saved log) */
        int p[2];
        assert_int_equal(pipe(p), 0);
        static const char text[] = "[ 1.0] NVRM: Xid (PCI:0000:07:00): 48, x\n[ 2.0] NVRM: Xid (PCI:0000:07:00): 64, y";
        assert_int_equal(write(p[1], text, sizeof text - 1), (ssize_t)(sizeof text - 1));
        close(p[1]);
        s = kmsg_scan_new();
        assert_int_equal(kmsg_scan_read_fd(s, p[0], false), 0);
        kmsg_scan_finish(s);
        assert_int_equal(kmsg_scan_summary(s)->ev[KMSG_EV_XID].count, 2);
        assert_string_equal(kmsg_scan_summary(s)->ev[KMSG_EV_XID].last.ts, "2.0");
        close(p[0]);
        assert_int_equal(kmsg_scan_read_fd(s, p[0], false), -EBADF);
        kmsg_scan_free(s);
        kmsg_scan_free(NULL);
}

/* Prefix look-alikes stay part of the message; odd prefixes are tolerated. */
static void test_prefix_edges(void **state) {
        (void)state;
        const char *log = "[drm] NVRM: Xid (PCI:0000:07:00): 13, x\n"            /* not a timestamp */
                          "12,34;NVRM: Xid (PCI:0000:07:00): 13, y\n"             /* not a kmsg header */
                          "6,1,2,-,caller=T1 bad;NVRM: Xid (PCI:0000:07:00): 13, z\n"
                          "Foo 31 23:14:18 h kernel: NVRM: Xid (PCI:0000:07:00): 13, w\n"
                          " NOTKEY value NVRM: Xid (PCI:0000:07:00): 13, v\n"     /* not a continuation */
                          " KEY=NVRM: Xid (PCI:0000:07:00): 13, skipped\n"        /* a continuation */
                          "[\n[]\n6\n6,\n6,1,\nJul\n2024-07-31T\n";
        struct kmsg_scan *s = scan_all(log, strlen(log));
        const struct kmsg_summary *sum = kmsg_scan_summary(s);
        assert_int_equal(sum->ev[KMSG_EV_XID].count, 5);
        assert_string_equal(sum->ev[KMSG_EV_XID].first.text, "[drm] NVRM: Xid (PCI:0000:07:00): 13, x");
        assert_string_equal(sum->ev[KMSG_EV_XID].first.ts, "");
        assert_int_equal(sum->lines, 13);
        kmsg_scan_free(s);
}

/* The kernel's PCI enumeration lines: NVIDIA GPUs kept per boot, every other device and near-miss not. */
static void test_pci_enumeration(void **state) {
        (void)state;
        struct kmsg_boot_gpu g;
        const char *l;
        /* 5.x/6.1 (Debian 12, Ubuntu 22.04), 6.8+ with the port type, an A100 with "class 0x030200" */
        l = "pci 0000:18:00.0: [10de:2330] type 00 class 0x030200";
        assert_int_equal(kmsg_parse_pci_enum(l, strlen(l), &g), 0);
        assert_string_equal(g.address, "0000:18:00.0");
        assert_int_equal(g.device, 0x2330);
        assert_int_equal(g.class_code, 0x030200);
        l = "pci 0000:DB:00.0: [10de:2335] type 00 class 0x030200 PCIe Endpoint";
        assert_int_equal(kmsg_parse_pci_enum(l, strlen(l), &g), 0);
        assert_string_equal(g.address, "0000:db:00.0");
        /* a VGA-class GPU (an L40S's display mode), a VMD domain */
        l = "pci 10000:01:00.0: [10de:26b9] type 00 class 0x030000";
        assert_int_equal(kmsg_parse_pci_enum(l, strlen(l), &g), 0);
        assert_string_equal(g.address, "10000:01:00.0");
        /* other devices: an NVSwitch, the GPU's audio function, an Intel bridge */
        l = "pci 0000:05:00.0: [10de:22a3] type 00 class 0x068000";
        assert_int_equal(kmsg_parse_pci_enum(l, strlen(l), &g), -ENOENT);
        l = "pci 0000:3b:00.1: [10de:22ba] type 00 class 0x040300";
        assert_int_equal(kmsg_parse_pci_enum(l, strlen(l), &g), -ENOENT);
        l = "pci 0000:00:00.0: [8086:09a2] type 00 class 0x060000";
        assert_int_equal(kmsg_parse_pci_enum(l, strlen(l), &g), -ENOENT);
        /* not enumeration lines */
        static const char *const bad[] = {
                "pci 0000:18:00.0: reg 0x10: [mem 0x18000000-0x18ffffff 64bit pref]",
                "pci 0000:18:00.0: [10de:2330] type 00 class 0x0302001",
                "pci 0000:18:00.0: [10de:2330] type 00 class 0x0302",
                "pci 0000:18:00.8: [10de:2330] type 00 class 0x030200",
                "pci 000:18:00.0: [10de:2330] type 00 class 0x030200",
                "pci 0000:18:00.0 [10de:2330] type 00 class 0x030200",
                "pci 0000:18:00.0: [10de:2330]",
                "pci 0000:18:00.0: [10de:233g] type 00 class 0x030200",
                "pci 0000:18:00.0: [10de:2330] type 00 class 0x03020g",
                "pci ",
                "",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                assert_int_equal(kmsg_parse_pci_enum(bad[i], strlen(bad[i]), &g), -EINVAL);
        /* cut anywhere: never read past n */
        l = "pci 0000:18:00.0: [10de:2330] type 00 class 0x030200";
        for (size_t n = 0; n < strlen(l); n++) {
                char *cut = xmalloc(n + 1); /* exactly n bytes that matter: ASan sees a read past them */
                memcpy(cut, l, n);
                assert_int_equal(kmsg_parse_pci_enum(cut, n, &g), -EINVAL);
                free(cut);
        }

        /* in a log: two boots (journal format); only the last boot's GPUs, each address once */
        const char *log =
                "Jul 31 23:14:18 h kernel: Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org)\n"
                "Jul 31 23:14:18 h kernel: pci 0000:18:00.0: [10de:2330] type 00 class 0x030200\n"
                "Jul 31 23:14:18 h kernel: pci 0000:2a:00.0: [10de:2330] type 00 class 0x030200\n"
                "Aug  1 08:00:01 h kernel: Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org)\n"
                "Aug  1 08:00:01 h kernel: pci 0000:05:00.0: [10de:22a3] type 00 class 0x068000\n"
                "Aug  1 08:00:01 h kernel: pci 0000:18:00.0: [10de:2330] type 00 class 0x030200\n"
                "Aug  1 09:00:01 h kernel: pci 0000:18:00.0: [10de:2330] type 00 class 0x030200\n"
                "[    2.345678] pci 0000:3a:00.0: [10de:2330] type 00 class 0x030200 PCIe Endpoint\n"
                "6,812,5012000,-;pci 0000:5d:00.0: [10de:2330] type 00 class 0x030200\n";
        struct kmsg_scan *s = scan_all(log, strlen(log));
        const struct kmsg_summary *sum = kmsg_scan_summary(s);
        assert_true(sum->boot_seen);
        assert_int_equal(sum->n_boot_gpus, 3);
        assert_string_equal(sum->boot_gpus[0].address, "0000:18:00.0");
        assert_int_equal(sum->boot_gpus[0].line.lineno, 6);
        assert_string_equal(sum->boot_gpus[1].address, "0000:3a:00.0");
        assert_string_equal(sum->boot_gpus[1].line.ts, "2.345678");
        assert_string_equal(sum->boot_gpus[2].address, "0000:5d:00.0");
        kmsg_scan_free(s);

        /* more GPUs than tracked: counted, not kept */
        char *big = NULL;
        size_t big_len = 0;
        FILE *m = open_memstream(&big, &big_len);
        for (unsigned i = 0; i < KMSG_MAX_BOOT_GPUS + 5; i++)
                fprintf(m, "pci 0000:%02x:%02x.0: [10de:2330] type 00 class 0x030200\n", i / 32, i % 32);
        fclose(m);
        s = scan_all(big, big_len);
        sum = kmsg_scan_summary(s);
        assert_false(sum->boot_seen);
        assert_int_equal(sum->n_boot_gpus, KMSG_MAX_BOOT_GPUS);
        assert_int_equal(sum->boot_gpus_untracked, 5);
        kmsg_scan_free(s);
        free(big);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_reference_lines),
                cmocka_unit_test(test_multiline_every_split),
                cmocka_unit_test(test_multiline_two_cuts),
                cmocka_unit_test(test_multiline_consecutive_only),
                cmocka_unit_test(test_whole_file),
                cmocka_unit_test(test_more_shapes),
                cmocka_unit_test(test_pci_normalize),
                cmocka_unit_test(test_garbage),
                cmocka_unit_test(test_nul_bytes),
                cmocka_unit_test(test_long_lines),
                cmocka_unit_test(test_event_bounds),
                cmocka_unit_test(test_records),
                cmocka_unit_test(test_prefix_edges),
                cmocka_unit_test(test_pci_enumeration),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
