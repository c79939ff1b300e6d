/* check_driver_nvml.c: layer 1, driver: what NVML answers: init, versions, GPU count, per-GPU health. */
#include "layer1_hardware/gpu_health.h"
#include "layer1_hardware/kmsg_evidence.h"
#include "layer1_hardware/nvml_evidence.h"

#include <inttypes.h>
#include <strings.h>

/* Adds, as evidence, the NVML call the probe stopped waiting for, if any. */
static void note_timeout(const struct nvml_facts *n, struct finding *f) {
        if (n && n->timed_out) finding_evidence(f, "NVML probe stopped: %s", n->timeout_message);
}

/* Judges driver.version-match (NVML in user space and the kernel module are the same driver version)
 * from the facts into f; never fails: what it cannot read, it says. */
static void run_version_match(const struct node_facts *facts, struct finding *f) {
        const struct nvml_facts *n = facts->nvml.facts;
        const char *kver = facts->driver.version;
        if (!n) {
                finding_skip(f, "NVML not loaded, nothing to compare (see driver.nvml-init)");
                return;
        }
        if (n->init_rc == NVML_ERROR_LIB_RM_VERSION_MISMATCH) {
                finding_fail(f, "driver/library version mismatch: NVML in user space does not match kernel module %s",
                             kver ? kver : "?");
                finding_evidence(f, "nvmlInit: %s", nvml_return_name(n->init_rc));
                if (n->library_path) finding_evidence(f, "library: %s", n->library_path);
                kmsg_api_mismatch_evidence(&facts->kmsg, f);
                finding_remedy(f,
                               "the driver was upgraded but the old kernel module is still loaded: drain the node and "
                               "reboot it (or stop every GPU process and reload nvidia, nvidia_uvm, nvidia_modeset)");
                return;
        }
        if (n->init_rc != NVML_SUCCESS || n->driver_version_rc != NVML_SUCCESS) {
                finding_skip(f, "NVML did not report a driver version (see driver.nvml-init)");
                return;
        }
        if (kver && !streq(kver, n->driver_version)) {
                finding_fail(f, "NVML reports driver %s but the kernel module is %s", n->driver_version, kver);
                finding_remedy(f, "reinstall one driver version everywhere (kernel module and user-space libraries), "
                                  "then reboot");
                return;
        }
        kmsg_api_mismatch_evidence(&facts->kmsg, f);
        finding_pass(f, "NVML and the kernel module agree on driver %s", n->driver_version);
}

/* Judges driver.nvml-init (NVML loads and initialises) from the facts into f; never fails: what it
 * cannot read, it says. */
static void run_nvml_init(const struct node_facts *facts, struct finding *f) {
        const struct nvml_state *st = &facts->nvml;
        const struct nvml_facts *n = st->facts;
        if (!n) {
                finding_fail(f, "NVML cannot be loaded: %s", st->load_error ? st->load_error : "unknown error");
                finding_remedy(
                        f, "the driver's user-space libraries are missing or unreadable: install the driver package "
                           "matching "
                           "the kernel module (libnvidia-ml.so.1), or with the GPU Operator check the driver pod and "
                           "/run/nvidia/driver");
                return;
        }
        if (n->library_path) finding_evidence(f, "library: %s", n->library_path);
        if (n->timed_out) {
                finding_fail(f, "NVML hung: %s", n->timeout_message);
                finding_remedy(
                        f,
                        "a GPU or the driver is stuck: look for Xid errors in the kernel log, enable persistence mode, "
                        "and reset the GPU or reboot the node if nvidia-smi hangs too");
                return;
        }
        if (n->init_rc != NVML_SUCCESS) {
                finding_fail(f, "NVML failed to initialise: %s (%s)", nvml_return_message(n->init_rc),
                             nvml_return_name(n->init_rc));
                if (n->init_error[0]) finding_evidence(f, "nvmlErrorString: %s", n->init_error);
                finding_remedy(
                        f, "run nvidia-smi on the host: it fails the same way; check the kernel log for NVRM errors");
                return;
        }
        if (n->device_count_rc != NVML_SUCCESS) {
                finding_fail(f, "NVML initialised but cannot count GPUs: %s", nvml_return_message(n->device_count_rc));
                finding_remedy(f, "check the kernel log for NVRM errors and run nvidia-smi");
                return;
        }
        note_timeout(n, f);
        unsigned cuda = n->cuda_driver_version.rc == NVML_SUCCESS ? (unsigned)n->cuda_driver_version.value : 0;
        finding_pass(f, "NVML %s initialised: driver %s, CUDA %u.%u, %u GPU(s)",
                     n->nvml_version_rc == NVML_SUCCESS ? n->nvml_version : "?",
                     n->driver_version_rc == NVML_SUCCESS ? n->driver_version : "?", cuda / 1000, (cuda % 1000) / 10,
                     n->device_count);
}

/* Adds, as evidence, each GPU the kernel enumerated in the log's last boot that the PCI bus no longer
 * lists, and a line with the boot's count. Returns how many are gone, the first's address malloc'd in
 * *ret_first (NULL when none). Never fails: without a kernel log or a PCI listing it counts none. */
static size_t boot_gpus_gone(const struct node_facts *facts, struct finding *f, char **ret_first) {
        *ret_first = NULL;
        const struct kmsg_summary *sum = facts->kmsg.scan ? kmsg_scan_summary(facts->kmsg.scan) : NULL;
        if (!sum || sum->n_boot_gpus == 0 || facts->pci.rc < 0) return 0;
        size_t gone = 0;
        for (size_t i = 0; i < sum->n_boot_gpus; i++) {
                const struct kmsg_boot_gpu *b = &sum->boot_gpus[i];
                bool present = false;
                for (size_t j = 0; j < facts->pci.n_gpus && !present; j++)
                        present = strcasecmp(facts->pci.gpus[j].address, b->address) == 0;
                if (present) continue;
                if (gone++ == 0) *ret_first = xstrdup(b->address);
                finding_evidence(f,
                                 "%s [10de:%04x] class 0x%06x: enumerated at boot (kernel log line %" PRIu64
                                 "), gone from the PCI bus now",
                                 b->address, b->device, b->class_code, b->line.lineno);
        }
        finding_evidence(f, "kernel log: %zu GPU(s) enumerated at boot%s", sum->n_boot_gpus,
                         sum->boot_gpus_untracked ? " (more not tracked)" : "");
        return gone;
}

/* Judges driver.gpu-count (NVML sees every GPU the PCI bus has) from the facts into f; never fails:
 * what it cannot read, it says. */
static void run_gpu_count(const struct node_facts *facts, struct finding *f) {
        const struct nvml_facts *n = nvml_initialised(facts);
        if (!n) {
                finding_skip(f, "NVML did not initialise");
                return;
        }
        size_t bound = 0;
        for (size_t i = 0; i < facts->pci.n_gpus; i++)
                if (facts->pci.gpus[i].driver && streq(facts->pci.gpus[i].driver, "nvidia")) bound++;
        size_t answering = 0;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                if (g->handle_rc == NVML_SUCCESS && g->name_rc != NVML_ERROR_GPU_IS_LOST) {
                        answering++;
                        continue;
                }
                _cleanup_free_ char *label = nvml_gpu_label(g);
                finding_evidence(f, "%s: %s", label,
                                 nvml_return_message(g->handle_rc != NVML_SUCCESS ? g->handle_rc : g->name_rc));
                gpu_holders_evidence(facts, g, f);
        }
        note_timeout(n, f);
        finding_evidence(f, "PCI: %zu GPU(s) bound to nvidia; NVML: %u counted, %zu answering", bound, n->device_count,
                         answering);
        _cleanup_free_ char *gone_first = NULL;
        size_t gone = boot_gpus_gone(facts, f, &gone_first);
        size_t seen = facts->pci.n_gpus > n->device_count ? facts->pci.n_gpus : n->device_count;
        if (facts->expect_gpus) finding_evidence(f, "expected: %u GPU(s) (--expect-gpus)", facts->expect_gpus);
        if (gone) {
                finding_fail(f, "%zu GPU(s) the kernel enumerated at boot are gone from the PCI bus (%s%s)", gone,
                             gone_first, gone > 1 ? ", ..." : "");
                finding_remedy(f, "the slot lost its link after boot (surprise removal, a PCIe or power fault): check "
                                  "the kernel log for AER and pciehp lines on that address; drain the node and reboot "
                                  "it; if the GPU does not come back, reseat it or RMA it");
        } else if (facts->expect_gpus && seen < facts->expect_gpus) {
                finding_fail(f, "the node should have %u GPU(s) but PCI has %zu and NVML %u", facts->expect_gpus,
                             facts->pci.n_gpus, n->device_count);
                finding_remedy(f, "a GPU the firmware or the kernel did not enumerate at boot: check the BMC's "
                                  "inventory and event log, `lspci -nn | grep -i nvidia` and the BIOS (slot power, "
                                  "above-4G decoding); reseat or RMA the GPU whose slot is empty");
        } else if (n->device_count < bound) {
                finding_fail(f, "NVML sees %u GPU(s) but %zu are bound to nvidia on the PCI bus", n->device_count,
                             bound);
                finding_remedy(
                        f, "a GPU the driver could not initialise: check the kernel log for NVRM errors on the missing "
                           "PCI address and `nvidia-smi -q`; reset or reboot, then RMA if it persists");
        } else if (answering < n->device_count && !n->timed_out) {
                finding_fail(f, "%zu of %u GPU(s) do not answer NVML", n->device_count - answering, n->device_count);
                finding_remedy(f, "drain the node and reboot it; a GPU that stays lost is a hardware fault");
        } else {
                finding_pass(f, "NVML sees all %u GPU(s) found on the PCI bus", n->device_count);
        }
}

/* Judges driver.persistence (persistence mode is on) from the facts into f; never fails: what it
 * cannot read, it says. */
static void run_persistence(const struct node_facts *facts, struct finding *f) {
        const struct nvml_facts *n = nvml_initialised(facts);
        if (!n) {
                finding_skip(f, "NVML did not initialise");
                return;
        }
        unsigned off = 0, known = 0;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                if (g->persistence_mode.rc != NVML_SUCCESS) continue;
                known++;
                if (g->persistence_mode.value != 1) {
                        off++;
                        _cleanup_free_ char *label = nvml_gpu_label(g);
                        finding_evidence(f, "%s: persistence mode disabled", label);
                }
        }
        finding_evidence(f, "nvidia-persistenced %s",
                         facts->processes.persistenced_running ? "running" : "not running");
        if (known == 0) {
                finding_skip(f, "NVML does not report persistence mode here");
        } else if (off) {
                finding_warn(
                        f,
                        "persistence mode is off on %u of %u GPU(s): every client start re-initialises them (seconds)",
                        off, known);
                finding_remedy(
                        f,
                        "enable nvidia-persistenced (`systemctl enable --now nvidia-persistenced`); the GPU Operator's "
                        "driver container runs it itself");
        } else {
                finding_pass(f, "persistence mode on for all %u GPU(s)", known);
        }
}

/* Judges driver.memory-errors (no failed or pending row remaps, no fresh uncorrectable ECC errors)
 * from the facts into f; never fails: what it cannot read, it says. */
static void run_memory_errors(const struct node_facts *facts, struct finding *f) {
        const struct nvml_facts *n = nvml_initialised(facts);
        if (!n) {
                finding_skip(f, "NVML did not initialise");
                return;
        }
        unsigned failed = 0, pending = 0, dbe = 0;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                _cleanup_free_ char *label = nvml_gpu_label(g);
                struct gpu_recovery rec = gpu_recovery_of(g);
                enum check_status remap = gpu_remap_judge(&rec);
                if (remap != CHECK_SKIP) {
                        if (remap == CHECK_FAIL || g->remapped_pending)
                                nvml_finding_gpu(g, f)->count = g->remapped_uncorrectable;
                        if (remap == CHECK_FAIL) {
                                failed++;
                                finding_evidence(f, "%s: row remapping failed", label);
                                gpu_holders_evidence_as(facts, label, gpu_pods_of(facts, g),
                                                        "that job ran on memory that cannot be repaired: it must move",
                                                        f);
                        }
                        if (g->remapped_pending)
                                pending++, finding_evidence(f, "%s: row remapping pending (needs a GPU reset)", label);
                        if (g->remapped_uncorrectable || g->remapped_correctable)
                                finding_evidence(f, "%s: remapped rows: %u uncorrectable, %u correctable", label,
                                                 g->remapped_uncorrectable, g->remapped_correctable);
                }
                if (g->ecc_volatile_uncorrected.rc == NVML_SUCCESS && g->ecc_volatile_uncorrected.value > 0) {
                        dbe++;
                        finding_evidence(f, "%s: %llu uncorrectable ECC error(s) since the driver loaded", label,
                                         (unsigned long long)g->ecc_volatile_uncorrected.value);
                }
        }
        if (failed) {
                finding_fail(f, "row remapping failed on %u GPU(s): the memory cannot be repaired", failed);
                finding_action(f, ACTION_RMA);
                finding_remedy(f, "cordon and drain the node; the GPU is an RMA candidate (run the field diagnostic "
                                  "and contact the vendor)");
        } else if (pending) {
                finding_warn(f, "row remapping pending on %u GPU(s): takes effect at the next GPU reset", pending);
                finding_remedy(f, "when the GPU is idle: drain it and `nvidia-smi -r -i <index>`, or reboot the node");
        } else if (dbe) {
                finding_warn(f, "uncorrectable ECC errors on %u GPU(s) since the driver loaded", dbe);
                finding_remedy(f, "watch for Xid 48/63/64/94/95 in the kernel log; reset the GPU when idle");
        } else {
                finding_pass(f, "no uncorrectable memory errors or pending row remaps");
        }
}

/* Judges driver.recovery-action (the driver asks for no GPU recovery action) from the facts into f;
 * never fails: what it cannot read, it says. */
static void run_recovery_action(const struct node_facts *facts, struct finding *f) {
        const struct nvml_facts *n = nvml_initialised(facts);
        if (!n) {
                finding_skip(f, "NVML did not initialise");
                return;
        }
        unsigned known = 0, needed = 0;
        uint64_t worst = 0;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                struct gpu_recovery rec = gpu_recovery_of(g);
                enum check_status st = gpu_recovery_action_judge(&rec);
                if (st == CHECK_SKIP) continue;
                known++;
                if (st == CHECK_PASS) continue;
                needed++;
                nvml_finding_gpu(g, f);
                if (g->recovery_action.value == 2 || worst != 2) worst = g->recovery_action.value;
                _cleanup_free_ char *label = nvml_gpu_label(g);
                finding_evidence(f, "%s: recovery action %llu (%s)", label,
                                 (unsigned long long)g->recovery_action.value,
                                 gpu_recovery_action_text(g->recovery_action.value));
                _cleanup_free_ char *meaning =
                        xasprintf("that job dies with the %s", gpu_recovery_action_text(g->recovery_action.value));
                gpu_holders_evidence_as(facts, label, gpu_pods_of(facts, g), meaning, f);
        }
        if (known == 0) {
                finding_skip(f, "this driver does not report a GPU recovery action (NVML field 230)");
        } else if (needed) {
                finding_fail(f, "the driver asks for %s on %u GPU(s)", gpu_recovery_action_text(worst), needed);
                finding_action(f, worst == NVML_GPU_RECOVERY_ACTION_GPU_RESET         ? ACTION_RESET_GPU
                                  : worst == NVML_GPU_RECOVERY_ACTION_NODE_REBOOT     ? ACTION_REBOOT
                                  : worst == NVML_GPU_RECOVERY_ACTION_DRAIN_P2P       ? ACTION_DRAIN
                                  : worst == NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET ? ACTION_RESET_GPU
                                                                                      : ACTION_CONTACT_SUPPORT);
                finding_remedy(
                        f,
                        "cordon and drain the node, then do what the driver asks (%s): `nvidia-smi -r` for a reset, a "
                        "reboot otherwise",
                        gpu_recovery_action_text(worst));
        } else {
                finding_pass(f, "no GPU recovery action pending on %u GPU(s)", known);
        }
}

const struct check_def check_driver_version_match = {
        .id = "driver.version-match",
        .action = ACTION_REBOOT,
        .layer = 1,
        .component = "driver",
        .title = "NVML in user space and the kernel module are the same driver version",
        .reads = "nvmlInit's answer, nvmlSystemGetDriverVersion, /proc/driver/nvidia/version, API mismatch lines in "
                 "the kernel log",
        .outcomes = "pass: versions agree; fail: driver/library version mismatch (upgraded without reboot); skip: NVML "
                    "absent",
        .remedy = "the driver was upgraded without a reboot: drain and reboot the node",
        .depends = { "driver.module-loaded", "driver.version" },
        .run = run_version_match,
};

const struct check_def check_driver_nvml_init = {
        .id = "driver.nvml-init",
        .action = ACTION_RECONFIGURE,
        .layer = 1,
        .component = "driver",
        .title = "NVML loads and initialises",
        .reads = "dlopen(libnvidia-ml.so.1), nvmlInit_v2, nvmlDeviceGetCount_v2, bounded by --nvml-timeout",
        .outcomes = "pass: NVML answers; fail: library missing, init error (named), or NVML hung",
        .remedy = "install the driver's user-space libraries matching the kernel module; if NVML hangs, reset the GPU "
                  "or reboot",
        .depends = { "driver.version-match" },
        .run = run_nvml_init,
};

const struct check_def check_driver_gpu_count = {
        .id = "driver.gpu-count",
        .action = ACTION_REBOOT,
        .layer = 1,
        .component = "driver",
        .title = "NVML sees every GPU the PCI bus has",
        .reads = "nvmlDeviceGetCount and each device handle, against PCI GPUs bound to nvidia, the GPUs the kernel "
                 "log's last boot enumerated (`pci ...: [10de:xxxx] ... class 0x0302xx`) and --expect-gpus",
        .outcomes =
                "pass: counts agree and every GPU answers; fail: a GPU missing or lost, a GPU enumerated at boot gone "
                "from the PCI bus (named by its address), fewer GPUs than --expect-gpus. A pod named as holding a lost "
                "GPU (the kubelet's pod-resources List) lost it: that job is dead and must be rescheduled",
        .remedy =
                "find the missing PCI address in the kernel log (NVRM lines); reset or reboot, then RMA if it persists",
        .depends = { "driver.nvml-init", "driver.gpu-fallen-off-bus" },
        .run = run_gpu_count,
};

const struct check_def check_driver_persistence = {
        .id = "driver.persistence",
        .action = ACTION_RECONFIGURE,
        .layer = 1,
        .component = "driver",
        .title = "persistence mode is on",
        .reads = "nvmlDeviceGetPersistenceMode per GPU; nvidia-persistenced in /proc",
        .outcomes = "pass: on everywhere; warn: off on some GPUs (slow starts, state lost between jobs)",
        .remedy = "`systemctl enable --now nvidia-persistenced` (the GPU Operator's driver container runs it itself)",
        .depends = { "driver.nvml-init" },
        .run = run_persistence,
};

const struct check_def check_driver_memory_errors = {
        .id = "driver.memory-errors",
        .action = ACTION_RESET_GPU,
        .layer = 1,
        .component = "driver",
        .title = "no failed or pending row remaps, no fresh uncorrectable ECC errors",
        .reads = "nvmlDeviceGetRemappedRows, nvmlDeviceGetTotalEccErrors (volatile, uncorrected)",
        .outcomes =
                "pass: clean; warn: remap pending (reset needed) or uncorrectable ECC since load; fail: remap failed "
                "(RMA). "
                "A pod named as holding a GPU whose remap failed ran on memory that cannot be repaired: move that job",
        .remedy = "reset the GPU when idle to apply pending remaps; a failed remap makes the GPU an RMA candidate",
        .depends = { "driver.nvml-init" },
        .run = run_memory_errors,
};

const struct check_def check_driver_recovery_action = {
        .id = "driver.recovery-action",
        .action = ACTION_RESET_GPU,
        .layer = 1,
        .component = "driver",
        .title = "the driver asks for no GPU recovery action",
        .reads = "NVML field 230 (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION) per GPU",
        .outcomes = "pass: none; fail: GPU reset, node reboot or drain requested; skip: driver too old to say. A pod "
                    "named as "
                    "holding the GPU (the kubelet's pod-resources List) dies with the reset or reboot: drain it first",
        .remedy = "drain the node, then do what the driver asks: a GPU reset (`nvidia-smi -r`) or a reboot",
        .depends = { "driver.nvml-init" },
        .run = run_recovery_action,
};
