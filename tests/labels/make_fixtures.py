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


def gpu(name, bus, dev_id, mem_mib, cc, mig=None, minor=0, fabric=None):
    g = {"name": name, "uuid": "GPU-%08x-1111-2222-3333-444455556666" % (0x10000000 + minor), "minor_number": minor,
         "pci_bus_id": "00000000:%s:00.0" % bus.upper(), "pci_device_id": "0x%04X10DE" % dev_id,
         "memory": {"total": mem_mib * 1024 * 1024, "used": 0, "free": mem_mib * 1024 * 1024, "reserved": 0},
         "compute_capability": cc, "mig_mode": mig, "persistence_mode": 1, "fabric": fabric}
    return g


def node(name, machine, gpus, cls, driver="550.54.15", cuda=12040):
    d = os.path.join(HERE, name)
    if os.path.exists(d):
        shutil.rmtree(d)
    root = os.path.join(d, "root")
    for g in gpus:
        addr = "0000:" + g["pci_bus_id"].split(":", 1)[1].lower()
        p = os.path.join(root, "sys/bus/pci/devices", addr)
        os.makedirs(p)
        for f, v in (("vendor", "0x10de"), ("device", "0x%s" % g["pci_device_id"][2:6].lower()), ("class", "0x%06x" % cls),
                     ("subsystem_vendor", "0x10de"), ("subsystem_device", "0x0000"), ("numa_node", "0")):
            with open(os.path.join(p, f), "w") as fh:
                fh.write(v + "\n")
    os.makedirs(os.path.join(root, "sys/class/dmi/id"))
    if machine is not None:
        with open(os.path.join(root, "sys/class/dmi/id/product_name"), "w") as fh:
            fh.write(machine + "\n")
    with open(os.path.join(d, "nvml.json"), "w") as fh:
        json.dump({"driver_version": driver, "nvml_version": "12." + driver, "cuda_driver_version": cuda, "gpus": gpus},
                  fh, indent=2)
        fh.write("\n")


FABRIC = {"state": 3, "status": 0, "cluster_uuid": "6b1bd5c2-7f45-4b2e-9b66-0c1a3e2f4d5e", "clique_id": 32766,
          "health_mask": 0}
node("h100-hgx", "PowerEdge XE9680",
     [gpu("NVIDIA H100 80GB HBM3", b, 0x2330, 81559, [9, 0], {"current": 0, "pending": 0}, i, FABRIC)
      for i, b in enumerate(["18", "2a", "3a", "5d", "9a", "ab", "ba", "db"])], 0x030200)
node("a100-mig", "DGX A100",
     [gpu("NVIDIA A100-SXM4-80GB", b, 0x20B2, 81920, [8, 0], {"current": 1, "pending": 1}, i)
      for i, b in enumerate(["07", "0f"])], 0x030200, driver="535.161.08", cuda=12020)
node("t4", "Google Compute Engine",
     [gpu("Tesla T4", "04", 0x1EB8, 15360, [7, 5], None, 0)], 0x030200, driver="470.82.01", cuda=11040)
node("l40s", "ThinkSystem SR675 V3",
     [gpu("NVIDIA L40S", b, 0x26B9, 46068, [8, 9], None, i) for i, b in enumerate(["41", "c1"])], 0x030000,
     driver="550.127.05", cuda=12040)
node("odd-name", "  Super Server (X13)/Rev 1.0\tÜber  ",
     [gpu("NVIDIA  RTX (6000) Ada/Gen™ Übung   ", "65", 0x26B1, 49140, [8, 9], None, 0)], 0x038000,
     driver="560.35", cuda=12060)
