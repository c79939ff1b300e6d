#!/usr/bin/python3
"""make_fixtures.py: writes the node scenario trees under tests/scenarios/<name>/.

Each scenario is a host root (root/) in the kernel's own file formats, an NVML description
for the fake libnvidia-ml.so.1 (nvml.json) and, after `tests/run-scenarios.sh --update`, the
expected report (expected.json, expected.txt). The trees are committed; this script is how
they were made, so a change to a scenario is a change here, then a rerun:

    /usr/bin/python3 tests/scenarios/make_fixtures.py
"""
import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVER = "550.54.15"
KERNEL = "6.1.0-18-amd64"
H100 = {"name": "NVIDIA H100 80GB HBM3", "device": 0x2330, "subsys": 0x16C1, "mem_mib": 81559, "cc": [9, 0],
        "class": 0x030200, "mig": True}
L4 = {"name": "NVIDIA L4", "device": 0x27B8, "subsys": 0x16CA, "mem_mib": 23034, "cc": [8, 9],
      "class": 0x030200, "mig": False}
RTX = {"name": "NVIDIA RTX A4000", "device": 0x24B0, "subsys": 0x14AD, "mem_mib": 16376, "cc": [8, 6],
       "class": 0x030000, "mig": False}
HGX_BUSES = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]
NVSWITCH_BUSES = ["05", "06", "07", "08"]


def uuid(i, salt="a1"):
    return "GPU-%08x-%s3f-61b9-c128-3d14759651%02x" % (0x5e2d1c00 + i, salt, i)


class Node:
    def __init__(self, name):
        self.name = name
        self.dir = os.path.join(HERE, name)
        self.root = os.path.join(self.dir, "root")
        if os.path.exists(self.dir):
            shutil.rmtree(self.dir)
        os.makedirs(self.root)
        self.modules = []
        self.kmsg = []
        self.seq = 0
        self.gpus = []
        self.nvml = None
        self.write("proc/sys/kernel/hostname", name + "\n")
        self.write("proc/sys/kernel/osrelease", KERNEL + "\n")
        self.mkdir("sys/bus/pci/devices")
        self.mkdir("sys/class/net")

    def path(self, p):
        return os.path.join(self.root, p.lstrip("/"))

    def mkdir(self, p):
        os.makedirs(self.path(p), exist_ok=True)

    def write(self, p, text, mode="w"):
        full = self.path(p)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, mode) as f:
            f.write(text)

    def symlink(self, target, p):
        full = self.path(p)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        os.symlink(target, full)

    def pci(self, addr, vendor, device, cls, driver, subsys=0):
        base = "sys/bus/pci/devices/" + addr
        self.write(base + "/vendor", "0x%04x\n" % vendor)
        self.write(base + "/device", "0x%04x\n" % device)
        self.write(base + "/class", "0x%06x\n" % cls)
        self.write(base + "/subsystem_vendor", "0x%04x\n" % vendor)
        self.write(base + "/subsystem_device", "0x%04x\n" % subsys)
        self.write(base + "/numa_node", "0\n")
        if driver:
            self.symlink("../../../bus/pci/drivers/" + driver, base + "/driver")

    def log(self, text, prio=6):
        self.seq += 1
        self.kmsg.append("%d,%d,%d,-;%s" % (prio, 800 + self.seq, 5000000 + 1000 * self.seq, text))

    def add_gpu(self, model, bus, driver="nvidia", **nvml):
        i = len(self.gpus)
        addr = "0000:%s:00.0" % bus
        self.pci(addr, 0x10DE, model["device"], model["class"], driver, model["subsys"])
        gpu = {"model": model, "addr": addr, "index": i, "uuid": uuid(i), "nvml": nvml}
        self.gpus.append(gpu)
        return gpu

    def add_nvswitch(self, bus):
        self.pci("0000:%s:00.0" % bus, 0x10DE, 0x22A3, 0x068000, "nvidia", 0x1796)

    def add_other_pci(self):
        self.pci("0000:00:00.0", 0x8086, 0x09A2, 0x060000, None)
        self.pci("0000:00:1f.0", 0x8086, 0xA1CB, 0x060100, None)

    def driver_loaded(self, version=DRIVER, open_module=False, uvm=True):
        self.modules += ["nvidia_modeset", "nvidia", "drm"]
        if uvm:
            self.modules.insert(0, "nvidia_uvm")
        if open_module:
            line = "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  %s  Release Build  (dvs-builder@U16-I3-B13-4-3)  Thu Oct 23 00:06:03 UTC 2025" % version
        else:
            line = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  %s  Tue Mar  5 22:23:56 UTC 2024" % version
        self.write("proc/driver/nvidia/version", line + "\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n")
        self.write("sys/module/nvidia/refcnt", "42\n")
        self.write("sys/module/nvidia/taint", "POE\n" if not open_module else "OE\n")
        self.write("dev/nvidiactl", "")
        self.write("dev/nvidia-uvm", "")
        self.write("dev/nvidia-uvm-tools", "")
        self.write("dev/nvidia-modeset", "")
        self.log("nvidia: loading out-of-tree module taints kernel.", 4)
        self.log("nvidia-nvlink: Nvlink Core is being initialized, major device number 511")
        self.log("NVRM: loading NVIDIA UNIX x86_64 Kernel Module  %s  Tue Mar  5 22:23:56 UTC 2024" % version, 5)
        for g in self.gpus:
            if g["nvml"].get("lost"):
                continue
            info = ("Model: \t\t %s\nIRQ:   \t\t 0\nGPU UUID: \t %s\nVideo BIOS: \t 96.00.74.00.0d\n"
                    "Bus Type: \t PCIe\nDMA Size: \t 52 bits\nDMA Mask: \t 0xfffffffffffff\nBus Location: \t %s\n"
                    "Device Minor: \t %d\nGPU Firmware: \t %s\nGPU Excluded:\t No\n") % (
                        g["model"]["name"], g["uuid"], g["addr"], g["index"], version)
            self.write("proc/driver/nvidia/gpus/%s/information" % g["addr"], info)
            self.write("dev/nvidia%d" % g["index"], "")
            self.log("NVRM: GPU at PCI:%s: %s" % (g["addr"][:-2], g["uuid"]))
        self.log("nvidia-modeset: Loading NVIDIA Kernel Mode Setting Driver for UNIX platforms  %s" % version, 5)
        self.log("nvidia_uvm: module uses symbols nvUvmInterfaceDisableAccessCntr from proprietary module nvidia, inheriting taint.", 4)

    def secure_boot(self, on, lockdown="none"):
        # efivar: 4 attribute bytes (NV+BS+RT = 0x07) then the value byte.
        full = self.path("sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c")
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(bytes([6, 0, 0, 0, 1 if on else 0]))
        words = ["none", "integrity", "confidentiality"]
        self.write("sys/kernel/security/lockdown", " ".join("[%s]" % w if w == lockdown else w for w in words) + "\n")

    def headers(self):
        self.mkdir("usr/src/linux-headers-%s" % KERNEL)
        self.symlink("/usr/src/linux-headers-%s" % KERNEL, "lib/modules/%s/build" % KERNEL)

    def process(self, pid, comm):
        self.write("proc/%d/comm" % pid, comm + "\n")
        self.write("proc/%d/cmdline" % pid, comm + "\0")

    def ib(self, dev, ports, hca="MT4129", fw="28.41.1000"):
        base = "sys/class/infiniband/" + dev
        self.write(base + "/hca_type", hca + "\n")
        self.write(base + "/fw_ver", fw + "\n")
        self.write(base + "/board_id", "MT_0000000838\n")
        for n, (state, phys, rate, ll, downed) in enumerate(ports, start=1):
            p = "%s/ports/%d" % (base, n)
            self.write(p + "/state", state + "\n")
            self.write(p + "/phys_state", phys + "\n")
            self.write(p + "/rate", rate + "\n")
            self.write(p + "/link_layer", ll + "\n")
            self.write(p + "/counters/link_downed", "%d\n" % downed)
            self.write(p + "/counters/symbol_error", "0\n")

    def rdma_stack(self, n_hca=8, peermem=True):
        self.modules += ["ib_core", "ib_uverbs", "mlx5_core", "mlx5_ib", "rdma_cm"]
        if peermem:
            self.modules.append("nvidia_peermem")
        for i in range(n_hca):
            self.ib("mlx5_%d" % i, [("4: ACTIVE", "5: LinkUp", "400 Gb/sec (4X NDR)", "InfiniBand", 0)])
            self.write("dev/infiniband/uverbs%d" % i, "")
            self.write("dev/infiniband/umad%d" % i, "")
        self.write("dev/infiniband/rdma_cm", "")

    def nic(self, ifname, addr, total=0, num=0):
        self.pci(addr, 0x15B3, 0x101B, 0x020000, "mlx5_core")
        self.symlink("../../../bus/pci/devices/" + addr, "sys/class/net/%s/device" % ifname)
        if total:
            dev = "sys/bus/pci/devices/" + addr
            self.write(dev + "/sriov_totalvfs", "%d\n" % total)
            self.write(dev + "/sriov_numvfs", "%d\n" % num)

    def nvml_doc(self, **top):
        gpus = []
        for g in self.gpus:
            m = g["model"]
            total = m["mem_mib"] * 1024 * 1024
            d = {
                "name": m["name"], "uuid": g["uuid"], "pci_bus_id": "0000" + g["addr"].upper(),
                "pci_device_id": "0x%04X10DE" % m["device"], "pci_subsystem_id": "0x%04X10DE" % m["subsys"],
                "minor_number": g["index"],
                "memory": {"total": total, "used": 512 * 1024 * 1024, "free": total - 512 * 1024 * 1024},
                "compute_capability": m["cc"],
                "mig_mode": {"current": 0, "pending": 0} if m["mig"] else None,
                "persistence_mode": 1,
                "ecc": {"mode_current": 1, "mode_pending": 1, "volatile_corrected": 0, "volatile_uncorrected": 0,
                        "aggregate_corrected": 0, "aggregate_uncorrected": 0},
                "remapped_rows": {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False},
                "recovery_action": 0,
                "temperature": 33 + g["index"], "power_mw": 71000 + 100 * g["index"], "energy_mj": 123456789,
                "utilization": {"gpu": 0, "memory": 0}, "clocks": {"sm": 1980, "mem": 2619}, "pcie_replay": 0,
            }
            d.update(g["nvml"])
            gpus.append({k: v for k, v in d.items() if v is not None or k == "mig_mode"})
        doc = {"driver_version": DRIVER, "nvml_version": "12." + DRIVER, "cuda_driver_version": 12040}
        doc.update(top)
        doc["gpus"] = gpus
        self.nvml = doc

    def finish(self, args=None):
        mods = "".join("%s 1234 0 - Live 0x0000000000000000\n" % m for m in self.modules)
        self.write("proc/modules", mods)
        self.write("dev/kmsg", "".join(l + "\n" for l in self.kmsg))
        if self.nvml is not None:
            with open(os.path.join(self.dir, "nvml.json"), "w") as f:
                json.dump(self.nvml, f, indent=1, sort_keys=True)
                f.write("\n")
        with open(os.path.join(self.dir, "args"), "w") as f:
            f.write(" ".join(args or []) + "\n")


def boot_noise(n):
    n.log("Linux version %s (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) 12.2.0) #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)" % KERNEL, 5)
    n.log("Command line: BOOT_IMAGE=/boot/vmlinuz-%s root=UUID=4b2f0c1e ro quiet" % KERNEL)
    n.log("pci 0000:00:00.0: [8086:09a2] type 00 class 0x060000")


def hgx(name, fabric_state=3, fm_running=True, rdma=True, gpu_overrides=None):
    gpu_overrides = gpu_overrides or {}
    n = Node(name)
    boot_noise(n)
    n.add_other_pci()
    for i, bus in enumerate(HGX_BUSES):
        n.add_gpu(H100, bus, **gpu_overrides.get(i, {}))
    for bus in NVSWITCH_BUSES:
        n.add_nvswitch(bus)
    n.secure_boot(False)
    n.headers()
    n.driver_loaded()
    n.process(1, "systemd")
    n.process(1203, "nvidia-persiste")
    if fm_running:
        n.process(1250, "nv-fabricmanager")
    if rdma:
        n.rdma_stack()
    n.nic("eno1", "0000:c1:00.0")
    for g in n.gpus:
        g["nvml"].setdefault("fabric", {"state": fabric_state, "status": 0,
                                        "cluster_uuid": "6b0b9c1e-2f4d-4c1a-9d3e-7f1a2b3c4d5e", "clique_id": 32766})
    return n


def main():
    # 1. A healthy 8-GPU HGX H100 node with NVSwitches and 8 NDR InfiniBand HCAs.
    n = hgx("hgx-h100-healthy")
    n.nvml_doc()
    n.finish()

    # 2. The driver does not load: Secure Boot rejects the unsigned module.
    n = Node("driver-secure-boot")
    boot_noise(n)
    n.add_other_pci()
    n.add_gpu(L4, "3b", driver=None)
    n.add_gpu(L4, "5e", driver=None)
    n.secure_boot(True, "integrity")
    n.headers()
    n.log("Lockdown: modprobe: unsigned module loading is restricted; see man kernel_lockdown.7", 5)
    n.log("Loading of module with unavailable key is rejected", 3)
    n.log("modprobe: ERROR: could not insert 'nvidia': Key was rejected by service", 3)
    n.process(1, "systemd")
    n.finish()

    # 3. Driver upgraded without a reboot: NVML is newer than the loaded kernel module.
    n = Node("api-mismatch")
    boot_noise(n)
    n.add_other_pci()
    n.add_gpu(L4, "3b")
    n.secure_boot(False)
    n.headers()
    n.driver_loaded()
    n.log("NVRM: API mismatch: the client has the version 550.90.07, but", 4)
    n.log("NVRM: this kernel module has the version 550.54.15.  Please", 4)
    n.log("NVRM: make sure that this kernel module and all NVIDIA driver", 4)
    n.log("NVRM: components have the same version.", 4)
    n.process(1, "systemd")
    n.process(1203, "nvidia-persiste")
    n.nvml_doc(init_error=18, driver_version="550.90.07", nvml_version="12.550.90.07")
    n.finish()

    # 4. One GPU of eight has fallen off the bus.
    n = hgx("gpu-fallen-off-bus", gpu_overrides={3: {"lost": True}})
    n.log("NVRM: Xid (PCI:0000:5d:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.", 4)
    n.log("NVRM: GPU 0000:5d:00.0: GPU has fallen off the bus.", 3)
    n.nvml_doc()
    n.finish()

    # 5. Double-bit ECC error, then a failed page retirement, on one GPU.
    n = hgx("xid-48-then-64", gpu_overrides={5: {
        "remapped_rows": {"correctable": 0, "uncorrectable": 1, "pending": True, "failure": False},
        "ecc": {"mode_current": 1, "mode_pending": 1, "volatile_corrected": 12, "volatile_uncorrected": 1,
                "aggregate_corrected": 12, "aggregate_uncorrected": 1}}})
    n.log("NVRM: Xid (PCI:0000:ab:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x7fffa8860 partition 7, subpartition 1.", 4)
    n.log("NVRM: Xid (PCI:0000:ab:00): 64, pid='<unknown>', name=<unknown>, Dynamic Page Retirement: Blacklisting failed.", 4)
    n.nvml_doc()
    n.finish()

    # 6. Only application Xids: a warning, not a failure.
    n = hgx("app-xids-only")
    n.log("NVRM: Xid (PCI:0000:18:00): 13, pid='<unknown>', name=<unknown>, Graphics SM Warp Exception on (GPC 7, TPC 7, SM 0): Illegal Instruction Parameter", 4)
    n.log("NVRM: Xid (PCI:0000:2a:00): 31, pid=2512125, name=python3.10, Ch 00000008, intr 00000000. MMU Fault: ENGINE GRAPHICS GPCCLIENT_T1_8 faulted @ 0x73ac_1c000000. Fault is of type FAULT_PDE ACCESS_TYPE_VIRT_WRITE", 4)
    n.log("NVRM: Xid (PCI:0000:2a:00): 43, pid=1045242, name=pt_main_thread, Ch 00000008", 4)
    n.nvml_doc()
    n.finish()

    # 7. HGX with the fabric manager stopped: GPUs never registered with the NVLink fabric.
    n = hgx("fabric-manager-down", fabric_state=1, fm_running=False)
    n.nvml_doc()
    n.finish()

    # 8. One InfiniBand port down on an otherwise healthy HGX node.
    n = hgx("ib-port-down")
    shutil.rmtree(n.path("sys/class/infiniband/mlx5_3/ports/1"))
    n.ib("mlx5_3", [("1: DOWN", "2: Polling", "10 Gb/sec (4X SDR)", "InfiniBand", 3)])
    n.nvml_doc()
    n.finish()

    # 9. A workstation: one PCIe GPU, no NVSwitch, no RDMA, an SR-IOV NIC not configured.
    n = Node("workstation-pcie")
    boot_noise(n)
    n.add_other_pci()
    n.add_gpu(RTX, "01")
    n.secure_boot(False)
    n.headers()
    n.driver_loaded(version=DRIVER, open_module=True)
    n.modules.append("i915")
    n.nic("enp5s0", "0000:05:00.0", total=8, num=0)
    n.process(1, "systemd")
    n.process(990, "nvidia-persiste")
    n.nvml_doc()
    n.finish()

    # 10. A host without NVIDIA GPUs.
    n = Node("no-gpu")
    boot_noise(n)
    n.add_other_pci()
    n.nic("eno1", "0000:c1:00.0")
    n.secure_boot(False)
    n.headers()
    n.process(1, "systemd")
    n.finish()

    # Bad input: NVML blocks in one call; bounded by a short timeout.
    n = hgx("nvml-call-blocks", rdma=False)
    n.nvml_doc(block={"call": "nvmlDeviceGetPowerUsage", "gpu": 2, "seconds": 20})
    n.finish(["--nvml-timeout", "500"])

    # Bad input: garbage and truncated files, and a symlink loop under the root.
    n = hgx("garbage-files", rdma=False)
    with open(n.path("proc/driver/nvidia/version"), "wb") as f:
        f.write(b"\x00\x01garbage\xff\xfe not a version\n")
    n.write("sys/bus/pci/devices/0000:18:00.0/class", "0x03")
    n.write("sys/bus/pci/devices/0000:2a:00.0/vendor", "banana\n")
    n.symlink("loop-b", "sys/class/net/loop-a")
    n.symlink("loop-a", "sys/class/net/loop-b")
    n.nvml_doc()
    n.finish()


if __name__ == "__main__":
    sys.exit(main())
