/* check_fabric_manager.c: layer 1, fabric-manager: its version against the driver's, its own log's errors, the NVSwitch
 * fabric state NVML reports for each GPU. */
#include "facts/node.h"
#include "engine/check.h"
#include "layer1_hardware/nvml_evidence.h"

/* Returns the loaded driver's version (/proc/driver/nvidia/version, else NVML), or NULL. */
static const char *driver_version(const struct node_facts *facts) {
        if (facts->driver.version) return facts->driver.version;
        const struct nvml_facts *n = facts->nvml.facts;
        if (n && n->init_rc == NVML_SUCCESS && n->driver_version_rc == NVML_SUCCESS) return n->driver_version;
        return NULL;
}

/* Adds the fabric manager's own word on why it is not working (a version mismatch, its last error
 * line) to f; for the checks that see its effects. */
static void fm_log_evidence(const struct fm_log_facts *l, struct finding *f) {
        if (l->rc < 0 || !l->errors) return;
        const struct fm_log_line *k = &l->kept[l->n_kept - 1];
        finding_evidence(f, "%s: %llu error line(s) since the last start, last (line %llu, %s): %s", l->path,
                         (unsigned long long)l->errors, (unsigned long long)k->lineno, fm_log_kind_name(k->kind),
                         k->text);
}

/* Judges fabric-manager.version-match (the fabric manager's version equals the driver's) from the
 * facts into f; never fails: what it cannot read, it says. */
static void run_version_match(const struct node_facts *facts, struct finding *f) {
        if (facts->pci.n_nvswitches == 0) {
                finding_skip(f, "no NVSwitch on the PCI bus: fabric manager is not needed");
                return;
        }
        const char *drv = driver_version(facts);
        if (!drv) {
                finding_skip(f, "the driver's version is unknown (see driver.version)");
                return;
        }
        const struct fm_package_facts *p = &facts->fabric_manager.package;
        const struct fm_log_facts *l = &facts->fabric_manager.log;
        const char *bad = NULL, *where = NULL;
        bool seen = false;
        finding_evidence(f, "driver %s", drv);
        if (l->kind_count[FM_LOG_VERSION_MISMATCH]) {
                seen = true;
                for (size_t i = 0; i < l->n_kept; i++)
                        if (l->kept[i].kind == FM_LOG_VERSION_MISMATCH)
                                finding_evidence(f, "%s line %llu: %s", l->path, (unsigned long long)l->kept[i].lineno,
                                                 l->kept[i].text);
                bad = l->mismatch_fm ? l->mismatch_fm : "?";
                where = "its log: it refused to start";
        }
        if (l->running_version) {
                seen = true;
                finding_evidence(f, "%s line %llu: fabric manager %s started (last of %llu start(s) in the part read)",
                                 l->path, (unsigned long long)l->start_lineno, l->running_version,
                                 (unsigned long long)l->starts);
                if (!bad && !streq(l->running_version, drv)) {
                        bad = l->running_version;
                        where = "its log's last start";
                }
        }
        if (p->name) {
                seen = true;
                finding_evidence(f, "%s: %s %s installed", FM_DPKG_STATUS, p->name, p->raw_version);
                if (!bad && !streq(p->version, drv)) {
                        bad = p->version;
                        where = "the installed package: the next start will fail";
                }
        } else if (p->rc < 0 && p->rc != -ENOENT) {
                finding_evidence(f, "%s", p->error);
        }
        if (bad) {
                finding_fail(f, "fabric manager %s does not match the driver %s (%s)", bad, drv, where);
                finding_remedy(
                        f,
                        "install the fabric manager of exactly the driver's version (apt-get install "
                        "nvidia-fabricmanager-<branch>=%s-1, or the driver container's matching image) and restart "
                        "it (systemctl restart nvidia-fabricmanager); versions must match to the last digit",
                        drv);
                return;
        }
        if (!seen) {
                if (l->rc < 0 && l->rc != -ENOENT) {
                        finding_warn(f, "cannot tell the fabric manager's version: %s", l->error);
                        finding_remedy(f, "run as root with the host's /var/log visible");
                        return;
                }
                finding_skip(f,
                             "no fabric manager package in %s and no start line in %s: it runs in a container (GPU "
                             "Operator driver container) or is not installed (see fabric-manager.fabric-state)",
                             FM_DPKG_STATUS, l->path ? l->path : FM_LOG_PATH);
                return;
        }
        finding_pass(f, "fabric manager matches the driver %s", drv);
}

/* Returns true for log line kinds that mean the fabric manager is not working. */
static bool fatal_kind(enum fm_log_kind k) {
        return k == FM_LOG_VERSION_MISMATCH || k == FM_LOG_TOPOLOGY_MISMATCH || k == FM_LOG_NVSWITCH_QUERY_FAILED ||
               k == FM_LOG_NVSWITCH_FATAL || k == FM_LOG_TRAINING_FAILED;
}

/* Judges fabric-manager.log-errors (no errors in the fabric manager's log since its last start) from
 * the facts into f; never fails: what it cannot read, it says. */
static void run_log_errors(const struct node_facts *facts, struct finding *f) {
        if (facts->pci.n_nvswitches == 0) {
                finding_skip(f, "no NVSwitch on the PCI bus: fabric manager is not needed");
                return;
        }
        const struct fm_log_facts *l = &facts->fabric_manager.log;
        if (l->rc == -ENOENT) {
                finding_skip(f, "no fabric manager log on the host: %s", l->error);
                return;
        }
        if (l->rc < 0) {
                finding_warn(f, "cannot read the fabric manager log, so cannot tell: %s", l->error);
                finding_remedy(f, "run as root with the host's /var/log visible");
                return;
        }
        if (l->tail_only)
                finding_evidence(f, "%s: %llu bytes, its last %u read (%llu lines)", l->path,
                                 (unsigned long long)l->size, FM_LOG_TAIL_BYTES, (unsigned long long)l->lines);
        else
                finding_evidence(f, "%s: %llu lines", l->path, (unsigned long long)l->lines);
        if (l->start_lineno)
                finding_evidence(f, "last start: line %llu, version %s", (unsigned long long)l->start_lineno,
                                 l->running_version);
        else
                finding_evidence(f, "no start line (\"Fabric Manager version ... is running\") in the part read");
        if (l->errors_before_start)
                finding_evidence(f, "%llu error line(s) before the last start: an earlier run's, not judged",
                                 (unsigned long long)l->errors_before_start);
        if (l->errors > l->n_kept)
                finding_evidence(f, "%llu error line(s) since the last start, the last %zu shown",
                                 (unsigned long long)l->errors, l->n_kept);
        int first_fatal = -1;
        for (size_t i = 0; i < l->n_kept; i++) {
                finding_evidence(f, "line %llu (%s): %s", (unsigned long long)l->kept[i].lineno,
                                 fm_log_kind_name(l->kept[i].kind), l->kept[i].text);
        }
        for (int k = 0; k < _FM_LOG_KIND_MAX && first_fatal < 0; k++)
                if (fatal_kind(k) && l->kind_count[k]) first_fatal = k;
        if (l->errors == 0) {
                finding_pass(f, "no errors in the fabric manager log since its last start");
                return;
        }
        switch (first_fatal) {
        case FM_LOG_VERSION_MISMATCH:
                finding_fail(f, "the fabric manager refused to start: its version %s does not match the driver's %s",
                             l->mismatch_fm ? l->mismatch_fm : "?", l->mismatch_driver ? l->mismatch_driver : "?");
                finding_remedy(f, "install the fabric manager of exactly the driver's version and restart it (see "
                                  "fabric-manager.version-match)");
                return;
        case FM_LOG_TOPOLOGY_MISMATCH:
                finding_fail(
                        f,
                        "the fabric manager found a number of NVSwitches that fits no supported topology and aborted");
                finding_remedy(
                        f,
                        "check that every NVSwitch is on the PCI bus and bound to nvidia (lspci -d 10de: -nn), reset "
                        "or reboot; if one stays missing, contact NVIDIA support (baseboard)");
                return;
        case FM_LOG_NVSWITCH_QUERY_FAILED:
                finding_fail(f, "the fabric manager cannot query the NVSwitches from the NVSwitch driver");
                finding_remedy(
                        f,
                        "check that the driver sees the NVSwitches (ls /dev/nvidia-nvswitch*, kernel log for "
                        "nvidia-nvswitch errors) and that the driver and fabric manager versions match, then restart "
                        "nvidia-fabricmanager");
                return;
        case FM_LOG_NVSWITCH_FATAL:
                finding_fail(f, "the fabric manager saw a fatal NVSwitch error");
                finding_remedy(
                        f, "drain the node, reset every GPU and NVSwitch or reboot (see nvswitch.sxid-errors); contact "
                           "NVIDIA support if it recurs");
                return;
        case FM_LOG_TRAINING_FAILED:
                finding_fail(f, "NVLink training failed: the fabric is not (fully) up");
                finding_remedy(f, "reset every GPU and NVSwitch or reboot; if it recurs, check the NVLink connections "
                                  "and contact "
                                  "NVIDIA support");
                return;
        default: break;
        }
        finding_warn(f, "%llu error line(s) in the fabric manager log since its last start",
                     (unsigned long long)l->errors);
        finding_remedy(
                f,
                "read %s around these lines; restart nvidia-fabricmanager if jobs fail with CUDA error 802 or NCCL "
                "errors",
                l->path);
}

/* Returns the words for an NVML fabric state (0 not supported .. 3 completed). */
static const char *fabric_state_text(unsigned s) {
        switch (s) {
        case 0: return "not supported";
        case 1: return "not started";
        case 2: return "in progress";
        case 3: return "completed";
        }
        return "unknown";
}

/* The fields of NVML's fabric health mask (nvmlGpuFabricInfo_v2_t.healthMask, nvml.h's
 * NVML_GPU_FABRIC_HEALTH_MASK_*): two bits each at its shift, 0 not supported, 1 true, 2 false. */
enum { FABRIC_HEALTH_TRUE = 1 };
static const struct {
        unsigned shift;
        bool fails;       /* true: traffic cannot flow; false: it flows, slower or recovering */
        const char *what; /* what true means */
} fabric_health_fields[] = {
        { 0, false, "NVLink bandwidth degraded" },                  /* ..._SHIFT_DEGRADED_BW */
        { 2, false, "NVLink route recovery in progress" },          /* ..._SHIFT_ROUTE_RECOVERY */
        { 4, true, "NVLink route unhealthy" },                      /* ..._SHIFT_ROUTE_UNHEALTHY */
        { 6, false, "NVLink access timeout recovery in progress" }, /* ..._SHIFT_ACCESS_TIMEOUT_RECOVERY */
};

/* Adds, as evidence, each condition g's fabric health mask reports (version 2 or later, a completed
 * registration). Returns 2 when one of them stops traffic, 1 when only degrading ones are set, 0 when
 * none. */
static int fabric_health_evidence(const struct nvml_gpu_facts *g, const char *label, struct finding *f) {
        if (g->fabric_version < 2) return 0;
        int worst = 0;
        for (size_t k = 0; k < ELEMENTSOF(fabric_health_fields); k++) {
                if (((g->fabric_health_mask >> fabric_health_fields[k].shift) & 0x3) != FABRIC_HEALTH_TRUE) continue;
                finding_evidence(f, "%s: %s (fabric health mask 0x%x)", label, fabric_health_fields[k].what,
                                 g->fabric_health_mask);
                int v = fabric_health_fields[k].fails ? 2 : 1;
                if (v > worst) worst = v;
        }
        return worst;
}

/* Judges fabric-manager.fabric-state (on NVSwitch systems every GPU is registered with the NVLink
 * fabric, its fabric health mask reports nothing wrong, and the fabric manager still runs) from the
 * facts into f; never fails: what it cannot read, it says. */
static void run_fabric_state(const struct node_facts *facts, struct finding *f) {
        if (facts->pci.n_nvswitches == 0) {
                finding_skip(f, "no NVSwitch on the PCI bus: fabric manager is not needed");
                return;
        }
        const struct nvml_facts *n = nvml_initialised(facts);
        if (!n) {
                finding_skip(f, "NVML did not initialise");
                return;
        }
        finding_evidence(f, "%zu NVSwitch function(s); nv-fabricmanager %s", facts->pci.n_nvswitches,
                         facts->processes.fabricmanager_running ? "running"
                         : facts->processes.proc_visible        ? "not running"
                                                         : "unknown (no process visible under the root's /proc)");
        unsigned done = 0, waiting = 0, failed = 0, unknown = 0, unhealthy = 0, degraded = 0;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                _cleanup_free_ char *label = nvml_gpu_label(g);
                if (g->fabric_rc == NVML_ERROR_GPU_IS_LOST || g->handle_rc == NVML_ERROR_GPU_IS_LOST) {
                        finding_evidence(f, "%s: lost, fabric state not asked (see driver.gpu-fallen-off-bus)", label);
                        continue;
                }
                if (g->fabric_rc != NVML_SUCCESS) {
                        unknown++;
                        finding_evidence(f, "%s: fabric state unknown: %s", label, nvml_return_message(g->fabric_rc));
                        continue;
                }
                if (g->fabric_state == 3 && g->fabric_status == NVML_SUCCESS) {
                        done++;
                        int h = fabric_health_evidence(g, label, f);
                        if (h == 2) unhealthy++;
                        if (h == 1) degraded++;
                        continue;
                }
                if (g->fabric_state == 3) {
                        failed++;
                        finding_evidence(f, "%s: fabric registration failed: %s", label,
                                         nvml_return_message(g->fabric_status));
                } else {
                        waiting++;
                        finding_evidence(f, "%s: fabric state %s", label, fabric_state_text(g->fabric_state));
                }
        }
        if (failed || waiting) {
                fm_log_evidence(&facts->fabric_manager.log, f);
                finding_fail(f,
                             "%u of %u GPU(s) are not registered with the NVLink fabric: CUDA fails with error 802 "
                             "(system not yet initialized)",
                             failed + waiting, n->n_gpus);
                finding_remedy(
                        f,
                        "start the fabric manager (`systemctl enable --now nvidia-fabricmanager`); its version must "
                        "equal the driver's (%s); read /var/log/fabricmanager.log",
                        n->driver_version_rc == NVML_SUCCESS ? n->driver_version : "see driver.version");
        } else if (unhealthy) {
                finding_fail(f,
                             "the NVLink fabric reports an unhealthy route on %u of %u GPU(s): NVLink traffic "
                             "through the NVSwitches fails",
                             unhealthy, n->n_gpus);
                finding_action(f, ACTION_REBOOT);
                finding_remedy(f, "drain the node; read /var/log/fabricmanager.log and `nvidia-smi -q | grep -A8 "
                                  "Fabric`; reset the GPUs and NVSwitches (a reboot), then run the NVLink diagnostic "
                                  "(`dcgmi diag -r 2`); RMA the tray if it stays");
        } else if (degraded) {
                finding_warn(f, "the NVLink fabric reports degraded bandwidth or a recovery on %u of %u GPU(s)",
                             degraded, n->n_gpus);
                finding_remedy(f, "jobs run with less NVLink bandwidth: read `nvidia-smi -q | grep -A8 Fabric` and the "
                                  "fabric manager log; drain and reboot when it does not clear, RMA if it stays");
        } else if (unknown) {
                finding_warn(f, "NVML does not report the fabric state of %u GPU(s) on an NVSwitch system", unknown);
                finding_remedy(f, "update the driver; check `nvidia-smi -q | grep -A3 Fabric`");
        } else if (done && !facts->processes.fabricmanager_running && facts->processes.proc_visible) {
                fm_log_evidence(&facts->fabric_manager.log, f);
                finding_warn(f,
                             "all %u GPU(s) registered with the NVLink fabric, but the fabric manager is not "
                             "running: the next GPU reset or partition change will fail",
                             done);
                finding_remedy(f, "restart it (`systemctl restart nvidia-fabricmanager`, or the GPU Operator's driver "
                                  "pod) and read /var/log/fabricmanager.log for why it stopped");
        } else {
                finding_pass(f, "all %u GPU(s) registered with the NVLink fabric", done);
        }
}

const struct check_def check_fabric_manager_version_match = {
        .id = "fabric-manager.version-match",
        .action = ACTION_RECONFIGURE,
        .layer = 1,
        .component = "fabric-manager",
        .title = "on NVSwitch systems the fabric manager's version equals the driver's",
        .reads = "the fabric manager log's last start line (\"Fabric Manager version X is running\") and version "
                 "mismatch "
                 "lines (/var/log/fabricmanager.log, or LOG_FILE_NAME of fabricmanager.cfg), the installed "
                 "nvidia-fabricmanager[-branch] package (/var/lib/dpkg/status), the driver's version",
        .outcomes =
                "pass: every version found equals the driver's; fail: the log says the versions do not match, or the "
                "running or installed fabric manager has another version (it refuses to start: CUDA error 802); skip: "
                "no NVSwitch, or no package or log on the host (a driver container runs it)",
        .remedy = "install nvidia-fabricmanager of exactly the driver's version and restart it",
        .depends = { "driver.version" },
        .run = run_version_match,
};

const struct check_def check_fabric_manager_log_errors = {
        .id = "fabric-manager.log-errors",
        .layer = 1,
        .component = "fabric-manager",
        .title = "no errors in the fabric manager's log since its last start",
        .reads = "the last MiB of the fabric manager log (/var/log/fabricmanager.log or LOG_FILE_NAME of "
                 "fabricmanager.cfg): "
                 "[ERROR] lines and known failures after the last \"Fabric Manager version ... is running\" line",
        .outcomes =
                "pass: none; fail: version mismatch, NVSwitch topology mismatch, NVSwitch query failed, fatal NVSwitch "
                "error, NVLink training failed; warn: other errors (non-fatal NVSwitch errors, multicast team errors, "
                "\"failed to ...\") or an unreadable log; skip: no NVSwitch or no log. Errors before the last start "
                "are an earlier run's and only counted",
        .remedy = "act on the error: matching versions, reset GPUs and NVSwitches, restart nvidia-fabricmanager",
        .depends = { "driver.module-loaded" },
        .run = run_log_errors,
};

const struct check_def check_fabric_manager_fabric_state = {
        .id = "fabric-manager.fabric-state",
        .action = ACTION_RECONFIGURE,
        .layer = 1,
        .component = "fabric-manager",
        .title = "on NVSwitch systems every GPU is registered with the NVLink fabric",
        .reads = "NVSwitch PCI functions (class 0x0680), nvmlDeviceGetGpuFabricInfoV per GPU (state, status, "
                 "health mask), nv-fabricmanager in "
                 "/proc, "
                 "the fabric manager log's last error as evidence",
        .outcomes = "pass: all completed, healthy, the fabric manager running; fail: not started/in progress/failed "
                    "(CUDA error 802), or a route unhealthy in the fabric health mask; warn: degraded bandwidth or a "
                    "recovery in the health mask, or the fabric manager gone after the GPUs registered; skip: no "
                    "NVSwitch",
        .remedy = "`systemctl enable --now nvidia-fabricmanager` with the same version as the driver; read "
                  "/var/log/fabricmanager.log",
        .depends = { "driver.nvml-init" },
        .run = run_fabric_state,
};
