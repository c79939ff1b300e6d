#!/usr/bin/python3
# run-agent-tests.py: end-to-end tests of `gpunode agent` against the HTTPS API stand-in and the fake NVML.
"""usage: run-agent-tests.py GPUNODE FAKE_NVML

Healthy node (conditions False, the kubelet's Ready and another tool's condition kept), a driver
failure (layer 1 True, a Warning Event, the layers above Unknown), healing (a Normal Event, back to
False), flapping (bounded Events), the API down then back, 409 once, 403 (the log names the
permission), the taint's circuit breaker, a huge answer, U+0000 in an annotation of the Node; then with
a hold-down: flapping (Events bounded by the hold-down; condition PATCHes bounded by the conditions'
hold-down), an Event refused alone is retried; the labels loop; SIGHUP (exit 0, the labels child gone),
SIGKILL (the labels child dies with it), a lastHeartbeatTime in the future heartbeated over; then a
cluster of 2,000 GPU nodes of 5.8 KiB (the circuit breaker's list paged, the taint set).
Debian's python3, standard library only."""
import json, os, shutil, signal, subprocess, sys, tempfile, time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import harness as H  # noqa: E402

check, free_port, procs, start_printing_port = H.check, H.free_port, H.procs, H.start_printing_port
here = os.path.dirname(os.path.abspath(__file__))
tests = os.path.dirname(here)
gpunode, fake_nvml = sys.argv[1], sys.argv[2]
tmp = tempfile.mkdtemp(prefix="agent-tests.")


H.make_certs(tmp + "/certs")
# The API: the healthy scenario's recorded objects plus two more GPU nodes, one already tainted.
api = tmp + "/api"
shutil.copytree(os.path.join(tests, "scenarios", "k8s-healthy", "api"), api)
node_file = api + "/api/v1/nodes/k8s-healthy.json"
node = json.load(open(node_file))
node["status"]["conditions"].append({"type": "OtherToolProblem", "status": "False", "reason": "Fine",
                                     "message": "another tool's", "lastTransitionTime": "2026-01-01T00:00:00Z",
                                     "lastHeartbeatTime": "2026-01-01T00:00:00Z"})
# U+0000 in an annotation (the API server stores such values): before, every answer about the Node was
# refused as "not JSON", no condition was written and kubelet.api-access said the API refused gpunode
node["metadata"].setdefault("annotations", {})["example.com/nul"] = "before\u0000after"
json.dump(node, open(node_file, "w"))
for name, tainted in (("gpu-b", True), ("gpu-c", False)):
    other = json.loads(json.dumps(node))
    other["metadata"]["name"] = name
    other["metadata"]["uid"] = "uid-" + name
    other["spec"]["taints"] = [{"key": "gpunode.io/unhealthy", "value": "hardware", "effect": "NoSchedule"}] if tainted else []
    json.dump(other, open(api + "/api/v1/nodes/%s.json" % name, "w"))
metrics_srv, metrics_port = start_printing_port(
    ["/usr/bin/python3", os.path.join(tests, "kube-server", "metrics_server.py"), "--dir",
     os.path.join(tests, "scenarios", "k8s-healthy", "metrics"), "--lifetime", "200"], tmp + "/metrics.out")
kube_srv, api_port = H.start_kube_server(tmp + "/certs", api, "agent-token-0123456789", tmp + "/api.out", lifetime=200,
                                         log=tmp + "/requests.log")
H.write_kubeconfig(tmp + "/kubeconfig", api_port, tmp + "/certs/ca.crt", "agent-token-0123456789")
API = H.Api(api_port, tmp + "/certs/ca.crt", "agent-token-0123456789")
api_get = API.get


def control(body=None, path="/_control"):
    return API.control(body, path, tries=50)


def conditions():
    n = api_get("/api/v1/nodes/k8s-healthy")
    return {c["type"]: c for c in n["status"]["conditions"]}, n


def events():
    return api_get("/api/v1/namespaces/default/events").get("items", [])


wait = H.wait


# The root: a symlink switched between the healthy scenario and the broken driver (healing, flapping).
roots = {"healthy": os.path.join(tests, "scenarios", "k8s-healthy", "root"),
         "broken": os.path.join(tests, "scenarios", "k8s-driver-broken", "root")}
root = tmp + "/root"


def set_root(which):
    os.symlink(roots[which], root + ".new")
    os.replace(root + ".new", root)


set_root("healthy")
port = free_port()
log = open(tmp + "/agent.log", "w")
env = dict(os.environ, NODE_NAME="k8s-healthy", GPUNODE_FAKE_NVML=os.path.join(tests, "scenarios", "k8s-healthy", "nvml.json"))
for k in ("KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT", "http_proxy", "https_proxy", "HTTPS_PROXY", "HTTP_PROXY"):
    env.pop(k, None)


def start_agent(*extra, labels=False, interval="1s", hold_down="0", kubeconfig=None):
    p = subprocess.Popen([gpunode, "agent", "--listen", "127.0.0.1:%d" % port, "--root", root, "--nvml-library", fake_nvml,
                          "--kubeconfig", kubeconfig or tmp + "/kubeconfig", "--check-interval", interval, "--heartbeat", "30s",
                          "--event-hold-down", hold_down, "--api-backoff-max", "2s", "--timeout", "3s"] +
                         ([] if labels else ["--no-labels"]) +
                         ["--dcgm-url", "http://127.0.0.1:%d/dcgm/metrics" % metrics_port,
                          "--node-exporter-url", "http://127.0.0.1:%d/node/metrics" % metrics_port] + list(extra),
                         stdout=subprocess.DEVNULL, stderr=log, env=env)
    procs.append(p)
    return p


def event_writes(layer_type=None):
    """Returns the Event writes (method, status, message) in the request log, oldest first, of one
    condition type's layer (its message starts with the type) or all."""
    out = []
    for line in open(tmp + "/requests.log"):
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("method") not in ("POST", "PATCH") or "/events" not in e.get("path", ""):
            continue
        msg = (e.get("body") or {}).get("message", "") if isinstance(e.get("body"), dict) else ""
        if layer_type and not msg.startswith(layer_type + " is "):
            continue
        out.append((e["method"], e.get("status"), msg))
    return out


def written(w):
    return [x for x in w if x[1] in (200, 201)]


def http(path):
    st, _, body = H.http_get("http://127.0.0.1:%d%s" % (port, path))
    return st, body



def condition_patches():
    """Returns how many PATCHes of the Node's status the request log holds."""
    return len([l for l in open(tmp + "/requests.log") if '"PATCH"' in l and "/api/v1/nodes/k8s-healthy/status" in l])


def check_condition_patches(k, flips, duration):
    """The conditions' hold-down (a fifth of the 30 s heartbeat: 6 s): a flapping layer writes at most one
    worsening and one improvement per hold-down, plus the heartbeat (before: one PATCH per change, ~20 in 10 s)."""
    hold = 6.0
    bound = 2 * (int(duration / hold) + 1) + 1
    check(k <= bound, "flapping %d times in %.0f s: %d PATCH(es) of the conditions (hold-down %g s: at most %d)"
          % (flips, duration, k, hold, bound))


def patch_node_status(body):
    """PATCHes the Node's status on the stand-in (strategic merge), as another writer would."""
    import urllib.request
    req = urllib.request.Request("https://127.0.0.1:%d/api/v1/nodes/k8s-healthy/status" % api_port,
                                 data=json.dumps(body).encode(), method="PATCH",
                                 headers={"Authorization": "Bearer " + API.token,
                                          "Content-Type": "application/strategic-merge-patch+json"})
    with urllib.request.urlopen(req, context=API.ctx, timeout=5) as r:
        return json.load(r)


def heartbeat_from_the_future():
    """The node's clock ran ahead and was corrected: the agent's conditions carry a lastHeartbeatTime in 2098.
    A restarted agent (--heartbeat 5s) heartbeats over it (issue 20: 0 writes in 25 s)."""
    set_root("healthy")
    # first what an agent writes on this root (a restart then finds the same words: only the heartbeat is due)
    p = start_agent("--heartbeat", "5s", interval="1s")
    check(wait(lambda: conditions()[0]["GPUHardwareProblem"]["status"] == "False") is not None,
          "future case: the agent writes its conditions")
    time.sleep(2)
    p.send_signal(signal.SIGTERM)
    p.wait(10)
    cur = conditions()[0]
    ours = [dict(cur[t], lastHeartbeatTime="2098-01-01T00:00:00Z") for t in
            ("GPUHardwareProblem", "GPUContainerRuntimeProblem", "GPUResourceExposureProblem", "GPUObservabilityProblem")
            if t in cur]
    patch_node_status({"status": {"conditions": ours}})
    check(conditions()[0]["GPUHardwareProblem"]["lastHeartbeatTime"] == "2098-01-01T00:00:00Z",
          "future case: the stored heartbeat lies in 2098")
    p = start_agent("--heartbeat", "5s", interval="1s")
    fixed = wait(lambda: conditions()[0]["GPUHardwareProblem"]["lastHeartbeatTime"] < "2098", 15)
    check(bool(fixed), "a lastHeartbeatTime in the future is heartbeated over (%s)" %
          conditions()[0]["GPUHardwareProblem"]["lastHeartbeatTime"])
    p.send_signal(signal.SIGTERM)
    p.wait(10)


def settle_event_writes(quiet=1.0, timeout=5.0):
    """Waits until no Event write came for QUIET seconds (at most TIMEOUT). Returns nothing."""
    end = time.time() + timeout
    n = len(event_writes())
    last = time.time()
    while time.time() < end and time.time() - last < quiet:
        time.sleep(0.1)
        k = len(event_writes())
        if k != n:
            n, last = k, time.time()


def children_of(pid):
    """Returns {pid: cmdline} of the live processes whose parent is pid."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            stat = open("/proc/%s/stat" % d).read()
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[1]) == pid and fields[0] != "Z":
                out[int(d)] = open("/proc/%s/cmdline" % d, "rb").read().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError):
            pass
    return out


def alive(pid):
    """Returns whether pid runs (a zombie, or a pid taken by another command line, is gone)."""
    try:
        stat = open("/proc/%d/stat" % pid).read()
        return stat[stat.rindex(")") + 2] != "Z"
    except OSError:
        return False


def labels_child(p):
    """Waits for the agent p's `gpunode labels` child. Returns its pid, or None."""
    return wait(lambda: next((k for k, v in children_of(p.pid).items() if " labels " in v + " "), None), 15)


def sighup_stops_agent(p, labels_out):
    """SIGHUP stops the agent as SIGTERM does: exit 0, its labels child gone, the labels file no longer written
    (issue 20: the agent died of the signal and the child lived on under PID 1)."""
    child = labels_child(p)
    check(child is not None, "SIGHUP case: the agent runs its labels child")
    p.send_signal(signal.SIGHUP)
    try:
        rc = p.wait(15)
    except subprocess.TimeoutExpired:
        rc = None
    check(rc == 0, "SIGHUP: the agent exits 0 (%s)" % rc)
    check("Hangup, stopping" in open(tmp + "/agent.log").read(), "SIGHUP: the agent logs its clean stop")
    gone = wait(lambda: child is not None and not alive(child), 5)
    check(bool(gone), "SIGHUP: the labels child %s is gone" % child)
    left = [pid for pid, cmd in children_of(1).items() if labels_out in cmd]
    check(not left, "SIGHUP: no `gpunode labels` of this agent remains (%s)" % left)


def sigkill_takes_labels_child(labels_out):
    """SIGKILL, which no handler sees: the labels child dies with the agent (its parent-death signal)."""
    p = start_agent("--labels-output", labels_out, labels=True, interval="60s")
    child = labels_child(p)
    check(child is not None, "SIGKILL case: the agent runs its labels child")
    p.kill()
    p.wait(10)
    gone = wait(lambda: child is not None and not alive(child), 5)
    check(bool(gone), "SIGKILL of the agent: its labels child %s dies too (parent-death signal)" % child)
    if child and alive(child):
        os.kill(child, signal.SIGKILL)


agent = start_agent("--taint")
try:
    # healthy: four conditions False, the kubelet's and the other tool's kept
    c = wait(lambda: (lambda d: d if "GPUHardwareProblem" in d[0] else None)(conditions()))
    check(c is not None, "the agent wrote its conditions")
    conds, n = c if c else ({}, {})
    for t in ("GPUHardwareProblem", "GPUContainerRuntimeProblem", "GPUResourceExposureProblem"):
        check(conds.get(t, {}).get("status") == "False", "%s is False on a healthy node (%s)" % (t, conds.get(t, {}).get("reason")))
    check("GPUObservabilityProblem" in conds, "GPUObservabilityProblem is written")
    check(conds.get("Ready", {}).get("status") == "True", "the kubelet's Ready is kept")
    check(conds.get("OtherToolProblem", {}).get("message") == "another tool's", "another tool's condition is kept")
    st, body = http("/report")
    check(st == 200 and json.loads(body)["schema"] == "gpunode.report/v1", "/report serves the report")
    api_access = next((c for c in json.loads(body).get("checks", []) if c.get("id") == "kubelet.api-access"), {})
    check(api_access.get("status") == "pass", "with U+0000 in a Node annotation, kubelet.api-access passes (%s: %s)"
          % (api_access.get("status"), api_access.get("summary")))
    check(api_get("/api/v1/nodes/k8s-healthy")["metadata"]["annotations"]["example.com/nul"] == "before\u0000after",
          "the annotation with U+0000 is kept as it was")
    st, body = http("/")
    check(st == 200 and b"<html" in body.lower(), "/ serves the status page")
    st, body = http("/metrics")
    check(st == 200 and b"DCGM_FI_DEV_GPU_TEMP" in body, "/metrics serves DCGM metrics")
    # the API requests run in `gpunode kube-call` children: libcurl and its chain stay out of the agent
    maps = open("/proc/%d/maps" % agent.pid).read()
    check("libcurl" not in maps, "the agent maps no libcurl (its API requests run in kube-call children)")
    # privileges: once NVML is open and the socket bound, every thread keeps only CAP_SYSLOG (the
    # diagnosis children read /dev/kmsg) and no_new_privs is set; not root: nothing to drop
    def caps(path):
        out = {}
        for line in open(path):
            k, _, v = line.partition(":")
            out[k] = v.strip()
        return out
    if os.geteuid() == 0 and int(caps("/proc/self/status").get("CapEff", "0"), 16) != 0:
        keep = "%016x" % (1 << 34)
        ok = wait(lambda: all(caps("/proc/%d/task/%s/status" % (agent.pid, t)).get("CapEff") == keep and
                              caps("/proc/%d/task/%s/status" % (agent.pid, t)).get("NoNewPrivs") == "1"
                              for t in os.listdir("/proc/%d/task" % agent.pid)) or None)
        check(ok is not None, "every agent thread keeps only CAP_SYSLOG, with no_new_privs")

    # driver failure: layer 1 True with the root cause, a Warning Event, layers above Unknown
    set_root("broken")
    c = wait(lambda: (lambda d: d if d[0]["GPUHardwareProblem"]["status"] == "True" else None)(conditions()))
    check(c is not None, "a driver failure turns GPUHardwareProblem True")
    if c:
        conds, n = c
        check(conds["GPUHardwareProblem"]["reason"] == "DriverModuleSignature", "its reason is the root cause's check")
        check(conds["GPUContainerRuntimeProblem"]["status"] == "Unknown", "layer 2 is Unknown (blocked)")
        # (this root lacks CSI sockets the stand-in's cluster expects: csi.plugins is a fault of its own)
        consequences = [(t, v["reason"]) for t, v in conds.items() if t != "GPUHardwareProblem" and
                        v["status"] == "True" and v["reason"].startswith(("GpuOperator", "DevicePlugin", "Gfd",
                                                                          "MigManager", "DcgmExporter"))]
        check(not consequences, "one driver failure: no True condition for what rests on the driver (%s)" % consequences)
        check(any(t["key"] == "gpunode.io/unhealthy" for t in n["spec"].get("taints", [])) is False,
              "the circuit breaker refuses the taint (1 of 3 GPU nodes already tainted)")
    ev = wait(lambda: [e for e in events() if e["type"] == "Warning" and e["reason"] == "DriverModuleSignature"])
    check(bool(ev) and ev[0]["involvedObject"]["kind"] == "Node" and ev[0]["involvedObject"]["uid"],
          "a Warning Event on the Node")
    check(bool(wait(lambda: [e for e in events() if e["reason"] == "TaintRefusedCircuitBreaker"])),
          "an Event says the taint was refused")

    # healing: a Normal Event, back to False, one transition
    set_root("healthy")
    c = wait(lambda: (lambda d: d if d[0]["GPUHardwareProblem"]["status"] == "False" else None)(conditions()))
    check(c is not None, "healing turns GPUHardwareProblem False")
    check(bool(wait(lambda: [e for e in events() if e["type"] == "Normal" and e["reason"] == "GPUHardwareHealthy"])),
          "a Normal Event on healing")

    # 409 once: re-read and retry; the failure is written anyway
    control({"writes": "409-once"})
    set_root("broken")
    check(wait(lambda: conditions()[0]["GPUHardwareProblem"]["status"] == "True") is not None,
          "a 409 is retried once and the condition written")
    # flapping with a hold-down would be bounded; here (hold-down 0) each state change is one Event,
    # aggregated into the same Event's count
    w = wait(lambda: [e for e in events() if e["reason"] == "DriverModuleSignature" and e.get("count", 1) >= 2]) or []
    check(len(w) == 1 and w[0].get("count", 1) >= 2, "a repeat failure aggregates into the same Event (count %s)" % (w[0].get("count") if w else None))

    # 403: a clear log line naming the permission; the agent keeps serving
    set_root("healthy")
    control({"writes": "403"})
    # the improvement waits out the conditions' hold-down (a fifth of the 30 s heartbeat) before its PATCH
    text = wait(lambda: (lambda t: t if "patch" in t and "nodes/status" in t and "403" in t else None)(
        open(tmp + "/agent.log").read()), 15) or ""
    check("patch" in text and "nodes/status" in text and "403" in text, "a 403 logs the missing permission")
    check(http("/metrics")[0] == 200, "metrics are served while writes are refused")
    control({"writes": "normal"})
    check(wait(lambda: conditions()[0]["GPUHardwareProblem"]["status"] == "False") is not None,
          "after the 403 ends, the current state is written")

    # API down then back: metrics stay, the state is written once it answers
    control({"writes": "down", "down_seconds": 4})
    set_root("broken")
    time.sleep(2)
    check(http("/health")[0] in (200, 503) and http("/metrics")[0] == 200, "metrics are served while the API is down")
    check(wait(lambda: conditions()[0]["GPUHardwareProblem"]["status"] == "True", 20) is not None,
          "the state is written once the API is back")
    check(agent.poll() is None, "the agent is still running")

    # garbage: a clear log line, nothing else
    control({"writes": "garbage"})
    set_root("healthy")
    time.sleep(3)
    check("not JSON" in open(tmp + "/agent.log").read(), "a garbage answer is logged")
    check(agent.poll() is None, "the agent survives garbage answers")
    control({"writes": "normal"})

    # a huge answer (20 MiB) to writes: a log line, the agent keeps serving
    control({"writes": "huge"})
    set_root("broken")
    time.sleep(3)
    check("too large" in open(tmp + "/agent.log").read(), "a huge answer is logged")
    check(http("/metrics")[0] == 200 and http("/report")[0] == 200, "metrics and the report are served during huge answers")
    check(agent.poll() is None, "the agent survives huge answers")
    set_root("healthy")
    control({"writes": "normal"})

    # steady state: writes per minute with a 30 s heartbeat
    wait(lambda: conditions()[0]["GPUHardwareProblem"]["status"] == "False")
    time.sleep(2)
    before = len([l for l in open(tmp + "/requests.log") if '"PATCH"' in l or '"POST"' in l])
    time.sleep(8)
    after = len([l for l in open(tmp + "/requests.log") if '"PATCH"' in l or '"POST"' in l])
    check(after - before <= 1, "steady state: %d write(s) in 8 s of 1 s rounds (heartbeat 30 s)" % (after - before))
    agent.send_signal(signal.SIGTERM)
    agent.wait(10)

    # A second agent: 0.5 s rounds, a 4 s hold-down, the labels loop writing into a temp folder.
    HOLD = 4.0
    labels_out = tmp + "/labels/gfd"
    os.makedirs(tmp + "/labels")
    agent = start_agent("--labels-output", labels_out, labels=True, interval="500ms", hold_down="%ds" % HOLD)
    check(wait(lambda: "nvidia.com/gpu.product" in open(labels_out).read(), 20) is not None,
          "the labels loop writes its file with nvidia.com/gpu.product")
    check(wait(lambda: conditions()[0]["GPUHardwareProblem"]["status"] == "False") is not None,
          "the second agent writes its conditions")

    # flapping: the root switches every 0.5 s; each layer writes at most one Event per hold-down
    n0 = {t: len(event_writes(t)) for t in ("GPUHardwareProblem", "GPUContainerRuntimeProblem",
                                            "GPUResourceExposureProblem", "GPUObservabilityProblem")}
    p0 = condition_patches()
    t0 = time.time()
    flips = 0
    while time.time() - t0 < 10:
        set_root("broken" if flips % 2 == 0 else "healthy")
        flips += 1
        time.sleep(0.5)
    set_root("healthy")
    duration = time.time() - t0
    check_condition_patches(condition_patches() - p0, flips, duration)
    bound = int(duration / HOLD) + 2
    for t, n in n0.items():
        k = len(event_writes(t)) - n
        check(k <= bound, "flapping %d times in %.0f s: %s wrote %d Event(s) (hold-down %g s: at most %d)"
              % (flips, duration, t, k, HOLD, bound))
    check(wait(lambda: conditions()[0]["GPUHardwareProblem"]["status"] == "False") is not None,
          "after flapping, GPUHardwareProblem ends False")
    last = wait(lambda: (lambda w: w[-1][2].startswith("GPUHardwareProblem is False") and w[-1])(
        written(event_writes("GPUHardwareProblem"))), HOLD + 10)
    check(bool(last), "after flapping, the last GPUHardwareProblem Event says False (Normal)")

    # An Event that fails alone is kept and retried: a Warning held back by the hold-down comes due
    # while writes are refused (the condition itself was written before).
    time.sleep(HOLD + 0.5)
    set_root("broken")  # no hold-down running: condition True and a Warning at once
    check(wait(lambda: written(event_writes("GPUHardwareProblem"))[-1][2].startswith("GPUHardwareProblem is True"))
          is not None, "a failure writes a Warning at once")
    set_root("healthy")
    n_written = len(written(event_writes("GPUHardwareProblem")))
    # the Normal one waits for the hold-down, then is written: a new hold-down starts now
    check(wait(lambda: len(written(event_writes("GPUHardwareProblem"))) > n_written, HOLD + 5) is not None,
          "the Normal Event comes after the hold-down")
    # the other layers' Normal Events of the same round are written too before writes are refused (the
    # condition may still be True, held back by the conditions' hold-down: nothing else to wait for)
    settle_event_writes()
    set_root("broken")
    check(wait(lambda: conditions()[0]["GPUHardwareProblem"]["status"] == "True", HOLD) is not None,
          "the failure's condition is written within the hold-down")
    control({"writes": "403"})
    n_written = len(written(event_writes("GPUHardwareProblem")))
    refused = wait(lambda: [x for x in event_writes("GPUHardwareProblem")[n_written:] if x[1] == 403], HOLD + 5)
    check(bool(refused), "the held-back Warning's write is refused (403)")
    time.sleep(1)
    control({"writes": "normal"})
    w = wait(lambda: [x for x in written(event_writes("GPUHardwareProblem"))[n_written:]
                      if x[2].startswith("GPUHardwareProblem is True")], 10)
    check(bool(w), "once writes are back, the Warning Event that was refused is written")
    ev = [e for e in events() if e["type"] == "Warning" and e["reason"] == "DriverModuleSignature"]
    check(bool(ev) and ev[0]["message"].startswith("GPUHardwareProblem is True"), "the Warning Event is stored")
    check(agent.poll() is None, "the second agent is still running")
    sighup_stops_agent(agent, labels_out)
    sigkill_takes_labels_child(labels_out)
    heartbeat_from_the_future()

    # A third agent in a cluster of 2,000 GPU nodes of 5.8 KiB (11.6 MB of Nodes, past the agent's 8 MiB
    # answer bound): before, the circuit breaker's one unpaged list was "too large" and the failing node
    # was never tainted; now the list is paged (100 a page) and cut to names and taints in the child.
    big = tmp + "/api-big"
    shutil.copytree(api, big)
    plain = json.loads(json.dumps(node))  # this cluster's Nodes hold no U+0000: one defect at a time
    del plain["metadata"]["annotations"]["example.com/nul"]
    json.dump(plain, open(big + "/api/v1/nodes/k8s-healthy.json", "w"))
    pad = "x" * 3550
    for i in range(2000):
        o = json.loads(json.dumps(node))
        o["metadata"].update({"name": "gpu-%04d" % i, "uid": "uid-%d" % i,
                              "labels": {"nvidia.com/gpu.present": "true", "kubernetes.io/hostname": "gpu-%04d" % i},
                              "annotations": {"example.com/pad": pad}})
        o["spec"]["taints"] = []
        with open(big + "/api/v1/nodes/gpu-%04d.json" % i, "w") as f:
            json.dump(o, f)
    size = os.path.getsize(big + "/api/v1/nodes/gpu-0000.json")
    check(5500 <= size <= 6500, "a GPU node of the big cluster is %d bytes" % size)
    big_srv, big_port = H.start_kube_server(tmp + "/certs", big, "agent-token-0123456789", tmp + "/api-big.out",
                                            lifetime=120, log=tmp + "/requests-big.log")
    H.write_kubeconfig(tmp + "/kubeconfig-big", big_port, tmp + "/certs/ca.crt", "agent-token-0123456789")
    BIG = H.Api(big_port, tmp + "/certs/ca.crt", "agent-token-0123456789")
    set_root("broken")
    t0 = time.time()
    agent = start_agent("--taint", kubeconfig=tmp + "/kubeconfig-big")
    tainted = wait(lambda: [t for t in BIG.get("/api/v1/nodes/k8s-healthy")["spec"].get("taints", [])
                            if t["key"] == "gpunode.io/unhealthy"], 40)
    check(bool(tainted) and tainted[0]["value"] == "hardware",
          "2,000 GPU nodes: the failing node is tainted gpunode.io/unhealthy=hardware (%.1f s)" % (time.time() - t0))
    lists = [json.loads(l) for l in open(tmp + "/requests-big.log") if '"/api/v1/nodes"' in l]
    limits = {e["query"].get("limit") for e in lists}
    check(len(lists) >= 21 and limits == {"100"} and any("continue" in e["query"] for e in lists) and
          all(e["status"] == 200 for e in lists),
          "the circuit breaker's lists are paged: %d pages, limit %s" % (len(lists), sorted(limits)))
    check("taint set: gpunode.io/unhealthy=hardware:NoSchedule" in open(tmp + "/agent.log").read(),
          "the log writes the taint as kubectl does (key=value:effect)")
    check(agent.poll() is None, "the third agent is still running")
finally:
    H.stop_all(term_first=True)
    if H.failed:
        print(H.tail(tmp + "/agent.log"))
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(H.summary("agent"))
