/* check_driver_pci.c: layer 1, driver: NVIDIA GPUs on the PCI bus and the driver bound to each. */
#include "engine/check.h"
#include "facts/node.h"

/* Judges driver.pci-devices (NVIDIA GPUs are present on the PCI bus) from the facts into f; never
 * fails: what it cannot read, it says. */
static void run_pci_devices(const struct node_facts *facts, struct finding *f) {
        const struct pci_facts *pci = &facts->pci;
        if (pci->rc < 0) {
                finding_fail(f, "cannot list PCI devices: %s", pci->error);
                finding_remedy(f, "run gpunode as root with the host's /sys visible (in a pod: mount the host at /host "
                                  "and pass --root /host)");
                return;
        }
        for (size_t i = 0; i < pci->n_unreadable; i++) finding_evidence(f, "unreadable: %s", pci->unreadable[i]);
        if (pci->n_gpus == 0) {
                finding_fail(f, "no NVIDIA GPU on the PCI bus (vendor 0x10de, class 0x0300/0x0302)");
                finding_evidence(f, "/sys/bus/pci/devices lists no NVIDIA display or 3D controller");
                finding_remedy(f, "if this node should have GPUs: check the BIOS (above-4G decoding, PCIe slot power), "
                                  "`lspci -nn | grep -i nvidia`, and whether the node is the instance type you expect");
                return;
        }
        for (size_t i = 0; i < pci->n_gpus; i++) {
                const struct pci_function *g = &pci->gpus[i];
                finding_evidence(f, "%s device 0x%04x class 0x%06x driver %s", g->address, g->device, g->class_code,
                                 g->driver ? g->driver : "(none)");
        }
        if (pci->n_nvswitches) finding_evidence(f, "%zu NVSwitch function(s) (class 0x0680)", pci->n_nvswitches);
        if (pci->n_unreadable) {
                finding_warn(
                        f, "%zu NVIDIA GPU(s) found, but %zu PCI function(s) could not be read: the count may be short",
                        pci->n_gpus, pci->n_unreadable);
                finding_remedy(f, "check the named sysfs files (permissions, a broken device); `lspci -nn` shows what "
                                  "the kernel sees");
                return;
        }
        finding_pass(f, "%zu NVIDIA GPU(s) on the PCI bus%s", pci->n_gpus,
                     pci->n_nvswitches ? ", NVSwitch fabric present" : "");
}

/* Judges driver.pci-binding (every GPU is bound to the nvidia kernel driver) from the facts into f;
 * never fails: what it cannot read, it says. */
static void run_pci_binding(const struct node_facts *facts, struct finding *f) {
        const struct pci_facts *pci = &facts->pci;
        size_t nvidia = 0, nouveau = 0, vfio = 0, none = 0, other = 0;
        for (size_t i = 0; i < pci->n_gpus; i++) {
                const struct pci_function *g = &pci->gpus[i];
                const char *d = g->driver;
                if (!d)
                        none++, finding_evidence(f, "%s: no driver bound", g->address);
                else if (streq(d, "nvidia"))
                        nvidia++;
                else if (streq(d, "nouveau"))
                        nouveau++, finding_evidence(f, "%s: bound to nouveau", g->address);
                else if (streq(d, "vfio-pci"))
                        vfio++, finding_evidence(f, "%s: bound to vfio-pci (passthrough)", g->address);
                else
                        other++, finding_evidence(f, "%s: bound to %s", g->address, d);
        }
        if (nouveau) {
                finding_fail(f, "%zu GPU(s) driven by nouveau, which keeps the NVIDIA driver off them", nouveau);
                finding_remedy(
                        f, "blacklist nouveau (`echo 'blacklist nouveau' > /etc/modprobe.d/blacklist-nouveau.conf`, "
                           "`options nouveau modeset=0`), rebuild the initramfs and reboot");
        } else if (none && !other && !module_loaded(&facts->modules, "nvidia")) {
                finding_skip(f,
                             "%zu GPU(s) bound to no driver because the nvidia module is not loaded (see "
                             "driver.module-loaded)",
                             none);
        } else if (none || other) {
                finding_fail(f, "%zu GPU(s) bound to no driver or a foreign one; only %zu of %zu bound to nvidia",
                             none + other, nvidia, pci->n_gpus);
                finding_remedy(
                        f, "check the kernel log for nvidia probe errors (`dmesg | grep -i nvrm`); a GPU the driver "
                           "rejected or that fell off the bus stays unbound");
        } else if (vfio && !nvidia) {
                finding_warn(
                        f,
                        "all %zu GPU(s) are bound to vfio-pci: reserved for VM passthrough, not usable by containers",
                        vfio);
                finding_remedy(f, "if containers should use these GPUs, unbind them from vfio-pci (GPU Operator: set "
                                  "nvidia.com/gpu.workload.config=container on the node)");
        } else if (vfio) {
                finding_warn(f,
                             "%zu GPU(s) bound to vfio-pci, %zu to nvidia: the vfio ones are invisible to containers",
                             vfio, nvidia);
                finding_remedy(f, "bind them back to nvidia if they are meant for containers");
        } else {
                finding_pass(f, "all %zu GPU(s) bound to the nvidia driver", nvidia);
        }
}

const struct check_def check_driver_pci_devices = {
        .id = "driver.pci-devices",
        .action = ACTION_CONTACT_SUPPORT,
        .layer = 1,
        .component = "driver",
        .title = "NVIDIA GPUs are present on the PCI bus",
        .reads = "/sys/bus/pci/devices/*/{vendor,class,device,driver}",
        .outcomes = "pass: at least one NVIDIA display or 3D controller; fail: none, or /sys unreadable",
        .remedy = "check BIOS settings (above-4G decoding), slot power and `lspci -nn | grep -i nvidia`; confirm the "
                  "instance type",
        .run = run_pci_devices,
};

const struct check_def check_driver_pci_binding = {
        .id = "driver.pci-binding",
        .action = ACTION_RECONFIGURE,
        .layer = 1,
        .component = "driver",
        .title = "every GPU is bound to the nvidia kernel driver",
        .reads = "the driver link of each NVIDIA PCI function",
        .outcomes = "pass: all bound to nvidia; warn: some bound to vfio-pci (passthrough); fail: nouveau, or none or "
                    "another "
                    "driver while nvidia is loaded; skip: unbound because the module is not loaded",
        .remedy = "blacklist nouveau and reboot; unbind GPUs from vfio-pci if containers should use them; read NVRM "
                  "probe errors in the kernel log",
        .depends = { "driver.pci-devices" },
        .run = run_pci_binding,
};
