#!/usr/bin/python3
"""bench_check.py: median wall time and peak memory of `gpunode check` on the healthy 8-GPU HGX
fixture (fake NVML), beside peers run in the same go: `lspci -nn -k` (reads the same PCI tree)
and `dmesg` (reads the same kernel log). A benchmark, not a test: it prints figures and ratios.

usage: bench/bench_check.py [BUILD_DIR] [RUNS]
"""
import os
import statistics
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
top = os.path.dirname(here)
build = sys.argv[1] if len(sys.argv) > 1 else os.path.join(top, "build")
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 200
scenario = os.path.join(top, "tests", "scenarios", "hgx-h100-healthy")


def run(argv, env=None):
    """Returns (wall seconds, peak RSS KiB) of one run of argv, measured by the small peakrss
    launcher (a fork from this Python process would count Python's pages as the child's)."""
    out = subprocess.run([os.path.join(build, "peakrss")] + argv, env=env or os.environ,
                         stdout=subprocess.PIPE, check=True, text=True).stdout.split()
    return float(out[0]) / 1000, int(out[1])


def measure(name, argv, env=None):
    for _ in range(5):
        run(argv, env)
    samples = [run(argv, env) for _ in range(runs)]
    wall = statistics.median(s[0] for s in samples) * 1000
    rss = max(s[1] for s in samples)
    print("%-34s median %7.2f ms   peak RSS %6.0f KiB" % (name, wall, rss))
    return wall, rss


env = dict(os.environ, GPUNODE_FAKE_NVML=os.path.join(scenario, "nvml.json"), NO_COLOR="1")
gpunode = [os.path.join(build, "gpunode"), "check", "--root", os.path.join(scenario, "root"),
           "--nvml-library", os.path.join(build, "tests", "libnvidia-ml.so.1"), "--output", "json"]
print("gpunode check on %s, %d runs each" % (scenario, runs))
g = measure("gpunode check (8 GPUs, fake NVML)", gpunode, env)
peers = [("lspci -nn -k", ["lspci", "-nn", "-k"]), ("dmesg", ["dmesg"]), ("true (process start floor)", ["true"])]
for name, argv in peers:
    try:
        p = measure(name, argv)
        print("%-34s gpunode takes %.2fx its time and %.2fx its memory" % ("", g[0] / p[0], g[1] / p[1]))
    except FileNotFoundError:
        print("%-34s not installed" % name)
print("goal: under 10 ms and under 4 MiB (4096 KiB): %s" % ("met" if g[0] < 10 and g[1] < 4096 else "NOT met"))
