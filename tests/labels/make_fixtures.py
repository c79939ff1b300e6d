#!/usr/bin/python3
"""make_fixtures.py: writes the label test nodes under tests/labels/<name>/: a small host root (PCI
functions with their class, the DMI product name) and nvml.json for the fake NVML. The expected
labels (expected.labels, GFD's names and formats, --no-timestamp) are written by hand and checked
by run-labels-tests.sh; rerun this script after changing a node:

    /usr/bin/python3 tests/labels/make_fixtures.py
"""
import json
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))


# MIG profiles: (GPU instance profile index, compute instance profile index, multiprocessors, copy
# engines, decoders, encoders, JPEG, OFA, GPU instance slices, compute instance slices, memory MiB), as
# `nvidia-smi mig -lgip` lists them (NVIDIA's MIG user guide): A100-SXM4-80GB and H100 80GB HBM3.
A100_80GB = {
    "1g.10gb": (0, 0, 14, 1, 0, 0, 0, 0, 1, 1, 9728), "1g.10gb+me": (7, 0, 14, 1, 1, 0, 1, 1, 1, 1, 9728),
    "1g.20gb": (9, 0, 14, 1, 1, 0, 0, 0, 1, 1, 19968), "2g.20gb": (1, 1, 28, 2, 1, 0, 0, 0, 2, 2, 19968),
    "3g.40gb": (2, 2, 42, 3, 2, 0, 0, 0, 3, 3, 40192), "4g.40gb": (3, 3, 56, 4, 2, 0, 0, 0, 4, 4, 40192),
    "7g.80gb": (4, 4, 98, 7, 5, 0, 1, 1, 7, 7, 81152)}
H100_80GB = {
    "1g.10gb": (0, 0, 16, 1, 1, 0, 1, 0, 1, 1, 9984), "1g.10gb+me": (7, 0, 16, 1, 1, 0, 1, 1, 1, 1, 9984),
    "1g.20gb": (9, 0, 26, 1, 1, 0, 1, 0, 1, 1, 20096), "2g.20gb": (1, 1, 32, 2, 2, 0, 2, 0, 2, 2, 20096),
    "3g.40gb": (2, 2, 60, 3, 3, 0, 3, 0, 3, 3, 40448), "4g.40gb": (3, 3, 64, 4, 4, 0, 4, 0, 4, 4, 40448),
    "7g.80gb": (4, 4, 132, 7, 7, 0, 7, 1, 7, 7, 81152)}


def migs(table, minor, layout):
    """MIG devices for the fake: layout is [(profile, GPU instance id), ...], one compute instance each."""
    out = []
    for i, (prof, gi) in enumerate(layout):
        gp, cp, sm, ce, dec, enc, jpg, ofa, gs, cs, mb = table[prof]
        out.append({"uuid": "MIG-%08x-%04x-5555-6666-777788889999" % (0x20000000 + minor, i), "gi": gi, "ci": 0,
                    "gi_profile": gp, "ci_profile": cp,
                    "attributes": {"multiprocessor_count": sm, "shared_copy_engine_count": ce,
                                   "shared_decoder_count": dec, "shared_encoder_count": enc, "shared_jpeg_count": jpg,
                                   "shared_ofa_count": ofa, "gpu_instance_slice_count": gs,
                                   "compute_instance_slice_count": cs, "memory_size_mb": mb},
                    "memory": {"total": mb * 1024 * 1024, "used": 13 * 1024 * 1024, "free": (mb - 13) * 1024 * 1024}})
    return out


def gpu(name, bus, dev_id, mem_mib, cc, mig=None, minor=0, fabric=None, mig_devices=None):
    g = {"name": name, "uuid": "GPU-%08x-1111-2222-3333-444455556666" % (0x10000000 + minor), "minor_number": minor,
         "pci_bus_id": "00000000:%s:00.0" % bus.upper(), "pci_device_id": "0x%04X10DE" % dev_id,
         "memory": {"total": mem_mib * 1024 * 1024, "used": 0, "free": mem_mib * 1024 * 1024, "reserved": 0},
         "compute_capability": cc, "mig_mode": mig, "persistence_mode": 1, "fabric": fabric}
    if mig_devices:
        g["mig_devices"] = mig_devices
    return g


def bare_metal_config(dev_id):
    """A GPU's 256-byte PCI config space on bare metal (read as root): vendor/device, status with a capability
    list, the capabilities power management (0x60), MSI (0x68), PCI Express (0x78) and no vendor-specific one."""
    c = bytearray(256)
    c[0:4] = bytes([0xde, 0x10, dev_id & 0xff, dev_id >> 8])
    c[4], c[6], c[0x0b], c[0x34] = 0x07, 0x10, 0x03, 0x60
    c[0x60:0x62] = bytes([0x01, 0x68])
    c[0x68:0x6a] = bytes([0x05, 0x78])
    c[0x78:0x7a] = bytes([0x10, 0x00])
    return bytes(c)


def vgpu_guest_config(dev_id, version, branch):
    """A vGPU guest's config space: as bare metal, plus a vendor-specific capability (0x09) at 0xc8 with the
    "VF" signature and record 0: the host driver's version and branch, 10 bytes each, NUL padded."""
    c = bytearray(bare_metal_config(dev_id))
    c[0x79] = 0xc8
    cap = bytes([0x09, 0x00, 0x1b, ord("V"), ord("F"), 0x00, 0x16]) + version.encode().ljust(10, b"\0") + branch.encode().ljust(10, b"\0")
    c[0xc8:0xc8 + len(cap)] = cap
    return bytes(c)


def node(name, machine, gpus, cls, driver="550.54.15", cuda=12040, args=None, config=bare_metal_config):
    d = os.path.join(HERE, name)
    root = os.path.join(d, "root")
    if os.path.exists(root):  # expected.labels stays
        shutil.rmtree(root)
    for g in gpus:
        addr = "0000:" + g["pci_bus_id"].split(":", 1)[1].lower()
        p = os.path.join(root, "sys/bus/pci/devices", addr)
        os.makedirs(p)
        for f, v in (("vendor", "0x10de"), ("device", "0x%s" % g["pci_device_id"][2:6].lower()), ("class", "0x%06x" % cls),
                     ("subsystem_vendor", "0x10de"), ("subsystem_device", "0x0000"), ("numa_node", "0")):
            with open(os.path.join(p, f), "w") as fh:
                fh.write(v + "\n")
        with open(os.path.join(p, "config"), "wb") as fh:
            fh.write(config(int(g["pci_device_id"][2:6], 16)))
    os.makedirs(os.path.join(root, "sys/class/dmi/id"))
    if machine is not None:
        with open(os.path.join(root, "sys/class/dmi/id/product_name"), "w") as fh:
            fh.write(machine + "\n")
    if args:
        with open(os.path.join(d, "args"), "w") as fh:
            fh.write(args + "\n")
    with open(os.path.join(d, "nvml.json"), "w") as fh:
        json.dump({"driver_version": driver, "nvml_version": "12." + driver, "cuda_driver_version": cuda, "gpus": gpus},
                  fh, indent=2)
        fh.write("\n")


FABRIC = {"state": 3, "status": 0, "cluster_uuid": "6b1bd5c2-7f45-4b2e-9b66-0c1a3e2f4d5e", "clique_id": 32766,
          "health_mask": 0}
node("h100-hgx", "PowerEdge XE9680",
     [gpu("NVIDIA H100 80GB HBM3", b, 0x2330, 81559, [9, 0], {"current": 0, "pending": 0}, i, FABRIC)
      for i, b in enumerate(["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"])], 0x030200)
# A100 with MIG: seven 1g.10gb on each GPU (labelled with strategies none and single), and a mixed
# layout; an H100 with a mixed layout (1g.10gb+me: GFD names it mig-1g.10gb.me).
ALL_1G = [("1g.10gb", gi) for gi in range(7, 14)]
for name, args in (("a100-mig", None), ("a100-mig-single", "--mig-strategy single")):
    node(name, "DGX A100",
         [gpu("NVIDIA A100-SXM4-80GB", b, 0x20B2, 81920, [8, 0], {"current": 1, "pending": 1}, i,
              mig_devices=migs(A100_80GB, i, ALL_1G))
          for i, b in enumerate(["07", "0f"])], 0x030200, driver="535.161.08", cuda=12020, args=args)
A100_MIXED = [[("3g.40gb", 2), ("2g.20gb", 3), ("1g.10gb", 9), ("1g.10gb", 10)], [("4g.40gb", 1), ("3g.40gb", 2)]]
node("a100-mig-mixed", "DGX A100",
     [gpu("NVIDIA A100-SXM4-80GB", b, 0x20B2, 81920, [8, 0], {"current": 1, "pending": 1}, i,
          mig_devices=migs(A100_80GB, i, A100_MIXED[i]))
      for i, b in enumerate(["07", "0f"])], 0x030200, driver="535.161.08", cuda=12020, args="--mig-strategy mixed")
H100_MIXED = [[("1g.20gb", 3), ("1g.20gb", 4), ("2g.20gb", 5), ("1g.10gb+me", 9), ("1g.10gb", 10)], [("7g.80gb", 0)]]
node("h100-mig-mixed", "PowerEdge XE9680",
     [gpu("NVIDIA H100 80GB HBM3", b, 0x2330, 81559, [9, 0], {"current": 1, "pending": 1}, i,
          mig_devices=migs(H100_80GB, i, H100_MIXED[i]))
      for i, b in enumerate(["18", "2a"])], 0x030200, driver="550.90.07", cuda=12040, args="--mig-strategy mixed")
node("t4", "Google Compute Engine",
     [gpu("Tesla T4", "04", 0x1EB8, 15360, [7, 5], None, 0)], 0x030200, driver="470.82.01", cuda=11040)
node("l40s", "ThinkSystem SR675 V3",
     [gpu("NVIDIA L40S", b, 0x26B9, 46068, [8, 9], None, i) for i, b in enumerate(["41", "c1"])], 0x030000,
     driver="550.127.05", cuda=12040)
node("odd-name", "  Super Server (X13)/Rev 1.0\tÜber  ",
     [gpu("NVIDIA  RTX (6000) Ada/Gen™ Übung   ", "65", 0x26B1, 49140, [8, 9], None, 0)], 0x038000,
     driver="560.35", cuda=12060)
# An HGX H100 without multi-node NVLink: the fabric is complete but its cluster UUID is all zero, which GFD
# (go-nvlib IsFabricAttached) does not count as fabric-attached: no nvidia.com/gpu.clique.
NO_MNNVL = {"state": 3, "status": 0, "cluster_uuid": "00000000-0000-0000-0000-000000000000", "clique_id": 0,
            "health_mask": 0}
node("h100-hgx-no-mnnvl", "PowerEdge XE9680",
     [gpu("NVIDIA H100 80GB HBM3", b, 0x2330, 81559, [9, 0], {"current": 0, "pending": 0}, i, NO_MNNVL)
      for i, b in enumerate(["18", "2a"])], 0x030200)
# A vGPU guest (a T4-16Q profile): the vendor-specific capability names the host driver 535.129.03, branch r535_00.
node("t4-vgpu-guest", "OpenStack Nova",
     [gpu("GRID T4-16Q", "05", 0x1EB8, 16384, [7, 5], None, 0)], 0x030200, driver="535.129.03", cuda=12020,
     config=lambda dev: vgpu_guest_config(dev, "535.129.03", "r535_00"))
