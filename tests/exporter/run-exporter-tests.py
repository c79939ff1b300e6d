#!/usr/bin/python3
# run-exporter-tests.py: end-to-end tests of `gpunode exporter` against the fake NVML, promtool and a real Prometheus.
"""Usage: run-exporter-tests.py GPUNODE FAKE_LIBNVIDIA_ML

Loopback only (127.0.0.1), bounded in time, and every process started here is killed on the way out.
Debian's python3 standard library only."""
import gzip
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import harness as H  # noqa: E402

GPUNODE, FAKE = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
TMP = tempfile.mkdtemp(prefix="gpunode-exporter-test-")
PROCS = H.procs
free_port, write_desc, get, check = H.free_port, H.write_json, H.http_get, H.check


def description(n, lost=(), block=None, errors=None):
    gpus = []
    for i in range(n):
        g = {"name": "NVIDIA H100 80GB HBM3", "uuid": "GPU-%08x-1111-2222-3333-%012x" % (i, i), "minor_number": i,
             "pci_bus_id": "00000000:%02X:00.0" % (0x10 + i), "temperature": 30 + i % 20, "power_mw": 70000 + i,
             "energy_mj": 1000000 + i, "utilization": {"gpu": i % 100, "memory": 1}, "clocks": {"sm": 1980, "mem": 2619},
             "memory": {"total": 85520809984, "used": 1 << 30, "free": 80 << 30, "reserved": 1 << 29},
             "memory_temperature": 40, "pcie_replay": 0, "encoder_utilization": 0, "decoder_utilization": 0,
             "remapped_rows": {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False},
             "xid_events": [79] if i == 1 else []}
        if i in lost:
            g["lost"] = True
        gpus.append(g)
    d = {"driver_version": "550.54.15", "nvml_version": "12.550.54.15", "gpus": gpus}
    if block:
        d["block"] = block
    if errors:
        d["errors"] = errors
    return d


def mig_description():
    """The fake's MIG description (GPU 0: four GPU instances, one with two compute instances, one whose
    attributes fail, one whose profile lookup is refused; GPU 1: one 7g; GPU 2: the MIG walk fails; GPU 3:
    MIG on with no devices; GPU 4: MIG off), with a temperature on every GPU."""
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "fake-nvml", "testdata", "mig.json")) as f:
        d = json.load(f)
    for i, g in enumerate(d["gpus"]):
        g["temperature"] = 40 + i
        g["utilization"] = {"gpu": 7, "memory": 1}
    return d


# (gpu, GPU_I_ID, GPU_I_PROFILE) of every GPU instance in mig_description(), as dcgm-exporter labels them.
MIG_INSTANCES = {("0", "2", "3g.40gb"), ("0", "3", "2g.20gb"), ("0", "9", "1g.10gb"), ("0", "10", "1g.10gb"),
                 ("1", "0", "7g.80gb")}


def uuid(i):
    return "GPU-%08x-1111-2222-3333-%012x" % (i, i)


def start_exporter(name, desc, *args, reload=False):
    path = os.path.join(TMP, name + ".json")
    write_desc(path, desc)
    port = free_port()
    env = dict(os.environ, GPUNODE_FAKE_NVML=path, NODE_NAME="test-node")
    if reload:
        env["GPUNODE_FAKE_NVML_RELOAD"] = "1"
    log = open(os.path.join(TMP, name + ".log"), "w")
    argv = [GPUNODE, "exporter", "--listen", "127.0.0.1:%d" % port, "--nvml-library", FAKE, "--interval", "1"]
    p = subprocess.Popen(argv + list(args), env=env, stdout=log, stderr=log)
    PROCS.append(p)
    base = "http://127.0.0.1:%d" % port
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            get(base + "/", timeout=1)
            break
        except Exception:
            time.sleep(0.05)
    return p, base, path


def metrics(base):
    return get(base + "/metrics")[2].decode()


def wait_for(fn, timeout):
    """Returns fn()'s first true value within TIMEOUT seconds, else its value at the deadline; fn's exceptions
    propagate (the test that raised counts as failed)."""
    return H.wait(fn, timeout, swallow=False, last_try=True)


def value(text, prefix):
    for line in text.splitlines():
        if line.startswith(prefix):
            return float(line.rsplit(" ", 1)[1])
    return None


stop = H.stop


# Lint problems promtool reports for dcgm-exporter's own naming (kept for compatibility).
DCGM_LINT = ("label names should be written in 'snake_case'", 'counter metrics should have "_total" suffix',
             "metric name should not include type 'counter'")


def test_promtool_and_http():
    p, base, _ = start_exporter("basic", description(8), "--check-interval", "2")
    text = wait_for(lambda: (lambda t: t if "gpunode_check{" in t else None)(metrics(base)), 15) or metrics(base)
    check("DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",UUID=\"%s\",pci_bus_id=\"00000000:10:00.0\",device=\"nvidia0\","
          "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"test-node\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"} 30" % uuid(0)
          in text, "DCGM line layout and label order")
    check("DCGM_FI_DEV_POWER_USAGE{" in text and "} 70.000000" in text, "power in W as %f")
    check("gpunode_check{" in text and "gpunode_layer_healthy{" in text, "layer diagnosis series present")
    check(value(text, "gpunode_exporter_check_up ") == 1 and value(text, "gpunode_exporter_check_timed_out ") == 0,
          "the check child ran and its output was accepted")
    check(not any("libfyaml" in l or "libcurl" in l for l in open("/proc/%d/maps" % p.pid)),
          "libfyaml and libcurl stay out of the exporter process")
    check(wait_for(lambda: value(metrics(base), 'DCGM_FI_DEV_XID_ERRORS{gpu="1"') == 79, 5), "Xid from the event thread")
    check(('DCGM_FI_DEV_XID_ERRORS{gpu="1",UUID="%s",pci_bus_id="00000000:11:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",'
           'Hostname="test-node",DCGM_FI_DRIVER_VERSION="550.54.15",err_code="79",'
           'err_msg="GPU has fallen off the bus"} 79' % uuid(1)) in metrics(base),
          "Xid series: err_code and err_msg after the standard labels")
    r = subprocess.run(["promtool", "check", "metrics"], input=text.encode(),
                       capture_output=True, timeout=30)
    out = (r.stdout + r.stderr).decode()
    bad = [l for l in out.splitlines() if l.strip() and not (l.startswith("DCGM_FI_") and any(k in l for k in DCGM_LINT))]
    check(r.returncode in (0, 3) and not bad, "promtool check metrics (only dcgm-naming lint): %s" % bad[:3])
    st, h, body = get(base + "/metrics", headers={"Accept-Encoding": "gzip"})
    check(st == 200 and h.get("Content-Encoding") == "gzip" and gzip.decompress(body).decode().startswith("# HELP"),
          "gzip when accepted")
    check(h.get("Content-Type") == "text/plain; version=0.0.4; charset=utf-8", "content type")
    st, h, body = get(base + "/metrics", headers={"Accept-Encoding": "gzip;q=0, identity"})
    check(st == 200 and "Content-Encoding" not in h, "no gzip when q=0")
    check(get(base + "/health")[0] == 200, "/health 200 when fresh")
    check(get(base + "/nope")[0] == 404 and b"/metrics" in get(base + "/")[2], "index and 404")
    check(stop(p) == 0, "SIGTERM: clean exit 0")


def test_mig():
    p, base, _ = start_exporter("mig", mig_description(), "--check-interval", "0")
    text = wait_for(lambda: (lambda t: t if "GPU_I_ID" in t else None)(metrics(base)), 10) or metrics(base)
    check("DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-10000000-1111-2222-3333-444455556666\",pci_bus_id=\"00000000:07:00.0\","
          "device=\"nvidia0\",modelName=\"NVIDIA A100-SXM4-80GB\",GPU_I_PROFILE=\"3g.40gb\",GPU_I_ID=\"2\","
          "Hostname=\"test-node\",DCGM_FI_DRIVER_VERSION=\"550.90.07\"} 13" in text, "MIG line layout and label order")
    temp = [l for l in text.splitlines() if l.startswith("DCGM_FI_DEV_GPU_TEMP{")]
    got = {(l.split('gpu="')[1].split('"')[0], l.split('GPU_I_ID="')[1].split('"')[0],
            l.split('GPU_I_PROFILE="')[1].split('"')[0]) for l in temp if "GPU_I_ID" in l}
    check(got == MIG_INSTANCES, "one series per GPU instance (two compute instances of GI 2 count once): %s" % sorted(got))
    check(not any(l.startswith('DCGM_FI_DEV_GPU_TEMP{gpu="0"') and "GPU_I_ID" not in l for l in temp),
          "no series for a MIG GPU as a whole")
    check({l.split('gpu="')[1].split('"')[0] for l in temp if "GPU_I_ID" not in l} == {"2", "3", "4"},
          "whole-GPU series where MIG is off, has no devices, or cannot be listed")
    check(value(text, 'DCGM_FI_DEV_FB_FREE{gpu="1"') == 81139 and value(text, 'DCGM_FI_DEV_GPU_TEMP{gpu="1"') == 41,
          "framebuffer from the GPU instance, temperature from its GPU")
    check(not any(l.startswith("DCGM_FI_DEV_GPU_UTIL{") and "GPU_I_ID" in l for l in text.splitlines()),
          "no utilization series on GPU instances")
    r = subprocess.run(["promtool", "check", "metrics"], input=text.encode(), capture_output=True, timeout=30)
    out = (r.stdout + r.stderr).decode()
    bad = [l for l in out.splitlines() if l.strip() and not (l.startswith("DCGM_FI_") and any(k in l for k in DCGM_LINT))]
    check(r.returncode in (0, 3) and not bad, "promtool check metrics with MIG series: %s" % bad[:3])
    check(stop(p) == 0, "SIGTERM: clean exit 0")


PROF = ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "DCGM_FI_PROF_DRAM_ACTIVE",
        "DCGM_FI_PROF_PCIE_TX_BYTES", "DCGM_FI_PROF_PCIE_RX_BYTES")


def prof_description(graphics_util=42.5):
    """GPU 0 answers GPM (Hopper), GPU 1 does not (PCIe throughput only), GPU 2 answers GPM without its PCIe
    metrics (PCIe throughput instead), GPU 3 has neither."""
    d = description(4)
    d["gpus"][0]["gpm"] = {"graphics_util": graphics_util, "any_tensor_util": 30, "dram_bw_util": 55.5,
                           "pcie_tx_per_sec": 1000, "pcie_rx_per_sec": 2000.5}
    d["gpus"][0]["pcie_tx_kbps"] = 7  # not used: GPM answers
    d["gpus"][1].update(gpm_supported=False, gpm={"graphics_util": 99}, pcie_tx_kbps=2000, pcie_rx_kbps=3000)
    d["gpus"][2].update(gpm={"graphics_util": 10, "dram_bw_util": 0}, pcie_tx_kbps=1, pcie_rx_kbps=2)
    return d


def test_profiling():
    p, base, path = start_exporter("prof", prof_description(), "--check-interval", "0", reload=True)
    # The GPM rates need two samples, an interval apart.
    text = wait_for(lambda: (lambda t: t if "DCGM_FI_PROF_GR_ENGINE_ACTIVE{" in t else None)(metrics(base)), 10) or ""
    g0 = 'gpu="0",UUID="%s",pci_bus_id="00000000:10:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",' \
         'Hostname="test-node",DCGM_FI_DRIVER_VERSION="550.54.15"' % uuid(0)
    for name, want in zip(PROF, ("0.425000", "0.300000", "0.555000", "1048576000", "2097676288")):
        check("%s{%s} %s" % (name, g0, want) in text, "%s from GPM on a GPM GPU (%s)" % (name, want))
    check("# TYPE DCGM_FI_PROF_PCIE_TX_BYTES gauge" in text and
          "# HELP DCGM_FI_PROF_GR_ENGINE_ACTIVE Ratio of time the graphics engine is active." in text,
          "HELP and TYPE as dcgm-exporter's counters")
    lines = text.splitlines()
    got = {n: {l.split('gpu="')[1].split('"')[0] for l in lines if l.startswith(n + "{")} for n in PROF}
    check(all(got[n] == {"0", "2"} for n in PROF[:1]) and got[PROF[1]] == {"0"} and got[PROF[2]] == {"0", "2"},
          "activity ratios only where GPM answers them: %s" % {n: sorted(v) for n, v in got.items()})
    check(all(got[n] == {"0", "1", "2"} for n in PROF[3:]), "PCIe rates on every GPU that gives them")
    check(value(text, 'DCGM_FI_PROF_PCIE_TX_BYTES{gpu="1"') == 2048000 and
          value(text, 'DCGM_FI_PROF_PCIE_RX_BYTES{gpu="1"') == 3072000 and
          value(text, 'DCGM_FI_PROF_PCIE_RX_BYTES{gpu="2"') == 2048, "PCIe throughput without GPM: KB/s in bytes/s")
    check(value(text, 'DCGM_FI_PROF_DRAM_ACTIVE{gpu="2"') == 0, "a zero ratio is a series")
    check(all(value(text, 'gpunode_exporter_nvml_errors_total{call="%s"}' % c) == 0
              for c in ("nvmlGpmQueryDeviceSupport", "nvmlGpmSampleGet", "nvmlGpmMetricsGet", "nvmlDeviceGetPcieThroughput")),
          "no NVML errors counted on GPUs without GPM")
    r = subprocess.run(["promtool", "check", "metrics"], input=text.encode(), capture_output=True, timeout=30)
    out = (r.stdout + r.stderr).decode()
    bad = [l for l in out.splitlines() if l.strip() and not (l.startswith("DCGM_FI_") and any(k in l for k in DCGM_LINT))]
    check(r.returncode in (0, 3) and not bad, "promtool check metrics with the profiling series: %s" % bad[:3])
    # The fake's counters advance by the described rate: a new rate shows in the next sample pair.
    write_desc(path, prof_description(graphics_util=80))
    check(wait_for(lambda: value(metrics(base), 'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0"') == 0.8, 6),
          "GR engine ratio follows the rate between two samples")
    check(stop(p) == 0, "SIGTERM: clean exit 0")

    # MIG: per GPU instance from nvmlGpmMigSampleGet (GPU 1: one 7g instance with GPM); GPU 0 has no GPM.
    d = mig_description()
    d["gpus"][1]["gpm_supported"] = True
    d["gpus"][1]["mig_devices"][0]["gpm"] = {"graphics_util": 25, "any_tensor_util": 5, "dram_bw_util": 50}
    d["gpus"][1]["pcie_tx_kbps"] = 9
    p, base, _ = start_exporter("profmig", d, "--check-interval", "0")
    text = wait_for(lambda: (lambda t: t if "DCGM_FI_PROF_GR_ENGINE_ACTIVE{" in t else None)(metrics(base)), 10) or ""
    prof = [l for l in text.splitlines() if l.startswith("DCGM_FI_PROF_")]
    check(any(l.startswith('DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="1"') and 'GPU_I_PROFILE="7g.80gb",GPU_I_ID="0"' in l and
              l.endswith(" 0.250000") for l in prof), "GR engine ratio per GPU instance from nvmlGpmMigSampleGet")
    check(value(text, 'DCGM_FI_PROF_DRAM_ACTIVE{gpu="1"') == 0.5, "DRAM ratio per GPU instance")
    check(not any(l.startswith('DCGM_FI_PROF_PCIE_') and 'gpu="1"' in l for l in prof),
          "no PCIe series on a GPU instance that GPM gives none for: %s" % prof[:2])
    check(not any('gpu="0"' in l for l in prof), "no profiling series on a MIG GPU without GPM")
    check(stop(p) == 0, "SIGTERM: clean exit 0")


def test_prometheus():
    exps = {n: start_exporter("prom%d" % n, description(n), "--check-interval", "0") for n in (8, 64)}
    exps["mig"] = start_exporter("prommig", mig_description(), "--check-interval", "0")
    k8sroot = os.path.join(TMP, "promk8sroot")
    kl = start_kubelet(k8sroot)
    exps["k8s"] = start_exporter("promk8s", attribution_desc(), "--check-interval", "0", "--root", k8sroot)
    port = free_port()
    cfg = os.path.join(TMP, "prometheus.yml")
    with open(cfg, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n")
        for n, (_, base, _) in exps.items():
            f.write("  - job_name: e%s\n    static_configs:\n      - targets: ['%s']\n" % (n, base[len("http://"):]))
    log = open(os.path.join(TMP, "prometheus.log"), "w")
    prom = subprocess.Popen(["/usr/bin/prometheus", "--config.file", cfg, "--storage.tsdb.path", os.path.join(TMP, "tsdb"),
                             "--web.listen-address", "127.0.0.1:%d" % port], stdout=log, stderr=log)
    PROCS.append(prom)

    def uuids(job):
        q = urllib.parse.quote('count by (UUID) (DCGM_FI_DEV_GPU_TEMP{job="%s"})' % job)
        try:
            st, _, body = get("http://127.0.0.1:%d/api/v1/query?query=%s" % (port, q), timeout=2)
            return {r["metric"]["UUID"] for r in json.loads(body)["data"]["result"]}
        except Exception:
            return set()
    for n in (8, 64):
        want = {uuid(i) for i in range(n)}
        got = wait_for(lambda: uuids("e%d" % n) == want, 40)
        check(got, "Prometheus has a series for each of %d GPU UUIDs (%d found)" % (n, len(uuids("e%d" % n))))

    def instances():
        q = urllib.parse.quote('DCGM_FI_DEV_FB_USED{job="emig",GPU_I_ID!=""}')
        try:
            body = get("http://127.0.0.1:%d/api/v1/query?query=%s" % (port, q), timeout=2)[2]
            return {(r["metric"]["gpu"], r["metric"]["GPU_I_ID"], r["metric"]["GPU_I_PROFILE"])
                    for r in json.loads(body)["data"]["result"]}
        except Exception:
            return set()
    check(wait_for(lambda: instances() == MIG_INSTANCES, 40), "Prometheus has the MIG series of every GPU instance (%s)"
          % sorted(instances()))

    def pods():
        q = urllib.parse.quote('DCGM_FI_DEV_GPU_TEMP{job="ek8s"}')
        try:
            body = get("http://127.0.0.1:%d/api/v1/query?query=%s" % (port, q), timeout=2)[2]
            return {(r["metric"]["gpu"], r["metric"].get("GPU_I_ID", ""), r["metric"].get("container", ""),
                     r["metric"].get("namespace", ""), r["metric"].get("pod", "")) for r in json.loads(body)["data"]["result"]}
        except Exception:
            return set()
    check(wait_for(lambda: pods() == POD_SERIES, 40), "Prometheus has the pod, namespace and container labels (%s)"
          % sorted(pods() ^ POD_SERIES))
    q = urllib.parse.quote('up{job=~"e.*"}')
    body = get("http://127.0.0.1:%d/api/v1/query?query=%s" % (port, q))[2]
    res = json.loads(body)["data"]["result"]
    check(len(res) == 4 and all(r["value"][1] == "1" for r in res), "all four targets up")
    stop(prom)
    stop_kubelet(kl, k8sroot)
    for p, _, _ in exps.values():
        stop(p)


# ---- pod attribution: a fake kubelet (tests/kubelet/fake_kubelet.py) under a temp root ----

KUBELET = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "kubelet", "fake_kubelet.py")
PODRES = "var/lib/kubelet/pod-resources/kubelet.sock"


def mig_uuid(gpu, k):
    return "MIG-2000000%d-%04x-5555-6666-777788889999" % (gpu, k)


def muuid(i):
    """The UUID of GPU i in mig_description()."""
    return "GPU-1000000%d-1111-2222-3333-444455556666" % i


# Two pods on mig_description()'s five GPUs: GPU 2 by UUID, time-sliced between two containers (one
# listing two replicas of it), GPU 3 by index (a restartable init container, and a container whose
# name needs escaping), GPU 4 by UUID, GPU 0's GPU instance 2 through the MIG device of its second
# compute instance, GPU 1's 7g instance by MIG UUID; ids of other resources, unknown ids and a
# container without devices are ignored.
POD_LIST = {"podResources": [
    {"name": "train-0", "namespace": "ml", "containers": [
        {"name": "init-sync", "devices": [{"resourceName": "nvidia.com/gpu", "deviceIds": ["3"]}]},
        {"name": "main", "devices": [
            {"resourceName": "nvidia.com/gpu", "deviceIds": [muuid(2) + "::0", muuid(2) + "::1"]},
            {"resourceName": "example.com/fpga", "deviceIds": [muuid(4), "0"]}]}]},
    {"name": "infer-1", "namespace": "serve", "containers": [
        {"name": "srv", "devices": [
            {"resourceName": "nvidia.com/gpu", "deviceIds": [muuid(2) + "::2", "GPU-deadbeef-0000-0000-0000-000000000000"]},
            {"resourceName": "nvidia.com/mig-3g.40gb", "deviceIds": [mig_uuid(0, 0xff)]}]},
        {"name": "tiny", "devices": [
            {"resourceName": "nvidia.com/mig-7g.80gb", "deviceIds": [mig_uuid(1, 0)]},
            {"resourceName": "nvidia.com/gpu", "deviceIds": [muuid(4)]}]},
        {"name": "idle", "devices": []},
        {"name": 'odd"name\\x', "devices": [{"resourceName": "nvidia.com/gpu", "deviceIds": ["3"]}]}]},
]}

# (gpu, GPU_I_ID or "", container, namespace, pod) of every DCGM_FI_DEV_GPU_TEMP series for POD_LIST.
POD_SERIES = {("0", "2", "srv", "serve", "infer-1"), ("0", "3", "", "", ""), ("0", "9", "", "", ""), ("0", "10", "", "", ""),
              ("1", "0", "tiny", "serve", "infer-1"),
              ("2", "", "main", "ml", "train-0"), ("2", "", "srv", "serve", "infer-1"),
              ("3", "", "init-sync", "ml", "train-0"), ("3", "", 'odd"name\\x', "serve", "infer-1"),
              ("4", "", "tiny", "serve", "infer-1")}


def parse_series(line):
    """Returns (name, [(label, value)] in order, value) of one exposition line, escapes undone."""
    name, rest = line.split("{", 1)
    labels, i = [], 0
    while rest[i] != "}":
        eq = rest.index("=", i)
        key = rest[i:eq]
        j, val = eq + 2, ""
        while rest[j] != '"':
            if rest[j] == "\\":
                val += {"n": "\n", "\\": "\\", '"': '"'}[rest[j + 1]]
                j += 2
            else:
                val += rest[j]
                j += 1
        labels.append((key, val))
        i = j + 1
        if rest[i] == ",":
            i += 1
    return name, labels, rest[i + 1:].strip()


def series(text, name):
    return [parse_series(l) for l in text.splitlines() if l.startswith(name + "{")]


def pod_tuples(text):
    out = set()
    for _, labels, _ in series(text, "DCGM_FI_DEV_GPU_TEMP"):
        d = dict(labels)
        out.add((d["gpu"], d.get("GPU_I_ID", ""), d.get("container", ""), d.get("namespace", ""), d.get("pod", "")))
    return out


def start_kubelet(root, mode="normal", pods=None):
    """Starts fake_kubelet.py at ROOT/PODRES serving pods (POD_LIST by default) in mode; returns it once ready."""
    sock = os.path.join(root, PODRES)
    lst = os.path.join(TMP, "podlist-%d.json" % len(PROCS))
    with open(lst, "w") as f:
        json.dump(POD_LIST if pods is None else pods, f)
    p = subprocess.Popen(["/usr/bin/python3", KUBELET, "--socket", sock, "--mode", mode, "--list", lst, "--lifetime", "200"],
                         stdout=subprocess.PIPE, stderr=open(os.path.join(TMP, "kubelet.log"), "a"))
    PROCS.append(p)
    line = p.stdout.readline()
    if b"ready" not in line:
        raise RuntimeError("fake kubelet did not start (%r)" % line)
    return p


def stop_kubelet(p, root):
    p.kill()
    p.wait()
    try:
        os.unlink(os.path.join(root, PODRES))
    except FileNotFoundError:
        pass


def attribution_desc():
    d = mig_description()
    d["gpus"][2]["xid_events"] = [48]
    return d


def promtool_ok(text, what):
    r = subprocess.run(["promtool", "check", "metrics"], input=text.encode(), capture_output=True, timeout=30)
    out = (r.stdout + r.stderr).decode()
    bad = [l for l in out.splitlines() if l.strip() and not (l.startswith("DCGM_FI_") and any(k in l for k in DCGM_LINT))]
    check(r.returncode in (0, 3) and not bad, "promtool check metrics (%s): %s" % (what, bad[:3]))


def test_pod_attribution():
    root = os.path.join(TMP, "k8sroot")
    kl = start_kubelet(root)
    p, base, _ = start_exporter("pods", attribution_desc(), "--check-interval", "0", "--root", root)
    text = wait_for(lambda: (lambda t: t if pod_tuples(t) == POD_SERIES else None)(metrics(base)), 10) or metrics(base)
    check(pod_tuples(text) == POD_SERIES, "pod labels on every series a container holds, per container (%s)"
          % sorted(pod_tuples(text) ^ POD_SERIES))
    line = ('DCGM_FI_DEV_GPU_TEMP{gpu="2",UUID="%s",pci_bus_id="00000000:2A:00.0",device="nvidia2",'
            'modelName="NVIDIA H100 80GB HBM3",Hostname="test-node",DCGM_FI_DRIVER_VERSION="550.90.07",'
            'container="main",namespace="ml",pod="train-0"} 42' % muuid(2))
    temps = [l for l in text.splitlines() if l.startswith('DCGM_FI_DEV_GPU_TEMP{gpu="2"')]
    check(line in text, "exact line: dcgm-exporter's labels, then container, namespace, pod (%s)" % temps[:1])
    mig = [l for n, l, _ in series(text, "DCGM_FI_DEV_FB_USED") if dict(l).get("pod") == "infer-1" and dict(l).get("GPU_I_ID") == "2"]
    check(len(mig) == 1 and [k for k, _ in mig[0]] == ["gpu", "UUID", "pci_bus_id", "device", "modelName", "GPU_I_PROFILE",
                                                      "GPU_I_ID", "Hostname", "DCGM_FI_DRIVER_VERSION", "container",
                                                      "namespace", "pod"],
          "MIG instance: its labels, then the pod labels (%s)" % mig[:1])
    check('container="odd\\"name\\\\x"' in text, "label values escaped")
    # Xid: err_code and err_msg among the attributes, keys sorted as dcgm-exporter renders them
    xid = wait_for(lambda: [l for _, l, v in series(metrics(base), "DCGM_FI_DEV_XID_ERRORS")
                            if dict(l)["gpu"] == "2" and v == "48"], 5)
    check(xid and len(xid) == 2 and all([k for k, _ in l][-5:] == ["container", "err_code", "err_msg", "namespace", "pod"] and
                                        dict(l)["err_code"] == "48" and
                                        dict(l)["err_msg"] == "Double Bit ECC Error" for l in xid),
          "Xid 48 on a time-sliced GPU: err_code, err_msg between container and namespace, per container (%s)" % xid[:1])
    idle = [l for _, l, _ in series(metrics(base), "DCGM_FI_DEV_XID_ERRORS") if dict(l)["gpu"] == "0" and dict(l)["GPU_I_ID"] == "3"]
    check(idle and dict(idle[0]).get("err_code") == "0" and dict(idle[0]).get("err_msg") == "No Error" and
          "pod" not in dict(idle[0]), "no Xid yet: err_code 0, No Error, no pod labels")
    text = metrics(base)
    check(value(text, "gpunode_exporter_pod_attribution_up ") == 1 and
          value(text, "gpunode_exporter_pod_attribution_errors_total ") == 0, "attribution_up 1, no errors")
    promtool_ok(text, "pod and Xid labels")
    st, _, body = get(base + "/health")
    check(st == 200 and body == b"ok\n", "/health ok (%r)" % body[:100])

    # a kubelet that hangs: List times out (half the 1 s interval); series stay, without pod labels
    stop_kubelet(kl, root)
    kl = start_kubelet(root, "hang")
    text = wait_for(lambda: (lambda t: t if value(t, "gpunode_exporter_pod_attribution_up ") == 0 else None)(metrics(base)), 8)
    check(bool(text), "hanging kubelet: attribution_up 0")
    text = metrics(base)
    check(text and 'pod="' not in text and 'DCGM_FI_DEV_GPU_TEMP{gpu="2"' in text, "hanging kubelet: series served, no pod labels")
    check((value(text, "gpunode_exporter_pod_attribution_errors_total ") or 0) >= 1, "hanging kubelet: errors counted")
    st, _, body = get(base + "/health")
    check(st == 200 and b"pod attribution failing" in body and b"kubelet.sock" in body,
          "hanging kubelet: /health 200 with the reason (%r)" % body[:200])
    t0 = time.time()
    for _ in range(10):
        metrics(base)
    check(time.time() - t0 < 1, "scrapes stay fast while the kubelet hangs (%.0f ms for 10)" % ((time.time() - t0) * 1000))
    age = value(metrics(base), "gpunode_exporter_sample_age_seconds ")
    check(age is not None and 0 <= age < 3, "samples go on while the kubelet hangs (age %s)" % age)

    # restarted: the labels come back
    stop_kubelet(kl, root)
    kl = start_kubelet(root)
    check(wait_for(lambda: pod_tuples(metrics(base)) == POD_SERIES, 8), "kubelet restarted: the pod labels come back")
    check(value(metrics(base), "gpunode_exporter_pod_attribution_up ") == 1 and get(base + "/health")[2] == b"ok\n",
          "kubelet restarted: attribution_up 1, /health ok")

    # garbage instead of HTTP/2
    stop_kubelet(kl, root)
    kl = start_kubelet(root, "garbage")
    check(wait_for(lambda: value(metrics(base), "gpunode_exporter_pod_attribution_up ") == 0, 8), "garbage: attribution_up 0")
    text = metrics(base)
    check('pod="' not in text and 'DCGM_FI_DEV_GPU_TEMP{gpu="2"' in text, "garbage: series without pod labels")
    st, _, body = get(base + "/health")
    check(st == 200 and b"pod attribution failing" in body, "garbage: /health 200 with the reason (%r)" % body[:200])

    # no socket at all (a node without a kubelet)
    stop_kubelet(kl, root)
    time.sleep(1.5)
    st, _, body = get(base + "/health")
    check(st == 200 and b"no such socket" in body, "socket absent: /health 200 saying so (%r)" % body[:200])
    promtool_ok(metrics(base), "attribution failing")
    check(stop(p) == 0, "clean exit")

    # --no-kubernetes: never asked, no attribution series
    kl = start_kubelet(root)
    p, base, _ = start_exporter("nopods", attribution_desc(), "--check-interval", "0", "--root", root, "--no-kubernetes")
    text = wait_for(lambda: (lambda t: t if "GPU_I_ID" in t else None)(metrics(base)), 10) or ""
    check('pod="' not in text and "pod_attribution" not in text, "--no-kubernetes: no pod labels, no attribution series")
    check(stop(p) == 0, "clean exit")
    stop_kubelet(kl, root)


def test_lost_and_driver():
    p, base, path = start_exporter("lost", description(8), "--check-interval", "0", reload=True)
    wait_for(lambda: uuid(3) in metrics(base), 5)
    write_desc(path, description(8, lost=(3,)))
    t = wait_for(lambda: (lambda t: t if uuid(3) not in t.split("# HELP gpunode_exporter")[0] else None)(metrics(base)), 6)
    check(t and uuid(4) in t, "lost GPU: its DCGM series go, the others stay")
    check(t and 'gpunode_exporter_gpu_up{gpu="3",uuid="%s"' % uuid(3) in t and "GPU is lost" in t, "lost GPU named with its last known UUID")
    check(get(base + "/health")[0] == 200, "/health stays 200 with one GPU lost")
    write_desc(path, description(8))
    check(wait_for(lambda: ("DCGM_FI_DEV_GPU_TEMP{gpu=\"3\"" in metrics(base)), 6), "lost GPU comes back")
    write_desc(path, description(8, errors={"nvmlDeviceGetCount": 9}))
    check(wait_for(lambda: value(metrics(base), "gpunode_exporter_nvml_up ") == 0, 6), "driver unloaded: nvml_up 0")
    st, _, body = get(base + "/health")
    check(st == 503 and b"NVML" in body, "driver unloaded: /health 503 with the reason (%r)" % body[:80])
    write_desc(path, description(8))
    check(wait_for(lambda: value(metrics(base), "gpunode_exporter_nvml_up ") == 1, 8), "driver back: re-initialised, nvml_up 1")
    check(stop(p) == 0, "clean exit after recovery")


def test_blocking():
    p, base, _ = start_exporter("block", description(8, block={"call": "nvmlDeviceGetPowerUsage", "gpu": 3, "seconds": 60}),
                                "--check-interval", "0", "--sample-timeout", "1")
    time.sleep(4.5)
    worst = 0
    for _ in range(20):
        t0 = time.time()
        text = metrics(base)
        worst = max(worst, time.time() - t0)
    check(worst < 0.2, "scrapes stay fast while NVML blocks (worst %.1f ms)" % (worst * 1000))
    age = value(text, "gpunode_exporter_sample_age_seconds ")
    check(age is not None and (age < 0 or age > 3), "sample age grows (%s)" % age)
    check(value(text, "gpunode_exporter_stuck_workers ") == 1, "one stuck worker, no pile-up")
    check("DCGM_FI_DEV_GPU_TEMP{gpu=\"5\"" in text, "the replacement sampler still reads the other GPUs")
    time.sleep(3)
    check(value(metrics(base), "gpunode_exporter_stuck_workers ") == 1, "still one stuck worker later")
    nthreads = len(os.listdir("/proc/%d/task" % p.pid))
    check(nthreads <= 8, "bounded threads (%d)" % nthreads)
    st, _, body = get(base + "/health")
    check(st == 503 and b"stale" in body, "/health 503 stale (%r)" % body[:120])
    t0 = time.time()
    rc = stop(p, 10)
    check(rc == 0 and time.time() - t0 < 8, "SIGTERM with a stuck worker: exits (%.1f s)" % (time.time() - t0))


def test_absent():
    p, base, _ = start_exporter("absent", description(1), "--nvml-library", "/nonexistent/libnvidia-ml.so.1",
                                "--check-interval", "0")
    text = wait_for(lambda: (lambda t: t if "gpunode_exporter_nvml_up 0" in t else None)(metrics(base)), 5)
    check(bool(text), "NVML absent: serves, nvml_up 0")
    check(text and (value(text, 'gpunode_exporter_nvml_errors_total{call="dlopen"}') or 0) >= 1, "dlopen failures counted")
    time.sleep(1.5)
    check((value(metrics(base), 'gpunode_exporter_nvml_errors_total{call="dlopen"}') or 0) >= 2, "and retried")
    st, _, body = get(base + "/health")
    check(st == 503 and b"cannot load" in body, "NVML absent: /health 503 (%r)" % body[:100])
    check(stop(p) == 0, "clean exit")


def test_hostile():
    p, base, _ = start_exporter("hostile", description(8), "--check-interval", "0")
    port = int(base.rsplit(":", 1)[1])
    idle = []
    for _ in range(200):
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
        idle.append(s)
    slow = socket.create_connection(("127.0.0.1", port), timeout=2)
    slow.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
    big = socket.create_connection(("127.0.0.1", port), timeout=5)
    t0 = time.time()
    status = b""
    try:
        big.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (1 << 20) + b"\r\n\r\n")
    except OSError:
        pass  # the server may close while we still send
    try:
        status = big.recv(64)
    except OSError:
        pass
    check(time.time() - t0 < 5 and not status.startswith(b"HTTP/1.1 200"), "1 MB header refused (%r)" % status[:32])
    worst = 0
    for i in range(20):
        try:
            slow.sendall(b"X-Slow-%d: y\r\n" % i)
        except OSError:
            pass
        t0 = time.time()
        st, _, body = get(base + "/metrics", timeout=5)
        worst = max(worst, time.time() - t0)
        if st != 200 or b"DCGM_FI_DEV_GPU_TEMP" not in body:
            worst = 99
        time.sleep(0.1)
    check(worst < 1, "good client served beside 200 idle, a slowloris and a huge header (worst %.1f ms)" % (worst * 1000))
    for s in idle + [slow, big]:
        s.close()
    check(stop(p) == 0, "clean exit")


def test_idle_flood():
    """520 idle connections from one address (127.0.0.2) and a new one every 0.2 s, as a misbehaving
    scraper opens them; good clients on 127.0.0.1 must keep getting 200, and every idle connection the
    server accepted must be closed within the 10 s limit (plus a margin for this loop's polling)."""
    import select
    p, base, _ = start_exporter("idleflood", description(2), "--check-interval", "0")
    port = int(base.rsplit(":", 1)[1])
    opened = {}  # fd -> (socket, time opened)
    lifetimes, refused, failed = [], 0, []

    def open_idle(i):
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=2, source_address=("127.0.0.2", 0))
            if i % 2:
                s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # half a request, never finished
            s.setblocking(False)
            opened[s.fileno()] = (s, time.time())
        except OSError:
            pass

    def reap(timeout_ms):
        nonlocal refused
        poll = select.poll()
        for fd in opened:
            poll.register(fd, select.POLLIN)
        for fd, _ in poll.poll(timeout_ms):
            s, t0 = opened.pop(fd)
            try:
                data = s.recv(256)
            except OSError:
                data = b""
            if data.startswith(b"HTTP/1.1 503"):
                refused += 1
            else:
                lifetimes.append(time.time() - t0)
            s.close()

    for i in range(520):
        open_idle(i)
    start = time.time()
    good, n = 0, 520
    next_tick = start
    while time.time() < start + 23:
        reap(20)
        if time.time() < next_tick:
            continue
        next_tick += 0.2
        open_idle(n)
        n += 1
        for path in ("/metrics", "/health"):
            try:
                st = get(base + path, timeout=5)[0]
            except Exception as e:
                st = repr(e)
            if st == 200:
                good += 1
            else:
                failed.append(st)
    reap(0)
    now = time.time()
    stuck = [now - t0 for _, t0 in opened.values() if now - t0 > 13]
    print("# idle flood: %d refused, %d closed (longest %.1f s), %d open past 13 s (longest %.1f s); good: %d ok, %d failed"
          % (refused, len(lifetimes), max(lifetimes or [0]), len(stuck), max(stuck or [0]), good, len(failed)), flush=True)
    check(not failed, "good clients beside a flood of idle connections: all 200 (%d failed: %s)" % (len(failed), failed[:3]))
    check(not stuck and max(lifetimes or [0]) <= 13,
          "idle connections closed within 10 s (+3 s margin): longest %.1f s, %d still open past 13 s"
          % (max(lifetimes + stuck or [0]), len(stuck)))
    check(refused >= 520 - 256, "one address holds at most half of the 512 slots (%d of its connections refused)" % refused)
    for s, _ in opened.values():
        s.close()
    check(stop(p) == 0, "clean exit")


def children(pid):
    """Returns [(pid, state)] of the processes whose parent is pid."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                stat = open("/proc/%s/stat" % d).read()
            except OSError:
                continue
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) == pid:
                out.append((int(d), fields[0]))
    return out


def test_check_child():
    # On a root where the driver is loaded, the check child's NVML probe blocks (10 s, its own timeout);
    # the check timeout (2 s) kills it first.
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios", "nvml-call-blocks", "root")
    p, base, _ = start_exporter("checkhang", description(8, block={"call": "nvmlDeviceGetPowerUsage", "gpu": 3, "seconds": 60}),
                                "--check-interval", "1", "--check-timeout", "2", "--sample-timeout", "1", "--root", root)
    most = 0
    deadline = time.time() + 9
    text = ""
    while time.time() < deadline:
        kids = children(p.pid)
        most = max(most, len(kids))
        text = metrics(base)
        if (value(text, 'gpunode_exporter_check_runs_total{result="timeout"}') or 0) >= 2:
            break
        time.sleep(0.1)
    check(value(text, "gpunode_exporter_check_timed_out ") == 1, "a hanging check child: check_timed_out 1")
    check((value(text, 'gpunode_exporter_check_runs_total{result="timeout"}') or 0) >= 2, "killed, and the next round runs")
    check(most <= 1, "never more than one check child (%d seen)" % most)
    time.sleep(0.3)
    zombies = [k for k, st in children(p.pid) if st == "Z"]
    check(not zombies, "no zombies (%s)" % zombies)
    check("DCGM_FI_DEV_GPU_TEMP{gpu=\"5\"" in text and get(base + "/health")[0] in (200, 503), "the exporter serves on")
    kids = [k for k, _ in children(p.pid)]
    t0 = time.time()
    rc = stop(p, 10)
    check(rc == 0 and time.time() - t0 < 5, "SIGTERM while a check child runs: exits (%.1f s)" % (time.time() - t0))
    time.sleep(0.2)
    check(not [k for k in kids if os.path.exists("/proc/%d" % k)], "the check child does not outlive the exporter")


CAP_SYSLOG = 34


def proc_status(path):
    """Returns {field: value} of a /proc status file, {} when it is gone."""
    try:
        with open(path) as f:
            return dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
    except OSError:
        return {}


def test_capabilities():
    # Once NVML is open and the socket bound, every thread keeps only CAP_SYSLOG (for the check
    # children's /dev/kmsg), in the bounding, permitted and effective sets, nothing inheritable or
    # ambient, and no_new_privs; a check child started after that has the same. The check root makes
    # the child block in NVML (as in test_check_child) so that it lives long enough to be read.
    mine = proc_status("/proc/self/status")
    root_user = os.geteuid() == 0 and int(mine.get("CapEff", "0"), 16) != 0
    keep = int(mine.get("CapBnd", "0"), 16) & (1 << CAP_SYSLOG)
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scenarios", "nvml-call-blocks", "root")
    p, base, _ = start_exporter("caps", description(8, block={"call": "nvmlDeviceGetPowerUsage", "gpu": 3, "seconds": 60}),
                                "--check-interval", "1", "--check-timeout", "3", "--sample-timeout", "1", "--root", root)
    before = set()
    deadline = time.time() + 10
    while time.time() < deadline and proc_status("/proc/%d/status" % p.pid).get("NoNewPrivs") != "1":
        before |= {k for k, _ in children(p.pid)}
        time.sleep(0.05)
    before |= {k for k, _ in children(p.pid)}
    time.sleep(0.2)  # threads busy in a call handle the request when it returns
    want = {"CapEff": keep, "CapPrm": keep, "CapBnd": keep, "CapInh": 0, "CapAmb": 0} if root_user else {}
    tasks = sorted(os.listdir("/proc/%d/task" % p.pid))
    bad = []
    for t in tasks:
        st = proc_status("/proc/%d/task/%s/status" % (p.pid, t))
        if st.get("NoNewPrivs") != "1" or any(int(st.get(k, "-1"), 16) != v for k, v in want.items()):
            bad.append((t, {k: st.get(k) for k in ("CapEff", "CapBnd", "NoNewPrivs")}))
    check(not bad and len(tasks) >= 3, "every thread (%d) keeps CAP_SYSLOG only, no_new_privs (%s)" % (len(tasks), bad))
    kid_st = {}
    deadline = time.time() + 10
    while time.time() < deadline and not kid_st:
        for k, state in children(p.pid):
            if k not in before and state != "Z":
                st = proc_status("/proc/%d/status" % k)
                if st.get("Name") == "gpunode":
                    kid_st = st
        time.sleep(0.05)
    check(kid_st.get("NoNewPrivs") == "1" and all(int(kid_st.get(k, "-1"), 16) == v for k, v in want.items()),
          "a check child started after the drop: the same (%s)" % {k: kid_st.get(k) for k in ("CapEff", "CapBnd", "NoNewPrivs")})
    if not root_user:
        print("skip capability sets not checked: the tests do not run as root (no_new_privs was)", flush=True)
    check("DCGM_FI_DEV_GPU_TEMP{gpu=\"5\"" in metrics(base), "the exporter samples and serves on")
    check(stop(p) == 0, "clean exit")
    # a diagnosis started after the drop still runs and is accepted
    p, base, _ = start_exporter("caps-ok", description(2), "--check-interval", "1")
    wait_for(lambda: proc_status("/proc/%d/status" % p.pid).get("NoNewPrivs") == "1", 10)
    ok = 'gpunode_exporter_check_runs_total{result="ok"}'
    first = value(metrics(base), ok) or 0
    later = wait_for(lambda: (value(metrics(base), ok) or 0) > first, 10)
    check(later, "a check child started after the drop succeeds (ok runs %s, then %s)" % (first, value(metrics(base), ok)))
    check(stop(p) == 0, "clean exit")


def test_http_protocol():
    p, base, _ = start_exporter("proto", description(2), "--check-interval", "0")
    port = int(base.rsplit(":", 1)[1])

    def exchange(data, shut=True):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.sendall(data)
        if shut:
            s.shutdown(socket.SHUT_WR)  # half-closed: the answers must still come
        got = b""
        try:
            while True:
                b = s.recv(65536)
                if not b:
                    break
                got += b
        except OSError:
            pass
        s.close()
        return got
    got = exchange(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\nHEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
                   b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n")
    check(got.count(b"HTTP/1.1 ") == 3 and b"HTTP/1.1 404" in got and got.endswith(b"not found\n"),
          "pipelined requests on a half-closed socket: three answers in order")
    head = got.split(b"HTTP/1.1 ")[2]
    check(b"Content-Length: " in head and b"# HELP" not in head, "HEAD: the length, no body")
    got = exchange(b"GET / HTTP/1.0\r\n\r\n", shut=False)
    check(got.startswith(b"HTTP/1.1 200") and b"Connection: close" in got and b"/metrics" in got, "HTTP/1.0: answered, then closed")
    got = exchange(b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nabcd")
    check(got.startswith(b"HTTP/1.1 405") and b"Allow: GET, HEAD" in got, "POST: 405")
    check(exchange(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", shut=False).startswith(b"HTTP/1.1 400"), "TLS hello: 400, closed")
    check(exchange(b"GET / HTTP/2.0\r\nHost: x\r\n\r\n", shut=False).startswith(b"HTTP/1.1 505"), "HTTP/2.0: 505")
    many = []
    try:
        for _ in range(530):
            many.append(socket.create_connection(("127.0.0.1", port), timeout=5))
    except OSError:
        pass
    time.sleep(0.3)
    last = many[-1]
    last.settimeout(3)
    try:
        over = last.recv(100)
    except OSError:
        over = b""
    check(over.startswith(b"HTTP/1.1 503") or over == b"", "past the limits (half of 512 from one address): 503 and close (%r)" % over[:20])
    for s in many:
        s.close()
    time.sleep(0.3)
    check(get(base + "/metrics")[0] == 200, "served again once they are gone")
    check(stop(p) == 0, "clean exit")


def test_collectors_csv():
    """dcgm-exporter's -f CSV and DCGM_EXPORTER_INTERVAL: only the CSV's counters, with its help texts."""
    csv = os.path.join(TMP, "three.csv")
    with open(csv, "w") as f:
        f.write("# Format\n# DCGM FIELD, Prometheus metric type, help message\n\n"
                "DCGM_FI_DEV_GPU_TEMP,    gauge, Temperature of the GPU (from the CSV).\n"
                "DCGM_FI_DEV_POWER_USAGE, gauge, Power from the CSV (in W).\n"
                "# DCGM_FI_DEV_SM_CLOCK, gauge, commented out\n"
                "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, \"Energy, from the CSV \\ (in mJ).\"\n"
                "DCGM_FI_DRIVER_VERSION, label, Driver Version\n")
    path = os.path.join(TMP, "csv.json")
    write_desc(path, description(2))
    port = free_port()
    env = dict(os.environ, GPUNODE_FAKE_NVML=path, NODE_NAME="test-node", DCGM_EXPORTER_INTERVAL="1000",
               DCGM_EXPORTER_COLLECTORS=csv, DCGM_EXPORTER_LISTEN="127.0.0.1:%d" % port)
    log = open(os.path.join(TMP, "csv.log"), "w")
    p = subprocess.Popen([GPUNODE, "exporter", "--nvml-library", FAKE, "--check-interval", "0"], env=env, stdout=log,
                         stderr=log)
    PROCS.append(p)
    base = "http://127.0.0.1:%d" % port
    text = wait_for(lambda: (lambda t: t if "DCGM_FI_DEV_GPU_TEMP{" in t else None)(metrics_or_empty(base)), 10) or ""
    families = {l.split()[2] for l in text.splitlines() if l.startswith("# TYPE ")}
    dcgm = {f for f in families if f.startswith("DCGM_")}
    check(dcgm == {"DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"},
          "only the CSV's three DCGM families: %s" % sorted(dcgm))
    check(all(f.startswith("DCGM_") or f.startswith("gpunode_exporter_") for f in families) and
          "gpunode_exporter_nvml_up" in families, "plus gpunode's own")
    check("# HELP DCGM_FI_DEV_GPU_TEMP Temperature of the GPU (from the CSV).\n" in text and
          "# HELP DCGM_FI_DEV_POWER_USAGE Power from the CSV (in W).\n" in text and
          "# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Energy, from the CSV \\\\ (in mJ).\n" in text,
          "the CSV's help texts (quoted, the backslash escaped)")
    check("# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n" in text, "the CSV's type")
    check('DCGM_FI_DRIVER_VERSION="550.54.15"' in text, "DCGM_FI_DRIVER_VERSION named: the label stays")
    n = value(text, "gpunode_exporter_samples_total ")
    time.sleep(2.5)
    n2 = value(metrics_or_empty(base), "gpunode_exporter_samples_total ")
    check(n is not None and n2 is not None and 1 <= n2 - n <= 4, "DCGM_EXPORTER_INTERVAL=1000 samples each second (%s -> %s)" % (n, n2))
    r = subprocess.run(["promtool", "check", "metrics"], input=text.encode(), capture_output=True, timeout=30)
    out = (r.stdout + r.stderr).decode()
    bad = [l for l in out.splitlines() if l.strip() and not (l.startswith("DCGM_FI_") and any(k in l for k in DCGM_LINT))]
    check(r.returncode in (0, 3) and not bad, "promtool check metrics with the CSV's help texts: %s" % bad[:3])
    check(stop(p) == 0, "SIGTERM: clean exit 0")


OPT_IN = ("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_POWER_VIOLATION", "DCGM_FI_DEV_THERMAL_VIOLATION",
          "DCGM_FI_DEV_PCIE_LINK_GEN", "DCGM_FI_DEV_PCIE_LINK_WIDTH", "DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL",
          "DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", "DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
          "DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL")


def test_opt_in_counters():
    """The clock, PCIe and NVLink error counters are opt-in: absent by default, served when a CSV names them."""
    d = description(2)
    for i, g in enumerate(d["gpus"]):
        g["clocks_event_reasons"] = 0x88 if i == 1 else 0x1
        g["violation"] = {"power_ns": 2500000000 * (i + 1), "thermal_ns": 7000}
        g["pcie"] = {"width": 16 if i == 0 else 8, "width_max": 16, "gen": 5, "gen_max": 5, "gen_gpu_max": 5}
        g["nvlinks"] = [{"active": True, "replay": 1, "recovery": 0, "crc_flit": 3 * i, "crc_data": 2}] * 18
        g["nvlinks"][17] = {"active": False, "replay": 99}  # an inactive link does not count
    p, base, _ = start_exporter("optin-default", d)
    text = wait_for(lambda: (lambda t: t if "DCGM_FI_DEV_GPU_TEMP{" in t else None)(metrics_or_empty(base)), 10) or ""
    check(text and not any(name in text for name in OPT_IN), "without a CSV no opt-in counter is served")
    stop(p)
    csv = os.path.join(TMP, "optin.csv")
    with open(csv, "w") as f:
        f.write("DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n")
        for name in OPT_IN:
            kind = "gauge" if name in ("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "DCGM_FI_DEV_PCIE_LINK_GEN",
                                       "DCGM_FI_DEV_PCIE_LINK_WIDTH") else "counter"
            f.write("%s, %s, %s from the CSV.\n" % (name, kind, name))
    p, base, _ = start_exporter("optin", d, "-f", csv)
    text = wait_for(lambda: (lambda t: t if "DCGM_FI_DEV_PCIE_LINK_WIDTH{" in t else None)(metrics_or_empty(base)), 10) or ""
    families = {l.split()[2] for l in text.splitlines() if l.startswith("# TYPE ") and l.split()[2].startswith("DCGM_")}
    check(families == set(OPT_IN) | {"DCGM_FI_DEV_GPU_TEMP"}, "the CSV's opt-in counters are served: %s" % sorted(families))
    def v(name, gpu):
        return value(text, '%s{gpu="%d",' % (name, gpu))
    check(v("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", 0) == 1 and v("DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", 1) == 0x88,
          "clock throttle reasons: the NVML bit mask (idle 1, HW slowdown and power brake 136)")
    check(v("DCGM_FI_DEV_POWER_VIOLATION", 0) == 2500000 and v("DCGM_FI_DEV_POWER_VIOLATION", 1) == 5000000 and
          v("DCGM_FI_DEV_THERMAL_VIOLATION", 0) == 7, "violation times in DCGM's microseconds")
    check(v("DCGM_FI_DEV_PCIE_LINK_GEN", 1) == 5 and v("DCGM_FI_DEV_PCIE_LINK_WIDTH", 0) == 16 and
          v("DCGM_FI_DEV_PCIE_LINK_WIDTH", 1) == 8, "PCIe link generation and width")
    check(v("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", 1) == 51 and
          v("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL", 0) == 34 and
          v("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL", 0) == 17 and
          v("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", 0) == 0, "NVLink error totals over the active links")
    check("# TYPE DCGM_FI_DEV_POWER_VIOLATION counter\n" in text and "# TYPE DCGM_FI_DEV_PCIE_LINK_GEN gauge\n" in text,
          "types as dcgm-exporter's")
    r = subprocess.run(["promtool", "check", "metrics"], input=text.encode(), capture_output=True, timeout=30)
    out = (r.stdout + r.stderr).decode()
    bad = [l for l in out.splitlines() if l.strip() and not (l.startswith("DCGM_FI_") and any(k in l for k in DCGM_LINT))]
    check(r.returncode in (0, 3) and not bad, "promtool check metrics with the opt-in counters: %s" % bad[:3])
    check(stop(p) == 0, "SIGTERM: clean exit 0")


def metrics_or_empty(base):
    try:
        return metrics(base)
    except Exception:
        return ""


def main():
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError("suite took too long")))
    signal.alarm(560)
    try:
        for t in (test_promtool_and_http, test_mig, test_profiling, test_pod_attribution, test_prometheus, test_lost_and_driver, test_blocking, test_absent, test_hostile,
                  test_idle_flood, test_check_child, test_capabilities, test_http_protocol, test_collectors_csv,
                  test_opt_in_counters):
            if os.environ.get("EXPORTER_TESTS") and t.__name__ not in os.environ["EXPORTER_TESTS"].split(","):
                continue  # EXPORTER_TESTS=test_a,test_b runs only those
            print("# " + t.__name__, flush=True)
            try:
                t()
            except Exception as e:  # a test that crashed is a failure, the others still run
                check(False, "%s raised %r" % (t.__name__, e))
    finally:
        signal.alarm(0)
        H.stop_all()
        if H.failed:
            for name in os.listdir(TMP):
                if name.endswith(".log"):
                    print("--- %s" % name)
                    print(open(os.path.join(TMP, name)).read()[-2000:])
        shutil.rmtree(TMP, ignore_errors=True)
    return H.summary("exporter")


if __name__ == "__main__":
    sys.exit(main())
