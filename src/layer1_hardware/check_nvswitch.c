/* check_nvswitch.c: layer 1, nvswitch: what the kernel log says about the NVSwitches: SXid errors, classified by the
 * SXid catalog. */
#include "facts/node.h"
#include "engine/check.h"
#include "layer1_hardware/kmsg.h"
#include "layer1_hardware/kmsg_evidence.h"
#include "nvidia/sxid.h"

/* Returns "0000:05:00 (nvidia-nvswitch3)" for a kernel-log NVSwitch. */
static char *switch_label(const struct kmsg_switch *sw) {
        if (sw->instance >= 0) return xasprintf("NVSwitch %s (nvidia-nvswitch%d)", sw->pci, sw->instance);
        return xasprintf("NVSwitch %s", sw->pci);
}

/* Judges nvswitch.sxid-errors (no NVSwitch error in the kernel log needs a reset) from the facts into
 * f; never fails: what it cannot read, it says. */
static void run_sxid_errors(const struct node_facts *facts, struct finding *f) {
        const struct kmsg_summary *sum = facts->kmsg.scan ? kmsg_scan_summary(facts->kmsg.scan) : NULL;
        if (facts->pci.n_nvswitches == 0 && (!sum || sum->n_switches == 0)) {
                finding_skip(f, "no NVSwitch on the PCI bus");
                return;
        }
        if (!sum) {
                finding_warn(f, "cannot read the kernel log, so cannot tell: %s", facts->kmsg.error);
                finding_remedy(f, "run as root (dmesg_restrict) with the host's /dev visible, or pass a saved log with "
                                  "--kmsg FILE");
                return;
        }
        if (facts->kmsg.rc < 0) finding_evidence(f, "kernel log read stopped early: %s", facts->kmsg.error);
        enum sxid_verdict worst = SXID_VERDICT_WARN;
        const struct kmsg_switch *worst_sw = NULL;
        const struct kmsg_sxid_stat *worst_st = NULL;
        size_t switches = 0, needing = 0;
        for (size_t i = 0; i < sum->n_switches; i++) {
                const struct kmsg_switch *sw = sum->switches[i];
                if (!sw->n_sxids && !sw->sxids_untracked) continue;
                switches++;
                if (sw->worst > SXID_VERDICT_WARN) needing++;
                _cleanup_free_ char *label = switch_label(sw);
                for (size_t x = 0; x < sw->n_sxids; x++) {
                        const struct kmsg_sxid_stat *st = &sw->sxids[x];
                        const struct sxid_info *info = sxid_lookup(st->sxid);
                        char when[KMSG_WHEN_MAX];
                        finding_evidence(f,
                                         "%s: SXid %d x%llu (%llu fatal, %llu non-fatal line(s); catalog: %s; needs: "
                                         "%s)%s: %s: %s",
                                         label, st->sxid, (unsigned long long)kmsg_sxid_occurrences(st),
                                         (unsigned long long)st->fatal, (unsigned long long)st->non_fatal,
                                         sxid_class_name(info->cls), sxid_verdict_name(st->worst),
                                         kmsg_line_when(&facts->kmsg, &st->worst_line, when), info->name,
                                         st->worst_line.text);
                        if (!worst_st || st->worst > worst) {
                                worst = st->worst;
                                worst_sw = sw;
                                worst_st = st;
                        }
                }
                if (sw->sxids_untracked)
                        finding_evidence(f, "%s: %llu more SXid line(s) of numbers not tracked", label,
                                         (unsigned long long)sw->sxids_untracked);
        }
        if (sum->switches_untracked_events)
                finding_evidence(f, "%llu SXid line(s) of NVSwitches beyond the %d tracked",
                                 (unsigned long long)sum->switches_untracked_events, KMSG_MAX_SWITCHES);
        finding_evidence(f, "%s: %llu lines scanned; %zu NVSwitch function(s) on the PCI bus", facts->kmsg.source,
                         (unsigned long long)sum->lines, facts->pci.n_nvswitches);
        if (!worst_st) {
                finding_pass(f, "no SXid errors in the kernel log (%zu NVSwitch(es))", facts->pci.n_nvswitches);
                return;
        }
        _cleanup_free_ char *label = switch_label(worst_sw);
        const struct sxid_info *info = sxid_lookup(worst_st->sxid);
        if (worst == SXID_VERDICT_REBOOT) {
                finding_fail(f, "always-fatal SXid %d (%s) on %s: the NVLink fabric is down until the host restarts",
                             worst_st->sxid, info->name, label);
                finding_remedy(f, "%s", info->remedy_text);
        } else if (worst == SXID_VERDICT_RESET) {
                _cleanup_free_ char *more =
                        needing > 1 ? xasprintf(" and %zu more NVSwitch(es)", needing - 1) : xstrdup("");
                finding_fail(f, "%s SXid %d (%s) on %s%s: NVLink traffic through it is lost, jobs end with Xid 45/74",
                             worst_st->fatal ? "fatal" : "NVSwitch error", worst_st->sxid, info->name, label, more);
                finding_remedy(f, "%s", info->remedy_text);
        } else {
                finding_warn(f, "non-fatal SXid %d (%s) on %s (%zu NVSwitch(es) with SXids)", worst_st->sxid,
                             info->name, label, switches);
                finding_remedy(f, "%s", info->remedy_text);
        }
}

const struct check_def check_nvswitch_sxid_errors = {
        .id = "nvswitch.sxid-errors",
        .action = ACTION_RESET_GPU,
        .layer = 1,
        .component = "nvswitch",
        .title = "no NVSwitch error (SXid) in the kernel log needs a reset",
        .reads = "kernel log (/dev/kmsg or --kmsg FILE): nvidia-nvswitchN SXid lines per NVSwitch, each line's "
                 "Fatal/Non-fatal "
                 "word, classified by the SXid catalog of the Fabric Manager user guide; NVSwitch PCI functions",
        .outcomes = "pass: no SXid; warn: only non-fatal SXids (corrected ECC, replays, link interrupts) or an "
                    "unreadable log; "
                    "fail: a fatal SXid, or a non-fatal one the guide recovers with a reset (12028, 11004, 19084): "
                    "reset every "
                    "GPU and NVSwitch; an always-fatal one (12020, 22003, 23001-23017, ...): reboot; skip: no NVSwitch",
        .remedy = "drain the node, reset all GPUs and NVSwitches (stop the fabric manager, nvidia-smi -r, start it) or "
                  "reboot; "
                  "contact NVIDIA support when fatal SXids recur",
        .depends = { "driver.module-loaded" },
        .run = run_sxid_errors,
};
