# harness.py: what the Python end-to-end tests share: the pass/fail counter, processes, ports, HTTP, the API stand-in.
"""Imported by the scripts under tests/ (tests/<suite>/run-*.py put tests/ on sys.path first):

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    import harness as H

check() counts and prints one line per assertion ("ok   what" / "FAIL what"); summary() prints
"NAME: N passed, N failed" and returns the exit status. Every process started through start() or
start_printing_port() is remembered and killed by stop_all() on the way out. The DaemonSet's pod
(DaemonSetPod) is the pod-like root the deploy tests run `gpunode agent` in. Debian's /usr/bin/python3,
standard library only."""
import fcntl
import json
import os
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import time
import urllib.error
import urllib.request

TESTS = os.path.dirname(os.path.abspath(__file__))
SOURCE_ROOT = os.path.dirname(TESTS)
PYTHON = "/usr/bin/python3"  # Debian's: its modules (grpcio) belong to it, not to the python3 first on PATH

passed = 0
failed = 0
procs = []


def check(ok, what, detail=""):
    """Counts one assertion and prints it; a failure prints DETAIL below it. Returns ok as a bool."""
    global passed, failed
    ok = bool(ok)
    if ok:
        passed += 1
    else:
        failed += 1
    print(("ok   " if ok else "FAIL ") + what + ("\n" + detail if detail and not ok else ""), flush=True)
    return ok


def summary(name):
    """Prints "NAME: N passed, N failed"; returns the exit status (0 when nothing failed, 1 otherwise)."""
    print("%s: %d passed, %d failed" % (name, passed, failed), flush=True)
    return 1 if failed else 0


def free_port():
    """Returns a TCP port on 127.0.0.1 that was free a moment ago (the kernel's pick)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def track(p):
    """Remembers the process P for stop_all(); returns P."""
    procs.append(p)
    return p


def start(cmd, **kw):
    """Starts CMD (subprocess.Popen keywords KW) and remembers it for stop_all(); returns the process."""
    return track(subprocess.Popen(cmd, **kw))


def start_printing_port(cmd, out, tries=100, pause=0.1):
    """Starts CMD, a server that prints the port it listens on, with its stdout in the file OUT; returns
    (process, port) once the port is printed. Raises SystemExit when it is not within tries x pause seconds."""
    with open(out, "w") as f:
        p = start(cmd, stdout=f, stderr=subprocess.DEVNULL)
    for _ in range(tries):
        with open(out) as f:
            t = f.read().strip()
        if t.isdigit():
            return p, int(t)
        time.sleep(pause)
    raise SystemExit("server did not start: %s" % cmd)


def stop(p, timeout=10):
    """Sends SIGTERM to P and waits up to TIMEOUT seconds; returns its exit status, or None when it had to be
    killed."""
    p.send_signal(signal.SIGTERM)
    try:
        return p.wait(timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        return None


def stop_all(term_first=False, timeout=5):
    """Stops every process started here that still runs: SIGKILL, or SIGTERM first with TERM_FIRST (each
    then has TIMEOUT seconds before SIGKILL). Never fails."""
    if term_first:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
    for p in procs:
        if p.poll() is None and term_first:
            try:
                p.wait(timeout)
                continue
            except subprocess.TimeoutExpired:
                pass
        if p.poll() is None:
            p.kill()
            p.wait()


def wait(pred, timeout=20, interval=0.2, swallow=True, last_try=False):
    """Calls PRED every INTERVAL seconds until it returns something true, for at most TIMEOUT seconds; returns
    that value, or None at the deadline (PRED's own last value with LAST_TRY). An exception of PRED counts as
    false with SWALLOW, and propagates without it."""
    end = time.time() + timeout
    while time.time() < end:
        try:
            v = pred()
        except Exception:
            if not swallow:
                raise
            v = None
        if v:
            return v
        time.sleep(interval)
    return pred() if last_try else None


def http_get(url, timeout=5, headers=None, context=None):
    """GETs URL; returns (status, headers as a dict, body bytes), an HTTP error status included. Raises
    OSError (urllib.error.URLError) when nothing answers."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=context) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def write_json(path, obj):
    """Writes OBJ as JSON to PATH atomically (a temporary file renamed over it). Raises OSError."""
    with open(path + ".new", "w") as f:
        json.dump(obj, f)
    os.rename(path + ".new", path)


def tail(path, n=3000):
    """Returns the last N characters of the file PATH, or "" when it cannot be read."""
    try:
        with open(path, errors="replace") as f:
            return f.read()[-n:]
    except OSError:
        return ""


# ---- the Kubernetes API stand-in (tests/kube-server/kube_server.py) ----

def make_certs(folder):
    """Writes a CA and a server certificate for 127.0.0.1 into FOLDER (kube-server/make-certs.sh). Raises
    subprocess.CalledProcessError."""
    subprocess.run(["sh", os.path.join(TESTS, "kube-server", "make-certs.sh"), folder], check=True,
                   stdout=subprocess.DEVNULL)


def start_kube_server(certs, responses, token, out, lifetime=120, log=None, extra=(), pause=0.1):
    """Starts kube_server.py with the certificates in CERTS answering the files under RESPONSES for the
    bearer TOKEN (stdout in the file OUT, the request log in LOG); returns (process, port)."""
    cmd = [PYTHON, os.path.join(TESTS, "kube-server", "kube_server.py"), "--certs", certs, "--responses", responses,
           "--token", token] + list(extra) + ["--lifetime", str(lifetime)] + (["--log", log] if log else [])
    return start_printing_port(cmd, out, pause=pause)


def write_kubeconfig(path, port, ca, token):
    """Writes a kubeconfig to PATH for https://127.0.0.1:PORT, trusting the CA file CA, with the bearer TOKEN.
    Raises OSError."""
    with open(path, "w") as f:
        f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: t\n  cluster:\n    server: https://127.0.0.1:%d\n"
                "    certificate-authority: %s\nusers:\n- name: t\n  user:\n    token: %s\n"
                "contexts:\n- name: t\n  context: {cluster: t, user: t}\ncurrent-context: t\n" % (port, ca, token))


class Api:
    """A client of the API stand-in at https://127.0.0.1:PORT (CA file CA, bearer TOKEN)."""

    def __init__(self, port, ca, token=None):
        self.port, self.token = port, token
        self.ctx = ssl.create_default_context(cafile=ca)

    def get(self, path):
        """Returns the JSON answer to GET PATH. Raises OSError or ValueError."""
        headers = {"Authorization": "Bearer " + self.token} if self.token else {}
        req = urllib.request.Request("https://127.0.0.1:%d%s" % (self.port, path), headers=headers)
        with urllib.request.urlopen(req, context=self.ctx, timeout=5) as r:
            return json.load(r)

    def control(self, body=None, path="/_control", tries=1):
        """Posts BODY to the stand-in's control endpoint (GET without one); returns its JSON answer. Tries
        TRIES times 0.2 s apart; returns None when every try failed, or raises the last OSError when TRIES is 1."""
        req = urllib.request.Request("https://127.0.0.1:%d%s" % (self.port, path),
                                     data=json.dumps(body).encode() if body is not None else None,
                                     method="POST" if body is not None else "GET")
        for i in range(tries):
            try:
                with urllib.request.urlopen(req, context=self.ctx, timeout=5) as r:
                    return json.load(r)
            except OSError:
                if tries == 1:
                    raise
                time.sleep(0.2)
        return None


# ---- the DaemonSet's pod: deploy/daemonset.yaml's container, run as the kubelet would ----

def in_pod_namespaces(argv, marker="GPUNODE_DS_INNER"):
    """Re-executes this script under `unshare -m -n` (a private mount namespace and a network namespace of
    its own, as a pod has) with ARGV, unless it already runs there (the environment variable MARKER is 1);
    then brings the namespace's loopback up and returns. Exits 77 (skip) when not root or unshare is
    unavailable or refused."""
    if os.environ.get(marker) != "1":
        if os.geteuid() != 0:
            print("SKIP: needs root (mount and network namespaces)")
            raise SystemExit(77)
        if not shutil.which("unshare"):
            print("SKIP: unshare not found")
            raise SystemExit(77)
        probe = subprocess.run(["unshare", "-m", "-n", "--propagation", "private", "true"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if probe.returncode != 0:
            print("SKIP: unshare -m -n is not permitted here")
            raise SystemExit(77)
        os.environ[marker] = "1"
        os.execvp("unshare", ["unshare", "-m", "-n", "--propagation", "private", PYTHON] + list(argv))
    loopback_up()


def loopback_up():
    """Brings "lo" up (SIOCGIFFLAGS / SIOCSIFFLAGS): a new network namespace's loopback starts down. Raises
    OSError."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        ifr = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(s, 0x8913, ifr))[1]
        fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", flags | 0x1))  # IFF_UP


def sh(*cmd):
    """Runs CMD; raises subprocess.CalledProcessError when it fails."""
    subprocess.run(cmd, check=True)


def daemonset_spec(daemonset_yaml=None):
    """Returns what the tests need of deploy/daemonset.yaml's pod template (tests/deploy/daemonset-spec.mjs:
    the namespace, service account, first container's command, args, env, ports, probes, resources,
    volumeMounts, the pod's volumes), verbatim. Installs tests/deploy/node_modules first when missing (npm
    ci, as run-deploy-tests.sh does). Raises subprocess.CalledProcessError."""
    here = os.path.join(TESTS, "deploy")
    if not os.path.exists(os.path.join(here, "node_modules", "yaml", "package.json")):
        sh("npm", "ci", "--prefix", here, "--no-audit", "--no-fund")
    path = daemonset_yaml or os.path.join(SOURCE_ROOT, "deploy", "daemonset.yaml")
    return json.loads(subprocess.run(["node", os.path.join(here, "daemonset-spec.mjs"), path],
                                     check=True, capture_output=True, text=True).stdout)


def quantity(q, divisor):
    """Returns the Kubernetes quantity Q ("20m", "48Mi", "1") divided by DIVISOR (a quantity, or None for 1),
    rounded up, as a decimal string: what the kubelet puts in a resourceFieldRef variable."""
    q = str(q)
    suffixes = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "k": 10**3, "M": 10**6, "G": 10**9,
                "T": 10**12, "m": 1e-3}
    for s, mul in sorted(suffixes.items(), key=lambda kv: -len(kv[0])):
        if q.endswith(s):
            v = float(q[:-len(s)]) * mul
            break
    else:
        v = float(q)
    d = float(_quantity_divisor(divisor))
    return str(int(-(-v // d)))


def _quantity_divisor(d):
    """Returns the divisor quantity D as a number (1 for None)."""
    if d is None:
        return 1
    return float(quantity(d, "1")) if not str(d).endswith("m") else float(str(d)[:-1]) * 1e-3


class DaemonSetPod:
    """The DaemonSet's pod, pod-like, under the folder TMP (call in_pod_namespaces() first): the API
    stand-in answering a scenario's recorded objects through the in-cluster service account, a root on a
    tmpfs (the host's /usr read-only, a copy of /etc, a minimal /dev, /proc, /sys) with each of the
    DaemonSet's volumeMounts (hostPath / -> the fixture ROOT, read-only as the manifest says; other
    hostPaths -> temporary folders; emptyDir -> a tmpfs), the service account's folder read-only, and the
    test-only additions: the binary at /test/gpunode, and the fake NVML answering NVML_JSON
    (GPUNODE_FAKE_NVML=/test/nvml.json; a missing file: NVML does not initialise). The fake is where a
    driver installs libnvidia-ml.so.1 on the host, NVML_HOST_PATH in a copy of ROOT (the agent finds it
    under --root, as it finds the host's real one without the nvidia runtime); NVML_HOST_PATH None puts it
    at /test/lib with LD_LIBRARY_PATH=/test/lib instead (the NVIDIA Container Toolkit's role). The env is
    the DaemonSet's, resolved as the kubelet does, plus the kubelet's own variables."""

    TOKEN = "daemonset-sa-token-0123456789"

    def __init__(self, tmp, spec, gpunode, fake_nvml, root, nvml_json, api_dir, node,
                 nvml_host_path="usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"):
        self.tmp, self.spec, self.node = tmp, spec, node
        self.nvml_in_host = bool(nvml_host_path)
        if nvml_host_path:
            host = tmp + "/host-root"
            shutil.copytree(root, host, symlinks=True)
            os.makedirs(os.path.dirname(os.path.join(host, nvml_host_path)), exist_ok=True)
            shutil.copy(fake_nvml, os.path.join(host, nvml_host_path))
            os.chmod(os.path.join(host, nvml_host_path), 0o755)  # writable by others: gpunode would refuse it
            root = host
        self.hostpaths = {}
        self.agent = None
        make_certs(tmp + "/certs")
        self.api_dir = tmp + "/api"
        shutil.copytree(api_dir, self.api_dir)
        _, self.api_port = start_kube_server(tmp + "/certs", self.api_dir, self.TOKEN, tmp + "/api.out",
                                             log=tmp + "/requests.log")
        self.api = Api(self.api_port, tmp + "/certs/ca.crt", self.TOKEN)
        self._service_account()
        self.pod = tmp + "/pod"
        self._root(root)
        os.makedirs(self.pod + "/test/lib")
        shutil.copy(gpunode, self.pod + "/test/gpunode")
        if not self.nvml_in_host:
            shutil.copy(fake_nvml, self.pod + "/test/lib/libnvidia-ml.so.1")
        if os.path.exists(nvml_json):
            shutil.copy(nvml_json, self.pod + "/test/nvml.json")
        self.env = self._env()
        self.port = next(p["containerPort"] for p in spec["ports"] if p["name"] == "metrics")
        self.named_ports = {p["name"]: p["containerPort"] for p in spec["ports"]}

    def _service_account(self):
        """Writes the service-account folder (token, ca.crt, namespace) as the kubelet projects it."""
        self.sa = self.tmp + "/serviceaccount"
        os.makedirs(self.sa)
        with open(self.sa + "/token", "w") as f:
            f.write(self.TOKEN)
        shutil.copy(self.tmp + "/certs/ca.crt", self.sa + "/ca.crt")
        with open(self.sa + "/namespace", "w") as f:
            f.write(self.spec["namespace"])

    def _root(self, fixture):
        """Builds the pod's root with the volumeMounts, FIXTURE as the host. Raises on a mount that fails."""
        pod = self.pod
        os.makedirs(pod)
        sh("mount", "-t", "tmpfs", "-o", "mode=0755", "podroot", pod)
        for e in os.listdir("/"):
            if os.path.islink("/" + e):
                os.symlink(os.readlink("/" + e), pod + "/" + e)
        # /etc is copied (the image's own; mount points such as NFD's features.d are made in it)
        subprocess.run(["cp", "-a", "/etc", pod + "/etc"], stderr=subprocess.DEVNULL)
        if os.path.isdir("/usr") and not os.path.islink("/usr"):
            os.makedirs(pod + "/usr")
            sh("mount", "--rbind", "/usr", pod + "/usr")
            sh("mount", "-o", "remount,bind,ro", pod + "/usr")
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
        volumes = {v["name"]: v for v in self.spec["volumes"]}
        for m in self.spec["volumeMounts"]:
            v = volumes[m["name"]]
            target = pod + m["mountPath"]
            os.makedirs(target, exist_ok=True)
            if "hostPath" in v and v["hostPath"]["path"] == "/":
                sh("mount", "--rbind", fixture, target)  # the host root: the fixture
            elif "hostPath" in v:  # another host folder: a temporary one (DirectoryOrCreate)
                src = self.tmp + "/hostpaths" + v["hostPath"]["path"]
                os.makedirs(src, exist_ok=True)
                self.hostpaths[v["hostPath"]["path"]] = src
                sh("mount", "--bind", src, target)
            elif "emptyDir" in v:
                size = v["emptyDir"].get("sizeLimit")
                sh("mount", "-t", "tmpfs", "-o", "mode=1777" + (",size=" + size.replace("i", "") if size else ""),
                   "emptydir", target)
            else:
                raise SystemExit("volume %s: unknown kind" % m["name"])
            if m.get("readOnly"):
                sh("mount", "-o", "remount,bind,ro", target)
        # the service account, read-only as the kubelet mounts it
        sa_target = pod + "/run/secrets/kubernetes.io/serviceaccount"
        os.makedirs(sa_target)
        sh("mount", "--bind", self.sa, sa_target)
        sh("mount", "-o", "remount,bind,ro", sa_target)

    def _env(self):
        """Returns the container's environment: the DaemonSet's env resolved as the kubelet does (fieldRef,
        resourceFieldRef), the kubelet's own variables, and the test-only NVML ones. Raises SystemExit on a
        valueFrom it does not resolve."""
        spec, port = self.spec, self.api_port
        self.pod_name = spec["name"] + "-x7k2q"
        fields = {"spec.nodeName": self.node, "metadata.name": self.pod_name, "metadata.namespace": spec["namespace"],
                  "metadata.uid": "pod-uid-0", "spec.serviceAccountName": spec["serviceAccountName"],
                  "status.podIP": "127.0.0.1", "status.podIPs": "127.0.0.1", "status.hostIP": "127.0.0.1",
                  "status.hostIPs": "127.0.0.1"}
        env = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOSTNAME": self.pod_name,
               "KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(port),
               "KUBERNETES_SERVICE_PORT_HTTPS": str(port), "KUBERNETES_PORT": "tcp://127.0.0.1:%d" % port,
               "KUBERNETES_PORT_%d_TCP" % port: "tcp://127.0.0.1:%d" % port,
               "KUBERNETES_PORT_%d_TCP_PROTO" % port: "tcp", "KUBERNETES_PORT_%d_TCP_PORT" % port: str(port),
               "KUBERNETES_PORT_%d_TCP_ADDR" % port: "127.0.0.1"}
        res = spec["resources"]
        for e in spec["env"]:
            if "value" in e:
                env[e["name"]] = e["value"]
            elif "fieldRef" in e.get("valueFrom", {}):
                env[e["name"]] = fields[e["valueFrom"]["fieldRef"]["fieldPath"]]
            elif "resourceFieldRef" in e.get("valueFrom", {}):
                r = e["valueFrom"]["resourceFieldRef"]
                kind, what = r["resource"].split(".", 1)
                q = (res.get(kind, {}).get(what) or res.get("requests" if kind == "limits" else "limits", {}).get(what)
                     or "0")
                env[e["name"]] = quantity(q, r.get("divisor"))
            else:
                raise SystemExit("env %s: valueFrom not resolved by this test: %s" % (e["name"], e["valueFrom"]))
        if not self.nvml_in_host:
            env["LD_LIBRARY_PATH"] = "/test/lib"
        env["GPUNODE_FAKE_NVML"] = "/test/nvml.json"
        return env

    def argv(self):
        """Returns the container's command line: the image's entrypoint (/test/gpunode here) and the args."""
        spec = self.spec
        return ["/test/gpunode"] + spec["args"] if not spec["command"] else spec["command"] + spec["args"]

    def run_agent(self, log, argv=None):
        """Starts the container's process (or ARGV instead) chrooted into the pod with its env, output to the
        file LOG; returns the process."""
        self.log = open(log, "w")
        self.agent = start(["chroot", self.pod] + (argv or self.argv()), cwd="/", env=self.env, stdout=self.log,
                           stderr=subprocess.STDOUT)
        return self.agent

    def http(self, path, port=None, timeout=5):
        """GETs PATH on the pod's port PORT (the metrics port by default); returns (status, body). Raises
        OSError when nothing answers."""
        st, _, body = http_get("http://127.0.0.1:%d%s" % (port or self.port, path), timeout=timeout)
        return st, body

    def close(self):
        """Kills what still runs and unmounts the pod's root (the mounts vanish with the namespace anyway)."""
        if self.agent and self.agent.poll() is None:
            self.agent.kill()
            self.agent.wait()
        subprocess.run(["umount", "-R", self.pod], stderr=subprocess.DEVNULL)
