#!/bin/bash
# gpu-machine.sh: run on a machine with a real NVIDIA GPU, in one go: gpunode against the real
# driver and NVML, every value cross-checked with nvidia-smi, timings side by side, and a snapshot
# of the node (gpunode collect) that becomes a test fixture in tests/snapshots/.
# usage: gpu-machine.sh [GPUNODE]   (default: .device/gpunode from scripts/device-bundle.sh,
#        else build/gpunode); results go to $OUT (or ./gpu-out): gpu-machine.log and gpu-results.tar.gz.
set -u
cd "$(dirname "$0")/.."
# Everything is written to a work folder, then packed into one archive beside the log (the device
# tool brings back a few files only).
final=${OUT:-$PWD/gpu-out}
mkdir -p "$final"
out=$(mktemp -d)
trap 'tar -C "$out" -czf "$final/gpu-results.tar.gz" . ; cp "$out/gpu-machine.log" "$final/" 2>/dev/null; rm -rf "$out"' EXIT
bin=${1:-}
if [ -z "$bin" ]; then
        if [ -x .device/gpunode ]; then bin=.device/gpunode; export LD_LIBRARY_PATH=$PWD/.device/lib; else bin=build/gpunode; fi
fi
exec > >(tee "$out/gpu-machine.log") 2>&1
step() { printf '\n== %s\n' "$*"; }

step "machine"
uname -a
nvidia-smi -L
nvidia-smi --query-gpu=index,name,uuid,pci.bus_id,memory.total,driver_version,compute_cap,persistence_mode,mig.mode.current,temperature.gpu,power.draw,clocks.sm,clocks.mem,ecc.errors.uncorrected.volatile.total --format=csv,noheader,nounits | tee "$out/nvidia-smi.csv"

step "gpunode check (text)"
"$bin" check --no-color --verbose --record-paths "$out/paths.txt" --save-nvml "$out/nvml.json"
echo "exit $?"
"$bin" check --output json > "$out/check.json"; echo "json exit $?"
"$bin" check --output prometheus | head -5
"$bin" explain driver.xid-errors | head -3

step "cross-check NVML answers against nvidia-smi"
python3 - "$out/nvml.json" "$out/nvidia-smi.csv" <<'PY'
import csv, json, sys
nv = json.load(open(sys.argv[1]))
rows = list(csv.reader(open(sys.argv[2]), skipinitialspace=True))
bad = 0
def same(what, a, b):
    global bad
    ok = str(a).strip().lower() == str(b).strip().lower()
    bad += not ok
    print(("ok      " if ok else "MISMATCH"), what, repr(a), "vs nvidia-smi", repr(b))
def near(what, a, b, tol):
    global bad
    try:
        ok = abs(float(a) - float(b)) <= tol
    except ValueError:
        ok = False
    bad += not ok
    print(("ok      " if ok else "MISMATCH"), what, a, "vs nvidia-smi", b, "(within %s)" % tol)
for g, r in zip(nv["gpus"], rows):
    i = r[0]
    same("gpu %s name" % i, g.get("name"), r[1])
    same("gpu %s uuid" % i, g.get("uuid"), r[2])
    same("gpu %s pci bus id" % i, g.get("pci_bus_id"), r[3])
    same("gpu %s memory total MiB" % i, g["memory"]["total"] // (1024 * 1024), r[4])
    same("gpu %s driver" % i, nv.get("driver_version"), r[5])
    same("gpu %s compute cap" % i, "%d.%d" % tuple(g["compute_capability"]), r[6])
    same("gpu %s persistence" % i, "enabled" if g.get("persistence_mode") == 1 else "disabled", r[7])
    mig = g.get("mig_mode")
    same("gpu %s mig" % i, ("enabled" if mig["current"] else "disabled") if mig else "[n/a]", r[8])
    near("gpu %s temperature C" % i, g.get("temperature"), r[9], 3)
    near("gpu %s power W" % i, g.get("power_mw", 0) / 1000.0, r[10], 30)
    near("gpu %s sm clock MHz" % i, g["clocks"]["sm"], r[11], 200)
    near("gpu %s mem clock MHz" % i, g["clocks"]["mem"], r[12], 200)
    if "ecc" in g:
        same("gpu %s uncorrected volatile ECC" % i, g["ecc"].get("volatile_uncorrected"), r[13])
same("gpu count", len(nv["gpus"]), len(rows))
print("cross-check: %d mismatches" % bad)
PY

step "health queries (gpu.* and nvlink.* checks) next to nvidia-smi"
# nvidia-smi's own views of what NVML's health queries answer; -d has no PCIE section: the link info
# comes from the full -q.
nvidia-smi -q -d CLOCK,TEMPERATURE,ECC,PAGE_RETIREMENT,PERFORMANCE,PIDS 2>&1 | tee "$out/nvidia-smi-health.txt" | head -150
nvidia-smi -q 2>/dev/null | sed -n '/GPU Link Info/,/Tx Throughput/p' | head -40
nvidia-smi nvlink -s 2>&1 | tee "$out/nvidia-smi-nvlink-s.txt" | head -60
nvidia-smi nvlink -e 2>&1 | tee "$out/nvidia-smi-nvlink-e.txt" | head -60
for bus in $(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader); do nvidia-smi drain -p "$bus" -q 2>&1 | head -3; done
q=index,pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,temperature.memory,ecc.mode.current,ecc.mode.pending,retired_pages.pending
nvidia-smi --query-gpu=$q,clocks_event_reasons.active --format=csv,noheader,nounits > "$out/nvidia-smi-health.csv" 2>/dev/null ||
        nvidia-smi --query-gpu=$q,clocks_throttle_reasons.active --format=csv,noheader,nounits > "$out/nvidia-smi-health.csv"
cat "$out/nvidia-smi-health.csv"
"$bin" check --no-color --verbose 2>&1 | grep -A6 -E '^  \[[a-zA-Z ]+\] (gpu|nvlink)\.'
python3 - "$out/nvml.json" "$out/nvidia-smi-health.csv" <<'PY'
import csv, json, sys
nv = json.load(open(sys.argv[1]))
rows = list(csv.reader(open(sys.argv[2]), skipinitialspace=True))
bad = 0
def same(what, a, b):
    global bad
    b = str(b).strip()
    if b in ("[N/A]", "N/A", "[Not Supported]") and a is None:
        print("ok      ", what, "not supported in both"); return
    ok = str(a).strip().lower() == b.lower()
    bad += not ok
    print(("ok      " if ok else "MISMATCH"), what, repr(a), "vs nvidia-smi", repr(b))
for g, r in zip(nv["gpus"], rows):
    i, p = r[0], g.get("pcie") or {}
    print("gpu %s NVML health: violation %s, thresholds %s, %d NVLink(s) (%d active), processes %s, drain %s, clock reasons %s" % (
        i, g.get("violation"), g.get("temperature_thresholds"), len(g.get("nvlinks") or []),
        sum(1 for l in g.get("nvlinks") or [] if l.get("active")), g.get("processes"), g.get("drain_state"),
        g.get("clocks_event_reasons")))
    # the link's generation may change between the two reads (power saving): reported, not compared
    print("         PCIe gen %s (max %s) vs nvidia-smi %s (max %s)" % (p.get("gen"), p.get("gen_max"), r[1], r[2]))
    same("gpu %s PCIe width" % i, p.get("width"), r[3])
    same("gpu %s PCIe max width" % i, p.get("width_max"), r[4])
    mt = g.get("memory_temperature")
    print("         memory temperature %s C vs nvidia-smi %s" % (mt, r[5]))
    ecc = g.get("ecc") or {}
    same("gpu %s ECC current" % i, {1: "enabled", 0: "disabled"}.get(ecc.get("mode_current")), r[6])
    same("gpu %s ECC pending" % i, {1: "enabled", 0: "disabled"}.get(ecc.get("mode_pending")), r[7])
    rp = (g.get("retired_pages") or {}).get("pending")
    same("gpu %s retired pages pending" % i, None if rp is None else ("yes" if rp else "no"), r[8])
    reasons = g.get("clocks_event_reasons")
    reasons = reasons[0] if isinstance(reasons, list) else reasons
    print("         clock event reasons 0x%x vs nvidia-smi %s" % (reasons or 0, r[9]))
print("health cross-check: %d mismatches" % bad)
PY

step "timing: gpunode check vs nvidia-smi -q vs nvidia-smi --query-gpu (10 runs each)"
python3 - "$bin" <<'PY'
import resource, statistics, subprocess, sys, time
def bench(cmd, n=10):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return statistics.median(times)
g = bench([sys.argv[1], "check", "--output", "json"])
rss_g = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
q = bench(["nvidia-smi", "-q"])
c = bench(["nvidia-smi", "--query-gpu=index,name,uuid,temperature.gpu,power.draw", "--format=csv"])
rss_all = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print("gpunode check: median %.1f ms, peak RSS %d KiB" % (g * 1000, rss_g))
print("nvidia-smi -q: median %.1f ms (%.1fx gpunode)" % (q * 1000, q / g))
print("nvidia-smi --query-gpu: median %.1f ms (%.1fx gpunode); peak RSS of all children %d KiB" % (c * 1000, c / g, rss_all))
PY

step "gpunode collect (the snapshot) and check --snapshot on it"
"$bin" collect -o "$out/gpunode-collect.tar.gz"; echo "collect exit $?"
"$bin" check --output json > "$out/check-again.json"
"$bin" check --snapshot "$out/gpunode-collect.tar.gz" --output json > "$out/check-snapshot.json"; echo "check --snapshot exit $?"
python3 - "$out/check-again.json" "$out/check-snapshot.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
def key(r): return [(c["id"], c["status"]) for c in r["checks"]]
same = key(a) == key(b) and a["verdict"] == b["verdict"]
print(("ok      " if same else "MISMATCH"), "check --snapshot vs check on the node:", a["verdict"], "/", b["verdict"])
for (i, s1), (_, s2) in zip(key(a), key(b)):
    if s1 != s2: print("   ", i, s1, "->", s2)
PY

step "gpunode labels --once -o - (GFD labels from the real NVML)"
"$bin" labels --once -o - | tee "$out/labels.txt"; echo "labels exit $?"

step "gpunode exporter against the real NVML: a series per GPU, scrape time vs nvidia-smi and a Python NVML exporter"
eport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
pport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin" exporter --listen "127.0.0.1:$eport" --interval 1 --check-interval 30 > "$out/exporter.log" 2>&1 &
epid=$!
cat > "$out/py_nvml_exporter.py" <<'PY'
# A minimal Python NVML exporter (prometheus_client + nvidia-ml-py), the usual hand-written peer: reads NVML per scrape.
import sys, time
import pynvml
from prometheus_client import start_http_server, REGISTRY
from prometheus_client.core import GaugeMetricFamily
class C:
    def collect(self):
        temp = GaugeMetricFamily("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", labels=["gpu", "UUID"])
        power = GaugeMetricFamily("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", labels=["gpu", "UUID"])
        util = GaugeMetricFamily("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", labels=["gpu", "UUID"])
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i); u = pynvml.nvmlDeviceGetUUID(h)
            u = u.decode() if isinstance(u, bytes) else u
            temp.add_metric([str(i), u], pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU))
            power.add_metric([str(i), u], pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0)
            util.add_metric([str(i), u], pynvml.nvmlDeviceGetUtilizationRates(h).gpu)
        yield temp; yield power; yield util
pynvml.nvmlInit(); REGISTRY.register(C()); start_http_server(int(sys.argv[1]), addr="127.0.0.1")
while True: time.sleep(3600)
PY
python3 "$out/py_nvml_exporter.py" "$pport" > "$out/py_nvml_exporter.log" 2>&1 &
ppid=$!
sleep 4
python3 - "$eport" "$pport" "$out/nvidia-smi.csv" <<'PY'
import statistics, subprocess, sys, time, urllib.request
eport, pport, csv = sys.argv[1], sys.argv[2], sys.argv[3]
uuids = [l.split(",")[2].strip() for l in open(csv) if l.strip()]
def fetch(url):
    t = time.perf_counter(); body = urllib.request.urlopen(url, timeout=10).read().decode(); return time.perf_counter() - t, body
_, page = fetch("http://127.0.0.1:%s/metrics" % eport)
missing = [u for u in uuids if 'DCGM_FI_DEV_GPU_TEMP{' not in page or 'UUID="%s"' % u not in page]
print("exporter: %d GPUs from nvidia-smi, series missing for: %s" % (len(uuids), missing or "none"))
print("\n".join(l for l in page.splitlines() if l.startswith(("DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_PROF_", "gpunode_exporter_nvml_up", "gpunode_exporter_sample_duration"))))
def med(fn, n=30):
    return statistics.median(fn() for _ in range(n))
e = med(lambda: fetch("http://127.0.0.1:%s/metrics" % eport)[0])
try:
    p = med(lambda: fetch("http://127.0.0.1:%s/metrics" % pport)[0])
except Exception as ex:
    p = float("nan"); print("python NVML exporter failed:", ex)
def smi():
    t = time.perf_counter()
    subprocess.run(["nvidia-smi", "--query-gpu=index,uuid,temperature.gpu,power.draw,utilization.gpu,memory.used,clocks.sm", "--format=csv"], stdout=subprocess.DEVNULL)
    return time.perf_counter() - t
s = med(smi, 10)
print("scrape median: gpunode exporter %.3f ms; python NVML exporter %.3f ms (%.0fx); nvidia-smi --query-gpu %.1f ms (%.0fx)" % (e * 1000, p * 1000, p / e, s * 1000, s / e))
rss = [l for l in open("/proc/%s/status" % subprocess.run(["pgrep", "-n", "-f", "exporter --listen 127.0.0.1:" + eport], capture_output=True, text=True).stdout.strip()) if l.startswith(("VmRSS", "VmHWM", "RssAnon", "RssFile"))]
print("exporter memory:", " ".join(x.split()[0] + x.split()[1] for x in rss))
PY
kill "$epid" "$ppid" 2>/dev/null; wait "$epid" 2>/dev/null; echo "exporter exit $?"
