#!/usr/bin/python3
# bench_exporter.py: gpunode exporter (8 fake GPUs) vs Debian's prometheus-node-exporter: RSS, scrape latency, scrapes/s.
"""Usage: bench/bench_exporter.py [BUILD_DIR]   (default: build)

Not a test: prints figures and ratios from one run on this machine. Needs wrk and
prometheus-node-exporter (Debian packages; $BENCH_WRK and $BENCH_NODE_EXPORTER name other copies). Loopback only; kills what it starts."""
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
GPUNODE = os.path.join(BUILD, "gpunode")
FAKE = os.path.join(BUILD, "tests", "libnvidia-ml.so.1")
WRK = [os.environ.get("BENCH_WRK", "wrk"), "--latency", "-c64", "-t2", "-d10s"]
NODE_EXPORTER = os.environ.get("BENCH_NODE_EXPORTER", "/usr/bin/prometheus-node-exporter")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status(pid):
    out = {}
    for line in open("/proc/%d/status" % pid):
        k, _, v = line.partition(":")
        if k in ("VmRSS", "VmHWM"):
            out[k] = int(v.split()[0])  # KiB
    return out


def wait_up(url):
    for _ in range(100):
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return
        except Exception:
            time.sleep(0.05)
    raise SystemExit("not up: " + url)


def to_ms(v, unit):
    return float(v) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


def run_wrk(url, extra=()):
    out = subprocess.run(WRK + list(extra) + [url], capture_output=True, text=True, timeout=60).stdout
    lat = {m.group(1): to_ms(m.group(2), m.group(3)) for m in re.finditer(r"^\s+(50|99)%\s+([\d.]+)(us|ms|s)", out, re.M)}
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    if bad:
        print("warning: %s answered %s non-2xx responses" % (url, bad.group(1)))
    return {"p50_ms": lat.get("50"), "p99_ms": lat.get("99"), "rps": rps}


def measure(name, argv, env, url, gzip_too=False):
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_up(url)
        time.sleep(2)  # a few samples
        idle = status(p.pid)
        w = run_wrk(url)
        after = status(p.pid)
        size = len(urllib.request.urlopen(url).read())
        rows = [{"name": name, "rss_idle_kib": idle["VmRSS"], "rss_after_kib": after["VmRSS"], "hwm_kib": after["VmHWM"],
                 "page_bytes": size, **w}]
        if gzip_too:  # as Prometheus scrapes: Accept-Encoding: gzip
            wz = run_wrk(url, ["-H", "Accept-Encoding: gzip"])
            z = status(p.pid)
            req = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
            rows.append({"name": name + " gz", "rss_idle_kib": idle["VmRSS"], "rss_after_kib": z["VmRSS"], "hwm_kib": z["VmHWM"],
                         "page_bytes": len(urllib.request.urlopen(req).read()), **wz})
        return rows
    finally:
        p.terminate()
        p.wait(10)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        desc = {"driver_version": "550.54.15", "gpus": [
            {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-%08x-1111-2222-3333-%012x" % (i, i),
             "pci_bus_id": "00000000:%02X:00.0" % (0x10 + i), "temperature": 33, "power_mw": 71000, "energy_mj": 1,
             "utilization": {"gpu": 1, "memory": 1}, "clocks": {"sm": 1980, "mem": 2619}, "memory_temperature": 40,
             "memory": {"total": 85520809984, "used": 1 << 30, "free": 80 << 30, "reserved": 1 << 29}, "pcie_replay": 0,
             "remapped_rows": {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False},
             "encoder_utilization": 0, "decoder_utilization": 0} for i in range(8)]}
        path = os.path.join(tmp, "gpus.json")
        json.dump(desc, open(path, "w"))
        pg, pn = free_port(), free_port()
        env = dict(os.environ, GPUNODE_FAKE_NVML=path)
        g = measure("gpunode exporter", [GPUNODE, "exporter", "--listen", "127.0.0.1:%d" % pg, "--nvml-library", FAKE,
                                         "--interval", "1", "--check-interval", "60"], env,
                    "http://127.0.0.1:%d/metrics" % pg, gzip_too=True)
        n = measure("node_exporter", [NODE_EXPORTER, "--web.listen-address=127.0.0.1:%d" % pn,
                                    "--web.max-requests=0"],
                    dict(os.environ), "http://127.0.0.1:%d/metrics" % pn)[0]
        g, gz = g
    print("%-18s %10s %10s %10s %10s %10s %10s %10s" % ("", "RSS KiB", "RSS@load", "HWM KiB", "page B", "p50 ms", "p99 ms", "req/s"))
    for r in (g, gz, n):
        print("%-18s %10d %10d %10d %10d %10.3f %10.3f %10.0f" % (r["name"], r["rss_idle_kib"], r["rss_after_kib"], r["hwm_kib"],
                                                               r["page_bytes"], r["p50_ms"], r["p99_ms"], r["rps"]))
    print("ratios gpunode/node_exporter: RSS %.2f, HWM %.2f, p50 %.3f, p99 %.3f, req/s %.1fx" % (
        g["rss_after_kib"] / n["rss_after_kib"], g["hwm_kib"] / n["hwm_kib"], g["p50_ms"] / n["p50_ms"],
        g["p99_ms"] / n["p99_ms"], g["rps"] / n["rps"]))
    print("goals: RSS < 4096 KiB: %s (peak %d KiB); p99 < 1 ms: %s (plain %.3f, gzip %.3f); more req/s than node_exporter: %s" % (
        max(g["hwm_kib"], gz["hwm_kib"]) < 4096, max(g["hwm_kib"], gz["hwm_kib"]), max(g["p99_ms"], gz["p99_ms"]) < 1,
        g["p99_ms"], gz["p99_ms"], g["rps"] > n["rps"]))


if __name__ == "__main__":
    main()
