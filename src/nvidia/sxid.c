/* sxid.c: the SXid catalog table (from NVIDIA's Fabric Manager user guide, appendix "NVSwitch errors", and GPUd's SXid
 * component) and the SXid line parser. */
#include "nvidia/sxid.h"
#include "basic/util.h"
#include "nvidia/pci_address.h"

#include <strings.h>

/* Remedy sentences shared by many entries. */
#define T_NONE  "No action: the NVSwitch hardware corrected it; watch the rate."
#define T_WATCH "No action while it stays rare; a rising rate means a link to look at (nvidia-smi nvlink -e)."
#define T_RESET                                                                                                        \
        "Drain the node's GPU jobs, then reset every GPU and NVSwitch (stop nvidia-fabricmanager, nvidia-smi -r, "     \
        "start it again) or reboot the node; contact NVIDIA support if it recurs."
#define T_REBOOT                                                                                                       \
        "Always fatal to the whole NVLink fabric: drain the node and reboot it; contact NVIDIA support if it recurs."
#define T_MECH "Unless an uncoordinated shutdown explains it, check the NVLink connections (baseboard seating, cables)."
#define T_COOL "Check the system's cooling (fans, inlet air) and the NVSwitch temperatures."

#define E(n, nm, c, reset, text)                                                                                       \
        { .sxid = n, .name = nm, .cls = SXID_CLASS_##c, .needs_reset = reset, .remedy_text = text }
/* Single-bit ECC errors the switch corrects itself. */
#define SBE(n) E(n, "single-bit ECC error (corrected)", NON_FATAL, false, T_NONE)
/* Fatal per the guide (when the line says so): reset the GPUs and NVSwitches. */
#define FATAL(n, nm) E(n, nm, FATAL, false, T_RESET)
/* Always fatal per the guide: restart the host. */
#define ALWAYS(n, nm) E(n, nm, ALWAYS_FATAL, true, T_REBOOT)

/* Sorted by SXid. */
static const struct sxid_info catalog[] = {
        FATAL(10001, "host PRIV error"),
        FATAL(10002, "host PRIV timeout"),
        ALWAYS(10003, "host unhandled interrupt"),
        E(10004, "host thermal event start", FATAL, false, T_COOL),
        E(10005, "host thermal event end", NON_FATAL, false, T_COOL),
        FATAL(11001, "ingress invalid command"),
        E(11004, "ingress invalid ACL", NON_FATAL, true,
          "A fabric partition configuration error: validate the routing (nvswitch-audit), then reset every GPU and "
          "NVSwitch or reboot the node."),
        FATAL(11009, "ingress invalid VCSet"),
        SBE(11012),
        FATAL(11013, "ingress header DBE"),
        FATAL(11018, "ingress RID DBE"),
        FATAL(11019, "ingress RLAN DBE"),
        FATAL(11020, "ingress control parity"),
        SBE(11021),
        SBE(11022),
        SBE(11023),
        FATAL(12001, "egress crossbar overflow"),
        FATAL(12002, "egress packet route"),
        ALWAYS(12020, "egress sequence ID error"),
        SBE(12021),
        FATAL(12022, "egress input ECC DBE error"),
        SBE(12023),
        FATAL(12024, "egress output ECC DBE error"),
        FATAL(12025, "egress credit overflow"),
        FATAL(12026, "egress destination request ID error"),
        FATAL(12027, "egress destination response ID error"),
        E(12028, "egress non-posted PRIV error", NON_FATAL, true,
          "NVLink traffic through the port stalls and GPU access hangs (CUDA jobs end with Xid 45): drain the node, "
          "then reset every GPU and NVSwitch or reboot it."),
        FATAL(12030, "egress control parity error"),
        FATAL(12031, "egress credit parity error"),
        FATAL(12032, "egress flit type mismatch"),
        FATAL(14017, "TS ATO timeout"),
        FATAL(15001, "route buffer over/underflow"),
        FATAL(15006, "route transdone over/underflow"),
        SBE(15008),
        FATAL(15009, "route GLT DBE"),
        FATAL(15010, "route parity"),
        SBE(15011),
        FATAL(15012, "route incoming DBE"),
        FATAL(15013, "route credit parity"),
        FATAL(19047, "NCISOC HDR ECC DBE error"),
        FATAL(19048, "NCISOC DAT ECC DBE error"),
        SBE(19049),
        FATAL(19054, "HDR RAM ECC DBE error"),
        SBE(19055),
        FATAL(19056, "DAT0 RAM ECC DBE error"),
        SBE(19057),
        FATAL(19058, "DAT1 RAM ECC DBE error"),
        SBE(19059),
        FATAL(19060, "CREQ RAM HDR ECC DBE error"),
        FATAL(19061, "CREQ RAM DAT ECC DBE error"),
        SBE(19062),
        FATAL(19063, "response RAM HDR ECC DBE error"),
        FATAL(19064, "response RAM DAT ECC DBE error"),
        SBE(19065),
        FATAL(19066, "COM RAM HDR ECC DBE error"),
        FATAL(19067, "COM RAM DAT ECC DBE error"),
        SBE(19068),
        FATAL(19069, "RSP1 RAM HDR ECC DBE error"),
        FATAL(19070, "RSP1 RAM DAT ECC DBE error"),
        SBE(19071),
        E(19084, "AN1 heartbeat timeout", NON_FATAL, true,
          "Drain the node's GPU jobs, then reset every GPU and NVSwitch or reboot the node."),
        E(20001, "TX replay error", NON_FATAL, false, T_WATCH),
        E(20009, "RX short error rate", NON_FATAL, false, T_WATCH),
        E(20012, "broken/inconsistent connection", NON_FATAL, false, T_MECH),
        FATAL(20034, "LTSSM fault up"),
        ALWAYS(22003, "Minion halt"),
        ALWAYS(22011, "Minion exterror"),
        E(22012, "Minion link NA interrupt", FATAL, false, T_MECH),
        E(22013, "Minion link DLREQ interrupt", NON_FATAL, false, T_WATCH),
        ALWAYS(23001, "ingress SRC-VC buffer overflow"),
        ALWAYS(23002, "ingress SRC-VC buffer underflow"),
        ALWAYS(23003, "egress DST-VC credit overflow"),
        ALWAYS(23004, "egress DST-VC credit underflow"),
        ALWAYS(23005, "ingress packet burst error"),
        ALWAYS(23006, "ingress packet sticky error"),
        ALWAYS(23007, "possible bubbles at ingress"),
        ALWAYS(23008, "ingress packet invalid dst error"),
        ALWAYS(23009, "ingress packet parity error"),
        ALWAYS(23010, "ingress SRC-VC buffer overflow"),
        ALWAYS(23011, "ingress SRC-VC buffer underflow"),
        ALWAYS(23012, "egress DST-VC credit overflow"),
        ALWAYS(23013, "egress DST-VC credit underflow"),
        ALWAYS(23014, "ingress packet burst error"),
        ALWAYS(23015, "ingress packet sticky error"),
        ALWAYS(23016, "possible bubbles at ingress"),
        ALWAYS(23017, "ingress credit parity error"),
        SBE(24001),
        SBE(24002),
        SBE(24003),
        FATAL(24004, "sourcetrack TCEN0 crumbstore DBE"),
        FATAL(24005, "sourcetrack TCEN0 TD crumbstore DBE"),
        FATAL(24006, "sourcetrack TCEN1 crumbstore DBE"),
        FATAL(24007, "sourcetrack timeout error"),
};

static const struct sxid_info unknown_entry = {
        .sxid = 0,
        .name = "SXid not in gpunode's catalog (see the Fabric Manager user guide, \"NVSwitch errors\")",
        .cls = SXID_CLASS_UNKNOWN,
        .needs_reset = false,
        .remedy_text = "Look the SXid up in the Fabric Manager user guide; if the line says Fatal, reset every GPU and "
                       "NVSwitch (or reboot) and contact NVIDIA support.",
};

/* Returns the catalog entry for sxid or NULL (binary search over the sorted table). */
static const struct sxid_info *find(int sxid) {
        size_t lo = 0, hi = ELEMENTSOF(catalog);
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (catalog[mid].sxid == sxid) return &catalog[mid];
                if (catalog[mid].sxid < sxid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

/* Returns the entry for sxid, or the shared unknown entry; never NULL. */
const struct sxid_info *sxid_lookup(int sxid) {
        const struct sxid_info *e = find(sxid);
        return e ? e : &unknown_entry;
}

/* Returns true when sxid has its own entry. */
bool sxid_is_known(int sxid) {
        return find(sxid) != NULL;
}

/* Returns the verdict of one occurrence (see sxid.h). Never fails. */
enum sxid_verdict sxid_verdict_for(int sxid, enum sxid_line_kind kind) {
        const struct sxid_info *e = sxid_lookup(sxid);
        switch (kind) {
        case SXID_LINE_FATAL: return e->cls == SXID_CLASS_ALWAYS_FATAL ? SXID_VERDICT_REBOOT : SXID_VERDICT_RESET;
        case SXID_LINE_NON_FATAL: return e->needs_reset ? SXID_VERDICT_RESET : SXID_VERDICT_WARN;
        default: break;
        }
        switch (e->cls) {
        case SXID_CLASS_ALWAYS_FATAL: return SXID_VERDICT_REBOOT;
        case SXID_CLASS_FATAL: return SXID_VERDICT_RESET;
        case SXID_CLASS_NON_FATAL: return e->needs_reset ? SXID_VERDICT_RESET : SXID_VERDICT_WARN;
        default: return SXID_VERDICT_WARN;
        }
}

/* Return true for the ASCII classes named (no locale). */
static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}
static bool is_alpha(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Returns true when the n bytes at p start with the word w (case-insensitive), not followed by a letter. */
static bool word_at(const char *p, size_t n, const char *w) {
        size_t l = strlen(w);
        return n >= l && strncasecmp(p, w, l) == 0 && (n == l || !is_alpha(p[l]));
}

/* Reads "nvidia-nvswitchN:" ending right before `at` (spaces between allowed). Returns N or -1. */
static int instance_before(const char *line, const char *at) {
        const char *e = at;
        while (e > line && e[-1] == ' ') e--;
        if (e == line || e[-1] != ':') return -1;
        e--;
        const char *d = e;
        while (d > line && is_digit(d[-1]) && e - d < 6) d--;
        if (d == e || (size_t)(d - line) < 15 || memcmp(d - 15, "nvidia-nvswitch", 15) != 0) return -1;
        int v = 0;
        for (const char *p = d; p < e; p++) v = v * 10 + (*p - '0');
        return v;
}

/* Parses one line (see sxid.h). Returns 0 or -EINVAL. */
int sxid_parse_line(const char *line, size_t len, struct sxid_line *ret) {
        if (!line) return -EINVAL;
        const char *end = line + len;
        const char *s = memmem(line, len, "SXid (", 6);
        if (!s) return -EINVAL;
        struct sxid_line r = { .instance = instance_before(line, s), .link = -1 };
        const char *p = s + 6;
        char pci[PCI_ADDRESS_MAX];
        int c = pci_address_normalize(p, (size_t)(end - p), pci);
        if (c < 0) return -EINVAL;
        p += c;
        if (end - p < 3 || p[0] != ')' || p[1] != ':' || p[2] != ' ') return -EINVAL;
        p += 3;
        int v = 0, nd = 0;
        while (p < end && is_digit(*p) && nd < 7) {
                v = v * 10 + (*p - '0');
                p++;
                nd++;
        }
        if (nd == 0 || nd > 6 || v == 0 || (p < end && *p != ',')) return -EINVAL;
        snprintf(r.pci, sizeof r.pci, "%s", pci);
        r.sxid = v;
        if (p < end) p++; /* the ',' */
        while (p < end && *p == ' ') p++;
        size_t rest = (size_t)(end - p);
        const char *desc = p;
        if (word_at(p, rest, "Non-fatal") || word_at(p, rest, "Nonfatal") || word_at(p, rest, "Fatal")) {
                r.kind = (*p == 'F' || *p == 'f') ? SXID_LINE_FATAL : SXID_LINE_NON_FATAL;
                while (p < end && *p != ',' && *p != ' ') p++;
                if (p < end && *p == ',') p++;
                while (p < end && *p == ' ') p++;
                desc = p;
                if (word_at(p, (size_t)(end - p), "Link")) {
                        const char *q = p + 4;
                        while (q < end && *q == ' ') q++;
                        int link = 0, ld = 0;
                        while (q < end && is_digit(*q) && ld < 4) {
                                link = link * 10 + (*q - '0');
                                q++;
                                ld++;
                        }
                        if (ld > 0 && ld < 4) {
                                r.link = link;
                                while (q < end && *q == ' ') q++;
                                desc = q;
                        }
                }
        } else if (word_at(p, rest, "Data") || word_at(p, rest, "Severity")) {
                r.kind = SXID_LINE_DETAIL;
        } else {
                r.kind = SXID_LINE_OTHER;
        }
        r.desc_off = (size_t)(desc - line);
        r.desc_len = (size_t)(end - desc);
        *ret = r;
        return 0;
}

/* Returns the class's name, or "?" when out of range. */
const char *sxid_class_name(enum sxid_class c) {
        static const char *const names[_SXID_CLASS_MAX] = {
                [SXID_CLASS_NON_FATAL] = "non-fatal",
                [SXID_CLASS_FATAL] = "fatal",
                [SXID_CLASS_ALWAYS_FATAL] = "always-fatal",
                [SXID_CLASS_UNKNOWN] = "unknown",
        };
        return (unsigned)c < _SXID_CLASS_MAX ? names[c] : "?";
}

/* Returns the verdict's name, or "?" when out of range. */
const char *sxid_verdict_name(enum sxid_verdict v) {
        static const char *const names[_SXID_VERDICT_MAX] = {
                [SXID_VERDICT_WARN] = "warn",
                [SXID_VERDICT_RESET] = "reset",
                [SXID_VERDICT_REBOOT] = "reboot",
        };
        return (unsigned)v < _SXID_VERDICT_MAX ? names[v] : "?";
}

/* Returns the line kind's name, or "?" when out of range. */
const char *sxid_line_kind_name(enum sxid_line_kind k) {
        static const char *const names[_SXID_LINE_KIND_MAX] = {
                [SXID_LINE_FATAL] = "fatal",
                [SXID_LINE_NON_FATAL] = "non-fatal",
                [SXID_LINE_DETAIL] = "detail",
                [SXID_LINE_OTHER] = "other",
        };
        return (unsigned)k < _SXID_LINE_KIND_MAX ? names[k] : "?";
}

/* Returns the number of entries; *ret points at the first (sorted by SXid). Never fails. */
size_t sxid_catalog(const struct sxid_info **ret) {
        *ret = catalog;
        return ELEMENTSOF(catalog);
}
