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

import k8s_fixtures  # layers 3 and 4: kubelet files, recorded API answers, metrics pages

HERE = os.path.dirname(os.path.abspath(__file__))
DRIVER = "550.54.15"
KERNEL = "6.1.0-18-amd64"
H100 = {"name": "NVIDIA H100 80GB HBM3", "device": 0x2330, "subsys": 0x16C1, "mem_mib": 81559, "cc": [9, 0],
        "class": 0x030200, "mig": True}
L4 = {"name": "NVIDIA L4", "device": 0x27B8, "subsys": 0x16CA, "mem_mib": 23034, "cc": [8, 9],
      "class": 0x030200, "mig": False}
RTX = {"name": "NVIDIA RTX A4000", "device": 0x24B0, "subsys": 0x14AD, "mem_mib": 16376, "cc": [8, 6],
       "class": 0x030000, "mig": False}
V100 = {"name": "Tesla V100-SXM2-32GB", "device": 0x1DB5, "subsys": 0x1249, "mem_mib": 32768, "cc": [7, 0],
        "class": 0x030200, "mig": False}
# What NVML's health queries answer on an idle, healthy GPU of each model (nvidia-smi -q -d
# TEMPERATURE,PCIE shows the same thresholds and link): NVLinks per GPU on an NVSwitch board, the PCIe
# link (current gen at idle, max gen, width), temperature thresholds (shutdown, slowdown, GPU max
# operating, memory max operating; 0: not reported), and whether retired pages exist (before Ampere).
HEALTH = {
    "NVIDIA H100 80GB HBM3": {"nvlinks": 18, "pcie": (5, 5, 16), "thresholds": (92, 89, 87, 95), "retired": False},
    "NVIDIA L4": {"nvlinks": 0, "pcie": (1, 4, 16), "thresholds": (96, 93, 87, 0), "retired": False},
    "NVIDIA RTX A4000": {"nvlinks": 0, "pcie": (1, 4, 16), "thresholds": (98, 95, 93, 0), "retired": False},
    "Tesla V100-SXM2-32GB": {"nvlinks": 6, "pcie": (3, 3, 16), "thresholds": (90, 87, 83, 85), "retired": True},
}
HGX_BUSES = ["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"]
NVSWITCH_BUSES = ["05", "06", "07", "08"]


def uuid(i, salt="a1"):
    return "GPU-%08x-%s3f-61b9-c128-3d14759651%02x" % (0x5e2d1c00 + i, salt, i)


class Node:
    def __init__(self, name):
        self.name = name
        self.dir = os.path.join(HERE, name)
        self.root = os.path.join(self.dir, "root")
        # Everything of the scenario is written anew but its expected reports, which
        # tests/run-scenarios.sh --update writes (and a person reviews).
        if os.path.exists(self.dir):
            for entry in os.listdir(self.dir):
                if entry.startswith("expected."):
                    continue
                path = os.path.join(self.dir, entry)
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path)
                else:
                    os.remove(path)
        os.makedirs(self.root)
        self.modules = []
        self.kmsg = []
        self.seq = 0
        self.gpus = []
        self.nvml = None
        self.write("proc/sys/kernel/hostname", name + "\n")
        self.write("proc/sys/kernel/osrelease", KERNEL + "\n")
        self.mountinfo()
        self.mkdir("sys/bus/pci/devices")
        # Every host has a loopback interface (a virtual one: no device link, no SR-IOV). Git keeps
        # no empty folders, so a fixture never relies on one.
        self.write("sys/devices/virtual/net/lo/type", "772\n")
        self.write("sys/devices/virtual/net/lo/operstate", "unknown\n")
        self.symlink("../../devices/virtual/net/lo", "sys/class/net/lo")

    def mountinfo(self, root_opts="rw,relatime", root_super="rw", extra=()):
        """The host's mounts as init sees them (/proc/1/mountinfo, proc(5)): an ext4 root on NVMe, the
        kernel's filesystems, and a pod's projected volume and a container's rootfs below it."""
        lines = [
            "22 28 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw",
            "23 28 0:22 / /proc rw,nosuid,nodev,noexec,relatime shared:13 - proc proc rw",
            "24 28 0:5 / /dev rw,nosuid,relatime shared:2 - devtmpfs udev rw,size=1056508416k,nr_inodes=264127104,mode=755,inode64",
            "26 28 0:25 / /run rw,nosuid,nodev,noexec,relatime shared:5 - tmpfs tmpfs rw,size=211315208k,mode=755,inode64",
            "28 1 259:2 / / %s shared:1 - ext4 /dev/nvme0n1p2 %s" % (root_opts, root_super),
            "31 28 259:1 / /boot/efi rw,relatime shared:32 - vfat /dev/nvme0n1p1 rw,fmask=0077,dmask=0077,codepage=437,"
            "iocharset=iso8859-1,shortname=mixed,errors=remount-ro",
            "1843 28 0:58 / /var/lib/kubelet/pods/7c1e2a4b-0d3f-4a6e-9b21-5f8c3d2e1a90/volumes/kubernetes.io~projected/"
            "kube-api-access-7xk2p rw,relatime shared:780 - tmpfs tmpfs rw,size=1048576k,inode64",
            "2101 26 0:63 / /run/containerd/io.containerd.runtime.v2.task/k8s.io/9f2c4b1a/rootfs rw,relatime shared:800 - "
            "overlay overlay rw,lowerdir=/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/12/fs,"
            "upperdir=/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/13/fs,"
            "workdir=/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs/snapshots/13/work",
        ] + list(extra)
        self.write("proc/1/mountinfo", "".join(l + "\n" for l in lines))

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
        self.write("usr/src/linux-headers-%s/Makefile" % KERNEL, "# SPDX-License-Identifier: GPL-2.0\nVERSION = 6\nPATCHLEVEL = 1\n")
        self.symlink("/usr/src/linux-headers-%s" % KERNEL, "lib/modules/%s/build" % KERNEL)

    def process(self, pid, comm):
        self.write("proc/%d/comm" % pid, comm + "\n")
        self.write("proc/%d/cmdline" % pid, comm + "\0")

    def task(self, pid, comm, state, wchan="0", kernel_thread=False):
        """A process with its /proc/<pid>/stat (state letter, field 3) and wchan; a kernel thread has an
        empty cmdline and ppid 2 (kthreadd)."""
        self.write("proc/%d/comm" % pid, comm[:15] + "\n")
        self.write("proc/%d/cmdline" % pid, "" if kernel_thread else comm + "\0")
        self.write("proc/%d/stat" % pid, "%d (%s) %s %d %d 0 0 -1 %d 0 0 0 0 12 340 0 0 20 0 1 0 1234 0 0 "
                   "18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 3 0 0 0 0 0\n"
                   % (pid, comm[:15], state, 2 if kernel_thread else 1, 0 if kernel_thread else pid,
                      0x208040 if kernel_thread else 0x400100))
        self.write("proc/%d/wchan" % pid, wchan)

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

    # ---- layer 2: container runtimes, the toolkit, CDI ----
    # Start times: git does not keep mtimes, so a checkout gives every config file the time of the
    # checkout. A daemon that must look started after its config gets a boot time far in the future
    # (BTIME_AFTER); one that must look older than its config boots in 2023 (BTIME_BEFORE).
    BTIME_AFTER = 4000000000
    BTIME_BEFORE = 1700000000

    def executable(self, p, text="#!/bin/sh\nexit 0\n"):
        self.write(p, text)
        os.chmod(self.path(p), 0o755)

    def daemon(self, pid, comm, argv=None, btime=BTIME_AFTER, start_ticks=1234):
        """A daemon in /proc with a stat line (field 22 = start time in clock ticks) and /proc/stat btime."""
        self.write("proc/%d/comm" % pid, comm + "\n")
        self.write("proc/%d/cmdline" % pid, "\0".join(argv or ["/usr/bin/" + comm]) + "\0")
        fields = [str(pid), "(%s)" % comm, "S", "1", str(pid), str(pid), "0", "-1", "4194560", "120345", "0", "12", "0",
                  "1500", "800", "0", "0", "20", "0", "24", "0", str(start_ticks), "2147483648", "10000"]
        self.write("proc/%d/stat" % pid, " ".join(fields) + " 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 17 3 0 0 0 0 0\n")
        self.write("proc/stat", "cpu  10132153 290696 3084719 46828483 16683 0 25195 0 0 0\nintr 1462898\n"
                   "ctxt 2084421\nbtime %d\nprocesses 26442\nprocs_running 1\nprocs_blocked 0\n" % btime)

    def toolkit(self, where="/usr/bin", mode="auto", config=True):
        for b in ["nvidia-container-runtime", "nvidia-container-runtime.cdi", "nvidia-container-runtime.legacy",
                  "nvidia-container-cli", "nvidia-ctk", "nvidia-cdi-hook"]:
            self.executable("%s/%s" % (where, b))
        if config:
            self.write("etc/nvidia-container-runtime/config.toml",
                       '#accept-nvidia-visible-devices-as-volume-mounts = false\n'
                       'disable-require = false\nsupported-driver-capabilities = "compat32,compute,display,graphics,ngx,utility,video"\n\n'
                       '[nvidia-container-cli]\nenvironment = []\nldconfig = "@/sbin/ldconfig.real"\nload-kmods = true\n'
                       'no-cgroups = false\n\n[nvidia-container-runtime]\nlog-level = "info"\nmode = "%s"\n'
                       'runtimes = ["docker-runc", "runc", "crun"]\n\n[nvidia-container-runtime.modes.cdi]\n'
                       'annotation-prefixes = ["cdi.k8s.io/"]\ndefault-kind = "nvidia.com/gpu"\nspec-dirs = ["/etc/cdi", "/var/run/cdi"]\n\n'
                       '[nvidia-container-runtime-hook]\npath = "nvidia-container-runtime-hook"\nskip-mode-detection = false\n\n'
                       '[nvidia-ctk]\npath = "nvidia-ctk"\n' % mode)

    @staticmethod
    def cri_runtimes(version, binary="/usr/bin/nvidia-container-runtime", default="nvidia", runc=True, cdi=None):
        """The CRI tables nvidia-ctk writes, for config version 2 or 3."""
        p = 'plugins."io.containerd.grpc.v1.cri"' if version == 2 else 'plugins."io.containerd.cri.v1.runtime"'
        t = "  [%s]\n" % p
        if cdi is not None:
            t += "    enable_cdi = %s\n    cdi_spec_dirs = [\"/etc/cdi\", \"/var/run/cdi\"]\n" % ("true" if cdi else "false")
        t += "    [%s.containerd]\n      default_runtime_name = \"%s\"\n" % (p, default)
        t += "      [%s.containerd.runtimes]\n" % p
        if binary:
            for name, suffix in [("nvidia", ""), ("nvidia-cdi", ".cdi"), ("nvidia-legacy", ".legacy")]:
                t += ('        [{p}.containerd.runtimes.{n}]\n          privileged_without_host_devices = false\n'
                      '          runtime_type = "io.containerd.runc.v2"\n          [{p}.containerd.runtimes.{n}.options]\n'
                      '            BinaryName = "{b}{s}"\n            SystemdCgroup = true\n').format(p=p, n='"%s"' % name if "-" in name else name, b=binary, s=suffix)
        if runc:
            t += ('        [{p}.containerd.runtimes.runc]\n          runtime_type = "io.containerd.runc.v2"\n'
                  '          [{p}.containerd.runtimes.runc.options]\n            SystemdCgroup = true\n').format(p=p)
        return t

    def containerd(self, version=2, patched=True, dropin=False, import_dropin=True, binary="/usr/bin/nvidia-container-runtime",
                   default="nvidia", btime=BTIME_AFTER, cdi=None, pid=812):
        """containerd with /etc/containerd/config.toml as nvidia-ctk leaves it: the runtime tables in the main
        file, or (toolkit >= 1.18) in conf.d/99-nvidia.toml imported by the main file."""
        self.executable("usr/bin/containerd")
        self.executable("usr/bin/containerd-shim-runc-v2")
        self.executable("usr/sbin/runc")
        head = "version = %d\n" % version
        if dropin and import_dropin:
            head += 'imports = ["/etc/containerd/conf.d/*.toml"]\n'
        head += 'root = "/var/lib/containerd"\nstate = "/run/containerd"\noom_score = 0\n\n[grpc]\n  address = "/run/containerd/containerd.sock"\n\n'
        head += '[plugins]\n'
        if version == 2:
            head += ('  [plugins."io.containerd.grpc.v1.cri".cni]\n      bin_dir = "/opt/cni/bin"\n      conf_dir = "/etc/cni/net.d"\n'
                     '  [plugins."io.containerd.grpc.v1.cri".registry]\n    config_path = "/etc/containerd/certs.d"\n')
        else:
            head += ('  [plugins."io.containerd.cri.v1.images"]\n    snapshotter = "overlayfs"\n'
                     '    [plugins."io.containerd.cri.v1.images".pinned_images]\n      sandbox = "registry.k8s.io/pause:3.10"\n'
                     '  [plugins."io.containerd.cri.v1.runtime".cni]\n'
                     '      bin_dir = "/opt/cni/bin"\n      conf_dir = "/etc/cni/net.d"\n')
        if patched and not dropin:
            body = self.cri_runtimes(version, binary, default, cdi=cdi)
        elif not patched:
            body = self.cri_runtimes(version, None, "runc")
        else:
            body = self.cri_runtimes(version, None, "runc")
            self.write("etc/containerd/conf.d/99-nvidia.toml", "version = %d\n\n[plugins]\n" % version +
                       self.cri_runtimes(version, binary, default, cdi=cdi))
        self.write("etc/containerd/config.toml", head + body)
        self.daemon(pid, "containerd", ["/usr/bin/containerd"], btime=btime)

    def dpkg(self, package, version, files):
        """dpkg's record of an installed package: its stanza in /var/lib/dpkg/status and its file list."""
        stanza = ("Package: %s\nStatus: install ok installed\nPriority: optional\nSection: admin\nArchitecture: amd64\n"
                  "Version: %s\nDescription: An open and reliable container runtime\n" % (package, version))
        status = self.path("var/lib/dpkg/status")
        old = open(status).read() + "\n" if os.path.exists(status) else ""
        self.write("var/lib/dpkg/status", old + stanza)
        dirs = sorted({os.path.dirname(f) for f in files} | {"/usr", "/."})
        self.write("var/lib/dpkg/info/%s.list" % package, "\n".join(dirs + list(files)) + "\n")

    def crio(self, patched=True, default=None, btime=BTIME_AFTER, pid=905, binary="/usr/bin/nvidia-container-runtime"):
        """CRI-O as packaged since 1.29 (its settings in crio.conf.d/10-crio.conf, crun the default runtime) and, when
        patched, the drop-in `nvidia-ctk runtime configure --runtime=crio` writes (pkg/config/engine/crio): the low-level
        runtime's options copied, runtime_path and runtime_type = "oci", default_runtime only with --set-as-default."""
        self.executable("usr/bin/crio")
        self.executable("usr/bin/crun")
        self.executable("usr/libexec/crio/conmon")
        self.write("etc/crio/crio.conf.d/10-crio.conf",
                   '[crio.image]\nsignature_policy = "/etc/crio/policy.json"\n\n[crio.runtime]\ndefault_runtime = "crun"\n\n'
                   '[crio.runtime.runtimes.crun]\nruntime_path = "/usr/libexec/crio/crun"\nruntime_root = "/run/crun"\n'
                   'monitor_path = "/usr/libexec/crio/conmon"\nallowed_annotations = [\n    "io.containers.trace-syscall",\n]\n\n'
                   '[crio.runtime.runtimes.runc]\nruntime_path = "/usr/libexec/crio/runc"\nruntime_root = "/run/runc"\n'
                   'monitor_path = "/usr/libexec/crio/conmon"\n')
        self.executable("usr/libexec/crio/crun")
        self.executable("usr/libexec/crio/runc")
        if patched:
            t = ""
            if default:
                t += '\n[crio]\n\n  [crio.runtime]\n    default_runtime = "%s"\n\n    [crio.runtime.runtimes]\n' % default
            else:
                t += '\n[crio]\n\n  [crio.runtime]\n\n    [crio.runtime.runtimes]\n'
            t += ('\n      [crio.runtime.runtimes.nvidia]\n        allowed_annotations = ["io.containers.trace-syscall"]\n'
                  '        monitor_path = "/usr/libexec/crio/conmon"\n        runtime_path = "%s"\n'
                  '        runtime_root = "/run/crun"\n        runtime_type = "oci"\n' % binary)
            self.write("etc/crio/crio.conf.d/99-nvidia.conf", t)
        self.daemon(pid, "crio", ["/usr/bin/crio"], btime=btime)

    def cdi_spec(self, path="var/run/cdi/nvidia.yaml", version=DRIVER, host_version=DRIVER):
        """A spec as `nvidia-ctk cdi generate` writes it for the node's GPUs and driver `version`; the host
        has the driver libraries of host_version."""
        libdir = "usr/lib/x86_64-linux-gnu"
        libs = ["libcuda.so", "libnvidia-ml.so", "libnvidia-ptxjitcompiler.so", "libnvidia-nvvm.so", "libcudadebugger.so"]
        for l in libs:
            self.write("%s/%s.%s" % (libdir, l, host_version), "")
        self.write("lib/firmware/nvidia/%s/gsp_ga10x.bin" % host_version, "")
        self.write("lib/firmware/nvidia/%s/gsp_tu10x.bin" % host_version, "")
        for b in ["nvidia-smi", "nvidia-debugdump", "nvidia-persistenced"]:
            self.executable("usr/bin/" + b)
        y = ["---", "cdiVersion: 0.5.0", "containerEdits:", "  deviceNodes:"]
        for d in ["/dev/nvidia-modeset", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidiactl"]:
            y.append("  - path: %s" % d)
        y += ["  env:", "  - NVIDIA_VISIBLE_DEVICES=void", "  hooks:",
              "  - args:", "    - nvidia-cdi-hook", "    - create-symlinks", "    - --link",
              "    - libnvidia-allocator.so.1::/usr/lib/x86_64-linux-gnu/gbm/nvidia-drm_gbm.so",
              "    hookName: createContainer", "    path: /usr/bin/nvidia-cdi-hook",
              "  - args:", "    - nvidia-cdi-hook", "    - update-ldcache", "    - --folder", "    - /usr/lib/x86_64-linux-gnu",
              "    hookName: createContainer", "    path: /usr/bin/nvidia-cdi-hook", "  mounts:"]
        mounts = ["/%s/%s.%s" % (libdir, l, version) for l in libs]
        mounts += ["/lib/firmware/nvidia/%s/gsp_ga10x.bin" % version, "/lib/firmware/nvidia/%s/gsp_tu10x.bin" % version]
        mounts += ["/usr/bin/nvidia-smi", "/usr/bin/nvidia-debugdump", "/usr/bin/nvidia-persistenced"]
        for m in mounts:
            y += ["  - containerPath: %s" % m, "    hostPath: %s" % m, "    options:", "    - ro", "    - nosuid", "    - nodev", "    - bind"]
        y.append("devices:")
        for g in self.gpus:
            for name in [str(g["index"]), g["uuid"]]:
                y += ["- containerEdits:", "    deviceNodes:", "    - path: /dev/nvidia%d" % g["index"], "  name: %s" % ("'%s'" % name if name.isdigit() else name)]
        y += ["- containerEdits:", "    deviceNodes:"]
        y += ["    - path: /dev/nvidia%d" % g["index"] for g in self.gpus]
        y += ["  name: all", "kind: nvidia.com/gpu"]
        self.write(path, "\n".join(y) + "\n")

    def fabric_manager(self, version=DRIVER, log=None, package=True):
        """The fabric manager as a host install leaves it: its dpkg package and its log (a list of
        (level, message) pairs; None: no log file)."""
        status = [
            "Package: libnvidia-nscq-550\nStatus: install ok installed\nArchitecture: amd64\nVersion: %s-1\n" % version,
            "Package: nvidia-fabricmanager-dev-550\nStatus: deinstall ok config-files\nArchitecture: amd64\nVersion: %s-1\n" % version,
        ]
        if package:
            status.append("Package: nvidia-fabricmanager-550\nStatus: install ok installed\nPriority: optional\n"
                          "Section: multiverse/devel\nInstalled-Size: 6072\nMaintainer: NVIDIA Corporation\n"
                          "Architecture: amd64\nVersion: %s-1\nDescription: Fabric Manager for NVSwitch based systems.\n" % version)
        status.append("Package: zlib1g\nStatus: install ok installed\nArchitecture: amd64\nVersion: 1:1.2.13.dfsg-1\n")
        self.write("var/lib/dpkg/status", "\n".join(status))
        if log is not None:
            self.write("var/log/fabricmanager.log",
                       "".join("[Mar 06 2024 09:%02d:%02d] [%s] [tid 1250] %s\n" % (10 + i // 60, i % 60, lvl, msg)
                               for i, (lvl, msg) in enumerate(log)))

    # What the validator and the driver container write in them (gpu-operator cmd/nvidia-validator/main.go
    # createStatusFile, assets/state-driver/0400_configmap.yaml); the other files are empty.
    VALIDATION_TEXT = {
        "driver-ready": "IS_HOST_DRIVER=true\nNVIDIA_DRIVER_ROOT=/\nDRIVER_ROOT_CTR_PATH=/host\nNVIDIA_DEV_ROOT=/\n"
                        "DEV_ROOT_CTR_PATH=/host\n",
        ".driver-ctr-ready": "GDRCOPY_ENABLED: false\nGDS_ENABLED: false\nGPU_DIRECT_RDMA_ENABLED: false\n",
    }

    def validations(self, *names, text=None):
        for n in names:
            self.write("run/nvidia/validations/%s" % n, (text or {}).get(n, self.VALIDATION_TEXT.get(n, "")))

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
            h = HEALTH[m["name"]]
            gen, gen_max, width = h["pcie"]
            shutdown, slowdown, gpu_max, mem_max = h["thresholds"]
            thresholds = {"shutdown": shutdown, "slowdown": slowdown, "gpu_max": gpu_max}
            if mem_max:
                thresholds["mem_max"] = mem_max
                d["memory_temperature"] = 38 + g["index"]
            d.update({
                "clocks_event_reasons": 1,  # idle
                "violation": {"power_ns": 0, "thermal_ns": 0},
                "temperature_thresholds": thresholds,
                "pcie": {"width": width, "width_max": width, "gen": gen, "gen_max": gen_max, "gen_gpu_max": gen_max},
                "processes": [], "graphics_processes": [], "drain_state": 0,
            })
            if h["nvlinks"]:
                d["nvlinks"] = [{"active": True, "replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0}
                                for _ in range(h["nvlinks"])]
            if h["retired"]:
                d["retired_pages"] = {"sbe": 0, "dbe": 0, "pending": False}
                d["remapped_rows"] = None  # before Ampere: no row remapping
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
        for top, dirs, files in os.walk(self.root):
            if not dirs and not files:
                raise SystemExit("%s: an empty folder, which git would not keep" % top)


def boot_noise(n):
    n.log("Linux version %s (debian-kernel@lists.debian.org) (gcc-12 (Debian 12.2.0-14) 12.2.0) #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)" % KERNEL, 5)
    n.log("Command line: BOOT_IMAGE=/boot/vmlinuz-%s root=UUID=4b2f0c1e ro quiet" % KERNEL)
    n.log("pci 0000:00:00.0: [8086:09a2] type 00 class 0x060000")


def fm_started(version=DRIVER):
    """A fabric manager log's lines from a good start."""
    return [
        ("INFO", "Fabric Manager version %s is running with the following configuration options" % version),
        ("INFO", "Logging level = 4"),
        ("INFO", "Fabric Mode = 0"),
        ("INFO", "Fabric Manager Unix Domain Socket Path = "),
        ("INFO", "Successfully configured all the available NVSwitches to route GPU NVLink traffic. NVLink Peer-to-Peer "
                 "support will be enabled once the GPUs are successfully registered with the NVLink fabric."),
    ]


def nvswitch_scenarios():
    """NVSwitch errors (SXids), Xid severities that follow NVIDIA's catalog, the fabric manager's version and log."""
    # A fatal SXid on one NVSwitch: the driver's three lines, the fabric manager's word on it, the jobs' Xid 45.
    n = hgx("nvswitch-sxid-fatal")
    sw = "nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 24007, "
    n.log(sw + "Fatal, Link 28 sourcetrack timeout error (First)", 3)
    n.log(sw + "Severity 1 Engine instance 28 Sub-engine instance 00", 3)
    n.log(sw + "Data {0x1c000000, 0x00000001, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000}", 3)
    n.log("NVRM: Xid (PCI:0000:18:00): 45, pid=1818990, name=python3, Ch 00000001", 4)
    n.fabric_manager(log=fm_started() + [
        ("ERROR", "detected NVSwitch fatal error 24007 on fid 0 on NVSwitch pci bus id 00000000:05:00.0 physical id 0 port 28")])
    n.nvml_doc()
    n.finish()

    # Non-fatal SXids (NVIDIA/nvtrust#124): a warning, not a failure.
    n = hgx("nvswitch-sxid-nonfatal")
    for link in (44, 45):
        sw = "nvidia-nvswitch3: SXid (PCI:0000:08:00.0): 22013, "
        n.log(sw + "Data {0x%08x, 0x%08x, 0x00000000, 0x%08x, 0x80005302, 0x00000000, 0x00000000, 0x00000000, 0x00000000}"
              % (link - 1, link - 1, link - 1), 4)
        n.log(sw + "Non-fatal, Link %d Minion Link DLREQ interrupt" % link, 4)
        n.log(sw + "Severity 0 Engine instance %d Sub-engine instance 00" % link, 4)
    n.nvml_doc()
    n.finish()

    # Xid 154: the driver asks for a GPU reset (NVML's recovery action agrees).
    n = hgx("xid154-reset-required", gpu_overrides={4: {"recovery_action": 1}})
    n.log("NVRM: Xid (PCI:0000:9a:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)", 4)
    n.nvml_doc()
    n.finish()

    # An Xid gpunode's catalog does not know: a warning that asks for NVIDIA support.
    n = hgx("xid-unknown")
    n.log("NVRM: Xid (PCI:0000:3a:00): 999, pid='<unknown>', name=<unknown>, Ch 00000010", 4)
    n.nvml_doc()
    n.finish()

    # Xid 146 (NVLink5 TLW): the error status decides: 0x1 is ignored, 0x2 asks for support.
    n = hgx("xid146")
    n.log("NVRM: Xid (PCI:0000:9a:00): 146, TLW_TX Nonfatal XC0 i0 Link 07 (0x0000000c 0x00000001 0x00000000 0x00000000 0x00000000 0x00000000)", 4)
    n.log("NVRM: Xid (PCI:0000:ab:00): 146, TLW_RX Nonfatal XC0 i0 Link 03 (0x0000000a 0x00000002 0x00000000 0x00000000 0x00000000 0x00000000)", 4)
    n.nvml_doc()
    n.finish()

    # The fabric manager package was upgraded past the driver: it refuses to start, GPUs stay unregistered.
    n = hgx("fabric-manager-version-mismatch", fabric_state=1, fm_running=False)
    n.fabric_manager(version="550.90.07", log=fm_started() + [
        ("INFO", "Received signal 15, exiting"),
        ("ERROR", "fabric manager NVIDIA GPU driver interface version 550.90.07 don't match with driver version 550.54.15. "
                  "Please update with matching NVIDIA driver package.")])
    n.nvml_doc()
    n.finish()

    # Errors in the fabric manager's log since its last start (and an older run's, not judged).
    n = hgx("fabric-manager-log-errors")
    n.fabric_manager(log=[
        ("ERROR", "detected number of NVSwitches don't match with any supported system topology, aborting fabric manager"),
    ] + fm_started() + [
        ("ERROR", "detected NVSwitch non-fatal error 12028 on fid 0 on NVSwitch pci bus id 00000000:06:00.0 physical id 1 port 61"),
        ("ERROR", "failed to find the GPU handle 5410063385821516767 in the multicast team request setup 6130285411925746235."),
    ])
    n.nvml_doc()
    n.finish()


def boot_enumeration(n, buses, suffix=""):
    """The kernel's PCI enumeration lines at boot for the HGX GPUs on buses and the NVSwitches (kernels
    from 6.8 on end each line with the port type: suffix " PCIe Endpoint")."""
    for bus in NVSWITCH_BUSES:
        n.log("pci 0000:%s:00.0: [10de:22a3] type 00 class 0x068000%s" % (bus, suffix))
    for bus in buses:
        n.log("pci 0000:%s:00.0: [10de:%04x] type 00 class 0x030200%s" % (bus, H100["device"], suffix))
        n.log("pci 0000:%s:00.0: reg 0x10: [mem 0x%s000000-0x%sffffff 64bit pref]" % (bus, bus, bus))


def hgx(name, fabric_state=3, fm_running=True, rdma=True, gpu_overrides=None, runtime=True, buses=HGX_BUSES):
    gpu_overrides = gpu_overrides or {}
    n = Node(name)
    boot_noise(n)
    n.add_other_pci()
    for i, bus in enumerate(buses):
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
        n.fabric_manager(log=fm_started())
    else:
        n.fabric_manager()
    if rdma:
        n.rdma_stack()
    n.nic("eno1", "0000:c1:00.0")
    if runtime:
        # containerd 1.7 patched by the toolkit (v2 config, nvidia the default), CDI spec by nvidia-cdi-refresh
        n.toolkit()
        n.containerd(version=2)
        n.cdi_spec()
        n.validations(".driver-ctr-ready", "driver-ready", "toolkit-ready", "cuda-ready", "plugin-ready")
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

    # A GPU the kernel enumerated at boot left the bus later (its slot's link went down): PCI and NVML
    # both count 7 and agree; the boot's enumeration names the missing slot.
    n = hgx("gpu-gone-since-boot", buses=[b for b in HGX_BUSES if b != "5d"])
    boot_enumeration(n, HGX_BUSES, suffix=" PCIe Endpoint")
    n.log("pcieport 0000:5c:00.0: pciehp: Slot(5): Link Down", 3)
    n.log("pcieport 0000:5c:00.0: pciehp: Slot(5): Card not present", 3)
    n.nvml_doc()
    n.finish()

    # A GPU not enumerated at boot at all (GPUd --gpu-count, the EKS agent's count mismatch): PCI, NVML
    # and the boot's enumeration all say 7; only the count the node should have tells.
    n = hgx("gpu-count-below-expected", buses=[b for b in HGX_BUSES if b != "ba"])
    boot_enumeration(n, [b for b in HGX_BUSES if b != "ba"])
    n.nvml_doc()
    n.finish(args=["--expect-gpus", "8"])

    # A GPU that stopped answering: the driver's queue thread, nvidia-smi and the training process on
    # GPU 0 wait in the driver, uninterruptible (D state); a sleeping driver thread is fine.
    n = hgx("driver-stuck-d-state", gpu_overrides={0: {"processes": [{"pid": 70001, "used_memory": 41 << 30}]}})
    n.task(812, "nv_queue", "D", "__down_common", kernel_thread=True)
    n.task(813, "nvidia-modeset/kthread_q", "S", "worker_thread", kernel_thread=True)
    n.task(51234, "nvidia-smi", "D", "rwsem_down_write_slowpath")
    n.task(70001, "python3", "D", "uvm_va_space_destroy")
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

    # The fabric manager died after the GPUs registered (NVSentinel#883, 20 days unnoticed): the fabric
    # state still reads completed, the next GPU reset or partition change fails. Its log ends mid-run
    # (a crash writes no line).
    n = hgx("fabric-manager-died", fm_running=False)
    n.fabric_manager(log=fm_started())
    n.nvml_doc()
    n.finish()

    # The same node seen without its processes (a pod without the host's /proc): that the fabric manager
    # is not in /proc proves nothing, so no warning.
    n = hgx("fabric-manager-proc-hidden", fm_running=False)
    n.fabric_manager(log=fm_started())
    for pid in [e for e in os.listdir(n.path("proc")) if e.isdigit()]:
        if pid == "1":  # /proc/1/mountinfo stays: the mounts are read through it
            os.remove(n.path("proc/1/comm"))
            os.remove(n.path("proc/1/cmdline"))
        else:
            shutil.rmtree(n.path("proc/" + pid))
    n.nvml_doc()
    n.finish()

    # The fabric health mask (NVML fabric info v2, r570's four fields): GPU 2's route unhealthy (bits 4-5
    # = 1), GPU 5's bandwidth degraded (bits 0-1 = 1); the others 0xaa, every field "false".
    masks = {i: 0xAA for i in range(8)}
    masks.update({2: 0x9A, 5: 0xA9})
    n = hgx("nvlink-fabric-unhealthy")
    for g in n.gpus:
        g["nvml"]["fabric"]["health_mask"] = masks[g["index"]]
    n.nvml_doc()
    n.finish()

    # The root filesystem hit an error and the kernel remounted it read-only (errors=remount-ro): the
    # mount's options still say rw, its superblock's say ro. containerd and the kubelet cannot write.
    n = hgx("root-remounted-read-only")
    n.mountinfo(root_super="ro")
    n.write("var/lib/kubelet/config.yaml", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n")
    n.log("EXT4-fs error (device nvme0n1p2): ext4_journal_check_start:83: comm containerd: Detected aborted journal", 2)
    n.log("EXT4-fs (nvme0n1p2): Remounting filesystem read-only", 2)
    n.nvml_doc()
    n.finish()

    # /var/lib/kubelet on its own disk, mounted read-only by a wrong fstab line; the root is fine.
    n = hgx("kubelet-dir-read-only")
    n.mountinfo(extra=["1201 28 259:5 / /var/lib/kubelet ro,relatime shared:40 - xfs /dev/nvme1n1 ro,attr2,inode64,"
                       "logbufs=8,logbsize=32k,noquota"])
    n.write("var/lib/kubelet/config.yaml", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n")
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

    layer2_scenarios()
    nvswitch_scenarios()
    k8s_fixtures.scenarios(hgx, Node, l4_node)
    default_runtime_scenarios()
    gpu_health_scenarios()


def links(n=18, down=(), errors=None):
    """NVML's answer for n NVLinks: `down` inactive, errors {link: {counter: n}} on the others."""
    out = []
    for i in range(n):
        e = {"active": i not in down}
        if e["active"]:
            e.update({"replay": 0, "recovery": 0, "crc_flit": 0, "crc_data": 0})
            e.update((errors or {}).get(i, {}))
        out.append(e)
    return out


def gpu_health_scenarios():
    """One scenario per gpu.* and nvlink.* failure or warning (NVML's health queries)."""
    # A sustained hardware slowdown: the power brake (an external PSU signal) on GPU 4, in both readings.
    n = hgx("gpu-hw-slowdown", gpu_overrides={4: {
        "clocks_event_reasons": 0x88, "violation": {"power_ns": 734000000000, "thermal_ns": 0}}})
    n.nvml_doc()
    n.finish()

    # GPU 2 runs 3 C below its slowdown temperature, its HBM 2 C below the memory's maximum.
    n = hgx("gpu-temp-near-slowdown", gpu_overrides={2: {"temperature": 86, "memory_temperature": 93}})
    n.nvml_doc()
    n.finish()

    # Two NVLinks of GPU 6 down on an HGX H100 (18 per GPU).
    n = hgx("nvlink-down-hgx", gpu_overrides={6: {"nvlinks": links(down=(7, 12))}})
    n.nvml_doc()
    n.finish()

    # GPU 1's link 4 has counted CRC flit errors and replays: a marginal link.
    n = hgx("nvlink-errors-growing", gpu_overrides={1: {"nvlinks": links(errors={4: {"crc_flit": 157, "replay": 12}})}})
    n.nvml_doc()
    n.finish()

    # An L4 in a slot that trained x8 of x16 (a riser or seating problem); the idle Gen1 is by design.
    n = l4_node("pcie-width-degraded")
    n.gpus[1]["nvml"]["pcie"] = {"width": 8, "width_max": 16, "gen": 1, "gen_max": 4, "gen_gpu_max": 4}
    n.nvml_doc()
    n.finish()

    # A V100 (before Ampere: page retirement, no row remapping) with a retirement pending after
    # double-bit errors of an earlier boot (aggregate counts; none since this driver load).
    n = Node("retired-pages-pending")
    boot_noise(n)
    n.add_other_pci()
    n.add_gpu(V100, "3b", retired_pages={"sbe": 1, "dbe": 2, "pending": True},
              ecc={"mode_current": 1, "mode_pending": 1, "volatile_corrected": 0, "volatile_uncorrected": 0,
                   "aggregate_corrected": 9, "aggregate_uncorrected": 2})
    n.add_gpu(V100, "5e")
    n.secure_boot(False)
    n.headers()
    n.driver_loaded()
    n.process(1, "systemd")
    n.process(1203, "nvidia-persiste")
    n.log("NVRM: Xid (PCI:0000:3b:00): 63, pid='<unknown>', name=<unknown>, Dynamic Page Retirement: New page retired, reboot to activate (0x00000000003f6a1a).", 4)
    n.nvml_doc()
    n.finish()

    # ECC switched off on one L4 (nvidia-smi -e 0 and a reboot).
    n = l4_node("ecc-disabled")
    n.gpus[0]["nvml"]["ecc"] = {"mode_current": 0, "mode_pending": 0}
    n.nvml_doc()
    n.finish()

    # A Kubernetes node: the kubelet's pod-resources List names the containers that hold GPUs 0-3. A
    # process of a dead pod still holds 30 GiB on GPU 5 (its cgroup names the pod), a process that no
    # longer exists holds 2 GiB on GPU 6, and GPU 7 has 6 GiB in use with no process at all.
    total = H100["mem_mib"] << 20
    n = hgx("gpu-orphan-process", gpu_overrides={
        0: {"processes": [{"pid": 70001, "used_memory": 41 << 30}]},
        5: {"processes": [{"pid": 81234, "used_memory": 30 << 30}]},
        6: {"processes": [{"pid": 90001, "used_memory": 2 << 30}]},
        7: {"memory": {"total": total, "used": 6 << 30, "free": total - (6 << 30), "reserved": 566 << 20}}})
    n.process(70001, "python3")
    n.write("proc/70001/cgroup", "0::/kubepods.slice/kubepods-pod7c1e2a4b_0d3f_4a6e_9b21_5f8c3d2e1a90.slice/"
            "cri-containerd-%s.scope\n" % ("a1" * 32))
    n.process(81234, "pt_main_thread")
    n.write("proc/81234/cgroup", "0::/kubepods.slice/kubepods-besteffort.slice/"
            "kubepods-besteffort-pod3e9b0c7d_6a2f_4b18_8e45_0c9d7f6a2b13.slice/cri-containerd-%s.scope\n" % ("9f" * 32))
    n.nvml_doc()
    n.finish()
    doc = {"podResources": [{"name": "train-a", "namespace": "ml", "containers": [
        {"name": "trainer", "devices": [{"resourceName": "nvidia.com/gpu", "deviceIds": [g["uuid"] for g in n.gpus[:4]]}]}]}]}
    with open(os.path.join(n.dir, "podresources.json"), "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")

    # One L4 in NVML's drain state (nvidia-smi drain -m 1 before a reset or removal).
    n = l4_node("gpu-drain-state")
    n.gpus[1]["nvml"]["drain_state"] = 1
    n.nvml_doc()
    n.finish()


def runtime_class_node(name):
    """An HGX node in a cluster whose containerd was patched without --set-as-default: nvidia defined, runc the default."""
    n = hgx(name, runtime=False)
    n.toolkit()
    n.containerd(version=2, default="runc")
    n.cdi_spec()
    n.validations(".driver-ctr-ready", "driver-ready", "toolkit-ready", "cuda-ready", "plugin-ready")
    k8s_fixtures.kubelet_files(n)
    n.nvml_doc()
    return n


def gpu_workload(n, runtime_class=None):
    """A training pod that asks for all eight GPUs, with or without runtimeClassName."""
    p = k8s_fixtures.pod(n, "trainer-0", "ml", {"app": "trainer"},
                         [k8s_fixtures.running("trainer", "nvcr.io/nvidia/pytorch:24.10-py3")], owner="StatefulSet")
    p["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "8"}, "requests": {"nvidia.com/gpu": "8"}}
    if runtime_class:
        p["spec"]["runtimeClassName"] = runtime_class
    return p


def default_runtime_scenarios():
    kf = k8s_fixtures
    # runc is containerd's default, CDI is off, and the GPU pod on the node sets no runtimeClassName: it gets no GPU.
    n = runtime_class_node("k8s-default-runtime-runc")
    pods = kf.operator_pods(n) + kf.other_pods(n) + [gpu_workload(n)]
    n.finish(kf.serve(n, kf.api_docs(n, kf.node_object(n), pods), kf.healthy_metrics(n), args=kf.urls()))

    # runc is the default but the GPU Operator's pods and the GPU pod select nvidia by RuntimeClass (fine); the device
    # plugin hands out CDI devices (its own spec in /var/run/cdi) while containerd 1.7's enable_cdi is false.
    n = runtime_class_node("k8s-runtimeclass-cdi-off")
    n.containerd(version=2, default="runc", cdi=False)
    pods = kf.operator_pods(n) + kf.other_pods(n) + [gpu_workload(n, "nvidia")]
    for p in pods:
        if p["metadata"]["namespace"] == kf.OP:
            p["spec"]["runtimeClassName"] = "nvidia"
    spec = {"cdiVersion": "0.5.0", "kind": "k8s.device-plugin.nvidia.com/gpu",
            "devices": [{"name": g["uuid"], "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia%d" % g["index"]}]}}
                        for g in n.gpus],
            "containerEdits": {"env": ["NVIDIA_VISIBLE_DEVICES=void"],
                               "deviceNodes": [{"path": "/dev/nvidiactl"}, {"path": "/dev/nvidia-uvm"}]}}
    n.write("var/run/cdi/k8s.device-plugin.nvidia.com-gpu.json", json.dumps(spec) + "\n")
    n.finish(kf.serve(n, kf.api_docs(n, kf.node_object(n), pods), kf.healthy_metrics(n), args=kf.urls()))


def l4_node(name, driver=True):
    """A two-GPU L4 node with the driver loaded (or, driver=False, failing to load)."""
    n = Node(name)
    boot_noise(n)
    n.add_other_pci()
    n.add_gpu(L4, "3b", driver="nvidia" if driver else None)
    n.add_gpu(L4, "5e", driver="nvidia" if driver else None)
    n.secure_boot(False)
    n.process(1, "systemd")
    if driver:
        n.headers()
        n.driver_loaded()
        n.process(1203, "nvidia-persiste")
        n.nvml_doc()
    return n


def layer2_scenarios():
    # containerd 1.7, v2 config patched by `nvidia-ctk runtime configure --set-as-default`.
    n = l4_node("containerd-v2-patched")
    n.toolkit()
    n.containerd(version=2)
    n.finish()

    # containerd 2.x, v3 config; toolkit >= 1.18 wrote conf.d/99-nvidia.toml and the import; CDI on.
    n = l4_node("containerd-v3-dropin")
    n.toolkit(mode="auto")
    n.containerd(version=3, dropin=True, default="nvidia", cdi=True)
    n.cdi_spec()
    n.finish()

    # The toolkit is installed but containerd's config was never patched.
    n = l4_node("containerd-not-patched")
    n.toolkit()
    n.containerd(version=2, patched=False)
    n.finish()

    # The drop-in exists but the main file has no `imports`: containerd never reads it.
    n = l4_node("containerd-dropin-not-imported")
    n.toolkit()
    n.containerd(version=3, dropin=True, import_dropin=False)
    n.finish()

    # BinaryName points at the GPU Operator's toolkit dir, which is gone; the package installed /usr/bin.
    n = l4_node("containerd-binary-missing")
    n.toolkit()
    n.containerd(version=2, binary="/usr/local/nvidia/toolkit/nvidia-container-runtime")
    n.finish()

    # Patched after containerd started, and containerd was never restarted.
    n = l4_node("containerd-not-restarted")
    n.toolkit()
    n.containerd(version=2, btime=Node.BTIME_BEFORE)
    n.finish()

    # The driver was upgraded from 535.129.03; /etc/cdi/nvidia.yaml still names the old libraries.
    n = l4_node("cdi-stale-after-upgrade")
    n.toolkit(mode="cdi")
    n.containerd(version=2)
    n.cdi_spec(path="etc/cdi/nvidia.yaml", version="535.129.03", host_version=DRIVER)
    n.finish()

    # A Docker workstation: daemon.json has the nvidia runtime; containerd.io's config disables CRI.
    n = Node("docker-daemon-json")
    boot_noise(n)
    n.add_other_pci()
    n.add_gpu(RTX, "01")
    n.secure_boot(False)
    n.headers()
    n.driver_loaded()
    n.process(1, "systemd")
    n.process(990, "nvidia-persiste")
    n.toolkit()
    n.executable("usr/bin/containerd")
    n.executable("usr/bin/dockerd")
    n.write("etc/containerd/config.toml", '#   Copyright 2018-2022 Docker Inc.\n\ndisabled_plugins = ["cri"]\n\n'
            '#root = "/var/lib/containerd"\n#state = "/run/containerd"\n')
    n.write("etc/docker/daemon.json", json.dumps({"default-runtime": "nvidia", "runtimes": {
        "nvidia": {"args": [], "path": "nvidia-container-runtime"}}}, indent=4) + "\n")
    n.daemon(700, "containerd", ["/usr/bin/containerd"])
    n.daemon(745, "dockerd", ["/usr/bin/dockerd", "-H", "fd://", "--containerd=/run/containerd/containerd.sock"])
    n.nvml_doc()
    n.finish()

    # Layer 1 failed (module not loaded, headers missing): layer 2 checks that need the driver are blocked.
    n = l4_node("runtime-driver-not-loaded", driver=False)
    n.toolkit()
    n.containerd(version=2)
    n.cdi_spec()
    n.validations(".driver-ctr-ready")
    n.finish()

    # CRI-O 1.31 patched by `nvidia-ctk runtime configure --runtime=crio` (no --set-as-default): the drop-in
    # 99-nvidia.conf defines nvidia; crun stays the default, and without the cluster's answers gpunode cannot tell
    # whether GPU pods select nvidia by RuntimeClass (it passes, saying so).
    n = l4_node("crio-dropin-patched")
    n.toolkit()
    n.crio()
    n.finish()

    # CRI-O installed and running, the toolkit installed, but the drop-in was never written.
    n = l4_node("crio-not-patched")
    n.toolkit()
    n.crio(patched=False)
    n.finish()

    # containerd 1.6 (Debian's package) with a version 1 config: the nvidia runtime is of runtime_type
    # io.containerd.runtime.v1.linux, whose shim runs options.Runtime, which the toolkit set (config_v1.go).
    n = l4_node("containerd-v1-runtime-patched")
    n.toolkit()
    n.executable("usr/bin/containerd")
    n.executable("usr/bin/containerd-shim")
    n.executable("usr/sbin/runc")
    n.dpkg("containerd", "1.6.20~ds1-1+b1", ["/usr/bin/containerd", "/usr/bin/containerd-shim", "/usr/bin/ctr"])
    n.write("etc/containerd/config.toml",
            'root = "/var/lib/containerd"\nstate = "/run/containerd"\noom_score = 0\n\n[grpc]\n  address = "/run/containerd/containerd.sock"\n\n'
            '[plugins]\n  [plugins.cri]\n    sandbox_image = "registry.k8s.io/pause:3.6"\n    [plugins.cri.cni]\n'
            '      bin_dir = "/opt/cni/bin"\n      conf_dir = "/etc/cni/net.d"\n    [plugins.cri.containerd]\n'
            '      snapshotter = "overlayfs"\n      default_runtime_name = "nvidia"\n      [plugins.cri.containerd.runtimes]\n'
            '        [plugins.cri.containerd.runtimes.nvidia]\n          runtime_type = "io.containerd.runtime.v1.linux"\n'
            '          [plugins.cri.containerd.runtimes.nvidia.options]\n            Runtime = "/usr/bin/nvidia-container-runtime"\n'
            '        [plugins.cri.containerd.runtimes.runc]\n          runtime_type = "io.containerd.runtime.v1.linux"\n'
            '          [plugins.cri.containerd.runtimes.runc.options]\n            Runtime = "runc"\n')
    n.daemon(812, "containerd", ["/usr/bin/containerd"])
    n.finish()

    # The same files under containerd 1.7 and 2.0 (Docker's containerd.io package): the main v2 file has the
    # nvidia runtime, a later drop-in sets only a registry option of the CRI plugin. containerd 1.x replaces
    # the whole CRI table with the drop-in's and loses the nvidia runtime; containerd 2.x merges key by key.
    for name, version in (("containerd-1x-import-replaces", "1.7.25-1"), ("containerd-2x-import-merges", "2.0.5-1")):
        n = l4_node(name)
        n.toolkit()
        n.containerd(version=2)
        n.dpkg("containerd.io", version, ["/usr/bin/containerd", "/usr/bin/containerd-shim-runc-v2", "/usr/bin/ctr"])
        cfg = n.path("etc/containerd/config.toml")
        text = open(cfg).read().replace("version = 2\n", 'version = 2\nimports = ["/etc/containerd/conf.d/*.toml"]\n', 1)
        n.write("etc/containerd/config.toml", text)
        n.write("etc/containerd/conf.d/20-registry-mirror.toml",
                'version = 2\n\n[plugins."io.containerd.grpc.v1.cri".registry]\n  config_path = "/etc/containerd/certs.d"\n')
        n.finish()

    # Bad input: a TOML error in the drop-in; the check names file, line and column.
    n = l4_node("containerd-toml-error")
    n.toolkit()
    n.containerd(version=3, dropin=True)
    n.write("etc/containerd/conf.d/99-nvidia.toml", 'version = 3\n[plugins."io.containerd.cri.v1.runtime".containerd.runtimes.nvidia]\n'
            '  runtime_type = "io.containerd.runc.v2\n')
    n.finish()

    nvml_lookup_scenarios()


# /etc/ld.so.cache as `ldconfig -r ROOT` (Debian GLIBC 2.36) wrote it for a root whose /etc/ld.so.conf
# lists /opt/nvidia/lib: libnvidia-ml.so.1 -> /opt/nvidia/lib/libnvidia-ml.so.1, libcuda.so.1 in
# /usr/lib/x86_64-linux-gnu.
LDCONFIG_CACHE_OPT_NVIDIA = bytes.fromhex(
    "676c6962632d6c642e736f2e6361636865312e31020000004900000002000000ac000000000000000000000000000000030300007000000060000000000000000000000000000000030300009c000000820000000000000000000000000000002f6f70742f6e76696469612f6c69622f6c69626e76696469612d6d6c2e736f2e31002f7573722f6c69622f7838365f36342d6c696e75782d676e752f6c6962637564612e736f2e31000000007421a4ea010000000000000000000000c4000000430000006c64636f6e666967202844656269616e20474c49424320322e33362d392b64656231327531342920737461626c652072656c656173652076657273696f6e20322e3336")


def nvml_lookup_scenarios():
    """NVML found under --root, with no --nvml-library and no LD_LIBRARY_PATH: the agent's case without
    the nvidia runtime. tests/run-scenarios.sh copies the root and plants the fake NVML at each path
    listed in the scenario's nvml-in-root."""
    # The distribution's folder: Debian/Ubuntu packages and the .run installer.
    n = l4_node("nvml-in-root")
    n.finish()
    with open(os.path.join(n.dir, "nvml-in-root"), "w") as f:
        f.write("usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1\n")
    # The GPU Operator's driver container, mounted at /run/nvidia/driver: the library where its
    # ld.so.cache says (a folder not searched otherwise), through the versioned file's symlink.
    n = l4_node("nvml-operator-driver-root")
    n.write("run/nvidia/driver/etc/ld.so.cache", LDCONFIG_CACHE_OPT_NVIDIA, mode="wb")
    n.write("run/nvidia/driver/etc/ld.so.conf", "/opt/nvidia/lib\n")
    n.symlink("libnvidia-ml.so.%s" % DRIVER, "run/nvidia/driver/opt/nvidia/lib/libnvidia-ml.so.1")
    n.finish()
    with open(os.path.join(n.dir, "nvml-in-root"), "w") as f:
        f.write("run/nvidia/driver/opt/nvidia/lib/libnvidia-ml.so.%s\n" % DRIVER)


if __name__ == "__main__":
    sys.exit(main())
