/* xid.c: the Xid catalog table (from NVIDIA's Xid catalog, its debug guidelines, GPUd and the device plugin). */
#include "nvidia/xid.h"
#include "basic/util.h"

#include <stdint.h>
#include <strings.h>

/* Remedy sentences shared by many entries. */
#define T_APP "Restart the application; if it recurs, check the application and its CUDA code."
#define T_APP_DP                                                                                                       \
        "Restart the application; the device plugin treats this Xid as an application error, so the GPU stays "        \
        "allocatable."
#define T_RESET                                                                                                        \
        "Drain the GPU's workloads and reset it (nvidia-smi -r -i <gpu>); reboot the node if the reset fails; "        \
        "contact support if it recurs."
#define T_REBOOT      "Cordon and drain the node, then reboot it; if the Xid recurs, contact NVIDIA support (RMA candidate)."
#define T_NONE        "No action; watch for repeats."
#define T_SUPPORT     "Collect nvidia-bug-report.sh output and contact NVIDIA support."
#define T_INVESTIGATE "Look at the driver and application logs around this Xid; update the driver if it recurs."
#define T_NVLINK5                                                                                                      \
        "Read the line: a Fatal NVLink5 error needs a GPU reset (drain first), a Nonfatal one needs none; check "      \
        "nvidia-smi nvlink -e and the fabric manager log."

#define E(n, nm, mean, act, sev, rem, text)                                                                            \
        {                                                                                                              \
                .xid = n, .name = nm, .meaning = mean, .action = XID_ACTION_##act, .severity = sev,                    \
                .remedy = XID_REMEDY_##rem, .remedy_text = text                                                        \
        }
/* An application error per NVIDIA (RESTART_APP). */
#define APP(n, nm, mean) E(n, nm, mean, RESTART_APP, XID_APPLICATION, RESTART_APP, T_APP)
/* Informational per NVIDIA (IGNORE). */
#define INFO(n, nm, mean) E(n, nm, mean, IGNORE, XID_INFO, NONE, T_NONE)
/* The GPU needs a reset (RESET_GPU). */
#define RESET(n, nm, mean) E(n, nm, mean, RESET_GPU, XID_CRITICAL, RESET_GPU, T_RESET)
#define NVL5(n, nm, mean)  E(n, nm, mean, WORKFLOW_NVLINK5_ERR, XID_WARNING, RESET_GPU, T_NVLINK5)

/* Sorted by Xid. Codes NVIDIA lists as "Unused" are left out (they read as unknown), except
 * 61, which GPUd treats as fatal. */
static const struct xid_info catalog[] = {
        APP(8, "FIFO_ERROR_IDLE_TIMEOUT", "GPU stopped processing"),
        APP(11, "GR_ERROR_MISSING_HW", "Invalid or corrupted push buffer stream"),
        E(13, "GR_EXCEPTION", "Graphics engine exception (e.g. illegal instruction, out-of-range address in a kernel)",
          RESTART_APP, XID_APPLICATION, RESTART_APP, T_APP_DP),
        APP(25, "GR_ILLEGAL_NOTIFY", "Invalid or illegal push buffer stream"),
        E(31, "FIFO_ERROR_MMU_ERR_FLT", "GPU memory page fault (usually an application bug)", RESTART_APP,
          XID_APPLICATION, RESTART_APP, T_APP_DP),
        APP(32, "PBDMA_ERROR", "Invalid or corrupted push buffer stream"),
        INFO(37, "FECS_ERR_UNIMP_FIRMWARE_METHOD", "Driver firmware error"),
        INFO(38, "FECS_ERR_WATCHDOG_TIMEOUT", "Driver firmware error"),
        APP(39, "CE0_ERROR", "Copy engine exception"),
        APP(40, "CE1_ERROR", "Copy engine exception"),
        APP(41, "CE2_ERROR", "Copy engine exception"),
        E(43, "RESETCHANNEL_VERIF_ERROR",
          "GPU stopped processing (the application hit a fault and its channel was reset)", IGNORE, XID_APPLICATION,
          RESTART_APP, T_APP_DP),
        INFO(44, "GR_FAULT_DURING_CTXSW", "Graphics engine fault during context switch"),
        E(45, "PREEMPTIVE_REMOVAL",
          "Preemptive cleanup after previous errors; alone it may mean the fabric manager stopped", WORKFLOW_XID_45,
          XID_APPLICATION, RESTART_APP,
          "Look for the Xid it follows and act on that one; alone on an NVSwitch system, check that "
          "nvidia-fabricmanager runs."),
        RESET(46, "GPU_TIMEOUT_ERROR", "GPU stopped processing"),
        E(48, "GPU_ECC_DBE", "Double-bit (uncorrectable) ECC error", WORKFLOW_XID_48, XID_CRITICAL, RESET_GPU,
          "Drain the GPU and reset it; if Xid 63 or 64 follow, drain the node and reset (row remap pending or failed); "
          "check nvidia-smi -q -d ROW_REMAPPER,ECC."),
        E(54, "SILENT_RUNNING_PWR_REDUCED_CLOCKING", "Auxiliary power is not connected to the GPU board",
          CHECK_MECHANICALS, XID_WARNING, CHECK_HARDWARE, "Check the GPU's auxiliary power cables and seating."),
        APP(60, "SEC2_ERROR", "Video processor exception"),
        E(61, "PMU_BREAKPOINT", "Internal micro-controller breakpoint (GPUd treats it as fatal)", CONTACT_SUPPORT,
          XID_CRITICAL, RESET_GPU, T_RESET),
        RESET(62, "PMU_HALT_ERROR", "Internal micro-controller halt"),
        E(63, "INFOROM_DRAM_RETIREMENT_EVENT", "GPU memory row remap or page retirement recorded", IGNORE, XID_INFO,
          NONE, "No action unless it repeats; a pending remap takes effect at the next GPU reset."),
        E(64, "INFOROM_DRAM_RETIREMENT_FAILURE", "GPU memory row remap or page retirement failed", RESET_GPU,
          XID_CRITICAL, REBOOT_NODE,
          "Drain the node and reboot it now (NVIDIA debug guidelines); if it recurs, contact support (RMA)."),
        INFO(66, "FECS_ERR_REG_ACCESS_VIOLATION", "Illegal access by driver"),
        INFO(67, "FECS_ERR_VERIF_VIOLATION", "Illegal access by driver"),
        E(68, "NVDEC0_ERROR", "NVDEC0 (video decoder) exception", RESTART_APP, XID_APPLICATION, RESTART_APP, T_APP_DP),
        APP(69, "GR_CLASS_ERROR", "Graphics engine class error"),
        APP(70, "CE3_ERROR", "Copy engine 3 error"),
        APP(71, "CE4_ERROR", "Copy engine 4 error"),
        APP(72, "CE5_ERROR", "Copy engine 5 error"),
        E(74, "NVLINK_ERROR", "NVLink error", WORKFLOW_NVLINK_ERR, XID_CRITICAL, RESET_GPU,
          "Check NVLink state and error counters (nvidia-smi nvlink -s, -e); drain and reset the GPU; contact support "
          "if it recurs."),
        APP(75, "CE6_ERROR", "Copy engine 6 error"),
        APP(76, "CE7_ERROR", "Copy engine 7 error"),
        APP(77, "CE8_ERROR", "Copy engine 8 error"),
        E(78, "VGPU_START_ERROR", "vGPU start error", UPDATE_SWFW, XID_WARNING, UPDATE_SOFTWARE,
          "Update the vGPU host and guest drivers to matching versions."),
        E(79, "GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus (no longer reachable over PCIe)", RESTART_BM,
          XID_CRITICAL, REBOOT_NODE, T_REBOOT),
        APP(80, "PBDMA_PUSHBUFFER_CRC_MISMATCH", "Corrupted data sent to GPU"),
        APP(82, "NVJPG0_ERROR", "NVJPG0 error"),
        APP(83, "NVDEC1_ERROR", "NVDEC1 error"),
        APP(84, "NVDEC2_ERROR", "NVDEC2 error"),
        APP(85, "CE9_ERROR", "Copy engine 9 error"),
        APP(86, "OFA0_ERROR", "Optical flow accelerator exception"),
        APP(88, "NVDEC3_ERROR", "NVDEC3 error"),
        APP(89, "NVDEC4_ERROR", "NVDEC4 error"),
        E(92, "EXCESSIVE_SBE_INTERRUPTS", "High single-bit ECC error rate", IGNORE, XID_INFO, NONE,
          "No action now; if frequent, the GPU is an RMA candidate (contact support)."),
        INFO(93, "INFOROM_ERASE_LIMIT_EXCEEDED", "Non-fatal violation of provisioned InfoROM wear limit"),
        E(94, "CONTAINED_ERROR", "Contained ECC error (only the affected application is hit)", RESTART_APP,
          XID_APPLICATION, RESTART_APP, "Restart the affected application; reset the GPU at a convenient time."),
        E(95, "UNCONTAINED_ERROR", "Uncontained ECC error", RESET_GPU, XID_CRITICAL, REBOOT_NODE,
          "Drain the node; with MIG off reboot it now (NVIDIA debug guidelines), with MIG on reset the GPU."),
        APP(96, "NVDEC5_ERROR", "NVDEC5 error"),
        APP(97, "NVDEC6_ERROR", "NVDEC6 error"),
        APP(98, "NVDEC7_ERROR", "NVDEC7 error"),
        APP(99, "NVJPG1_ERROR", "NVJPG1 error"),
        APP(100, "NVJPG2_ERROR", "NVJPG2 error"),
        APP(101, "NVJPG3_ERROR", "NVJPG3 error"),
        APP(102, "NVJPG4_ERROR", "NVJPG4 error"),
        APP(103, "NVJPG5_ERROR", "NVJPG5 error"),
        APP(104, "NVJPG6_ERROR", "NVJPG6 error"),
        APP(105, "NVJPG7_ERROR", "NVJPG7 error"),
        INFO(106, "SMBPBI_TEST_MESSAGE", "SMBPBI test message"),
        INFO(107, "SMBPBI_TEST_MESSAGE_SILENT", "SMBPBI test message (silent)"),
        RESET(109, "CTXSW_TIMEOUT_ERROR", "Context switch timeout"),
        RESET(110, "SEC_FAULT_ERROR", "Security fault error"),
        RESET(119, "GSP_RPC_TIMEOUT", "GSP RPC timeout (the GPU System Processor stopped answering)"),
        RESET(120, "GSP_ERROR", "GSP error"),
        INFO(121, "C2C_ERROR", "C2C link error"),
        APP(126, "CE10_ERROR", "Copy engine 10 error"),
        APP(127, "CE11_ERROR", "Copy engine 11 error"),
        APP(128, "CE12_ERROR", "Copy engine 12 error"),
        APP(129, "CE13_ERROR", "Copy engine 13 error"),
        APP(130, "CE14_ERROR", "Copy engine 14 error"),
        APP(131, "CE15_ERROR", "Copy engine 15 error"),
        APP(132, "CE16_ERROR", "Copy engine 16 error"),
        APP(133, "CE17_ERROR", "Copy engine 17 error"),
        APP(134, "CE18_ERROR", "Copy engine 18 error"),
        APP(135, "CE19_ERROR", "Copy engine 19 error"),
        RESET(136, "ALI_TRAINING_FAIL", "NVLink link training failed"),
        INFO(137, "NVLINK_PRIV_ERR", "NVLink privilege error"),
        APP(139, "OFA1_ERROR", "OFA1 error"),
        RESET(140, "UNRECOVERABLE_ECC_ERROR_ESCAPE", "Unrecovered ECC error"),
        INFO(141, "FAST_PATH_ERROR", "CUDA fast path error"),
        E(142, "NVENC3_ERROR", "NVENC3 error", CONTACT_SUPPORT, XID_WARNING, CONTACT_SUPPORT, T_SUPPORT),
        RESET(143, "GPU_INIT_ERROR", "GPU initialization error"),
        NVL5(144, "NVLINK_SAW_ERROR", "NVLink5 SAW error"),
        NVL5(145, "NVLINK_RLW_ERROR", "NVLink5 RLW error"),
        NVL5(146, "NVLINK_TLW_ERROR", "NVLink5 TLW error"),
        NVL5(147, "NVLINK_TREX_ERROR", "NVLink5 TREX error"),
        NVL5(148, "NVLINK_NVLPW_CTRL_ERROR", "NVLink5 NVLPW_CTRL error"),
        NVL5(149, "NVLINK_NETIR_ERROR", "NVLink5 NETIR error"),
        NVL5(150, "NVLINK_MSE_ERROR", "NVLink5 MSE error"),
        E(151, "KEY_ROTATION_ERROR", "Confidential computing key rotation error", RESTART_VM, XID_CRITICAL, REBOOT_NODE,
          "Restart the VM (or node) that owns the GPU."),
        INFO(152, "DLA_SMMU_ERROR", "DLA SMMU error"),
        INFO(153, "DLA_TIMEOUT", "DLA timeout error"),
        E(154, "GPU_RECOVERY_ACTION_CHANGED",
          "GPU recovery action changed: the line names the action the GPU needs now", XID_154, XID_INFO, NONE,
          "Read the GPU recovery action (NVML field 230): 0 none, 1 GPU reset, 2 node reboot, 3 drain peer-to-peer, 4 "
          "drain and reset."),
        RESET(155, "NVLINK_SW_DEFINED_ERROR", "NVLink software-defined error"),
        E(156, "RESOURCE_RETIREMENT_EVENT", "Resource retirement event", RESET_GPU, XID_WARNING, RESET_GPU,
          "Reset the GPU at a convenient time so the retirement takes effect."),
        E(157, "RESOURCE_RETIREMENT_FAILURE", "Resource retirement failure", IGNORE, XID_WARNING, CONTACT_SUPPORT,
          T_SUPPORT),
        RESET(158, "GPU_FATAL_TIMEOUT", "GPU fatal timeout"),
        E(159, "CHI_NON_DATA_ERROR", "CHI non-data error", CHECK_UVM, XID_WARNING, INVESTIGATE,
          "Check the nvidia_uvm module and the application; contact support if it recurs alone."),
        INFO(160, "CHANNEL_RETIREMENT_EVENT", "Channel retirement event"),
        INFO(161, "CHANNEL_RETIREMENT_FAILURE", "Channel retirement failure"),
        E(162, "PSHC_REENGAGED", "Power smoothing circuitry re-engaged", NONE, XID_INFO, NONE, T_NONE),
        E(163, "PSHC_DISENGAGED", "Power smoothing circuitry disengaged", NONE, XID_WARNING, INVESTIGATE,
          "Check the power smoothing settings (nvidia-smi power-smoothing)."),
        E(164, "PSHC_LOW_LIFETIME", "Power smoothing circuitry low lifetime reached", NONE, XID_WARNING,
          CONTACT_SUPPORT, T_SUPPORT),
        E(165, "PSHC_ZERO_LIFETIME", "Power smoothing circuitry lifetime exhausted", NONE, XID_WARNING, CONTACT_SUPPORT,
          T_SUPPORT),
        E(166, "NVLINK_SECURE_CRYPTO_ERR", "Confidential computing traffic before the link was set up for encryption",
          NONE, XID_WARNING, INVESTIGATE, T_INVESTIGATE),
        E(167, "PCIE_FATAL_TIMEOUT", "PCIe fatal timeout", NONE, XID_CRITICAL, RESET_GPU, T_RESET),
        E(168, "REDUCED_GPU_MEMORY_CAPACITY", "Errors in the write-protected region: reduced GPU memory capacity", NONE,
          XID_WARNING, CONTACT_SUPPORT, T_SUPPORT),
        E(169, "SEC2_HALT_ERROR", "Internal micro-controller (SEC2) halt", NONE, XID_CRITICAL, RESET_GPU, T_RESET),
        E(170, "NVLINK_SECURE_OTHER", "NVLink interrupt in confidential computing mode", NONE, XID_WARNING, INVESTIGATE,
          T_INVESTIGATE),
        E(171, "UNCORRECTABLE_DRAM_ERROR", "Uncorrectable DRAM error (details for an Xid 48)", NONE, XID_CRITICAL,
          RESET_GPU, "Act on the Xid 48 it accompanies: drain the GPU and reset it."),
        E(172, "UNCORRECTABLE_SRAM_ERROR", "Uncorrectable SRAM error (details for an Xid 48)", NONE, XID_CRITICAL,
          RESET_GPU, "Act on the Xid 48 it accompanies: drain the GPU and reset it."),
};

/* NVIDIA's catalog files every code it does not use under CONTACT_SUPPORT; an Xid gpunode does not
 * know is one of those or a newer one: either way NVIDIA support is who can say. */
static const struct xid_info unknown_entry = {
        .xid = 0,
        .name = "UNKNOWN",
        .meaning = "Xid not in gpunode's catalog; see docs.nvidia.com/deploy/xid-errors",
        .action = XID_ACTION_CONTACT_SUPPORT,
        .severity = XID_UNKNOWN,
        .remedy = XID_REMEDY_CONTACT_SUPPORT,
        .remedy_text =
                "An Xid gpunode does not know: look it up in NVIDIA's Xid catalog (docs.nvidia.com/deploy/xid-errors) "
                "and follow its immediate action; if it is not there (NVML reports 999 for an unknown Xid), collect "
                "nvidia-bug-report.sh output and contact NVIDIA support.",
};

/* Returns the catalog entry for xid or NULL (binary search over the sorted table). */
static const struct xid_info *find(int xid) {
        size_t lo = 0, hi = ELEMENTSOF(catalog);
        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (catalog[mid].xid == xid) return &catalog[mid];
                if (catalog[mid].xid < xid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

/* Returns the entry for xid, or the shared unknown entry; never NULL. */
const struct xid_info *xid_lookup(int xid) {
        const struct xid_info *e = find(xid);
        return e ? e : &unknown_entry;
}

/* Returns true when xid has its own entry. */
bool xid_is_known(int xid) {
        return find(xid) != NULL;
}

/* Returns true for the NVLink5 Xids 144-150. */
bool xid_is_nvlink5(int xid) {
        return xid >= 144 && xid <= 150;
}

/* Returns true when c is an ASCII letter (no locale). */
static bool is_alpha(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Returns 1 when the line says Fatal as a word, -1 when it says Nonfatal/Non-fatal (any
 * case of the "fatal" part), 0 when neither. "Nonfatal" wins when both appear. */
static int fatal_word(const char *line, size_t len) {
        int r = 0;
        for (size_t i = 0; i + 5 <= len; i++) {
                if ((line[i] != 'F' && line[i] != 'f') || strncasecmp(line + i, "fatal", 5) != 0) continue;
                if (i + 5 < len && is_alpha(line[i + 5])) continue; /* "Fatality", "fatally" */
                size_t j = i;
                if (j > 0 && line[j - 1] == '-') j--;
                if (j >= 3 && strncasecmp(line + j - 3, "non", 3) == 0 && (j == 3 || !is_alpha(line[j - 4]))) return -1;
                if (i > 0 && is_alpha(line[i - 1])) continue; /* "unfatal": not a word */
                if (line[i] == 'F') r = 1;                    /* NVRM writes "Fatal" */
        }
        return r;
}

/* Returns the value of the hex number "0x..." at p (n bytes) into *ret and the bytes it took, 0 when
 * there is none (at most 8 digits). */
static size_t hex_at(const char *p, size_t n, uint32_t *ret) {
        if (n < 3 || p[0] != '0' || (p[1] != 'x' && p[1] != 'X')) return 0;
        uint32_t v = 0;
        size_t i = 2;
        for (; i < n && i < 10; i++) {
                char c = p[i];
                unsigned d;
                if (c >= '0' && c <= '9')
                        d = (unsigned)(c - '0');
                else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
                        d = (unsigned)((c | 0x20) - 'a' + 10);
                else
                        break;
                v = v * 16 + d;
        }
        if (i == 2 || (i < n && ((p[i] >= '0' && p[i] <= '9') || is_alpha(p[i])))) return 0;
        *ret = v;
        return i;
}

/* Returns the action number of an Xid 154 line ("... changed from 0x0 (None) to 0x1 (GPU Reset
 * Required)") and copies its name ("GPU Reset Required") to name (cap bytes, may be 0), or -1. */
int xid154_action(const char *line, size_t len, char *name, size_t cap) {
        if (cap) name[0] = 0;
        if (!line) return -1;
        const char *a = memmem(line, len, "recovery action changed", 23);
        if (!a) return -1;
        const char *end = line + len;
        const char *t = memmem(a, (size_t)(end - a), " to 0x", 6);
        if (!t) return -1;
        uint32_t v;
        size_t h = hex_at(t + 4, (size_t)(end - t - 4), &v);
        if (!h || v > 1000) return -1;
        const char *p = t + 4 + h;
        if (cap && end - p > 2 && p[0] == ' ' && p[1] == '(') {
                const char *q = memchr(p + 2, ')', (size_t)(end - p - 2));
                size_t n = q ? (size_t)(q - p - 2) : 0;
                if (n >= cap) n = cap - 1;
                for (size_t i = 0; i < n; i++) name[i] = (p[2 + i] >= 0x20 && p[2 + i] < 0x7f) ? p[2 + i] : '?';
                name[n] = 0;
        }
        return (int)v;
}

/* Returns the error status of an NVLink5 Xid line, the second number in "(0xINTRINFO 0xSTATUS ...)"
 * (GPUd and NVIDIA's NVLink catalog read it there), into *ret; false when the line has none. */
static bool nvlink5_error_status(const char *line, size_t len, uint32_t *ret) {
        const char *end = line + len;
        for (const char *p = line; (p = memchr(p, '(', (size_t)(end - p))); p++) {
                uint32_t intrinfo;
                size_t h = hex_at(p + 1, (size_t)(end - p - 1), &intrinfo);
                if (!h || p + 1 + h >= end || p[1 + h] != ' ') continue;
                if (hex_at(p + 2 + h, (size_t)(end - p - 2 - h), ret)) return true;
        }
        return false;
}

/* Returns the severity of an Xid 146 (TLW) error status per NVIDIA's NVLink catalog: 0x4 Fatal,
 * RESET_GPU; 0x2 Non-fatal but leading to Xid 48/94/95, CONTACT_SUPPORT; 0x80000000 software,
 * CONTACT_SUPPORT if it recurs; 0x1 IGNORE. */
static enum xid_severity tlw_severity(uint32_t status) {
        if (status & 0x4) return XID_CRITICAL;
        if (status & 0x80000002u) return XID_WARNING;
        if (status == 0x1) return XID_INFO;
        return XID_WARNING;
}

/* Returns the catalog severity, refined by the line for NVLink5 (Fatal/Nonfatal; Xid 146's error
 * status) and Xid 154 (the recovery action). Never fails. */
enum xid_severity xid_severity_for_line(int xid, const char *line, size_t len) {
        const struct xid_info *e = xid_lookup(xid);
        if (!line) return e->severity;
        if (xid == 154) {
                int a = xid154_action(line, len, NULL, 0);
                return a > 0 ? XID_CRITICAL : e->severity;
        }
        if (!xid_is_nvlink5(xid)) return e->severity;
        uint32_t status;
        if (xid == 146 && nvlink5_error_status(line, len, &status)) return tlw_severity(status);
        int f = fatal_word(line, len);
        if (f > 0) return XID_CRITICAL;
        if (f < 0) return XID_WARNING;
        return e->severity;
}

/* Returns the remedy sentence for one line (see xid.h). Never fails. */
const char *xid_remedy_for_line(int xid, const char *line, size_t len) {
        const struct xid_info *e = xid_lookup(xid);
        if (!line) return e->remedy_text;
        if (xid == 154) {
                switch (xid154_action(line, len, NULL, 0)) {
                case -1:
                case 0: return e->remedy_text;
                case 1:
                        return "The driver asks for a GPU reset: drain the GPU's jobs and reset it (nvidia-smi -r -i "
                               "<gpu>); reboot the node if the reset fails.";
                case 2: return "The driver asks for a node reboot: cordon and drain the node, then reboot it.";
                case 3:
                        return "The driver asks to drain peer-to-peer traffic: stop the jobs using the GPU "
                               "peer-to-peer (and UVM persistence), then read the recovery action again (nvidia-smi "
                               "-q).";
                case 4:
                        return "The driver asks to drain and reset: stop the jobs using the GPU peer-to-peer, then "
                               "reset the GPU (nvidia-smi -r -i <gpu>).";
                default:
                        return "The driver names a recovery action gpunode does not know: act on the action the line "
                               "names; contact NVIDIA support.";
                }
        }
        uint32_t status;
        if (xid == 146 && nvlink5_error_status(line, len, &status)) {
                if (status & 0x4)
                        return "A fatal NVLink TLW error (error status 0x4): drain the GPU and reset it; contact "
                               "NVIDIA support if it recurs.";
                if (status & 0x2)
                        return "An uncorrectable NVLink TLW error (error status 0x2): no reset now, but it leads to "
                               "Xid 48 or poisoned data (Xid 94/95): watch for those and contact NVIDIA support.";
                if (status & 0x80000000u)
                        return "A software-reported NVLink TLW error (error status 0x80000000): no action now; contact "
                               "NVIDIA support if it recurs.";
                if (status == 0x1) return "A corrected NVLink TLW error (error status 0x1): no action.";
        }
        return e->remedy_text;
}

/* Returns NVIDIA's spelling of the action, or "?" when out of range. */
const char *xid_action_name(enum xid_action a) {
        static const char *const names[_XID_ACTION_MAX] = {
                [XID_ACTION_NONE] = "NONE",
                [XID_ACTION_RESTART_APP] = "RESTART_APP",
                [XID_ACTION_RESET_GPU] = "RESET_GPU",
                [XID_ACTION_RESTART_BM] = "RESTART_BM",
                [XID_ACTION_RESTART_VM] = "RESTART_VM",
                [XID_ACTION_IGNORE] = "IGNORE",
                [XID_ACTION_CONTACT_SUPPORT] = "CONTACT_SUPPORT",
                [XID_ACTION_CHECK_MECHANICALS] = "CHECK_MECHANICALS",
                [XID_ACTION_UPDATE_SWFW] = "UPDATE_SWFW",
                [XID_ACTION_CHECK_UVM] = "CHECK_UVM",
                [XID_ACTION_WORKFLOW_XID_45] = "WORKFLOW_XID_45",
                [XID_ACTION_WORKFLOW_XID_48] = "WORKFLOW_XID_48",
                [XID_ACTION_WORKFLOW_NVLINK_ERR] = "WORKFLOW_NVLINK_ERR",
                [XID_ACTION_WORKFLOW_NVLINK5_ERR] = "WORKFLOW_NVLINK5_ERR",
                [XID_ACTION_XID_154] = "XID_154",
        };
        return (unsigned)a < _XID_ACTION_MAX ? names[a] : "?";
}

/* Returns the severity's name, or "?" when out of range. */
const char *xid_severity_name(enum xid_severity s) {
        static const char *const names[_XID_SEVERITY_MAX] = {
                [XID_INFO] = "info",       [XID_APPLICATION] = "application", [XID_UNKNOWN] = "unknown",
                [XID_WARNING] = "warning", [XID_CRITICAL] = "critical",
        };
        return (unsigned)s < _XID_SEVERITY_MAX ? names[s] : "?";
}

/* Returns the remedy's name, or "?" when out of range. */
const char *xid_remedy_name(enum xid_remedy r) {
        static const char *const names[_XID_REMEDY_MAX] = {
                [XID_REMEDY_NONE] = "none",
                [XID_REMEDY_RESTART_APP] = "restart-app",
                [XID_REMEDY_RESET_GPU] = "reset-gpu",
                [XID_REMEDY_REBOOT_NODE] = "reboot-node",
                [XID_REMEDY_CHECK_HARDWARE] = "check-hardware",
                [XID_REMEDY_UPDATE_SOFTWARE] = "update-software",
                [XID_REMEDY_INVESTIGATE] = "investigate",
                [XID_REMEDY_CONTACT_SUPPORT] = "contact-support",
        };
        return (unsigned)r < _XID_REMEDY_MAX ? names[r] : "?";
}

/* Returns the number of entries; *ret points at the first (sorted by Xid). Never fails. */
size_t xid_catalog(const struct xid_info **ret) {
        *ret = catalog;
        return ELEMENTSOF(catalog);
}
