/* check_driver_kmsg.c: layer 1, driver: what the kernel log says about the GPUs: Xid errors, lost GPUs. */
#include "facts/node.h"
#include "layer1_hardware/kmsg_evidence.h"
#include "layer1_hardware/kmsg.h"
#include "layer1_hardware/nvml_evidence.h"
#include "nvml/nvml_facts.h"

#include <strings.h>

/* Returns the NVML record of the GPU at a kernel-log PCI address ("0000:07:00"), or NULL. */
static const struct nvml_gpu_facts *nvml_gpu_at(const struct node_facts *facts, const char *pci) {
        const struct nvml_facts *n = facts->nvml.facts;
        if (!n) return NULL;
        size_t len = strlen(pci);
        for (unsigned i = 0; i < n->n_gpus; i++)
                if (n->gpus[i].pci_rc == NVML_SUCCESS && strncasecmp(n->gpus[i].pci_bus_id_legacy, pci, len) == 0)
                        return &n->gpus[i];
        return NULL;
}

/* Returns "0000:07:00 (GPU 3, GPU-...)" for a kernel-log GPU. */
static char *kmsg_gpu_label(const struct node_facts *facts, const struct kmsg_gpu *g) {
        const struct nvml_gpu_facts *n = nvml_gpu_at(facts, g->pci);
        if (n)
                return xasprintf("%s (GPU %u%s%s)", g->pci, n->index, n->uuid_rc == NVML_SUCCESS ? ", " : "",
                                 n->uuid_rc == NVML_SUCCESS ? n->uuid : "");
        if (g->uuid[0]) return xasprintf("%s (%s)", g->pci, g->uuid);
        return xstrdup(g->pci);
}

/* Adds to f the pods holding a kernel-log GPU (matched through its NVML record when NVML knows
 * its PCI address, else by the UUID the driver logged for it), with what that means for them. */
static void kmsg_gpu_holders(const struct node_facts *facts, const struct kmsg_gpu *g, const char *meaning,
                             struct finding *f) {
        const struct nvml_gpu_facts *n = nvml_gpu_at(facts, g->pci);
        _cleanup_free_ char *label = kmsg_gpu_label(facts, g);
        if (n)
                gpu_holders_evidence_as(facts, label, gpu_pods_of(facts, n), meaning, f);
        else if (g->uuid[0])
                gpu_holders_evidence_as(facts, label, gpu_pods_of_uuid(facts, g->uuid), meaning, f);
}

/* Adds kernel-log GPU g to f's GPUs, named by its NVML record where NVML knows its PCI address (else by
 * the UUID the driver logged). Returns the entry. */
static struct finding_gpu *kmsg_finding_gpu(const struct node_facts *facts, const struct kmsg_gpu *g,
                                            struct finding *f) {
        const struct nvml_gpu_facts *n = nvml_gpu_at(facts, g->pci);
        if (n)
                return finding_gpu(f, (int)n->index, n->uuid_rc == NVML_SUCCESS ? n->uuid : NULL,
                                   n->pci_rc == NVML_SUCCESS ? n->pci_bus_id_legacy : g->pci);
        return finding_gpu(f, -1, g->uuid[0] ? g->uuid : NULL, g->pci);
}

/* Returns what one Xid line asks to be done: from the catalog's remedy, the line deciding for Xid 154
 * (the recovery action it names) and the NVLink5 Xids (a Nonfatal line asks nothing). */
static enum finding_action xid_finding_action(int xid, enum xid_severity sev, const struct kmsg_line *l) {
        if (sev <= XID_INFO) return ACTION_NONE;
        if (xid == 154) {
                switch (xid154_action(l->text, strlen(l->text), NULL, 0)) {
                case 0: return ACTION_NONE;
                case 1: return ACTION_RESET_GPU;
                case 2: return ACTION_REBOOT;
                case 3: return ACTION_DRAIN;
                case 4: return ACTION_RESET_GPU; /* drain, then reset */
                default: return ACTION_CONTACT_SUPPORT;
                }
        }
        if (xid_is_nvlink5(xid) && sev < XID_CRITICAL) return ACTION_NONE;
        if (sev == XID_UNKNOWN) return ACTION_CONTACT_SUPPORT;
        switch (xid_lookup(xid)->remedy) {
        case XID_REMEDY_RESTART_APP: return ACTION_RESTART_POD;
        case XID_REMEDY_RESET_GPU: return ACTION_RESET_GPU;
        case XID_REMEDY_REBOOT_NODE: return ACTION_REBOOT;
        case XID_REMEDY_UPDATE_SOFTWARE: return ACTION_RECONFIGURE;
        case XID_REMEDY_CHECK_HARDWARE:
        case XID_REMEDY_CONTACT_SUPPORT: return ACTION_CONTACT_SUPPORT;
        default: return ACTION_NONE;
        }
}

/* Returns the line that stands for an Xid's worst severity: its last line when that line is as bad,
 * else the first line that was. */
static const struct kmsg_line *xid_line(const struct kmsg_xid_stat *st) {
        if (xid_severity_for_line(st->xid, st->last.text, strlen(st->last.text)) == st->worst) return &st->last;
        return &st->worst_line;
}

/* Returns true, after warning in f that it cannot tell, when the kernel log could not be read;
 * false (noting a partial read as evidence) when there is a scan to judge. */
static bool kmsg_unreadable(const struct node_facts *facts, struct finding *f) {
        if (facts->kmsg.scan) {
                if (facts->kmsg.rc < 0) finding_evidence(f, "kernel log read stopped early: %s", facts->kmsg.error);
                return false;
        }
        finding_warn(f, "cannot read the kernel log, so cannot tell: %s", facts->kmsg.error);
        finding_remedy(
                f, "run as root (dmesg_restrict) with the host's /dev visible, or pass a saved log with --kmsg FILE");
        return true;
}

/* Judges driver.gpu-fallen-off-bus (no GPU has fallen off the bus) from the facts into f; never fails:
 * what it cannot read, it says. */
static void run_fallen_off_bus(const struct node_facts *facts, struct finding *f) {
        size_t lost = 0;
        const struct nvml_facts *n = facts->nvml.facts;
        if (n && n->init_rc == NVML_SUCCESS)
                for (unsigned i = 0; i < n->n_gpus; i++) {
                        const struct nvml_gpu_facts *g = &n->gpus[i];
                        if (g->handle_rc == NVML_ERROR_GPU_IS_LOST || g->name_rc == NVML_ERROR_GPU_IS_LOST ||
                            g->uuid_rc == NVML_ERROR_GPU_IS_LOST) {
                                lost++;
                                nvml_finding_gpu(g, f);
                                finding_evidence(f, "NVML: GPU %u %s: %s", g->index,
                                                 g->pci_rc == NVML_SUCCESS ? g->pci_bus_id_legacy : "",
                                                 nvml_return_message(NVML_ERROR_GPU_IS_LOST));
                                gpu_holders_evidence(facts, g, f);
                        }
                }
        size_t fallen = 0;
        if (facts->kmsg.scan) {
                const struct kmsg_summary *sum = kmsg_scan_summary(facts->kmsg.scan);
                for (size_t i = 0; i < sum->n_gpus; i++) {
                        const struct kmsg_gpu *g = sum->gpus[i];
                        if (!g->fallen_off_bus) continue;
                        fallen++;
                        struct finding_gpu *fg = kmsg_finding_gpu(facts, g, f);
                        fg->xid = 79;
                        fg->count = g->fallen_off_bus;
                        _cleanup_free_ char *label = kmsg_gpu_label(facts, g);
                        finding_evidence(f, "kernel log: %s has fallen off the bus (%llu line(s))", label,
                                         (unsigned long long)g->fallen_off_bus);
                        kmsg_gpu_holders(facts, g, "that job is dead", f);
                }
                if (fallen == 0) kmsg_evidence(&facts->kmsg, KMSG_EV_FALLEN_OFF_BUS, f);
        } else if (lost == 0 && kmsg_unreadable(facts, f)) {
                return;
        }
        if (fallen || lost) {
                finding_fail(f, "%zu GPU(s) have fallen off the bus and no longer answer",
                             fallen > lost ? fallen : lost);
                finding_remedy(
                        f,
                        "cordon and drain the node, then reboot it (a GPU reset is not enough); if it happens again, "
                        "check PCIe seating, power and cooling and open an RMA");
                return;
        }
        finding_pass(f, "no GPU has fallen off the bus");
}

/* Judges driver.xid-errors (no critical Xid errors in the kernel log) from the facts into f; never
 * fails: what it cannot read, it says. */
static void run_xid_errors(const struct node_facts *facts, struct finding *f) {
        if (kmsg_unreadable(facts, f)) return;
        const struct kmsg_summary *sum = kmsg_scan_summary(facts->kmsg.scan);
        enum xid_severity worst = XID_INFO;
        const struct kmsg_gpu *worst_gpu = NULL;
        const struct kmsg_xid_stat *worst_st = NULL;
        int worst_xid = 0;
        size_t gpus_with_xids = 0;
        for (size_t i = 0; i < sum->n_gpus; i++) {
                const struct kmsg_gpu *g = sum->gpus[i];
                if (!g->xid_count) continue;
                gpus_with_xids++;
                _cleanup_free_ char *label = kmsg_gpu_label(facts, g);
                enum xid_severity gpu_worst = XID_INFO;
                for (size_t x = 0; x < g->n_xids; x++) {
                        const struct kmsg_xid_stat *st = &g->xids[x];
                        const struct xid_info *info = xid_lookup(st->xid);
                        char when[KMSG_WHEN_MAX];
                        finding_evidence(f, "%s: Xid %d x%llu (%s, %s)%s: %s", label, st->xid,
                                         (unsigned long long)st->count, xid_severity_name(st->worst), info->meaning,
                                         kmsg_line_when(&facts->kmsg, xid_line(st), when), xid_line(st)->text);
                        if (st->worst > gpu_worst) gpu_worst = st->worst;
                        if (st->worst > worst || (st->worst == worst && worst_gpu == NULL)) {
                                worst = st->worst;
                                worst_gpu = g;
                                worst_xid = st->xid;
                                worst_st = st;
                        }
                }
                /* The GPU's facts for automation: its worst Xid, how often, first and last seen. */
                const struct kmsg_xid_stat *gw = NULL;
                for (size_t x = 0; x < g->n_xids; x++)
                        if (!gw || g->xids[x].worst > gw->worst) gw = &g->xids[x];
                if (gw && gw->worst > XID_INFO) {
                        struct finding_gpu *fg = kmsg_finding_gpu(facts, g, f);
                        fg->xid = gw->xid;
                        fg->count = gw->count;
                        fg->first_seen = kmsg_line_time(&facts->kmsg, &gw->first);
                        fg->last_seen = kmsg_line_time(&facts->kmsg, &gw->last);
                }
                if (gpu_worst == XID_CRITICAL)
                        kmsg_gpu_holders(facts, g, "that job is dead", f);
                else if (gpu_worst >= XID_APPLICATION)
                        kmsg_gpu_holders(facts, g,
                                         "that job met the error (an application Xid: most often its own fault)", f);
        }
        finding_evidence(f, "%s: %llu lines scanned", facts->kmsg.source, (unsigned long long)sum->lines);
        if (gpus_with_xids == 0) {
                finding_pass(f, "no Xid errors in the kernel log");
                return;
        }
        _cleanup_free_ char *label = kmsg_gpu_label(facts, worst_gpu);
        const struct xid_info *info = xid_lookup(worst_xid);
        const struct kmsg_line *wl = xid_line(worst_st);
        const char *remedy = xid_remedy_for_line(worst_xid, wl->text, strlen(wl->text));
        finding_action(f, xid_finding_action(worst_xid, worst, wl));
        if (worst == XID_CRITICAL && worst_xid == 154) {
                char action[64];
                int a = xid154_action(wl->text, strlen(wl->text), action, sizeof action);
                finding_fail(f, "the driver set %s's recovery action to %d (%s) (Xid 154)", label, a,
                             action[0] ? action : "?");
                finding_remedy(f, "%s", remedy);
                return;
        }
        if (worst == XID_CRITICAL) {
                if (kmsg_gpu_xid_before(worst_gpu, 48, 64) || kmsg_gpu_xid_before(worst_gpu, 48, 63)) {
                        finding_fail(
                                f, "double-bit ECC error (Xid 48) followed by a page retirement/row remap event on %s",
                                label);
                        finding_remedy(
                                f,
                                "cordon and drain the node, then reset the GPU (`nvidia-smi -r`) or reboot; if Xid 64 "
                                "(remap failure) repeats, the GPU is an RMA candidate");
                        return;
                }
                finding_fail(f, "critical Xid %d (%s) on %s", worst_xid, info->name ? info->name : "?", label);
                finding_remedy(f, "%s", remedy);
        } else if (worst == XID_UNKNOWN) {
                finding_warn(f, "unknown Xid %d on %s: not in gpunode's catalog; NVIDIA support can say what it means",
                             worst_xid, label);
                finding_remedy(f, "%s", remedy);
        } else if (worst >= XID_APPLICATION) {
                finding_warn(f, "Xid %d (%s) on %s: %s", worst_xid, xid_severity_name(worst), label, info->meaning);
                finding_remedy(f, "%s", remedy);
        } else {
                finding_pass(f, "only informational Xids in the kernel log (%zu GPU(s))", gpus_with_xids);
        }
}

const struct check_def check_driver_gpu_fallen_off_bus = {
        .id = "driver.gpu-fallen-off-bus",
        .action = ACTION_REBOOT,
        .layer = 1,
        .component = "driver",
        .title = "no GPU has fallen off the bus",
        .reads = "kernel log (Xid 79 and the 3-line \"fallen off the bus\" message), NVML GPU_IS_LOST answers",
        .outcomes =
                "pass: none; fail: a GPU is lost (drain and reboot); warn: the kernel log cannot be read. A pod named "
                "as "
                "holding the GPU (the kubelet's pod-resources List) lost it: that job is dead and must be rescheduled",
        .remedy = "cordon, drain and reboot the node; repeated falls mean PCIe, power or cooling trouble: open an RMA",
        .depends = { "driver.module-loaded" },
        .run = run_fallen_off_bus,
};

const struct check_def check_driver_xid_errors = {
        .id = "driver.xid-errors",
        .action = ACTION_CONTACT_SUPPORT,
        .layer = 1,
        .component = "driver",
        .title = "no critical Xid errors in the kernel log",
        .reads = "kernel log (/dev/kmsg or --kmsg FILE): NVRM Xid lines per GPU, classified by the Xid catalog",
        .outcomes =
                "pass: none or informational; warn: application Xids (13, 31, 43, 45, 68, ...) or an unreadable log; "
                "fail: critical Xids (48, 64, 79, 95, 109, 119, ...) with NVIDIA's action, an Xid 154 setting a "
                "recovery action (GPU Reset Required, Node Reboot Required, drain), a Fatal NVLink5 Xid (144-150; for "
                "146 the error status: 0x4 resets, 0x2 asks for support, 0x1 is ignored); an unknown Xid warns and "
                "asks for NVIDIA support. A pod named as holding the "
                "GPU (the kubelet's pod-resources List) ran there: after a critical Xid that job is dead (restart it "
                "elsewhere); after an application Xid it met the error, most often its own fault",
        .remedy = "follow NVIDIA's action for the Xid: restart the application, reset the GPU, or drain and reboot the "
                  "node",
        .depends = { "driver.module-loaded" },
        .run = run_xid_errors,
};
