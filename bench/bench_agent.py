#!/usr/bin/python3
# bench_agent.py: `gpunode agent`'s Xid-to-patch latency, resident memory, and API write volume.
"""usage: bench_agent.py GPUNODE FAKE_NVML   (e.g. build/gpunode build/tests/libfake-nvml.so)

Against the HTTPS API stand-in (tests/kube-server/kube_server.py) and the fake NVML:
1. Xid-to-patch latency: the agent runs healthy with 60 s rounds; at t0 the NVML description is
   swapped (atomically, GPUNODE_FAKE_NVML_RELOAD=1) for one where GPU 3 is lost and GPU 0 reports
   Xid 79, and the root for the k8s-gpu-lost scenario's (its kernel log names the fault); the time
   until the stand-in's request log holds the GPUHardwareProblem=True PATCH. Repeated with a fresh agent.
   This includes the fake's reload (at the exporter's next sample, --interval 1s).
2. Resident memory (VmRSS, VmHWM from /proc/PID/status) of the agent alone and with its children
   (the diagnosis and labels children, sampled), at 8 and 64 fake GPUs, and of Debian's
   prometheus-node-exporter in the same run, with ratios.
3. API writes in steady state with --heartbeat 10s over 20 s: writes and request bytes, scaled to an
   hour and to 10,000 nodes. Not a test: prints figures."""
import json, os, shutil, signal, socket, ssl, subprocess, sys, tempfile, threading, time, urllib.request

here = os.path.dirname(os.path.abspath(__file__))
tests = os.path.join(os.path.dirname(here), "tests")
gpunode, fake_nvml = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
tmp = tempfile.mkdtemp(prefix="bench-agent.")
procs = []
SC = os.path.join(tests, "scenarios")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def start_printing_port(cmd, out):
    f = open(out, "w")
    p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.DEVNULL)
    procs.append(p)
    for _ in range(100):
        t = open(out).read().strip()
        if t.isdigit():
            return p, int(t)
        time.sleep(0.1)
    raise SystemExit("server did not start: %s" % cmd)


def status_kb(pid, key):
    try:
        for line in open("/proc/%d/status" % pid):
            if line.startswith(key + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def descendants(pid):
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            kids = open("/proc/%d/task/%d/children" % (p, p)).read().split()
        except OSError:
            kids = []
        for k in map(int, kids):
            out.append(k)
            todo.append(k)
    # threads' children too
    try:
        for t in os.listdir("/proc/%d/task" % pid):
            for k in map(int, open("/proc/%d/task/%s/children" % (pid, t)).read().split()):
                if k not in out:
                    out.append(k)
    except OSError:
        pass
    return out


subprocess.run(["sh", os.path.join(tests, "kube-server", "make-certs.sh"), tmp + "/certs"], check=True,
               stdout=subprocess.DEVNULL)
api = tmp + "/api"
shutil.copytree(os.path.join(SC, "k8s-healthy", "api"), api)
metrics_srv, metrics_port = start_printing_port(
    ["/usr/bin/python3", os.path.join(tests, "kube-server", "metrics_server.py"), "--dir",
     os.path.join(SC, "k8s-healthy", "metrics"), "--lifetime", "600"], tmp + "/metrics.out")
kube_srv, api_port = start_printing_port(
    ["/usr/bin/python3", os.path.join(tests, "kube-server", "kube_server.py"), "--certs", tmp + "/certs",
     "--responses", api, "--token", "agent-token-0123456789", "--lifetime", "600", "--log", tmp + "/requests.log"],
    tmp + "/api.out")
with open(tmp + "/kubeconfig", "w") as f:
    f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: t\n  cluster:\n    server: https://127.0.0.1:%d\n"
            "    certificate-authority: %s/certs/ca.crt\nusers:\n- name: t\n  user:\n    token: agent-token-0123456789\n"
            "contexts:\n- name: t\n  context: {cluster: t, user: t}\ncurrent-context: t\n" % (api_port, tmp))
ctx = ssl.create_default_context(cafile=tmp + "/certs/ca.crt")

healthy_desc = json.load(open(os.path.join(SC, "k8s-healthy", "nvml.json")))
desc_file = tmp + "/nvml.json"


def put_desc(d):
    with open(desc_file + ".new", "w") as f:
        json.dump(d, f)
    os.replace(desc_file + ".new", desc_file)


root = tmp + "/root"


def set_root(scenario):
    os.symlink(os.path.join(SC, scenario, "root"), root + ".new")
    os.replace(root + ".new", root)


env = dict(os.environ, NODE_NAME="k8s-healthy", GPUNODE_FAKE_NVML=desc_file, GPUNODE_FAKE_NVML_RELOAD="1")
for k in ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "http_proxy", "https_proxy", "HTTPS_PROXY", "HTTP_PROXY"):
    env.pop(k, None)


def start_agent(port, *extra, labels=False):
    p = subprocess.Popen([gpunode, "agent", "--listen", "127.0.0.1:%d" % port, "--root", root, "--nvml-library", fake_nvml,
                          "--kubeconfig", tmp + "/kubeconfig", "--event-hold-down", "0", "--api-backoff-max", "2s",
                          "--timeout", "3s", "--interval", "1s",
                          "--dcgm-url", "http://127.0.0.1:%d/dcgm/metrics" % metrics_port,
                          "--node-exporter-url", "http://127.0.0.1:%d/node/metrics" % metrics_port] +
                         ([] if labels else ["--no-labels"]) + list(extra),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    procs.append(p)
    lines = []

    def reader():
        for l in p.stderr:
            lines.append((time.monotonic(), l.decode(errors="replace").rstrip()))
    threading.Thread(target=reader, daemon=True).start()
    return p, lines


def get(url, timeout=10):
    try:
        return urllib.request.urlopen(url, timeout=timeout).read()
    except Exception:
        return None


def requests():
    out = []
    if not os.path.exists(tmp + "/requests.log"):
        return out
    for line in open(tmp + "/requests.log"):
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def hw_status_patches(entries):
    """Returns the GPUHardwareProblem statuses PATCHed to nodes/status, in order."""
    out = []
    for e in entries:
        if e.get("method") == "PATCH" and e.get("path", "").endswith("/status") and isinstance(e.get("body"), dict):
            for c in e["body"].get("status", {}).get("conditions", []):
                if c.get("type") == "GPUHardwareProblem":
                    out.append(c.get("status"))
    return out


def wait(pred, timeout=30, step=0.01):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return None


def summary(xs):
    xs = sorted(xs)
    return "min %.0f ms, median %.0f ms, max %.0f ms (n=%d)" % (xs[0], xs[len(xs) // 2], xs[-1], len(xs))


try:
    # 1. Xid-to-patch latency
    lost = json.loads(json.dumps(healthy_desc))
    lost["gpus"][3]["lost"] = True
    lost["gpus"][0]["xid_events"] = [79]
    lat, to_xid = [], []
    for i in range(3):  # a fresh agent each time: the fake delivers a GPU's Xids once
        put_desc(healthy_desc)
        set_root("k8s-healthy")
        port = free_port()
        n = len(requests())
        agent, lines = start_agent(port, "--check-interval", "60s", "--heartbeat", "300s")
        if not wait(lambda: hw_status_patches(requests()[n:])[-1:] == ["False"], 60):
            raise SystemExit("the agent did not write its conditions")
        time.sleep(1.5)  # past XID_MIN_GAP_MS of the first round
        n = len(requests())
        nl = len(lines)
        t0 = time.monotonic()
        set_root("k8s-gpu-lost")
        put_desc(lost)
        ok = wait(lambda: "True" in hw_status_patches(requests()[n:]), 30)
        t1 = time.monotonic()
        agent.send_signal(signal.SIGTERM)
        agent.wait(10)
        if not ok:
            print("round %d: no GPUHardwareProblem=True patch within 30 s" % i)
            continue
        lat.append((t1 - t0) * 1000)
        x = [t for t, l in lines[nl:] if "Xid event" in l]
        if x:
            to_xid.append((x[0] - t0) * 1000)
    if lat:
        print("Xid-to-patch latency (inject -> GPUHardwareProblem=True PATCH at the API): %s" % summary(lat))
    if to_xid:
        print("  of which inject -> the agent sees the Xid (fake NVML reload + event wait): %s" % summary(to_xid))

    # 3. API writes in steady state, --heartbeat 10s, 1 s rounds
    put_desc(healthy_desc)
    set_root("k8s-healthy")
    port = free_port()
    agent, lines = start_agent(port, "--check-interval", "1s", "--heartbeat", "10s")
    wait(lambda: hw_status_patches(requests())[-1:] == ["False"], 60)
    time.sleep(3)
    n = len(requests())
    T = 20
    time.sleep(T)
    w = [e for e in requests()[n:] if e.get("method") in ("PATCH", "POST", "PUT")]
    nbytes = sum(len(json.dumps(e["body"], separators=(",", ":"))) if isinstance(e.get("body"), (dict, list))
                 else len(e.get("body") or "") for e in w)
    gets = len([e for e in requests()[n:] if e.get("method") == "GET"])
    per_h = len(w) * 3600.0 / T
    per_write = nbytes / len(w) if w else 0
    print("steady state (--heartbeat 10s, 1 s rounds, %d s): %d write(s), %d GET(s), %.0f request-body bytes per write"
          % (T, len(w), gets, per_write))
    print("  scaled: %.0f writes/hour/node, %.0f KiB/hour/node; 10,000 nodes: %.0f writes/hour (%.1f/s), %.1f MiB/hour"
          % (per_h, per_h * per_write / 1024, per_h * 10000, per_h * 10000 / 3600, per_h * per_write * 10000 / 2 ** 20))
    print("  (the default --heartbeat 5m: %.0f writes/hour/node, 10,000 nodes %.0f/hour)" % (3600 / 300, 3600 / 300 * 10000))
    agent.send_signal(signal.SIGTERM)
    agent.wait(10)

    # 2. resident memory at 8 and 64 GPUs, with the labels child, and node-exporter
    results = {}
    for ngpu in (8, 64):
        d = json.loads(json.dumps(healthy_desc))
        base = d["gpus"]
        gpus = []
        for i in range(ngpu):
            g = json.loads(json.dumps(base[i % len(base)]))
            g["minor_number"] = i
            g["uuid"] = "GPU-%08x-0000-0000-0000-%012x" % (i, i)
            g["pci_bus_id"] = "00000000:%02X:00.0" % (0x10 + i)
            gpus.append(g)
        d["gpus"] = gpus
        put_desc(d)
        port = free_port()
        agent, lines = start_agent(port, "--check-interval", "2s", "--heartbeat", "300s", "--labels-output",
                                   tmp + "/gfd", labels=True)
        wait(lambda: get("http://127.0.0.1:%d/metrics" % port, 2), 30, 0.2)
        peak_total, peak_child_hwm = 0, 0
        end = time.monotonic() + 10
        k = 0
        while time.monotonic() < end:
            if k % 10 == 0:
                get("http://127.0.0.1:%d/metrics" % port)
                get("http://127.0.0.1:%d/report" % port)
            k += 1
            kids = descendants(agent.pid)
            tot = status_kb(agent.pid, "VmRSS") + sum(status_kb(c, "VmRSS") for c in kids)
            peak_total = max(peak_total, tot)
            peak_child_hwm = max([peak_child_hwm] + [status_kb(c, "VmHWM") for c in kids])
            time.sleep(0.05)
        results[ngpu] = (status_kb(agent.pid, "VmRSS"), status_kb(agent.pid, "VmHWM"), peak_total, peak_child_hwm)
        agent.send_signal(signal.SIGTERM)
        agent.wait(10)
    ne_port = free_port()
    ne = subprocess.Popen(["/usr/bin/prometheus-node-exporter", "--web.listen-address=127.0.0.1:%d" % ne_port],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    procs.append(ne)
    wait(lambda: get("http://127.0.0.1:%d/metrics" % ne_port, 2), 30, 0.2)
    for _ in range(5):
        get("http://127.0.0.1:%d/metrics" % ne_port)
        time.sleep(0.2)
    ne_rss, ne_hwm = status_kb(ne.pid, "VmRSS"), status_kb(ne.pid, "VmHWM")
    print("prometheus-node-exporter after 5 scrapes: VmRSS %d KiB, VmHWM %d KiB" % (ne_rss, ne_hwm))
    for ngpu, (rss, hwm, tot, chwm) in results.items():
        print("agent, %d GPUs: VmRSS %d KiB, VmHWM %d KiB (%.2fx / %.2fx node-exporter); with children (peak sampled "
              "sum of VmRSS) %d KiB (%.2fx), largest child VmHWM %d KiB"
              % (ngpu, rss, hwm, rss / ne_rss, hwm / ne_hwm, tot, tot / ne_rss, chwm))
finally:
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            p.kill()
    shutil.rmtree(tmp, ignore_errors=True)
