#!/usr/bin/python3
# bench_device_plugin.py: gpunode device-plugin (8 fake GPUs) vs Debian's prometheus-node-exporter: RSS and CPU idle and under load; GPU lost -> Unhealthy latency.
"""Usage: bench/bench_device_plugin.py [BUILD_DIR]   (default: build)

Not a test: prints figures from one run on this machine (about 35 s). The plugin runs against
tests/device-plugin/dp_kubelet.py's kubelet (python3-grpcio; Debian's /usr/bin/python3) and the
fake NVML; prometheus-node-exporter ($BENCH_NODE_EXPORTER names another copy) is a Go daemon of
the same kind run in the same go: its idle figures, and under a scrape loop as its load. Loopback
and temporary folders only; kills what it starts."""
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "device-plugin"))
import dp_kubelet as K  # noqa: E402

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
GPUNODE = os.path.join(BUILD, "gpunode")
FAKE = os.path.join(BUILD, "tests", "libnvidia-ml.so.1")
NODE_EXPORTER = os.environ.get("BENCH_NODE_EXPORTER", "/usr/bin/prometheus-node-exporter")
TICK = os.sysconf("SC_CLK_TCK")
IDLE_S, LOAD_S = 10, 8


def rss_kib(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_s(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / TICK


def uuid(i):
    return "GPU-%08x-1111-2222-3333-%012x" % (i, i)


def describe(lost=()):
    return {"driver_version": "550.54.15", "gpus": [
        {"name": "NVIDIA H100 80GB HBM3", "uuid": uuid(i), "pci_bus_id": "00000000:%02X:00.0" % (0x18 + i),
         "memory": {"total": 85520809984, "used": 0, "free": 85520809984, "reserved": 0},
         "mig_mode": {"current": 0, "pending": 0}, "lost": i in lost,
         "remapped_rows": {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False},
         "recovery_action": 0, "xid_events": []} for i in range(8)]}


def write(path, desc):
    json.dump(desc, open(path + ".tmp", "w"))
    os.rename(path + ".tmp", path)


def window(pid, seconds, work=None):
    """Measures pid over seconds, running work() in a loop meanwhile. Returns (CPU %, peak RSS KiB, work() calls per second)."""
    c0, t0, n, peak = cpu_s(pid), time.monotonic(), 0, rss_kib(pid)
    while time.monotonic() - t0 < seconds:
        if work:
            work()
            n += 1
            if n % 50 == 0:
                peak = max(peak, rss_kib(pid))
        else:
            time.sleep(0.25)
            peak = max(peak, rss_kib(pid))
    dt = time.monotonic() - t0
    return 100.0 * (cpu_s(pid) - c0) / dt, max(peak, rss_kib(pid)), n / dt


def main():
    tmp = tempfile.mkdtemp(prefix="bench-dp.")
    root = tmp + "/root"
    folder = root + "/var/lib/kubelet/device-plugins"
    os.makedirs(folder)
    nv = tmp + "/nvml.json"
    write(nv, describe())
    kubelet = K.FakeKubelet(folder)
    procs = []
    try:
        p = subprocess.Popen([GPUNODE, "device-plugin", "--root", root, "--nvml-library", FAKE],
                             env=dict(os.environ, GPUNODE_FAKE_NVML=nv, GPUNODE_FAKE_NVML_RELOAD="1"),
                             stdout=subprocess.DEVNULL, stderr=open(tmp + "/plugin.log", "w"))
        procs.append(p)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        n = subprocess.Popen([NODE_EXPORTER, "--web.listen-address=127.0.0.1:%d" % port], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        procs.append(n)
        if not kubelet.wait(lambda: kubelet.last_list("nvidia.com/gpu"), 10):
            raise SystemExit("the plugin did not register: " + open(tmp + "/plugin.log").read())
        url = "http://127.0.0.1:%d/metrics" % port
        for _ in range(100):
            try:
                urllib.request.urlopen(url, timeout=1).read()
                break
            except OSError:
                time.sleep(0.05)
        time.sleep(1)
        # idle: both processes over the same window
        c_ne, r_ne = cpu_s(n.pid), rss_kib(n.pid)
        dp_idle = window(p.pid, IDLE_S)
        ne_idle = (100.0 * (cpu_s(n.pid) - c_ne) / IDLE_S, max(r_ne, rss_kib(n.pid)), 0)
        # load: an Allocate burst on the plugin, a scrape loop on node_exporter
        c = K.PluginClient(folder + "/gpunode-nvidia-gpu.sock")
        ids = [uuid(i) for i in range(8)]
        dp_load = window(p.pid, LOAD_S, lambda: c.allocate(ids[:2], ids[2:4]))
        ne_load = window(n.pid, LOAD_S, lambda: urllib.request.urlopen(url, timeout=5).read())
        # GPU lost -> Unhealthy on the open ListAndWatch stream
        lat = []
        for rep in range(10):
            time.sleep(random.uniform(0, 0.3))  # at any point of the health thread's wait
            write(nv, describe(lost=(3,)))
            t0 = time.monotonic()
            kubelet.wait(lambda: {d.ID: d.health for d in kubelet.last_list("nvidia.com/gpu").devices}.get(uuid(3)) == "Unhealthy", 5)
            lat.append((time.monotonic() - t0) * 1000)
            write(nv, describe())
            kubelet.wait(lambda: {d.ID: d.health for d in kubelet.last_list("nvidia.com/gpu").devices}.get(uuid(3)) == "Healthy", 5)
        c.close()
        lat.sort()
        print("%-26s %10s %10s %12s" % ("", "RSS KiB", "CPU %", "calls/s"))
        print("%-26s %10d %10.2f %12s" % ("gpunode device-plugin idle", dp_idle[1], dp_idle[0], "-"))
        print("%-26s %10d %10.2f %12s" % ("node_exporter idle", ne_idle[1], ne_idle[0], "-"))
        print("%-26s %10d %10.2f %12.0f" % ("gpunode Allocate burst", dp_load[1], dp_load[0], dp_load[2]))
        print("%-26s %10d %10.2f %12.0f" % ("node_exporter scrapes", ne_load[1], ne_load[0], ne_load[2]))
        print("ratios gpunode/node_exporter: RSS idle %.2f, under load %.2f" % (dp_idle[1] / ne_idle[1], dp_load[1] / ne_load[1]))
        print("CPU per call: gpunode Allocate %.1f us, node_exporter scrape %.1f us" % (
            dp_load[0] / 100 / dp_load[2] * 1e6, ne_load[0] / 100 / ne_load[2] * 1e6))
        print("GPU lost -> Unhealthy on the stream (health interval 250 ms), 10 runs: median %.0f ms, max %.0f ms" % (
            lat[len(lat) // 2], lat[-1]))
    finally:
        kubelet.stop()
        for q in procs:
            q.terminate()
            try:
                q.wait(5)
            except subprocess.TimeoutExpired:
                q.kill()


if __name__ == "__main__":
    main()
