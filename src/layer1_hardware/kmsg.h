/* kmsg.h: a streaming, bounded-memory scanner for NVIDIA events in a kernel log (/dev/kmsg, dmesg, journal, syslog). */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nvidia/pci_address.h"
#include "nvidia/sxid.h"
#include "nvidia/xid.h"

/* Limits: the memory a scan holds is bounded by these, whatever the input's size. */
#define KMSG_LINE_MAX             (64u * 1024u)   /* bytes of one line looked at; the rest is skipped */
#define KMSG_TEXT_MAX             300             /* bytes of a line kept as evidence */
#define KMSG_TS_MAX               40              /* bytes of a timestamp kept */
#define KMSG_PCI_MAX              PCI_ADDRESS_MAX /* "0000:07:00" plus room for a long domain */
#define KMSG_UUID_MAX             48              /* "GPU-8ff9e7c1-...": 40 bytes */
#define KMSG_VALUE_MAX            64
#define KMSG_MAX_GPUS             256 /* GPUs (PCI addresses) tracked */
#define KMSG_MAX_XIDS_PER_GPU     24  /* distinct Xid numbers tracked per GPU */
#define KMSG_RECENT_XIDS          32  /* last Xid events kept per GPU, in order */
#define KMSG_MAX_SWITCHES         64  /* NVSwitches (PCI addresses) tracked */
#define KMSG_MAX_SXIDS_PER_SWITCH 24  /* distinct SXid numbers tracked per NVSwitch */
#define KMSG_MAX_BOOT_GPUS        64  /* GPUs the kernel enumerated at boot tracked */

/* What the scanner recognises. value/value2 of struct kmsg_event_stat hold, from the last
 * occurrence, what the comment names ("" when the line did not say). */
enum kmsg_event_kind {
        KMSG_EV_XID,                 /* NVRM: Xid (PCI:...): N   value: PCI address, value2: Xid */
        KMSG_EV_FALLEN_OFF_BUS,      /* Xid 79, "GPU at PCI:...: GPU has fallen off the bus", or the
                                      * Xid-less 3-line form (address from its first line, only when
                                      * the lines are consecutive; a lone "fallen off the bus" line
                                      * still counts, address "")   value: PCI address */
        KMSG_EV_API_MISMATCH,        /* NVRM: API mismatch   value: client version, value2: kernel module version */
        KMSG_EV_LIB_MISMATCH,        /* "driver/library version mismatch" (NVML as a container sees it) */
        KMSG_EV_MODULE_KEY_REJECTED, /* Secure Boot / signature: key rejected, not trusted   value: module */
        KMSG_EV_LOCKDOWN,            /* Lockdown: unsigned module loading is restricted */
        KMSG_EV_MODULE_LOAD_FAILED,  /* modprobe: could not insert 'nvidia*'   value: module, value2: error */
        KMSG_EV_MODULE_TAINTED,      /* module verification failed (informational: it loaded)   value: module */
        KMSG_EV_HEADERS_MISSING,     /* kernel headers for a driver build missing   value: kernel release */
        KMSG_EV_PEERMEM_ERROR,       /* nvidia-peermem ERROR (GPUDirect RDMA) */
        KMSG_EV_CUDA_802,            /* CUDA error 802 "system not yet initialized" (fabric manager) */
        KMSG_EV_RM_INIT_FAILED,      /* NVRM: RmInitAdapter failed   value: PCI address */
        KMSG_EV_DRIVER_LOADED,       /* NVRM: loading NVIDIA UNIX ... Kernel Module   value: version */
        KMSG_EV_GPU_UUID,            /* NVRM: GPU at PCI:...: GPU-<uuid>   value: PCI address, value2: UUID */
        KMSG_EV_SXID,                /* nvidia-nvswitchN: SXid (PCI:...): N, ...   value: PCI address, value2: SXid */
        _KMSG_EV_MAX,
};

/* One line kept as evidence. */
struct kmsg_line {
        uint64_t lineno;              /* 1-based line in the input; 0: none kept */
        uint64_t seq;                 /* order of the event among all events of the scan */
        char ts[KMSG_TS_MAX];         /* the timestamp as the prefix gave it ("123.456789",
                                       * "Wed Jul 31 23:14:18 2024", "Jul 31 23:14:18"), or "" */
        char text[KMSG_TEXT_MAX + 1]; /* the message without its prefix, valid UTF-8 with
                                       * control bytes as '?', cut at KMSG_TEXT_MAX bytes;
                                       * multi-line events joined with ' ' */
};

struct kmsg_event_stat {
        uint64_t count;
        struct kmsg_line first, last;
        char value[KMSG_VALUE_MAX], value2[KMSG_VALUE_MAX];
};

/* One Xid number on one GPU. */
struct kmsg_xid_stat {
        int xid;
        uint64_t count;
        enum xid_severity worst; /* worst severity of its lines (NVLink5 varies); for
                                  * Xid 154, a state, the last line's severity */
        struct kmsg_line first, last;
        struct kmsg_line worst_line; /* the first line with that severity (Xid 154: the last) */
};

struct kmsg_xid_event {
        int xid;
        enum xid_severity severity; /* xid_severity_for_line() of this line */
        struct kmsg_line line;
};

struct kmsg_gpu {
        char pci[KMSG_PCI_MAX];   /* normalised "0000:07:00" (domain:bus:device) */
        char uuid[KMSG_UUID_MAX]; /* from "NVRM: GPU at PCI:...: GPU-<uuid>", or "" */
        uint64_t xid_count;       /* all Xid lines for this GPU */
        uint64_t xids_untracked;  /* of them, Xid numbers beyond KMSG_MAX_XIDS_PER_GPU */
        uint64_t fallen_off_bus;
        enum xid_severity worst; /* worst over all Xids; XID_INFO when none */
        size_t n_xids;
        struct kmsg_xid_stat xids[KMSG_MAX_XIDS_PER_GPU]; /* in order of first appearance */
        size_t n_recent, recent_head;                     /* ring: use kmsg_gpu_recent() */
        struct kmsg_xid_event recent[KMSG_RECENT_XIDS];
};

/* One SXid number on one NVSwitch. The driver logs one occurrence as a headline ("24007, Fatal,
 * Link 04 sourcetrack timeout error") with detail lines around it ("24007, Data {...}", "24007,
 * Severity 0 ..."): occurrences count headlines, or detail lines when an SXid had no headline. */
struct kmsg_sxid_stat {
        int sxid;
        uint64_t lines;                   /* every line naming it */
        uint64_t fatal, non_fatal, other; /* headlines saying Fatal, Non-fatal, neither */
        enum sxid_verdict worst;          /* sxid_verdict_for() over its lines */
        int link;                         /* link of the last headline naming one, -1 */
        struct kmsg_line first, last;     /* headlines (any line until the first headline) */
        struct kmsg_line worst_line;      /* the first line with the worst verdict */
};

struct kmsg_switch {
        char pci[KMSG_PCI_MAX];   /* normalised "0000:05:00" */
        int instance;             /* N of nvidia-nvswitchN, -1 when no line said */
        uint64_t sxid_lines;      /* all SXid lines for this switch */
        uint64_t sxids_untracked; /* of them, SXid numbers beyond KMSG_MAX_SXIDS_PER_SWITCH */
        enum sxid_verdict worst;
        size_t n_sxids;
        struct kmsg_sxid_stat sxids[KMSG_MAX_SXIDS_PER_SWITCH]; /* in order of first appearance */
};

/* A GPU the kernel enumerated on the PCI bus, from its "pci 0000:18:00.0: [10de:2330] type 00 class
 * 0x030200" line (vendor 10de, class 0x0300xx VGA or 0x0302xx 3D controller). */
struct kmsg_boot_gpu {
        char address[KMSG_PCI_MAX + 4]; /* "0000:18:00.0" as the line gives it, lowercased */
        uint16_t device;                /* the PCI device id: 0x2330 */
        uint32_t class_code;            /* 0x030200 */
        struct kmsg_line line;
};

struct kmsg_summary {
        uint64_t lines;                 /* lines seen (kmsg continuation lines included) */
        uint64_t bytes;                 /* bytes fed */
        uint64_t overlong_lines;        /* lines longer than KMSG_LINE_MAX (cut there) */
        uint64_t kmsg_gaps;             /* EPIPE from /dev/kmsg: records lost to overwrite */
        uint64_t events;                /* all events recorded (the last seq) */
        uint64_t gpus_untracked_events; /* events for GPUs beyond KMSG_MAX_GPUS */
        size_t n_gpus;
        struct kmsg_gpu *gpus[KMSG_MAX_GPUS]; /* in order of first appearance */
        struct kmsg_event_stat ev[_KMSG_EV_MAX];
        size_t n_switches;
        struct kmsg_switch *switches[KMSG_MAX_SWITCHES]; /* in order of first appearance */
        uint64_t switches_untracked_events;              /* SXid lines for NVSwitches beyond KMSG_MAX_SWITCHES */
        /* The GPUs enumerated since the last "Linux version" line (the last boot in the log), each
         * address once, in order; boot_gpus_untracked counts those beyond KMSG_MAX_BOOT_GPUS. */
        size_t n_boot_gpus;
        struct kmsg_boot_gpu boot_gpus[KMSG_MAX_BOOT_GPUS];
        uint64_t boot_gpus_untracked;
        bool boot_seen; /* a "Linux version" line was in the log: the enumeration is of a whole boot */
};

struct kmsg_scan;

/* Returns a new scanner; never NULL (allocation failure aborts, as everywhere in gpunode). */
struct kmsg_scan *kmsg_scan_new(void);

/* Frees the scanner and its summary; NULL is fine. */
void kmsg_scan_free(struct kmsg_scan *s);
static inline void kmsg_scan_freep(struct kmsg_scan **s) {
        kmsg_scan_free(*s);
}
#define _cleanup_kmsg_scan_ __attribute__((cleanup(kmsg_scan_freep)))

/* Feeds len bytes of log text, split anywhere (mid-line, mid-UTF-8, NUL bytes and all).
 * Lines end at '\n' ("\r\n" is fine); each line's format is detected on its own. Never fails. */
void kmsg_scan_feed(struct kmsg_scan *s, const char *data, size_t len);

/* Feeds one record as read() from /dev/kmsg returns it ("6,1234,5678901,-;msg\n KEY=v\n"),
 * adding the final newline when missing. Never fails. */
void kmsg_scan_feed_record(struct kmsg_scan *s, const char *data, size_t len);

/* Reads fd to its end and feeds what it reads. With records set, fd is /dev/kmsg (best opened
 * O_NONBLOCK): each read() is one record, EPIPE (records overwritten) is counted in kmsg_gaps
 * and EAGAIN ends the read. Returns 0, or -errno from read() (what was read stays fed). Does
 * not call kmsg_scan_finish(). */
int kmsg_scan_read_fd(struct kmsg_scan *s, int fd, bool records);

/* Ends the input: scans a last line without '\n' and completes a pending multi-line event.
 * Feeding after it starts a new line. Never fails. */
void kmsg_scan_finish(struct kmsg_scan *s);

/* Returns the summary so far (valid until the next feed or free). */
const struct kmsg_summary *kmsg_scan_summary(const struct kmsg_scan *s);

/* Returns the GPU with that PCI address (any form kmsg_pci_normalize() accepts), or NULL. */
const struct kmsg_gpu *kmsg_summary_gpu(const struct kmsg_summary *sum, const char *pci);

/* Returns the statistics of one Xid number on a GPU, or NULL when it was not seen (or not
 * tracked). */
const struct kmsg_xid_stat *kmsg_gpu_xid(const struct kmsg_gpu *g, int xid);

/* Returns the i-th of the GPU's recent Xid events, 0 the oldest kept, or NULL when i >= n_recent. */
const struct kmsg_xid_event *kmsg_gpu_recent(const struct kmsg_gpu *g, size_t i);

/* Returns the statistics of one SXid number on an NVSwitch, or NULL when not seen (or not tracked). */
const struct kmsg_sxid_stat *kmsg_switch_sxid(const struct kmsg_switch *sw, int sxid);

/* Returns the occurrences of an SXid: its headlines, or its lines when it had none. */
uint64_t kmsg_sxid_occurrences(const struct kmsg_sxid_stat *st);

/* Returns true when an Xid `first` was logged on the GPU before an Xid `then` (e.g. 48 then 64:
 * drain and reset). Exact over the whole input for tracked Xid numbers. */
bool kmsg_gpu_xid_before(const struct kmsg_gpu *g, int first, int then);

/* Parses a kernel PCI enumeration line's message (n bytes, prefix removed): "pci 0000:18:00.0:
 * [10de:2330] type 00 class 0x030200" (newer kernels append " PCIe Endpoint" or the like). Returns 0
 * with the address (lowercased), the device id and the class in ret (line untouched) when it names an
 * NVIDIA GPU (vendor 10de, class 0x0300xx or 0x0302xx); -ENOENT when it is an enumeration line of any
 * other device; -EINVAL when it is not an enumeration line. */
int kmsg_parse_pci_enum(const char *s, size_t n, struct kmsg_boot_gpu *ret);

/* Returns a stable name for an event kind ("xid", "fallen-off-bus", ...), or "?". */
const char *kmsg_event_kind_name(enum kmsg_event_kind k);

/* Parses a PCI address at the start of s (n bytes) as pci_address_normalize() (nvidia/pci_address.h)
 * does: "PCI:0000:07:00", "0000:b3:00.0", "07:00"; writes "dddd:bb:dd" to ret. Returns the number
 * of bytes consumed, or -EINVAL when s does not start with an address. */
int kmsg_pci_normalize(const char *s, size_t n, char ret[KMSG_PCI_MAX]);
