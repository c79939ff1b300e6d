#!/usr/bin/python3
# run-daemonset-args.py: runs `gpunode agent` with exactly the args and env of deploy/daemonset.yaml,
# in a pod-like root, against the HTTPS API stand-in (meson test --suite deploy).
"""usage: run-daemonset-args.py SOURCE_ROOT GPUNODE FAKE_NVML

The DaemonSet's container args and env are taken verbatim (tests/deploy/daemonset-spec.mjs parses
the YAML with node's `yaml` package); env valueFrom is resolved as the kubelet would (fieldRef
spec.nodeName = the test node, metadata.*, status.*; resourceFieldRef from the container's
resources), and the kubelet's own variables are added: HOSTNAME, the image's PATH, and the
"kubernetes" service's links (KUBERNETES_SERVICE_HOST=127.0.0.1, KUBERNETES_SERVICE_PORT=<the
stand-in's port>, KUBERNETES_PORT...).

The agent runs in a pod-like root (tests/harness.py: in_pod_namespaces, DaemonSetPod, shared with
run-daemonset-alerts.py): the test re-executes itself under `unshare -m -n` (a private
mount namespace and a network namespace of its own, as a pod has; the stand-in API and the HTTP
client run in it too, so :9400 is always free), builds a root on a tmpfs (the host's /usr read-only,
a copy of /etc, symlinks bin/lib/..., a minimal /dev, /proc, /sys), mounts there each volumeMount of the
DaemonSet (hostPath / -> a scenario's fixture root at /host, read-only as the manifest says;
emptyDir -> a tmpfs), bind-mounts a temporary service-account folder (token, ca.crt, namespace)
read-only at /var/run/secrets/kubernetes.io/serviceaccount, and chroots into it. Nothing on the
real host changes.

The only additions to the DaemonSet's pod, both test-only: the fake NVML, copied where a driver
installs libnvidia-ml.so.1 on the host (usr/lib/x86_64-linux-gnu in a copy of the fixture root: the
agent finds it under --root /host, with no LD_LIBRARY_PATH and no nvidia runtime, as it finds the real
one) and GPUNODE_FAKE_NVML=/test/nvml.json (the fake's device description); and the binary at
/test/gpunode instead of the image's /usr/bin/gpunode (the host's /usr is mounted read-only).

A second pod on a node whose NVML does not initialise (no device description), with `--kmsg
/host/var/log/kern.log` added to the args (the unprivileged set-up's kernel log): the readiness probe
succeeds once a diagnosis finished (Ready means the agent works, not that the node is healthy), /health
answers 503, GPUHardwareProblem=True is written, and the diagnosis read the saved kernel log.
Exit 77 (skip) when not root or unshare is unavailable. Debian's python3, standard library only."""
import json, os, shutil, subprocess, sys, tempfile

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import harness as H  # noqa: E402

source_root, gpunode, fake_nvml = (os.path.abspath(a) for a in sys.argv[1:4])
tests = os.path.join(source_root, "tests")
SCENARIO = "k8s-healthy"  # its root, NVML description and API objects (node "k8s-healthy")
NODE = "k8s-healthy"

H.in_pod_namespaces([os.path.abspath(__file__)] + sys.argv[1:4])
check, wait = H.check, H.wait
tmp = tempfile.mkdtemp(prefix="daemonset-args.")
pod = None

try:
    spec = H.daemonset_spec(os.path.join(source_root, "deploy", "daemonset.yaml"))
    print("# DaemonSet args:", " ".join(spec["args"]))
    scen = os.path.join(tests, "scenarios", SCENARIO)
    pod = H.DaemonSetPod(tmp, spec, gpunode, fake_nvml, scen + "/root", scen + "/nvml.json", scen + "/api", NODE)
    env = pod.env
    check(env.get("NODE_NAME") == NODE, "NODE_NAME comes from fieldRef spec.nodeName")
    agent = pod.run_agent(tmp + "/agent.log")
    port, named, http = pod.port, pod.named_ports, pod.http

    # the args as the process got them
    check(wait(lambda: open("/proc/%d/cmdline" % agent.pid, "rb").read().split(b"\0")[1:-1] ==
               [a.encode() for a in spec["args"]], 5, 0.25) is not None, "the agent runs with exactly the DaemonSet's args")
    environ = wait(lambda: dict(kv.split(b"=", 1) for kv in open("/proc/%d/environ" % agent.pid, "rb").read().split(b"\0") if b"=" in kv), 5, 0.25)
    check(environ is not None and environ.get(b"NODE_NAME") == NODE.encode(), "the agent's environment carries NODE_NAME")

    st = wait(lambda: http("/metrics")[0] == 200, 30, 0.25)
    check(st is not None, "/metrics answers on the DaemonSet's port %d" % port)
    st, body = http("/metrics")
    check(st == 200 and b"DCGM_FI_DEV_GPU_TEMP" in body, "/metrics serves DCGM metrics")
    rep = wait(lambda: (lambda r: r if r[0] == 200 else None)(http("/report")), 60, 0.25)
    check(rep is not None and json.loads(rep[1]).get("schema") == "gpunode.report/v1", "/report serves the report")

    conds = wait(lambda: (lambda d: d if "GPUHardwareProblem" in d else None)(
        {c["type"]: c for c in pod.api.get("/api/v1/nodes/" + NODE)["status"]["conditions"]}), 60, 0.25)
    check(conds is not None, "the agent patched node %s's conditions through the in-cluster configuration" % NODE)
    if conds:
        check(conds["GPUHardwareProblem"]["status"] == "False",
              "GPUHardwareProblem is False on the healthy fixture (%s)" % conds["GPUHardwareProblem"].get("reason"))
        check(conds.get("Ready", {}).get("status") == "True", "the kubelet's Ready is kept")
    reqlog = open(tmp + "/requests.log").read()
    check("/api/v1/nodes/" + NODE in reqlog, "the requests name the node from NODE_NAME")

    # the probes, as the kubelet sends them: HTTP GET, 200 <= status < 400 is success, within timeoutSeconds
    for kind in ("readinessProbe", "livenessProbe"):
        pr = spec[kind]
        if not pr:
            check(False, "%s is defined" % kind)
            continue
        g = pr["httpGet"]
        p = named[g["port"]] if isinstance(g["port"], str) else g["port"]
        ok = wait(lambda: 200 <= http(g["path"], p, pr.get("timeoutSeconds", 1))[0] < 400, 30)
        check(ok is not None, "%s GET %s on port %s succeeds (%s)" % (kind, g["path"], g["port"], http(g["path"], p)[0]))
    nfd = pod.hostpaths.get("/etc/kubernetes/node-feature-discovery/features.d")
    check(nfd is not None and wait(lambda: os.path.getsize(nfd + "/gfd") > 0, 30) is not None,
          "the labels loop wrote NFD's feature file on the host path")
    check(agent.poll() is None, "the agent is still running")
    agent.terminate()
    try:
        rc = agent.wait(15)
    except subprocess.TimeoutExpired:
        agent.kill()
        rc = agent.wait()
    check(rc == 0, "the agent stops cleanly on SIGTERM (rc %s)" % rc)
    pod.log.close()
    print("# agent log (last lines):")
    for line in open(tmp + "/agent.log").read().splitlines()[-40:]:
        print("#   " + line)
    pod.close()

    # NVML fails on this node (no device description: nvmlInit fails), the kernel log is a saved file.
    broken = tmp + "/broken"
    os.makedirs(broken)
    src = broken + "/fixture"
    shutil.copytree(scen + "/root", src, symlinks=True)
    os.makedirs(src + "/var/log", exist_ok=True)
    with open(src + "/var/log/kern.log", "w") as f:
        f.write("Dec  1 11:50:00 k8s-healthy kernel: [    0.000000] Linux version 6.1.0-18-amd64\n"
                "Dec  1 11:50:05 k8s-healthy kernel: [    5.100000] nvidia: loading out-of-tree module taints kernel.\n"
                "Dec  1 11:50:06 k8s-healthy kernel: [    6.200000] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15\n")
    pod = H.DaemonSetPod(broken, spec, gpunode, fake_nvml, src, broken + "/no-such-nvml.json", scen + "/api", NODE)
    agent = pod.run_agent(broken + "/agent.log", pod.argv() + ["--kmsg", "/host/var/log/kern.log"])
    http = pod.http
    rep = wait(lambda: (lambda r: r if r[0] == 200 else None)(http("/report")), 60, 0.25)
    check(rep is not None, "NVML failing: a diagnosis finished (/report)")
    pr = spec["readinessProbe"]
    g = pr["httpGet"]
    st = http(g["path"], named[g["port"]] if isinstance(g["port"], str) else g["port"], pr.get("timeoutSeconds", 1))
    check(200 <= st[0] < 400, "NVML failing: the readiness probe GET %s succeeds (%d %s)" % (g["path"], st[0], st[1][:80]))
    st = http("/health")
    check(st[0] == 503, "NVML failing: /health answers 503 (%d %s)" % (st[0], st[1][:80]))
    conds = wait(lambda: (lambda d: d if d.get("GPUHardwareProblem", {}).get("status") == "True" else None)(
        {c["type"]: c for c in pod.api.get("/api/v1/nodes/" + NODE)["status"]["conditions"]}), 60, 0.25)
    check(conds is not None, "NVML failing: the agent wrote GPUHardwareProblem=True")
    text = rep[1].decode() if rep else ""
    check("/host/var/log/kern.log: 3 lines scanned" in text, "--kmsg: the diagnosis read the saved kernel log")
    agent.terminate()
    try:
        agent.wait(15)
    except subprocess.TimeoutExpired:
        agent.kill()
    pod.log.close()
    for line in open(broken + "/agent.log").read().splitlines()[-10:]:
        print("#   " + line)
finally:
    H.stop_all()
    if pod:
        pod.close()  # the mounts vanish with the namespace; unmount anyway so the tree can be removed
    shutil.rmtree(tmp, ignore_errors=True)

sys.exit(H.summary("daemonset-args"))
