#!/usr/bin/python3
# run-cluster-tests.py GPUNODE: `gpunode cluster` and `kubectl gpunode check NODE` end to end against kube_server.py --cluster.
"""
Each scenario bends a synthetic cluster (make_cluster.py) into one failure, serves it from the HTTPS
API stand-in with small pages (--chunk-size 2, so every list takes several continue round trips)
and asserts the exit code, the JSON document (gpunode.cluster/v1) and the table a person reads.
The pod proxy leads to a fake agent (an HTTP server here) that serves a scenario's real
gpunode.report/v1; `kubectl gpunode check NODE` must print it as `gpunode check` printed it.
Debian's python3, standard library only.
"""

import copy
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import make_cluster  # noqa: E402
import harness as H  # noqa: E402

gpunode = os.path.abspath(sys.argv[1])
here = os.path.dirname(os.path.abspath(__file__))
tests = os.path.dirname(here)
tmp = tempfile.mkdtemp(prefix="gpunode-cluster-")
check = H.check


H.make_certs(tmp + "/certs")
os.makedirs(tmp + "/empty", exist_ok=True)

# The fake agent: serves the k8s-driver-broken scenario's real report at /report.
scen = os.path.join(tests, "scenarios", "k8s-driver-broken")
report_text = open(os.path.join(scen, "expected.json")).read()
report_text = report_text[:report_text.rindex("\nexit ")] + "\n"
# The placeholders as an agent fills them: its check's time survives into `kubectl gpunode check`.
agent_time = "2026-12-02T02:14:00Z"
report_text = report_text.replace('"@TIME@"', '"%s"' % agent_time).replace('"@VERSION@"', '"0.1.0"')
expected_check_text = open(os.path.join(scen, "expected.text")).read()
expected_check_text = expected_check_text[:expected_check_text.rindex("exit ")].replace("@TIME@", agent_time)
agent_state = {"code": 200}


class Agent(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = report_text.encode() if agent_state["code"] == 200 else b"no report yet\n"
        self.send_response(200 if self.path == "/report" and agent_state["code"] == 200 else
                           (404 if self.path != "/report" else agent_state["code"]))
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


agent = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Agent)
threading.Thread(target=agent.serve_forever, daemon=True).start()
agent_port = agent.server_address[1]


class Server:
    """kube_server.py serving one cluster description."""

    def __init__(self, desc, name):
        self.file = "%s/%s.json" % (tmp, name)
        with open(self.file, "w") as f:
            json.dump(desc, f)
        self.p, self.port = H.start_kube_server(tmp + "/certs", tmp + "/empty", "cluster-token",
                                                "%s/%s.port" % (tmp, name), lifetime=60,
                                                extra=["--cluster", self.file], pause=0.05)
        self.kubeconfig = "%s/%s.kubeconfig" % (tmp, name)
        H.write_kubeconfig(self.kubeconfig, self.port, tmp + "/certs/ca.crt", "cluster-token")
        self.api = H.Api(self.port, tmp + "/certs/ca.crt")

    def control(self, body=None):
        return self.api.control(body)

    def run(self, *args, argv0=None, timeout=30):
        args = list(args)
        if argv0:  # kubectl gpunode SUBCOMMAND [ARGS]: kubectl passes its arguments after the subcommand
            cmd = [argv0, args[0], "--kubeconfig", self.kubeconfig] + args[1:]
        else:
            cmd = [gpunode, "cluster", "--kubeconfig", self.kubeconfig] + args
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        return r

    def stop(self):
        self.p.kill()
        self.p.wait()


def cluster_json(srv, *args):
    r = srv.run("--output", "json", "--chunk-size", "2", *args)
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        doc = None
    return r, doc


def status(doc, cid):
    return next((c for c in doc["checks"] if c["id"] == cid), {}).get("status")


def finding(doc, cid):
    return next((c for c in doc["checks"] if c["id"] == cid), {})


def node_row(doc, name):
    return next((n for n in doc["nodes"] if n["name"] == name), {})


def set_condition(node, ctype, status_, reason, message, heartbeat=None):
    for c in node["status"]["conditions"]:
        if c["type"] == ctype:
            c.update({"status": status_, "reason": reason, "message": message})
            if heartbeat is not None:
                c["lastHeartbeatTime"] = heartbeat


def get_node(d, name):
    return next(n for n in d["nodes"] if n["metadata"]["name"] == name)


now = int(time.time())


def base():
    return make_cluster.make(4, 1, now=now, agent_ip="127.0.0.1", agent_port=agent_port)


# ---- all ready ----
srv = Server(base(), "ready")
r, doc = cluster_json(srv)
check(r.returncode == 0 and doc and doc["verdict"] == "healthy", "all ready: healthy, exit 0", r.stdout[-2000:] + r.stderr)
if doc:
    check(doc["schema"] == "gpunode.cluster/v1", "all ready: schema gpunode.cluster/v1")
    check(all(c["status"] == "pass" for c in doc["checks"]), "all ready: every check passes",
          json.dumps([c for c in doc["checks"] if c["status"] != "pass"], indent=1))
    check([c["id"] for c in doc["categories"]] == ["infrastructure", "gpu-health", "network", "storage", "scheduling",
                                                    "observability"], "all ready: the six categories in order")
    s = doc["summary"]
    check(s["nodes"] == 5 and s["gpu_nodes"] == 4 and s["gpu_nodes_ready"] == 4 and s["gpus_allocatable"] == 32 and
          s["gpus_capacity"] == 32, "all ready: 5 nodes, 4 GPU nodes ready, 32/32 GPUs", json.dumps(s))
    check(len(doc["nodes"]) == 4 and all(n["status"] == "pass" for n in doc["nodes"]), "all ready: four node rows, all pass")
log = srv.control()["requests"]
pods = [q for q in log if q["path"] == "/api/v1/pods"]
check(len(pods) >= 10 and all(q["query"].get("limit") == "2" for q in pods) and
      sum(1 for q in pods if "continue" in q["query"]) == len(pods) - 1,
      "all ready: pods listed in pages of 2 with continue tokens (%d pages)" % len(pods))
check(all(q["query"].get("fieldSelector") == "status.phase!=Succeeded,status.phase!=Failed" for q in pods),
      "all ready: pods filtered on the server (fieldSelector on status.phase)")
ev = [q for q in log if q["path"] == "/api/v1/events"]
check(ev and ev[0]["query"].get("fieldSelector") == "involvedObject.kind=Pod,reason=FailedScheduling",
      "all ready: events filtered on the server (reason=FailedScheduling)")
r = srv.run("--no-color", "--chunk-size", "3")
check(r.returncode == 0 and "gpu-0003  yes    ok    ok    ok    ok    8/8      -" in r.stdout and "Verdict: healthy" in r.stdout,
      "all ready: the table has one line per node", r.stdout)
# -l/--selector: the API server lists only the nodes it matches
r, doc = cluster_json(srv, "-l", "kubernetes.io/hostname in (gpu-0001,gpu-0002)")
check(r.returncode == 0 and doc and doc["summary"]["gpu_nodes"] == 2 and
      sorted(n["name"] for n in doc["nodes"]) == ["gpu-0001", "gpu-0002"],
      "-l: only the two nodes the selector matches", (r.stderr + json.dumps(doc and doc["summary"]))[-800:])
nodes_q = [q for q in srv.control()["requests"] if q["path"] == "/api/v1/nodes"]
check(nodes_q and nodes_q[-1]["query"].get("labelSelector") == "kubernetes.io/hostname in (gpu-0001,gpu-0002)",
      "-l: the selector goes to the API server (labelSelector)")
r = srv.run("--selector", "a\tb")
check(r.returncode == 64 and "--selector must be a label selector" in r.stderr, "--selector with a tab: usage error")
# --watch: nothing changes, so one frame in two passes
r = srv.run("--no-color", "--watch", "--interval", "100ms", "--watch-limit", "3")
check(r.returncode == 0 and r.stdout.count("Verdict:") == 1, "--watch: no redraw while nothing changes", r.stdout[-500:])
# ... and a redraw when something changed: the StorageClasses become unreadable after the first frame
w = subprocess.Popen([gpunode, "cluster", "--kubeconfig", srv.kubeconfig, "--no-color", "--watch", "--interval", "200ms",
                      "--watch-limit", "8"], stdout=subprocess.PIPE, text=True)
first = ""
while "Verdict:" not in first:
    first += w.stdout.readline()
srv.control({"lists": {"forbid": ["storageclasses"]}})
rest = w.stdout.read()
w.wait()
check(w.returncode == 1 and rest.count("Verdict: degraded") == 1 and "Verdict: healthy" in first,
      "--watch: redraws once when the cluster changed", rest[-800:])
srv.control({"lists": {"forbid": []}})
srv.stop()

# ---- U+0000 in API strings (the API server stores such values) ----
# Before: one such pod anywhere made every list "not JSON" and `gpunode cluster` exit 69. Now the
# cluster is judged; a name holding U+0000 is no name (never cut into another one).
d = base()
d["pods"][0]["metadata"].setdefault("annotations", {})["example.com/nul"] = "a\u0000b"
d["pods"][0]["metadata"].setdefault("labels", {})["example.com/cut"] = "gpu-0001\u0000evil"
d["nodes"][0]["metadata"].setdefault("annotations", {})["example.com/nul"] = "\u0000"
evil = copy.deepcopy(d["nodes"][1])
evil["metadata"]["name"] = d["nodes"][1]["metadata"]["name"] + "\u0000evil"
d["nodes"].append(evil)
srv = Server(d, "nul")
r, doc = cluster_json(srv)
check(r.returncode == 0 and doc and doc["verdict"] == "healthy" and doc["summary"]["gpu_nodes"] == 4,
      "U+0000 in a pod's label and annotation, a Node's annotation and a Node's name: still judged, healthy, "
      "the node named with U+0000 not counted (exit %d)" % r.returncode, r.stderr[-1500:])
srv.stop()

# ---- one node's driver broken ----
d = base()
bad = get_node(d, "gpu-0001")
set_condition(bad, "GPUHardwareProblem", "True", "DriverModuleSignature",
              "the kernel refused to load the nvidia module: its signature is not trusted; remedy: sign the module")
for t in ("GPUContainerRuntimeProblem", "GPUResourceExposureProblem", "GPUObservabilityProblem"):
    set_condition(bad, t, "Unknown", "BlockedByDriverModuleSignature", "not checked")
bad["status"]["allocatable"]["nvidia.com/gpu"] = "0"
srv = Server(d, "driver-broken")
r, doc = cluster_json(srv)
check(r.returncode == 2 and doc and doc["verdict"] == "failed", "driver broken: failed, exit 2", r.stderr)
if doc:
    row = node_row(doc, "gpu-0001")
    check(row.get("status") == "fail" and row["root_cause"]["layer"] == 1 and
          "DriverModuleSignature" in row["root_cause"]["text"], "driver broken: the node's row names layer 1", json.dumps(row))
    check(status(doc, "gpu-health.layer-conditions") == "fail" and
          any("gpu-0001: layer 1 driver" in e for e in finding(doc, "gpu-health.layer-conditions")["evidence"]),
          "driver broken: gpu-health.layer-conditions fails naming gpu-0001 layer 1 driver")
    ga = finding(doc, "scheduling.gpu-allocatable")
    check(ga["status"] == "blocked" and ga["rests_on"] == "gpu-health.layer-conditions" and
          any("not a scheduling fault" in e for e in ga["evidence"]),
          "driver broken: its zero allocatable is not a scheduling fault (blocked, rests on gpu-health)", json.dumps(ga))
    check(doc["root_cause"]["check"] == "gpu-health.layer-conditions", "driver broken: root cause gpu-health.layer-conditions")
    check(doc["summary"]["gpus_allocatable"] == 24 and doc["summary"]["gpu_nodes_ready"] == 3,
          "driver broken: 24 of 32 GPUs, 3 nodes ready")
r = srv.run("--no-color")
line = next((l for l in r.stdout.splitlines() if l.startswith("gpu-0001")), "")
check("FAIL" in line and "0/8" in line and "layer 1: DriverModuleSignature" in line,
      "driver broken: the table's line names gpu-0001, layer 1 and 0/8 GPUs", line)
check("rests on gpu-health.layer-conditions" in r.stdout, "driver broken: the table says what scheduling rests on")
# kubectl gpunode check NODE: the agent's report through the pod proxy, as gpunode check printed it
plugin = tmp + "/kubectl-gpunode"
if not os.path.exists(plugin):
    os.symlink(gpunode, plugin)
r = srv.run("check", "gpu-0001", "--no-color", argv0=plugin)
check(r.returncode == 2 and r.stdout == expected_check_text,
      "kubectl gpunode check NODE: the agent's report through the pod proxy, as `gpunode check` prints it",
      "rc %d stderr %s\n%s" % (r.returncode, r.stderr, "".join(
          "%s\n" % l for l in __import__("difflib").unified_diff(expected_check_text.splitlines(), r.stdout.splitlines(),
                                                                  lineterm=""))[:3000]))
check("checked at %s (" % agent_time in r.stderr and " s ago)" in r.stderr,
      "kubectl gpunode check NODE: says when the agent checked and how long ago", r.stderr[-500:])
r = srv.run("check", "gpu-0001", "--output", "json", argv0=plugin)
check(r.returncode == 2 and json.loads(r.stdout or "{}") == json.loads(report_text),
      "kubectl gpunode check NODE --output json: the report as served", "rc %d: %s" % (r.returncode, r.stderr[-3000:]))
log = srv.control()["requests"]
check(any(q["path"] == "/api/v1/namespaces/gpunode/pods/gpunode-0001:%d/proxy/report" % agent_port for q in log),
      "kubectl gpunode check NODE: GET /api/v1/namespaces/gpunode/pods/POD:PORT/proxy/report")
agent_state["code"] = 503
r = srv.run("check", "gpu-0001", argv0=plugin)
check(r.returncode == 69 and "no report yet" in r.stderr, "kubectl gpunode check NODE: an agent without a report yet", r.stderr)
agent_state["code"] = 200
srv.stop()
d2 = copy.deepcopy(d)
next(p for p in d2["pods"] if p["metadata"]["name"] == "gpunode-0001")["status"]["podIP"] = "127.0.0.2"
srv = Server(d2, "driver-broken-agent-down")
r = srv.run("check", "gpu-0001", argv0=plugin)
check(r.returncode == 69 and "does not answer on port %d" % agent_port in r.stderr and "ServiceUnavailable" not in r.stdout,
      "kubectl gpunode check NODE: an agent that does not answer (the API's 503)", r.stderr)
r = srv.run("check", "cpu-0000", argv0=plugin)
check(r.returncode == 69 and "no gpunode agent pod on node cpu-0000" in r.stderr, "kubectl gpunode check NODE: no agent there", r.stderr)
r = srv.run("cluster", "--no-color", argv0=plugin)
check(r.returncode == 2 and "gpu-0001" in r.stdout, "kubectl gpunode cluster: the plugin runs the cluster view")
srv.stop()

# ---- an agent missing on one node ----
d = base()
gone = get_node(d, "gpu-0002")
gone["status"]["conditions"] = [c for c in gone["status"]["conditions"] if not c["type"].startswith("GPU")]
d["pods"] = [p for p in d["pods"] if p["metadata"]["name"] != "gpunode-0002"]
srv = Server(d, "agent-missing")
r, doc = cluster_json(srv)
check(r.returncode == 2 and doc, "agent missing: exit 2")
if doc:
    ar = finding(doc, "infrastructure.agent-running")
    check(ar["status"] == "fail" and any(e.startswith("gpu-0002: no gpunode agent pod") for e in ar["evidence"]),
          "agent missing: infrastructure.agent-running fails naming gpu-0002", json.dumps(ar))
    check(node_row(doc, "gpu-0002")["root_cause"]["text"] == "no gpunode agent", "agent missing: the row says so")
    check(status(doc, "observability.metrics-endpoint") == "fail", "agent missing: no GPU metrics there either")
    check(status(doc, "gpu-health.layer-conditions") == "pass", "agent missing: the others' conditions are still judged")
srv.stop()

# ---- stale heartbeats ----
d = base()
for name in ("gpu-0000", "gpu-0003"):
    for c in get_node(d, name)["status"]["conditions"]:
        if c["type"].startswith("GPU"):
            c["lastHeartbeatTime"] = make_cluster.ts(now - 3 * 3600)
srv = Server(d, "stale")
r, doc = cluster_json(srv)
check(r.returncode == 1 and doc and doc["verdict"] == "degraded", "stale heartbeats: degraded, exit 1", r.stderr)
if doc:
    hb = finding(doc, "infrastructure.agent-heartbeat")
    check(hb["status"] == "warn" and "2 of 4" in hb["summary"] and any(e.startswith("gpu-0003: last heartbeat") for e in hb["evidence"]),
          "stale heartbeats: infrastructure.agent-heartbeat warns naming the two nodes", json.dumps(hb))
    check(node_row(doc, "gpu-0000")["agent"]["stale"] is True and node_row(doc, "gpu-0001")["agent"]["stale"] is False,
          "stale heartbeats: rows marked stale")
# --watch with stale heartbeats: their ages are said in minutes, so passes a second apart draw one frame
# (before, "last heartbeat N s ago" changed every pass and every pass redrew)
r = srv.run("--no-color", "--watch", "--interval", "1100ms", "--watch-limit", "3")
check(r.returncode == 1 and r.stdout.count("Verdict:") == 1,
      "--watch with stale heartbeats: no redraw while only their ages grow", r.stdout[-500:])
r, doc = cluster_json(srv, "--stale-after", "4h")
check(r.returncode == 0, "stale heartbeats: --stale-after 4h accepts them")
srv.stop()


def heartbeat_from_the_future():
    """A node whose clock ran ahead (and was corrected) left lastHeartbeatTime 2,274,747,054 s in the future:
    stale, not fresh (issue 20: its age read -2,274,747,054 s, fresh); 30 s ahead is within the skew."""
    d = base()
    for name, ahead in (("gpu-0001", 2274747054), ("gpu-0002", 30)):
        for c in get_node(d, name)["status"]["conditions"]:
            if c["type"].startswith("GPU"):
                c["lastHeartbeatTime"] = make_cluster.ts(now + ahead)
    srv = Server(d, "future")
    r, doc = cluster_json(srv)
    check(r.returncode == 1 and doc and doc["verdict"] == "degraded", "heartbeat from the future: degraded, exit 1",
          r.stderr)
    if doc:
        hb = finding(doc, "infrastructure.agent-heartbeat")
        check(hb["status"] == "warn" and "1 of 4" in hb["summary"] and
              any(e.startswith("gpu-0001: heartbeat ") and "s in the future: the node's clock ran ahead" in e
                  for e in hb["evidence"]),
              "heartbeat from the future: infrastructure.agent-heartbeat warns naming the node", json.dumps(hb))
        check(node_row(doc, "gpu-0001")["agent"]["stale"] is True and node_row(doc, "gpu-0002")["agent"]["stale"] is False,
              "heartbeat from the future: that row stale, 30 s ahead fresh")
    srv.stop()


heartbeat_from_the_future()

# ---- driver version skew ----
d = base()
get_node(d, "gpu-0002")["metadata"]["labels"].update(make_cluster.gpu_labels(driver="535.161.08", cuda="12.2"))
srv = Server(d, "skew")
r, doc = cluster_json(srv)
check(r.returncode == 1 and doc, "driver skew: exit 1", r.stderr)
if doc:
    ds = finding(doc, "gpu-health.driver-skew")
    check(ds["status"] == "warn" and any("gpu-0002: driver 535.161.08 (most nodes: 550.54.15)" in e for e in ds["evidence"]),
          "driver skew: gpu-health.driver-skew names gpu-0002's 535.161.08", json.dumps(ds))
    check(status(doc, "gpu-health.cuda-skew") == "warn", "driver skew: CUDA skew too")
srv.stop()

# ---- a ServiceMonitor selecting by matchExpressions ----
for values, want in ((["something-else"], "warn"), (["gpunode", "other"], "pass")):
    d = base()
    d["servicemonitors"][0]["spec"]["selector"] = {
        "matchExpressions": [{"key": "app.kubernetes.io/name", "operator": "In", "values": values}]}
    srv = Server(d, "monitor-expressions")
    r, doc = cluster_json(srv)
    check(doc and status(doc, "observability.scrape-config") == want,
          "ServiceMonitor matchExpressions In %s: observability.scrape-config %s" % (values, want),
          doc and json.dumps(finding(doc, "observability.scrape-config")))
    srv.stop()

# ---- no default StorageClass ----
d = base()
for sc in d["storageclasses"]:
    sc["metadata"].pop("annotations", None)
srv = Server(d, "no-default-sc")
r, doc = cluster_json(srv)
check(r.returncode == 1 and doc and status(doc, "storage.default-storageclass") == "warn" and
      "no default StorageClass" in finding(doc, "storage.default-storageclass")["summary"],
      "no default StorageClass: storage.default-storageclass warns, exit 1")
srv.stop()

# ---- GPU pods Pending: Insufficient nvidia.com/gpu ----
d = base()
for k in range(3):
    p = make_cluster.pod("ml", "big-%d" % k, None, now, {"app": "big"}, gpus=8, phase="Pending")
    d["pods"].append(p)
    d["events"].append(make_cluster.event("ml", "big-%d.1" % k, "big-%d" % k, "FailedScheduling",
                                          "0/5 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, "
                                          "4 Insufficient nvidia.com/gpu. preemption: 0/5 nodes are available: 5 No "
                                          "preemption victims found for incoming pod.", now, "Warning"))
srv = Server(d, "pending")
r, doc = cluster_json(srv)
check(r.returncode == 1 and doc, "pending GPU pods: exit 1 (warnings)", r.stderr)
if doc:
    pg = finding(doc, "scheduling.pending-gpu-pods")
    check(pg["status"] == "warn" and "3 GPU pods Pending for 24 GPUs (Insufficient GPUs 3" in pg["summary"] and
          any(e.startswith("ml/big-1: 8 GPUs, Insufficient GPUs: 0/5 nodes") for e in pg["evidence"]),
          "pending GPU pods: scheduling.pending-gpu-pods warns with the FailedScheduling reason", json.dumps(pg))
    check(status(doc, "scheduling.gpu-allocatable") == "pass", "pending GPU pods: allocatable itself is fine")
srv.stop()
# ... and with a node withholding its GPUs by a driver failure, the pending pods rest on GPU health
bad = get_node(d, "gpu-0001")
set_condition(bad, "GPUHardwareProblem", "True", "DriverNvmlInit", "NVML cannot initialise")
bad["status"]["allocatable"]["nvidia.com/gpu"] = "0"
srv = Server(d, "pending-broken")
r, doc = cluster_json(srv)
if doc:
    pg = finding(doc, "scheduling.pending-gpu-pods")
    check(pg["status"] == "blocked" and pg["rests_on"] == "gpu-health.layer-conditions",
          "pending GPU pods with a broken node: blocked, rests on gpu-health.layer-conditions", json.dumps(pg))
srv.stop()

# ---- the nvidia RuntimeClass missing ----
d = base()
d["runtimeclasses"] = []
srv = Server(d, "no-runtimeclass")
r, doc = cluster_json(srv)
check(r.returncode == 2 and doc and status(doc, "scheduling.runtime-class") == "fail" and
      "RuntimeClass nvidia missing" in finding(doc, "scheduling.runtime-class")["summary"],
      "nvidia RuntimeClass missing: scheduling.runtime-class fails, exit 2", r.stdout[-1500:])
srv.stop()

# ---- 403 on the list ----
srv = Server(base(), "forbidden")
srv.control({"lists": {"forbid": ["nodes"]}})
r = srv.run("--chunk-size", "2")
check(r.returncode == 77 and r.stdout == "" and "missing permission: list nodes" in r.stderr and
      "gpunode-cluster-reader" in r.stderr, "403 on list nodes: exit 77, names the missing permission", r.stderr)
srv.control({"lists": {"forbid": ["storageclasses"]}})
r, doc = cluster_json(srv)
sc = finding(doc or {"checks": []}, "storage.default-storageclass")
check(r.returncode == 1 and sc.get("status") == "warn" and 'cannot list resource "storageclasses"' in sc.get("summary", ""),
      "403 on storageclasses: that check cannot tell (warn, naming the permission), the rest is judged", json.dumps(sc))
srv.stop()

# ---- a timeout part-way through the pagination ----
srv = Server(base(), "timeout")
srv.control({"lists": {"hang_after_pages": 2}})
t0 = time.monotonic()
r = srv.run("--chunk-size", "2", "--timeout", "1s", "--output", "json")
check(r.returncode == 69 and r.stdout == "" and "failed part-way" in r.stderr and "page 3" in r.stderr and
      "no verdict" in r.stderr, "timeout part-way: exit 69, a clear error, no partial verdict", r.stderr + r.stdout[:300])
check(time.monotonic() - t0 < 10, "timeout part-way: bounded by --timeout")
srv.stop()

# ---- an expired continue token (410) ----
srv = Server(base(), "expired")
srv.control({"lists": {"expire": "once"}})
r, doc = cluster_json(srv)
check(r.returncode == 0 and doc, "410 once: the list starts again and the verdict is whole", r.stderr)
srv.control({"lists": {"expire": "always"}})
r = srv.run("--chunk-size", "2")
check(r.returncode == 69 and r.stdout == "" and "410" in r.stderr and "expired" in r.stderr,
      "410 always: exit 69, no partial verdict", r.stderr)
srv.control({"lists": {"expire": "never", "repeat_continue": True}})
r = srv.run("--chunk-size", "2")
check(r.returncode == 69 and r.stdout == "" and "continue" in r.stderr,
      "a continue token that does not advance: exit 69 at once, no partial verdict", r.stderr)
# A -> B -> A: before, followed until 100,000 pages (1,314 pages in 60 s); now caught on page 3
srv.control({"lists": {"repeat_continue": False, "cycle_continue": True}})
t0 = time.monotonic()
r = srv.run("--chunk-size", "2", timeout=20)
check(r.returncode == 69 and r.stdout == "" and "cycle" in r.stderr and "/api/v1/nodes" in r.stderr and
      time.monotonic() - t0 < 5, "a continue-token cycle A -> B -> A: exit 69 at once (%.1f s), naming the list"
      % (time.monotonic() - t0), r.stderr)
srv.stop()

# ---- usage ----
r = subprocess.run([gpunode, "cluster", "--list-checks"], capture_output=True, text=True)
ids = [l.split()[0] for l in r.stdout.splitlines()]
check(r.returncode == 0 and len(ids) == 23 and ids[0] == "infrastructure.gpu-nodes" and ids[-1] == "observability.scrape-config"
      and all(i.split(".")[0] in ("infrastructure", "gpu-health", "network", "storage", "scheduling", "observability") for i in ids),
      "--list-checks: 23 checks, each <category>.<name>", r.stdout)
r = subprocess.run([gpunode, "cluster", "--output", "yaml"], capture_output=True, text=True)
check(r.returncode == 64, "--output yaml: usage error")

H.stop_all()
agent.shutdown()
shutil.rmtree(tmp, ignore_errors=True)
sys.exit(H.summary("cluster"))
