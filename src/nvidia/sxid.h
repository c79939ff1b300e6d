/* sxid.h: the NVSwitch SXid catalog (Fabric Manager user guide, "NVSwitch errors") and the parser for one SXid kernel
 * log line. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "nvidia/pci_address.h"

#define SXID_PCI_MAX PCI_ADDRESS_MAX /* "0000:c8:00", as pci_address_normalize() writes it */

/* How the Fabric Manager user guide files an SXid. */
enum sxid_class {
        SXID_CLASS_NON_FATAL,    /* "Non-Fatal NVSwitch SXid Errors": the switch goes on */
        SXID_CLASS_FATAL,        /* "Fatal NVSwitch SXid Errors": fatal when the line says so;
                                  * recover by resetting the GPUs and NVSwitches */
        SXID_CLASS_ALWAYS_FATAL, /* "Always Fatal NVSwitch SXid Errors": the whole fabric is
                                  * down until the host restarts */
        SXID_CLASS_UNKNOWN,      /* not in gpunode's catalog */
        _SXID_CLASS_MAX,
};

/* What one occurrence asks for, least to most serious. */
enum sxid_verdict {
        SXID_VERDICT_WARN,   /* a non-fatal error: watch it (warn) */
        SXID_VERDICT_RESET,  /* reset every GPU and NVSwitch (or reboot): fail */
        SXID_VERDICT_REBOOT, /* always fatal: reboot the host: fail */
        _SXID_VERDICT_MAX,
};

struct sxid_info {
        int sxid;         /* 0 for the unknown entry */
        const char *name; /* the guide's name, "sourcetrack timeout error" */
        enum sxid_class cls;
        bool needs_reset;        /* recovered with a reset even when the line says Non-fatal
                                  * (12028, 11004, 19084; every always-fatal one) */
        const char *remedy_text; /* a sentence a person can act on */
};

/* What the part after the number says. */
enum sxid_line_kind {
        SXID_LINE_FATAL,     /* "12028, Fatal, Link 46 ..." */
        SXID_LINE_NON_FATAL, /* "12028, Non-fatal, Link 46 ..." (also "Nonfatal") */
        SXID_LINE_DETAIL,    /* "12028, Data {0x...}" or "12028, Severity 0 Engine instance ..." */
        SXID_LINE_OTHER,     /* anything else after the number */
        _SXID_LINE_KIND_MAX,
};

/* One parsed line; offsets point into the line given to sxid_parse_line(). */
struct sxid_line {
        char pci[SXID_PCI_MAX]; /* normalised "0000:c8:00" (function dropped) */
        int instance;           /* N of "nvidia-nvswitchN:", -1 when the line does not say */
        int sxid;
        enum sxid_line_kind kind;
        int link;                  /* "Link 46": 46; -1 when the line names none */
        size_t desc_off, desc_len; /* the description: after "Link NN " on a Fatal/Non-fatal line,
                                    * else everything after "NNNNN, " */
};

/* Parses "[nvidia-nvswitchN: ]SXid (PCI:dddd:bb:dd.f): NNNNN, ..." anywhere in line (len bytes, no
 * NUL needed). Returns 0 with ret filled, or -EINVAL when the line holds no well-formed SXid (no
 * "SXid (", a bad PCI address, no number of 1 to 6 digits after "): "). */
int sxid_parse_line(const char *line, size_t len, struct sxid_line *ret);

/* Returns the catalog entry for sxid; never NULL: an SXid gpunode does not know gets a shared entry
 * with sxid 0 and class SXID_CLASS_UNKNOWN. */
const struct sxid_info *sxid_lookup(int sxid);

/* Returns true when sxid has its own catalog entry. */
bool sxid_is_known(int sxid);

/* Returns what one occurrence asks for: the line's own word first (Fatal: reset, or reboot for an
 * always-fatal SXid; Non-fatal: warn, unless needs_reset), the catalog's class for a line that says
 * neither (fatal: reset, always fatal: reboot, else warn unless needs_reset). Never fails. */
enum sxid_verdict sxid_verdict_for(int sxid, enum sxid_line_kind kind);

/* Return stable names, "?" when out of range: "non-fatal", "fatal", "always-fatal", "unknown";
 * "warn", "reset", "reboot"; "fatal", "non-fatal", "detail", "other". */
const char *sxid_class_name(enum sxid_class c);
const char *sxid_verdict_name(enum sxid_verdict v);
const char *sxid_line_kind_name(enum sxid_line_kind k);

/* Returns the number of catalog entries and stores the first in *ret (ascending SXid order). */
size_t sxid_catalog(const struct sxid_info **ret);
