/* check_driver_module.c: layer 1, driver: the kernel module: signature, headers, loaded, version, device nodes. */
#include "facts/node.h"
#include "layer1_hardware/kmsg_evidence.h"
#include "layer1_hardware/kmsg.h"

/* Judges driver.module-signature (the kernel accepts the nvidia module's signature (Secure Boot,
 * lockdown)) from the facts into f; never fails: what it cannot read, it says. */
static void run_module_signature(const struct node_facts *facts, struct finding *f) {
        const struct secureboot_facts *sb = &facts->secureboot;
        bool loaded = module_loaded(&facts->modules, "nvidia");
        finding_evidence(f, "Secure Boot: %s; lockdown: %s",
                         sb->secure_boot == 1   ? "enabled"
                         : sb->secure_boot == 0 ? "disabled"
                                                : "unknown (no EFI variable)",
                         sb->lockdown ? sb->lockdown : "unknown");
        size_t rejected = kmsg_evidence(&facts->kmsg, KMSG_EV_MODULE_KEY_REJECTED, f);
        size_t lockdown = kmsg_evidence(&facts->kmsg, KMSG_EV_LOCKDOWN, f);
        if (!loaded && (rejected || lockdown)) {
                finding_fail(f, "the kernel refused to load the nvidia module: its signature is not trusted%s",
                             sb->secure_boot == 1 ? " (Secure Boot is on)" : "");
                finding_remedy(
                        f, "sign the module with a key enrolled in the MOK list (`mokutil --import`, then reboot and "
                           "enroll), use the distribution's signed precompiled driver, or disable Secure Boot in the "
                           "firmware");
                return;
        }
        if (!loaded && sb->secure_boot == 1 && sb->lockdown && !streq(sb->lockdown, "none")) {
                finding_warn(
                        f,
                        "Secure Boot and lockdown (%s) are on and the nvidia module is not loaded: an unsigned module "
                        "would be refused",
                        sb->lockdown);
                finding_remedy(f, "make sure the driver is signed by an enrolled key before loading it");
                return;
        }
        if (rejected || lockdown)
                finding_pass(f, "the module is loaded; the kernel log shows an earlier signature rejection");
        else
                finding_pass(f, "no module signature or lockdown rejection in the kernel log");
}

/* Judges driver.kernel-headers (kernel headers exist for the running kernel when the driver must be
 * built) from the facts into f; never fails: what it cannot read, it says. */
static void run_kernel_headers(const struct node_facts *facts, struct finding *f) {
        const struct secureboot_facts *sb = &facts->secureboot;
        bool loaded = module_loaded(&facts->modules, "nvidia");
        if (!sb->kernel_release) {
                finding_skip(f, "cannot read the running kernel release (/proc/sys/kernel/osrelease)");
                return;
        }
        finding_evidence(f, "kernel %s; /lib/modules/%s/build %s", sb->kernel_release, sb->kernel_release,
                         sb->headers_rc == 0 ? "present" : "missing");
        size_t errors = kmsg_evidence(&facts->kmsg, KMSG_EV_HEADERS_MISSING, f);
        if (!loaded && (sb->headers_rc != 0 || errors)) {
                finding_fail(f, "kernel headers for %s are missing, so the driver cannot be built for this kernel",
                             sb->kernel_release);
                finding_remedy(f,
                               "install the headers for the running kernel (`apt-get install linux-headers-%s` or "
                               "`dnf install kernel-devel-%s`), or use a precompiled driver image for this kernel",
                               sb->kernel_release, sb->kernel_release);
                return;
        }
        if (sb->headers_rc == 0)
                finding_pass(f, "headers for kernel %s are installed", sb->kernel_release);
        else
                finding_pass(f, "headers for kernel %s are absent; not needed while the module is loaded",
                             sb->kernel_release);
}

/* Judges driver.module-loaded (the nvidia and nvidia_uvm kernel modules are loaded) from the facts
 * into f; never fails: what it cannot read, it says. */
static void run_module_loaded(const struct node_facts *facts, struct finding *f) {
        const struct module_facts *m = &facts->modules;
        if (m->rc < 0) {
                finding_fail(f, "cannot tell which modules are loaded: %s", m->error);
                finding_remedy(f, "run gpunode with the host's /proc visible (--root /host in a pod)");
                return;
        }
        static const char *const names[] = { "nvidia", "nvidia_uvm", "nvidia_modeset", "nvidia_drm", "nvidia_peermem" };
        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                finding_evidence(f, "%s: %s", names[i], module_loaded(m, names[i]) ? "loaded" : "not loaded");
        if (!module_loaded(m, "nvidia")) {
                finding_fail(f, "the nvidia kernel module is not loaded");
                finding_remedy(f, "load it (`modprobe nvidia`) and read the error; with the GPU Operator read the "
                                  "driver pod's log "
                                  "(kubectl logs -n gpu-operator -l app=nvidia-driver-daemonset); see the kernel log "
                                  "for NVRM lines");
                return;
        }
        if (!module_loaded(m, "nvidia_uvm")) {
                finding_warn(f, "nvidia is loaded but nvidia_uvm is not: CUDA programs cannot start until it is");
                finding_remedy(
                        f, "`modprobe nvidia_uvm` (or `nvidia-modprobe -u -c=0`); check that the module is installed");
                return;
        }
        finding_pass(f, "nvidia and nvidia_uvm are loaded");
}

/* Judges driver.version (the kernel module reports its version and flavour) from the facts into f;
 * never fails: what it cannot read, it says. */
static void run_driver_version(const struct node_facts *facts, struct finding *f) {
        const struct driver_facts *d = &facts->driver;
        if (d->version_rc < 0) {
                finding_fail(f, "cannot read the driver version: %s", d->version_error);
                finding_remedy(f, "a loaded nvidia module provides /proc/driver/nvidia/version; reload the driver");
                return;
        }
        finding_evidence(f, "%s", d->version_line);
        if (d->taint && !streq(d->taint, "")) finding_evidence(f, "/sys/module/nvidia/taint: %s", d->taint);
        finding_pass(f, "driver %s, %s kernel module", d->version, d->open_module ? "open" : "proprietary");
}

/* Judges driver.device-nodes (a device node exists for the control device, UVM and every GPU) from the
 * facts into f; never fails: what it cannot read, it says. */
static void run_device_nodes(const struct node_facts *facts, struct finding *f) {
        const struct driver_facts *d = &facts->driver;
        size_t missing = 0;
        for (size_t i = 0; i < _DRIVER_NODE_MAX; i++)
                if (!d->common_node[i]) missing++, finding_evidence(f, "%s: missing", driver_common_nodes[i]);
        size_t per_gpu = 0;
        for (size_t i = 0; i < d->n_gpus; i++) {
                if (d->gpus[i].minor < 0) continue;
                per_gpu++;
                if (!d->gpus[i].dev_node)
                        missing++, finding_evidence(f, "/dev/nvidia%d (GPU %s): missing", d->gpus[i].minor,
                                                    d->gpus[i].address);
        }
        if (missing) {
                finding_fail(f, "%zu NVIDIA device node(s) missing: containers cannot reach the GPUs", missing);
                finding_remedy(
                        f,
                        "create them with `nvidia-modprobe -c <minor> -u` (or run nvidia-smi once as root); with the "
                        "GPU Operator check the driver pod and /run/nvidia/driver/dev");
                return;
        }
        finding_pass(f, "/dev/nvidiactl, /dev/nvidia-uvm and %zu per-GPU node(s) present", per_gpu);
}

const struct check_def check_driver_module_signature = {
        .id = "driver.module-signature",
        .action = ACTION_RECONFIGURE,
        .layer = 1,
        .component = "driver",
        .title = "the kernel accepts the nvidia module's signature (Secure Boot, lockdown)",
        .reads = "SecureBoot efivar, /sys/kernel/security/lockdown, key rejection and lockdown lines in the kernel log",
        .outcomes = "pass: no rejection; warn: Secure Boot and lockdown on with no module loaded; fail: module not "
                    "loaded and the "
                    "kernel rejected its key",
        .remedy = "enroll the module's signing key with mokutil, use the distribution's signed driver, or disable "
                  "Secure Boot",
        .depends = { "driver.pci-devices" },
        .run = run_module_signature,
};

const struct check_def check_driver_kernel_headers = {
        .id = "driver.kernel-headers",
        .action = ACTION_RECONFIGURE,
        .layer = 1,
        .component = "driver",
        .title = "kernel headers exist for the running kernel when the driver must be built",
        .reads = "/proc/sys/kernel/osrelease, /lib/modules/<release>/build, DKMS header errors in the kernel log",
        .outcomes = "pass: present, or not needed because the module is loaded; fail: module not loaded and headers "
                    "missing",
        .remedy = "install the headers of the running kernel (linux-headers-$(uname -r)) or use a precompiled driver "
                  "for this kernel",
        .depends = { "driver.pci-devices" },
        .run = run_kernel_headers,
};

const struct check_def check_driver_module_loaded = {
        .id = "driver.module-loaded",
        .action = ACTION_RECONFIGURE,
        .layer = 1,
        .component = "driver",
        .title = "the nvidia and nvidia_uvm kernel modules are loaded",
        .reads = "/proc/modules",
        .outcomes = "pass: both loaded; warn: nvidia_uvm missing; fail: nvidia missing",
        .remedy = "`modprobe nvidia` and read its error; with the GPU Operator read the driver pod's log",
        .depends = { "driver.pci-devices", "driver.module-signature", "driver.kernel-headers" },
        .run = run_module_loaded,
};

const struct check_def check_driver_version = {
        .id = "driver.version",
        .action = ACTION_RECONFIGURE,
        .layer = 1,
        .component = "driver",
        .title = "the kernel module reports its version and flavour",
        .reads = "/proc/driver/nvidia/version, /sys/module/nvidia/taint",
        .outcomes = "pass: version and open/proprietary flavour read; fail: file missing or garbled",
        .remedy = "reload the driver; /proc/driver/nvidia/version exists whenever the nvidia module is loaded",
        .depends = { "driver.module-loaded" },
        .run = run_driver_version,
};

const struct check_def check_driver_device_nodes = {
        .id = "driver.device-nodes",
        .action = ACTION_RECONFIGURE,
        .layer = 1,
        .component = "driver",
        .title = "a device node exists for the control device, UVM and every GPU",
        .reads = "/dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools, /dev/nvidia<minor> from "
                 "/proc/driver/nvidia/gpus/*/information",
        .outcomes = "pass: all present; fail: any missing",
        .remedy = "`nvidia-modprobe -c <minor> -u` or run nvidia-smi once as root; check /run/nvidia/driver/dev with "
                  "the GPU Operator",
        .depends = { "driver.module-loaded" },
        .run = run_device_nodes,
};
