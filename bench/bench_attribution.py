#!/usr/bin/python3
# bench_attribution.py: gpunode exporter (8 fake GPUs) with pod attribution off, on, and on against a busy kubelet: RSS, CPU per sample, scrape cost.
"""Usage: bench/bench_attribution.py [BUILD_DIR]   (default: build)

Not a test: prints figures and ratios (attribution on / off) from one run on this machine. The
kubelet is tests/kubelet/fake_kubelet.py (Debian's python3-grpcio) under a temp root. Needs wrk.
Loopback only; kills what it starts."""
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_exporter as be  # noqa: E402  (free_port, status, wait_up, run_wrk)

be.WRK = [w if w != "-d10s" else "-d5s" for w in be.WRK]
HERE = os.path.dirname(os.path.abspath(__file__))
KUBELET = os.path.join(HERE, "..", "tests", "kubelet", "fake_kubelet.py")
SOCK = "var/lib/kubelet/pod-resources/kubelet.sock"
N_GPUS = 8


def uuid(i):
    return "GPU-%08x-1111-2222-3333-%012x" % (i, i)


def cpu_seconds(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def samples(url):
    for line in urllib.request.urlopen(url).read().decode().splitlines():
        if line.startswith("gpunode_exporter_samples_total "):
            return float(line.split()[1])
    return 0


def measure(name, argv, env, url, window=10):
    p = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        be.wait_up(url)
        time.sleep(3)  # a few samples: the gRPC libraries are loaded, the connection made
        c0, s0 = cpu_seconds(p.pid), samples(url)
        time.sleep(window)
        c1, s1 = cpu_seconds(p.pid), samples(url)
        idle = be.status(p.pid)
        w = be.run_wrk(url, ["-H", "Accept-Encoding: gzip"])
        after = be.status(p.pid)
        page = urllib.request.urlopen(url).read().decode()
        return {"name": name, "rss_idle_kib": idle["VmRSS"], "hwm_kib": after["VmHWM"], "page_bytes": len(page),
                "pod_series": sum(1 for l in page.splitlines() if 'pod="' in l),
                "cpu_ms_per_sample": 1000 * (c1 - c0) / max(1, s1 - s0), **w}
    finally:
        p.terminate()
        p.wait(10)


def kubelet(root, mode, listfile):
    k = subprocess.Popen(["/usr/bin/python3", KUBELET, "--socket", os.path.join(root, SOCK), "--mode", mode, "--list", listfile,
                          "--pods", "5000", "--lifetime", "120"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if b"ready" not in k.stdout.readline():
        raise SystemExit("fake kubelet did not start")
    return k


def main():
    with tempfile.TemporaryDirectory() as tmp:
        desc = {"driver_version": "550.54.15", "gpus": [
            {"name": "NVIDIA H100 80GB HBM3", "uuid": uuid(i),
             "pci_bus_id": "00000000:%02X:00.0" % (0x10 + i), "temperature": 33, "power_mw": 71000, "energy_mj": 1,
             "utilization": {"gpu": 1, "memory": 1}, "clocks": {"sm": 1980, "mem": 2619}, "memory_temperature": 40,
             "memory": {"total": 85520809984, "used": 1 << 30, "free": 80 << 30, "reserved": 1 << 29}, "pcie_replay": 0,
             "remapped_rows": {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False},
             "encoder_utilization": 0, "decoder_utilization": 0} for i in range(N_GPUS)]}
        path = os.path.join(tmp, "gpus.json")
        json.dump(desc, open(path, "w"))
        # every GPU held by one container, GPU 0 time-sliced between three more
        pods = [{"name": "job-%d" % i, "namespace": "batch", "containers": [
            {"name": "main", "devices": [{"resourceName": "nvidia.com/gpu", "deviceIds": [uuid(i)]}]}]} for i in range(N_GPUS)]
        pods += [{"name": "share-%d" % i, "namespace": "dev", "containers": [
            {"name": "nb", "devices": [{"resourceName": "nvidia.com/gpu", "deviceIds": [uuid(0) + "::%d" % i]}]}]} for i in range(3)]
        listfile = os.path.join(tmp, "list.json")
        json.dump({"podResources": pods}, open(listfile, "w"))
        root = os.path.join(tmp, "root")
        os.makedirs(root)
        env = dict(os.environ, GPUNODE_FAKE_NVML=path)

        def run(name, *extra):
            port = be.free_port()
            return measure(name, [be.GPUNODE, "exporter", "--listen", "127.0.0.1:%d" % port, "--nvml-library", be.FAKE,
                                  "--interval", "1", "--check-interval", "0", "--root", root] + list(extra), env,
                           "http://127.0.0.1:%d/metrics" % port)
        rows = [run("off (--no-kubernetes)", "--no-kubernetes")]
        rows.append(run("on, no kubelet"))
        k = kubelet(root, "normal", listfile)
        try:
            rows.append(run("on, 11 pods"))
        finally:
            k.kill()
            k.wait()
            os.unlink(os.path.join(root, SOCK))
        k = kubelet(root, "many", listfile)
        try:
            rows.append(run("on, 5000 other pods"))
        finally:
            k.kill()
            k.wait()
    print("%-22s %9s %9s %8s %8s %10s %8s %8s %9s" % ("", "RSS KiB", "HWM KiB", "page B", "pod ser.", "CPU/sample", "p50 ms",
                                                     "p99 ms", "req/s gz"))
    for r in rows:
        print("%-22s %9d %9d %8d %8d %8.2fms %8.3f %8.3f %9.0f" % (r["name"], r["rss_idle_kib"], r["hwm_kib"], r["page_bytes"],
                                                                   r["pod_series"], r["cpu_ms_per_sample"], r["p50_ms"],
                                                                   r["p99_ms"], r["rps"]))
    off = rows[0]
    for r in rows[1:]:
        print("ratio %s / off: RSS %.2f, HWM %.2f, page %.2f, CPU per sample %.2f, p99 %.2f, req/s %.2f" % (
            r["name"], r["rss_idle_kib"] / off["rss_idle_kib"], r["hwm_kib"] / off["hwm_kib"], r["page_bytes"] / off["page_bytes"],
            r["cpu_ms_per_sample"] / max(off["cpu_ms_per_sample"], 1e-6), r["p99_ms"] / off["p99_ms"], r["rps"] / off["rps"]))


if __name__ == "__main__":
    main()
