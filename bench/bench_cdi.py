#!/usr/bin/python3
"""bench_cdi.py: wall time and peak RSS of `gpunode check` on a node whose /etc/cdi holds one large
CDI spec (YAML and JSON): 40,000 device nodes (one per device, as nvidia-ctk writes them), a spec
just under the 4 MiB bound, one of 8 MiB (refused by name), and a spec whose `annotations` mapping
has 50,000 keys (libfyaml's duplicate-key check alone used to take minutes on it). The node is tests/scenarios/cdi-stale-after-upgrade (containerd,
the toolkit, two fake GPUs) with its spec replaced. Peak RSS counts the YAML parser's child (the
launcher's wait4 reports the largest of the process and its children). A benchmark, not a test: it
prints figures, and what the report says of the spec (parsed, or refused with the reason).

usage: bench/bench_cdi.py [BUILD_DIR] [RUNS]
"""
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
top = os.path.dirname(here)
build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(top, "build")
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
scenario = os.path.join(top, "tests", "scenarios", "cdi-stale-after-upgrade")
HEAD = {"cdiVersion": "0.5.0", "kind": "nvidia.com/gpu"}


def device_yaml(i):
    """Returns one device of the YAML spec, as nvidia-ctk writes it."""
    return "- name: '%d'\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia%d\n" % (i, i)


def device_json(i):
    """Returns one device of the JSON spec."""
    return json.dumps({"name": str(i), "containerEdits": {"deviceNodes": [{"path": "/dev/nvidia%d" % i}]}})


def make_spec(fmt, n=None, max_bytes=None, keys=0):
    """Returns (text, devices) of a spec with n devices, or with as many as fit in max_bytes, and an
    `annotations` mapping of that many keys."""
    one = device_yaml if fmt == "yaml" else device_json
    if fmt == "yaml":
        notes = "annotations:\n" + "".join("  k%d: v\n" % i for i in range(keys)) if keys else ""
        head, sep, tail = "cdiVersion: 0.5.0\nkind: nvidia.com/gpu\n" + notes + "devices:\n", "", ""
    else:
        notes = ', "annotations": ' + json.dumps({"k%d" % i: "v" for i in range(keys)}) if keys else ""
        head, sep, tail = json.dumps(HEAD)[:-1] + notes + ', "devices": [', ", ", "]}"
    parts, size, i = [], len(head) + len(tail), 0
    while (n is not None and i < n) or (max_bytes is not None and size + len(one(i)) + len(sep) <= max_bytes):
        parts.append(one(i))
        size += len(parts[-1]) + (len(sep) if i else 0)
        i += 1
    return head + sep.join(parts) + tail, i


def run(argv, env):
    """Returns (wall seconds, peak RSS KiB) of one run of argv through the peakrss launcher."""
    out = subprocess.run([os.path.join(build, "peakrss")] + argv, env=env, stdout=subprocess.PIPE,
                         check=True, text=True).stdout.split()
    return float(out[0]) / 1000, int(out[1])


def main():
    tmp = tempfile.mkdtemp(prefix="gpunode-bench-cdi-")
    try:
        root = os.path.join(tmp, "root")
        shutil.copytree(os.path.join(scenario, "root"), root, symlinks=True)
        os.remove(os.path.join(root, "etc", "cdi", "nvidia.yaml"))
        env = dict(os.environ, GPUNODE_FAKE_NVML=os.path.join(scenario, "nvml.json"), NO_COLOR="1")
        with open(os.path.join(scenario, "args")) as f:
            extra = f.read().split()
        argv = [os.path.join(build, "gpunode"), "check", "--root", root, "--nvml-library",
                os.path.join(build, "tests", "libnvidia-ml.so.1"), "--output", "json"] + extra
        cases = [("40k device nodes", dict(n=40000)), ("4 MiB spec", dict(max_bytes=(4 << 20) - 1)),
                 ("8 MiB spec", dict(max_bytes=(8 << 20) - 1)), ("50k-key mapping", dict(n=8, keys=50000))]
        print("gpunode check with one large CDI spec, %d runs each (median time, largest peak RSS)" % runs)
        for label, kw in cases:
            for fmt in ("yaml", "json"):
                text, ndev = make_spec(fmt, **kw)
                path = os.path.join(root, "etc", "cdi", "nvidia." + fmt)
                with open(path, "w") as f:
                    f.write(text)
                samples = [run(argv, env) for _ in range(runs)]
                wall = statistics.median(s[0] for s in samples)
                rss = max(s[1] for s in samples)
                rep = subprocess.run(argv, env=env, stdout=subprocess.PIPE, text=True).stdout
                said = "?"
                for c in json.loads(rep)["checks"]:
                    if c["id"] == "container-toolkit.cdi-specs":
                        said = next((e for e in c["evidence"] if "/etc/cdi/nvidia." in e), c["summary"])
                print("%-17s %-4s %7.2f MiB %6d devices  %8.3f s  %8.1f MiB peak RSS\n    report: %s"
                      % (label, fmt, len(text) / 1048576, ndev, wall, rss / 1024, said[:160]))
                os.remove(path)
    finally:
        shutil.rmtree(tmp)


main()
