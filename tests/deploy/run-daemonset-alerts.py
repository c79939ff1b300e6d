#!/usr/bin/python3
# run-daemonset-alerts.py: the PrometheusRule's alerts, under promtool, on a scrape of the DaemonSet's agent.
"""usage: run-daemonset-alerts.py SOURCE_ROOT GPUNODE FAKE_NVML [--exporter]

For a failing node (tests/scenarios/driver-secure-boot: the driver rejected by Secure Boot) and a
healthy one (k8s-healthy), runs `gpunode agent` exactly as deploy/daemonset.yaml runs it (its args
and env, verbatim, in the pod-like root of tests/harness.py's DaemonSetPod, shared with
run-daemonset-args.py, against the API stand-in through the in-cluster service account), waits for
the first diagnosis (/report answers 200), scrapes /metrics once and runs `promtool test rules`
(Debian's prometheus) on a test generated from the scrape:

- input_series: every sample of the scrape with the labels Prometheus gives it through the
  ServiceMonitor (job = the Service's name, instance, namespace, pod, service, endpoint,
  container, and the endpoint's relabelings: node from __meta_kubernetes_pod_node_name; a scraped
  label that collides becomes exported_<name>, as honor_labels: false does), plus up = 1, each held
  constant over the test's 30 minutes;
- rule files: deploy/prometheusrule.yaml's spec.groups (tests/deploy/monitoring-spec.mjs);
- alert_rule_test, for every alert of the file at 20 minutes (past every `for:`): on the failing
  node GPUNodeRootCause fires with the root cause's layer, GPUNodeFailed, GPUNodeLayerUnhealthy for
  each layer the scenario's expected report does not call healthy, GPUNodeNVMLDown (the scenario
  has no NVML), each with its labels and rendered annotations, and nothing else; on the healthy
  node no alert at all.

The node's metrics peers, as the scenario's recorded pods place them (the diagnosis's layer 4 reads
them): the pod network is this test's own namespace, so the dcgm-exporter pod's and the host's
addresses are added to its loopback; the node exporter (host network, :9100) answers the scenario's
recorded page; the dcgm-exporter pod's podIP:9400 reaches the agent's own :9400 (one namespace: the
agent, listening on every address, is that exporter's stand-in, serving the same GPUs' DCGM series).

The expectations come from the scenario's checked-in report (tests/scenarios/NAME/expected.json),
not from the scrape. With --exporter the pod runs `gpunode exporter --root /host --listen :9400
--check-interval 1s` instead of the DaemonSet's args (it serves the diagnosis series), and the first
diagnosis is the first scrape with gpunode_exporter_check_age_seconds >= 0: the control that proves
the generated test right. Exit 77 (skip) when not root or unshare is unavailable. Debian's python3,
standard library only."""
import http.server, json, os, re, shutil, subprocess, sys, tempfile, threading

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import harness as H  # noqa: E402

source_root, gpunode, fake_nvml = (os.path.abspath(a) for a in sys.argv[1:4])
exporter_mode = "--exporter" in sys.argv[4:]
tests = os.path.join(source_root, "tests")
SCENARIOS = ("driver-secure-boot", "k8s-healthy")  # the failing node, the healthy one
API_FROM = "k8s-healthy"  # the cluster's recorded objects, its node renamed to each scenario's
EVAL = 20  # minutes: past every alert's `for:` (15m at most)
HOLD = 30  # minutes the scraped samples are held constant

H.in_pod_namespaces([os.path.abspath(__file__)] + sys.argv[1:])
check = H.check
tmp = tempfile.mkdtemp(prefix="daemonset-alerts.")
LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|(?=\}))')


def parse_scrape(text):
    """Returns the samples of a Prometheus text exposition as (name, [(label, escaped value)], value string);
    raises ValueError on a line it cannot read."""
    out = []
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)", line)
        if not m:
            raise ValueError("not a sample: %r" % line)
        name, rest, labels = m.group(1), line[m.end():], []
        if rest.startswith("{"):
            i = 1
            while rest[i] != "}":
                lm = LABEL.match(rest, i)
                if not lm:
                    raise ValueError("bad labels: %r" % line)
                labels.append((lm.group(1), lm.group(2)))
                i = lm.end()
            rest = rest[i + 1:]
        out.append((name, labels, rest.split()[0]))
    return out


def promql_value(v):
    """Returns the exposition value V as promtool's series notation writes it."""
    return {"+Inf": "Inf", "-Inf": "-Inf", "NaN": "NaN"}.get(v, repr(float(v)))


def target_labels(mon, node, pod):
    """Returns the labels the Prometheus Operator's ServiceMonitor gives every series of the pod's target,
    its relabelings applied (the "replace" action of a __meta_kubernetes_pod_* label). Raises SystemExit on
    a relabeling this test does not emulate."""
    ep = mon["endpoint"]
    meta = {"__meta_kubernetes_pod_node_name": node, "__meta_kubernetes_pod_name": pod.pod_name,
            "__meta_kubernetes_namespace": mon["namespace"]}
    labels = {"job": mon["service"], "instance": "127.0.0.1:%d" % pod.port, "namespace": mon["namespace"],
              "pod": pod.pod_name, "service": mon["service"], "endpoint": ep["port"],
              "container": pod.spec["container"]}
    for r in ep.get("relabelings", []):
        if r.get("action", "replace") != "replace" or any(s not in meta for s in r["sourceLabels"]):
            raise SystemExit("relabeling not emulated here: %s" % r)
        labels[r["targetLabel"]] = r.get("separator", ";").join(meta[s] for s in r["sourceLabels"])
    return labels


def series_text(name, labels):
    """Returns NAME{labels} in PromQL's series notation (LABELS: (name, escaped value) pairs)."""
    return name + "{" + ",".join('%s="%s"' % kv for kv in labels) + "}"


def input_series(samples, target):
    """Returns promtool's input_series: every scraped sample with the target's labels (a scraped label that
    collides becomes exported_<label>), and up = 1, held constant for HOLD minutes."""
    esc = [(k, v.replace("\\", "\\\\").replace('"', '\\"')) for k, v in sorted(target.items())]
    out = [{"series": series_text("up", esc), "values": "1x%d" % HOLD}]
    for name, labels, value in samples:
        own = [("exported_" + k if k in target else k, v) for k, v in labels]
        out.append({"series": series_text(name, sorted(own + esc)), "values": "%sx%d" % (promql_value(value), HOLD)})
    return out


def render(template, labels, value):
    """Returns an annotation TEMPLATE rendered as Prometheus would for an alert with LABELS and VALUE, for the
    two forms the rules use ({{ $labels.X }}, {{ $value }}). Raises SystemExit on any other template."""
    text = re.sub(r"\{\{\s*\$labels\.(\w+)\s*\}\}", lambda m: labels.get(m.group(1), ""), template)
    text = re.sub(r"\{\{\s*\$value\s*\}\}", lambda m: "%g" % value, text)
    if "{{" in text:
        raise SystemExit("template not rendered by this test: %r" % template)
    return text


def expected_alerts(rules, scenario, node, target):
    """Returns {alert name: [(labels, value)]}: what must fire on SCENARIO's node, from its expected report
    (tests/scenarios/NAME/expected.json) and NVML description; every other alert of RULES maps to []."""
    text = open(os.path.join(tests, "scenarios", scenario, "expected.json")).read()
    report = json.loads(text[:text.rindex("\nexit ")])
    fire = {r["alert"]: [] for r in rules}
    if report["root_cause"]:
        fire["GPUNodeRootCause"] = [({"node": node}, report["root_cause"]["layer"])]
    if report["verdict"] == "failed":
        fire["GPUNodeFailed"] = [({"node": node}, 1)]
    fire["GPUNodeLayerUnhealthy"] = [({"node": node, "layer": str(layer["layer"]), "name": layer["name"]}, 0)
                                     for layer in report["layers"] if layer["status"] != "healthy"]
    if not os.path.exists(os.path.join(tests, "scenarios", scenario, "nvml.json")):
        fire["GPUNodeNVMLDown"] = [(dict(target), 0)]  # no aggregation: the series' own labels
    return fire


def rules_test(rules, fire):
    """Returns promtool's alert_rule_test for every alert of RULES: FIRE's alerts with their rule labels and
    rendered annotations, at EVAL minutes."""
    out = []
    for r in rules:
        exp = []
        for labels, value in fire[r["alert"]]:
            exp.append({"exp_labels": dict(labels, **r.get("labels", {})),
                        "exp_annotations": {k: render(v, labels, value) for k, v in r.get("annotations", {}).items()}})
        out.append({"eval_time": "%dm" % EVAL, "alertname": r["alert"], "exp_alerts": exp})
    return out


def diagnosed(pod):
    """Returns the first scrape of /metrics after the pod's first diagnosis: in agent mode once /report answers
    200, with --exporter once gpunode_exporter_check_age_seconds is 0 or more; None when none came in 90 s."""
    def ready():
        if exporter_mode:
            st, body = pod.http("/metrics")
            age = [s for s in parse_scrape(body.decode()) if s[0] == "gpunode_exporter_check_age_seconds"]
            return st == 200 and age and float(age[0][2]) >= 0 and body
        return pod.http("/report")[0] == 200 and pod.http("/metrics")
    got = H.wait(ready, 90, 0.25)
    if got is None:
        return None
    return got.decode() if exporter_mode else (got[1].decode() if got[0] == 200 else None)


class Peer(http.server.BaseHTTPRequestHandler):
    """Answers GET /metrics with the server's page (a recorded node exporter)."""

    def do_GET(self):
        body = self.server.page if self.path == "/metrics" else b"not found\n"
        self.send_response(200 if self.path == "/metrics" else 404)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def start_peers(scenario):
    """Adds the addresses of the metrics pods on SCENARIO's node to the loopback and serves the recorded node
    exporter page at the node exporter's; returns the servers. Raises on a failed `ip addr replace` or bind."""
    servers = []
    pods = os.path.join(tests, "scenarios", API_FROM, "api", "api", "v1", "pods?fieldSelector=spec.nodeName=%s.json"
                        % API_FROM)
    items = json.load(open(pods))["items"]
    ips = {}
    for p in items:
        labels = p["metadata"].get("labels", {})
        if labels.get("app") == "nvidia-dcgm-exporter":
            ips["dcgm"] = p["status"]["podIP"]
        elif "node-exporter" in p["metadata"]["name"]:
            ips["node"] = p["status"]["podIP"]
    for ip in ips.values():
        subprocess.run(["ip", "addr", "replace", ip + "/32", "dev", "lo"], check=True, stderr=subprocess.DEVNULL)
    page = os.path.join(tests, "scenarios", scenario, "metrics", "node", "metrics")
    if "node" in ips and os.path.exists(page):
        srv = http.server.ThreadingHTTPServer((ips["node"], 9100), Peer)
        srv.page = open(page, "rb").read()
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
    return servers


def api_for(node):
    """Returns a copy of API_FROM's recorded objects with its node renamed NODE (names and contents)."""
    src = os.path.join(tests, "scenarios", API_FROM, "api")
    dst = os.path.join(tmp, "api-src-" + node)
    for dirpath, _, names in os.walk(src):
        rel = os.path.relpath(dirpath, src)
        os.makedirs(os.path.join(dst, rel), exist_ok=True)
        for n in names:
            with open(os.path.join(dirpath, n)) as f:
                text = f.read().replace(API_FROM, node)
            with open(os.path.join(dst, rel, n.replace(API_FROM, node)), "w") as f:
                f.write(text)
    return dst


try:
    spec = H.daemonset_spec(os.path.join(source_root, "deploy", "daemonset.yaml"))
    mon = json.loads(subprocess.run(["node", os.path.join(tests, "deploy", "monitoring-spec.mjs"),
                                     os.path.join(source_root, "deploy")], check=True, capture_output=True,
                                    text=True).stdout)
    rules = [r for g in mon["groups"] for r in g["rules"] if "alert" in r]
    with open(tmp + "/rules.json", "w") as f:
        json.dump({"groups": mon["groups"]}, f, indent=1)
    what = "gpunode exporter --check-interval 1s" if exporter_mode else "the DaemonSet's agent"
    print("# %s; alerts: %s" % (what, " ".join(r["alert"] for r in rules)))
    for scenario in SCENARIOS:
        print("# " + scenario, flush=True)
        node = scenario
        scen = os.path.join(tests, "scenarios", scenario)
        work = os.path.join(tmp, scenario)
        os.makedirs(work)
        pod = H.DaemonSetPod(work, spec, gpunode, fake_nvml, scen + "/root", scen + "/nvml.json", api_for(node), node)
        argv = None
        if exporter_mode:
            argv = ["/test/gpunode", "exporter", "--root", "/host", "--listen", ":%d" % pod.port,
                    "--check-interval", "1s"]
        peers = start_peers(scenario)
        agent = pod.run_agent(work + "/agent.log", argv)
        try:
            text = diagnosed(pod)
            check(text is not None, "%s: the first diagnosis, then a scrape of /metrics" % scenario,
                  H.tail(work + "/agent.log"))
            if text is None:
                continue
            with open(work + "/metrics.txt", "w") as f:
                f.write(text)
            if not exporter_mode:  # the agent's own report agrees with the scenario's (the alerts' premise)
                rep = json.loads(pod.http("/report")[1])
                text_exp = open(os.path.join(scen, "expected.json")).read()
                want = json.loads(text_exp[:text_exp.rindex("\nexit ")])
                layer = lambda r: r["root_cause"] and r["root_cause"]["layer"]  # noqa: E731
                check((rep["verdict"], layer(rep)) == (want["verdict"], layer(want)),
                      "%s: /report's verdict %s, root cause layer %s (expected %s, %s)"
                      % (scenario, rep["verdict"], layer(rep), want["verdict"], layer(want)))
            target = target_labels(mon, node, pod)
            fire = expected_alerts(rules, scenario, node, target)
            doc = {"rule_files": ["rules.json"], "evaluation_interval": "1m",
                   "tests": [{"interval": "1m", "input_series": input_series(parse_scrape(text), target),
                              "alert_rule_test": rules_test(rules, fire)}]}
            path = os.path.join(tmp, "test-%s.json" % scenario)
            with open(path, "w") as f:
                json.dump(doc, f, indent=1)
            r = subprocess.run(["promtool", "test", "rules", path], capture_output=True, text=True, timeout=60)
            firing = ", ".join("%s x%d" % (a, len(v)) for a, v in fire.items() if v) or "none"
            check(r.returncode == 0, "%s: promtool test rules on %d scraped series: the alerts that fire are %s"
                  % (scenario, len(doc["tests"][0]["input_series"]), firing), (r.stdout + r.stderr)[-6000:])
        finally:
            check(agent.poll() is None, "%s: the process is still running" % scenario)
            rc = H.stop(agent, 15)
            check(rc == 0, "%s: it stops cleanly on SIGTERM (rc %s)" % (scenario, rc))
            pod.close()
            for srv in peers:
                srv.shutdown()
                srv.server_close()
finally:
    H.stop_all()
    if H.failed:
        keep = tempfile.mkdtemp(prefix="daemonset-alerts-kept.")
        for name in os.listdir(tmp):
            if name.startswith("test-") or name == "rules.json":
                shutil.copy(os.path.join(tmp, name), keep)
        for scenario in SCENARIOS:
            for n in ("metrics.txt", "agent.log"):
                if os.path.exists(os.path.join(tmp, scenario, n)):
                    shutil.copy(os.path.join(tmp, scenario, n), os.path.join(keep, scenario + "-" + n))
        print("# generated tests, scrapes and logs kept in " + keep)
    shutil.rmtree(tmp, ignore_errors=True)

sys.exit(H.summary("daemonset-alerts" + ("-exporter" if exporter_mode else "")))
