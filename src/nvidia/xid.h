/* xid.h: the NVIDIA Xid catalog: what each Xid means, NVIDIA's immediate action, gpunode's severity and remedy. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* NVIDIA's "immediate action" vocabulary (docs.nvidia.com/deploy/xid-errors). */
enum xid_action {
        XID_ACTION_NONE, /* the catalog names none (newest Xids) */
        XID_ACTION_RESTART_APP,
        XID_ACTION_RESET_GPU,
        XID_ACTION_RESTART_BM, /* reboot the host */
        XID_ACTION_RESTART_VM,
        XID_ACTION_IGNORE,
        XID_ACTION_CONTACT_SUPPORT,
        XID_ACTION_CHECK_MECHANICALS,
        XID_ACTION_UPDATE_SWFW,
        XID_ACTION_CHECK_UVM,
        XID_ACTION_WORKFLOW_XID_45,
        XID_ACTION_WORKFLOW_XID_48,
        XID_ACTION_WORKFLOW_NVLINK_ERR,
        XID_ACTION_WORKFLOW_NVLINK5_ERR,
        XID_ACTION_XID_154, /* informational: read the GPU recovery action */
        _XID_ACTION_MAX,
};

/* How seriously gpunode takes an Xid, least to most serious. XID_UNKNOWN (not in the
 * catalog) is to be treated as a warning. */
enum xid_severity {
        XID_INFO,        /* recorded, no action (63, 92, 121, 154, ...) */
        XID_APPLICATION, /* an application's fault: warn (13, 31, 43, 45, 68, 94, ...) */
        XID_UNKNOWN,     /* not in gpunode's catalog: warn */
        XID_WARNING,     /* hardware or driver event worth a look, no immediate action */
        XID_CRITICAL,    /* the GPU or node needs a reset, reboot or support */
        _XID_SEVERITY_MAX,
};

/* What a person should do, in gpunode's words. */
enum xid_remedy {
        XID_REMEDY_NONE,
        XID_REMEDY_RESTART_APP,
        XID_REMEDY_RESET_GPU,
        XID_REMEDY_REBOOT_NODE, /* cordon, drain, reboot */
        XID_REMEDY_CHECK_HARDWARE,
        XID_REMEDY_UPDATE_SOFTWARE,
        XID_REMEDY_INVESTIGATE, /* driver/software: look at the logs */
        XID_REMEDY_CONTACT_SUPPORT,
        _XID_REMEDY_MAX,
};

struct xid_info {
        int xid;                    /* 0 for the "unknown" entry */
        const char *name;           /* NVIDIA's mnemonic, "GPU_ECC_DBE" */
        const char *meaning;        /* one line */
        enum xid_action action;     /* NVIDIA's immediate action */
        enum xid_severity severity; /* for 144-150 refine with xid_severity_for_line() */
        enum xid_remedy remedy;
        const char *remedy_text; /* a sentence a person can act on */
};

/* Returns the catalog entry for xid; never NULL: an Xid gpunode does not know (or a
 * nonsensical number) gets a shared entry with xid 0, severity XID_UNKNOWN and a meaning
 * saying it is not in gpunode's catalog. */
const struct xid_info *xid_lookup(int xid);

/* Returns true when xid has its own catalog entry. */
bool xid_is_known(int xid);

/* Returns the severity of one occurrence of xid, given the kernel log line that reported it
 * (line may be NULL, len counts bytes; NULs allowed). For the NVLink5 Xids 144-150 the line
 * decides: the word "Fatal" makes it XID_CRITICAL, "Nonfatal"/"Non-fatal" XID_WARNING; a line
 * saying neither keeps the catalog's XID_WARNING. For Xid 146 (TLW) the error status, the second
 * number in "(0x... 0x...)", decides first, as NVIDIA's catalog does: 0x4 XID_CRITICAL (reset),
 * 0x2 and 0x80000000 XID_WARNING (contact support), 0x1 XID_INFO (ignore). For Xid 154 the
 * recovery action it changed to decides: "to 0x0 (None)" XID_INFO, any other XID_CRITICAL.
 * Other Xids get their catalog severity. Never fails. */
enum xid_severity xid_severity_for_line(int xid, const char *line, size_t len);

/* Returns the remedy sentence for one occurrence: the action an Xid 154 line names, the error
 * status of an Xid 146 line, else the catalog's remedy_text. Never NULL, never fails. */
const char *xid_remedy_for_line(int xid, const char *line, size_t len);

/* Returns the recovery action number an Xid 154 line changed to ("... to 0x1 (GPU Reset
 * Required)": 1) and copies its name to name (cap bytes; cap 0: not copied), or -1 when the line
 * does not say. */
int xid154_action(const char *line, size_t len, char *name, size_t cap);

/* Returns true when xid is one of the NVLink5 Xids (144-150) whose severity is in the line. */
bool xid_is_nvlink5(int xid);

/* Return stable names, or "?" when out of range: NVIDIA's spelling for actions
 * ("RESTART_APP"); "info", "application", "unknown", "warning", "critical" for severities;
 * "none", "restart-app", "reset-gpu", "reboot-node", "check-hardware", "update-software",
 * "investigate", "contact-support" for remedies. */
const char *xid_action_name(enum xid_action a);
const char *xid_severity_name(enum xid_severity s);
const char *xid_remedy_name(enum xid_remedy r);

/* Returns the number of catalog entries and stores the first in *ret (entries are in
 * ascending Xid order, contiguous in memory); for `gpunode explain` and tests. */
size_t xid_catalog(const struct xid_info **ret);
