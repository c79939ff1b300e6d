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

The agent runs in a pod-like root: the test re-executes itself under `unshare -m -n` (a private
mount namespace and a network namespace of its own, as a pod has; the stand-in API and the HTTP
client run in it too, so :9400 is always free), builds a root on a tmpfs (the host's /usr read-only,
a copy of /etc, symlinks bin/lib/..., a minimal /dev, /proc, /sys), mounts there each volumeMount of the
DaemonSet (hostPath / -> a scenario's fixture root at /host, read-only as the manifest says;
emptyDir -> a tmpfs), bind-mounts a temporary service-account folder (token, ca.crt, namespace)
read-only at /var/run/secrets/kubernetes.io/serviceaccount, and chroots into it. Nothing on the
real host changes.

The only additions to the DaemonSet's pod, both test-only: the fake NVML, copied to
/test/lib/libnvidia-ml.so.1 with LD_LIBRARY_PATH=/test/lib (the role of the NVIDIA Container
Toolkit, which injects libnvidia-ml.so.1 into the real pod) and GPUNODE_FAKE_NVML=/test/nvml.json
(the fake's device description); and the binary at /test/gpunode instead of the image's
/usr/bin/gpunode (the host's /usr is mounted read-only). Exit 77 (skip) when not root or unshare is
unavailable. Debian's python3, standard library only."""
import fcntl, json, os, shutil, socket, ssl, struct, subprocess, sys, tempfile, time, urllib.request

source_root, gpunode, fake_nvml = (os.path.abspath(a) for a in sys.argv[1:4])
tests = os.path.join(source_root, "tests")
here = os.path.join(tests, "deploy")
SCENARIO = "k8s-healthy"  # its root, NVML description and API objects (node "k8s-healthy")
NODE = "k8s-healthy"
TOKEN = "daemonset-sa-token-0123456789"
SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"

if os.environ.get("GPUNODE_DS_INNER") != "1":
    if os.geteuid() != 0:
        print("SKIP: needs root (mount and network namespaces)")
        sys.exit(77)
    if not shutil.which("unshare"):
        print("SKIP: unshare not found")
        sys.exit(77)
    probe = subprocess.run(["unshare", "-m", "-n", "--propagation", "private", "true"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if probe.returncode != 0:
        print("SKIP: unshare -m -n is not permitted here")
        sys.exit(77)
    os.environ["GPUNODE_DS_INNER"] = "1"
    os.execvp("unshare", ["unshare", "-m", "-n", "--propagation", "private", sys.executable,
                          os.path.abspath(__file__)] + sys.argv[1:4])

failed = 0
procs = []
tmp = tempfile.mkdtemp(prefix="daemonset-args.")


def check(ok, what):
    global failed
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failed += 1


def sh(*cmd):
    subprocess.run(cmd, check=True)


def loopback_up():
    # SIOCGIFFLAGS / SIOCSIFFLAGS on "lo": the new network namespace's loopback starts down
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    ifr = struct.pack("16sH14x", b"lo", 0)
    flags = struct.unpack("16sH14x", fcntl.ioctl(s, 0x8913, ifr))[1]
    fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", flags | 0x1))  # IFF_UP
    s.close()


def start_printing_port(cmd, out):
    f = open(out, "w")
    p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.DEVNULL)
    procs.append(p)
    for _ in range(100):
        t = open(out).read().strip()
        if t.isdigit():
            return int(t)
        time.sleep(0.1)
    raise SystemExit("server did not start: %s" % cmd)


def wait(pred, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        try:
            v = pred()
            if v:
                return v
        except Exception:
            pass
        time.sleep(0.25)
    return None


def quantity(q, divisor):
    # a Kubernetes quantity ("20m", "48Mi", "1") as the kubelet resolves resourceFieldRef (rounded up)
    q = str(q)
    suffixes = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "m": 1e-3}
    for s, mul in sorted(suffixes.items(), key=lambda kv: -len(kv[0])):
        if q.endswith(s):
            v = float(q[:-len(s)]) * mul
            break
    else:
        v = float(q)
    d = float(quantity_divisor(divisor))
    return str(int(-(-v // d)))


def quantity_divisor(d):
    if d is None:
        return 1
    return float(quantity(d, "1")) if not str(d).endswith("m") else float(str(d)[:-1]) * 1e-3


try:
    loopback_up()
    if not os.path.exists(os.path.join(here, "node_modules", "yaml", "package.json")):
        sh("npm", "ci", "--prefix", here, "--no-audit", "--no-fund")  # as run-deploy-tests.sh does
    spec = json.loads(subprocess.run(["node", os.path.join(here, "daemonset-spec.mjs"),
                                      os.path.join(source_root, "deploy", "daemonset.yaml")],
                                     check=True, capture_output=True, text=True).stdout)
    print("# DaemonSet args:", " ".join(spec["args"]))

    # the API stand-in: the scenario's recorded objects; the service-account token is the one accepted
    sh("sh", os.path.join(tests, "kube-server", "make-certs.sh"), tmp + "/certs")
    api = tmp + "/api"
    shutil.copytree(os.path.join(tests, "scenarios", SCENARIO, "api"), api)
    api_port = start_printing_port(
        ["/usr/bin/python3", os.path.join(tests, "kube-server", "kube_server.py"), "--certs", tmp + "/certs",
         "--responses", api, "--token", TOKEN, "--lifetime", "120", "--log", tmp + "/requests.log"], tmp + "/api.out")
    ctx = ssl.create_default_context(cafile=tmp + "/certs/ca.crt")

    def api_get(path):
        req = urllib.request.Request("https://127.0.0.1:%d%s" % (api_port, path),
                                     headers={"Authorization": "Bearer " + TOKEN})
        return json.load(urllib.request.urlopen(req, context=ctx, timeout=5))

    # the service-account folder, as the kubelet projects it
    sa = tmp + "/serviceaccount"
    os.makedirs(sa)
    open(sa + "/token", "w").write(TOKEN)
    shutil.copy(tmp + "/certs/ca.crt", sa + "/ca.crt")
    open(sa + "/namespace", "w").write(spec["namespace"])

    # the pod's root
    pod = tmp + "/pod"
    os.makedirs(pod)
    sh("mount", "-t", "tmpfs", "-o", "mode=0755", "podroot", pod)
    for e in os.listdir("/"):
        if os.path.islink("/" + e):
            os.symlink(os.readlink("/" + e), pod + "/" + e)
    # /etc is copied (the image's own; mount points such as NFD's features.d are made in it)
    subprocess.run(["cp", "-a", "/etc", pod + "/etc"], stderr=subprocess.DEVNULL)
    for d in ("usr",):
        if os.path.isdir("/" + d) and not os.path.islink("/" + d):
            os.makedirs(pod + "/" + d)
            sh("mount", "--rbind", "/" + d, pod + "/" + d)
            sh("mount", "-o", "remount,bind,ro", pod + "/" + d)
    for d in ("proc", "sys"):
        os.makedirs(pod + "/" + d)
        sh("mount", "--rbind", "/" + d, pod + "/" + d)
    os.makedirs(pod + "/dev")
    sh("mount", "-t", "tmpfs", "-o", "mode=0755", "poddev", pod + "/dev")
    for dev in ("null", "zero", "full", "random", "urandom", "tty"):
        open(pod + "/dev/" + dev, "w").close()
        sh("mount", "--bind", "/dev/" + dev, pod + "/dev/" + dev)
    os.makedirs(pod + "/run")
    os.makedirs(pod + "/var")
    if not os.path.lexists(pod + "/var/run"):
        os.symlink("/run", pod + "/var/run")
    os.makedirs(pod + "/root")

    # the DaemonSet's volumeMounts: hostPath "/" is the fixture root; emptyDir a tmpfs
    fixture = os.path.join(tests, "scenarios", SCENARIO, "root")
    volumes = {v["name"]: v for v in spec["volumes"]}
    hostpaths = {}
    for m in spec["volumeMounts"]:
        v = volumes[m["name"]]
        target = pod + m["mountPath"]
        os.makedirs(target, exist_ok=True)
        if "hostPath" in v and v["hostPath"]["path"] == "/":
            sh("mount", "--rbind", fixture, target)  # the host root: the fixture
        elif "hostPath" in v:  # another host folder: a temporary one (DirectoryOrCreate)
            src = tmp + "/hostpaths" + v["hostPath"]["path"]
            os.makedirs(src, exist_ok=True)
            hostpaths[v["hostPath"]["path"]] = src
            sh("mount", "--bind", src, target)
        elif "emptyDir" in v:
            opts = "mode=1777" + (",size=" + v["emptyDir"]["sizeLimit"].replace("i", "") if v["emptyDir"].get("sizeLimit") else "")
            sh("mount", "-t", "tmpfs", "-o", opts, "emptydir", target)
        else:
            raise SystemExit("volume %s: unknown kind" % m["name"])
        if m.get("readOnly"):
            sh("mount", "-o", "remount,bind,ro", target)
    # the service account, read-only as the kubelet mounts it
    sa_target = pod + "/run/secrets/kubernetes.io/serviceaccount"
    os.makedirs(sa_target)
    sh("mount", "--bind", sa, sa_target)
    sh("mount", "-o", "remount,bind,ro", sa_target)
    # the test-only additions: the binary and the fake NVML
    os.makedirs(pod + "/test/lib")
    shutil.copy(gpunode, pod + "/test/gpunode")
    shutil.copy(fake_nvml, pod + "/test/lib/libnvidia-ml.so.1")
    shutil.copy(os.path.join(tests, "scenarios", SCENARIO, "nvml.json"), pod + "/test/nvml.json")

    # env: the DaemonSet's, resolved as the kubelet does, plus the kubelet's own variables
    pod_name = spec["name"] + "-x7k2q"
    fields = {"spec.nodeName": NODE, "metadata.name": pod_name, "metadata.namespace": spec["namespace"],
              "metadata.uid": "pod-uid-0", "spec.serviceAccountName": spec["serviceAccountName"],
              "status.podIP": "127.0.0.1", "status.podIPs": "127.0.0.1", "status.hostIP": "127.0.0.1",
              "status.hostIPs": "127.0.0.1"}
    env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME": pod_name,
           "KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(api_port),
           "KUBERNETES_SERVICE_PORT_HTTPS": str(api_port), "KUBERNETES_PORT": "tcp://127.0.0.1:%d" % api_port,
           "KUBERNETES_PORT_%d_TCP" % api_port: "tcp://127.0.0.1:%d" % api_port,
           "KUBERNETES_PORT_%d_TCP_PROTO" % api_port: "tcp", "KUBERNETES_PORT_%d_TCP_PORT" % api_port: str(api_port),
           "KUBERNETES_PORT_%d_TCP_ADDR" % api_port: "127.0.0.1"}
    res = spec["resources"]
    for e in spec["env"]:
        if "value" in e:
            env[e["name"]] = e["value"]
        elif "fieldRef" in e.get("valueFrom", {}):
            env[e["name"]] = fields[e["valueFrom"]["fieldRef"]["fieldPath"]]
        elif "resourceFieldRef" in e.get("valueFrom", {}):
            r = e["valueFrom"]["resourceFieldRef"]
            kind, what = r["resource"].split(".", 1)
            q = res.get(kind, {}).get(what) or res.get("requests" if kind == "limits" else "limits", {}).get(what) or "0"
            env[e["name"]] = quantity(q, r.get("divisor"))
        else:
            raise SystemExit("env %s: valueFrom not resolved by this test: %s" % (e["name"], e["valueFrom"]))
    check(env.get("NODE_NAME") == NODE, "NODE_NAME comes from fieldRef spec.nodeName")
    env["LD_LIBRARY_PATH"] = "/test/lib"
    env["GPUNODE_FAKE_NVML"] = "/test/nvml.json"

    argv = ["/test/gpunode"] + spec["args"] if not spec["command"] else spec["command"] + spec["args"]
    log = open(tmp + "/agent.log", "w")
    agent = subprocess.Popen(["chroot", pod] + argv, cwd="/", env=env, stdout=log, stderr=subprocess.STDOUT)
    procs.append(agent)

    port = next(p["containerPort"] for p in spec["ports"] if p["name"] == "metrics")
    named = {p["name"]: p["containerPort"] for p in spec["ports"]}

    def http(path, p=port, timeout=5):
        try:
            r = urllib.request.urlopen("http://127.0.0.1:%d%s" % (p, path), timeout=timeout)
            return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    # the args as the process got them
    check(wait(lambda: open("/proc/%d/cmdline" % agent.pid, "rb").read().split(b"\0")[1:-1] ==
               [a.encode() for a in spec["args"]], 5) is not None, "the agent runs with exactly the DaemonSet's args")
    environ = wait(lambda: dict(kv.split(b"=", 1) for kv in open("/proc/%d/environ" % agent.pid, "rb").read().split(b"\0") if b"=" in kv), 5)
    check(environ is not None and environ.get(b"NODE_NAME") == NODE.encode(), "the agent's environment carries NODE_NAME")

    st = wait(lambda: http("/metrics")[0] == 200, 30)
    check(st is not None, "/metrics answers on the DaemonSet's port %d" % port)
    st, body = http("/metrics")
    check(st == 200 and b"DCGM_FI_DEV_GPU_TEMP" in body, "/metrics serves DCGM metrics")
    rep = wait(lambda: (lambda r: r if r[0] == 200 else None)(http("/report")), 60)
    check(rep is not None and json.loads(rep[1]).get("schema") == "gpunode.report/v1", "/report serves the report")

    conds = wait(lambda: (lambda d: d if "GPUHardwareProblem" in d else None)(
        {c["type"]: c for c in api_get("/api/v1/nodes/" + NODE)["status"]["conditions"]}), 60)
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
    nfd = hostpaths.get("/etc/kubernetes/node-feature-discovery/features.d")
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
    log.close()
    print("# agent log (last lines):")
    for line in open(tmp + "/agent.log").read().splitlines()[-40:]:
        print("#   " + line)
finally:
    for p in procs:
        if p.poll() is None:
            p.kill()
            p.wait()
    # the mounts vanish with the namespace; unmount anyway so the tree can be removed
    subprocess.run(["umount", "-R", tmp + "/pod"], stderr=subprocess.DEVNULL)
    shutil.rmtree(tmp, ignore_errors=True)

print("daemonset-args: %s" % ("all passed" if not failed else "%d failed" % failed))
sys.exit(1 if failed else 0)
