#!/usr/bin/python3
# run-image-tests.py: builds gpunode's image (scripts/image-build.sh) and runs it with podman as the
# DaemonSet would: --help both ways, `check --root /host` on a mounted scenario, `collect` inside,
# and the agent with only the in-cluster service account writing its conditions to the API stand-in.
"""usage: run-image-tests.py SOURCE_ROOT GPUNODE FAKE_NVML

Builds the image once from GPUNODE's build folder (tag localhost/gpunode-test:<pid>, removed at the end),
then checks, inside it:
- its size is at most 40 MB (podman's uncompressed size);
- `IMAGE --help` and `IMAGE gpunode --help` both print gpunode's usage;
- `check --root /host` on a scenario root mounted read-only at /host (the fake NVML and its description
  mounted under /test, GPUNODE_FAKE_NVML) gives the same report, JSON and text, and the same exit
  status as the same check run outside the image (paths and time written as placeholders);
- `collect` inside writes a snapshot (libarchive, libcrypto through the image's libraries) that
  `check --snapshot` outside reads to the same verdict and checks;
- `agent`, on the host network, with only KUBERNETES_SERVICE_HOST/PORT and a service-account folder
  (token, ca.crt, namespace) mounted read-only at /var/run/secrets/kubernetes.io/serviceaccount, a
  read-only root and a tmpfs /tmp (the DaemonSet's readOnlyRootFilesystem and emptyDir), patches the
  node's conditions on the HTTPS API stand-in (tests/kube-server), answers /health and /metrics, and
  stops with status 0 on SIGTERM; its resident memory is printed.
Exit 77 (skip) when podman is absent, not root, or podman cannot build or run a container here (a
trivial image is tried first, so a broken gpunode image fails rather than skips). Where crun refuses
podman's default rlimits or the cgroup layout (a nested VM), runc with the current rlimits is used.
Debian's python3, standard library only."""
import json, os, re, shutil, subprocess, sys, tempfile, time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import harness as H  # noqa: E402

source_root, gpunode, fake_nvml = (os.path.abspath(a) for a in sys.argv[1:4])
build_dir = os.path.dirname(gpunode)
tests = os.path.join(source_root, "tests")
check, wait = H.check, H.wait
SCENARIO = "containerd-binary-missing"  # a failing layer 2 on a full layer 1: a report with every kind of line
AGENT_SCENARIO = "k8s-healthy"  # its API objects (node "k8s-healthy") on the stand-in
MAX_BYTES = 40 * 1000 * 1000
TAG = "localhost/gpunode-test:%d" % os.getpid()
t0 = time.monotonic()


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def podman(*args, timeout=120, **kw):
    """Runs `podman ARGS`; returns the CompletedProcess (text output captured)."""
    return subprocess.run(["podman"] + list(args), capture_output=True, text=True, timeout=timeout, **kw)


if not shutil.which("podman"):
    skip("podman not found (scripts/install-deps.sh installs it)")
if os.geteuid() != 0:
    skip("needs root (podman's rootful storage; the image runs as uid 0 as the DaemonSet's does)")
tmp = tempfile.mkdtemp(prefix="image-test.")
run_flags = []
built = False
try:
    # Can podman build and run here at all? A one-file image from this machine's dash and libc.
    probe = tmp + "/probe"
    for f in ("/bin/sh", "/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/libc.so.6"):
        if not os.path.exists(f):
            skip("%s: not found (the probe image is made from this machine's dash and glibc)" % f)
        os.makedirs(probe + "/root" + os.path.dirname(f), exist_ok=True)
        shutil.copy(os.path.realpath(f), probe + "/root" + f)
    with open(probe + "/Containerfile", "w") as f:
        f.write("FROM scratch\nCOPY root/ /\n")
    r = podman("build", "--isolation", "chroot", "-q", "-t", TAG + "-probe", probe)
    if r.returncode != 0:
        skip("podman cannot build here: " + r.stderr.strip()[-300:])
    r = podman("run", "--rm", TAG + "-probe", "/bin/sh", "-c", "echo probe")
    if r.returncode != 0 and "OCI" in r.stderr:
        # crun refused (rlimits above this machine's, hybrid cgroups): runc with the limits we have
        nofile = subprocess.run(["sh", "-c", "echo $(ulimit -Sn):$(ulimit -Hn)"], capture_output=True,
                                text=True).stdout.strip()
        run_flags = ["--runtime", "runc", "--ulimit", "nofile=" + nofile, "--ulimit", "nproc=4096:4096"]
        first = r.stderr.strip()
        r = podman("run", "--rm", *run_flags, TAG + "-probe", "/bin/sh", "-c", "echo probe")
        if r.returncode != 0:
            skip("podman cannot run a container here: %s; with runc: %s" % (first, r.stderr.strip()[-300:]))
        print("# crun refused (%s): running with %s" % (first[-120:], " ".join(run_flags)))
    elif r.returncode != 0 or r.stdout.strip() != "probe":
        skip("podman cannot run a container here: " + r.stderr.strip()[-300:])

    # ---- the image ----
    t = time.monotonic()
    b = subprocess.run([os.path.join(source_root, "scripts", "image-build.sh"), build_dir, TAG],
                       capture_output=True, text=True, timeout=300)
    built = b.returncode == 0
    check(built, "scripts/image-build.sh builds the image (%.1f s)" % (time.monotonic() - t), b.stdout + b.stderr)
    if not built:
        sys.exit(H.summary("image"))
    size = int(podman("image", "inspect", "--format", "{{.Size}}", TAG).stdout.strip() or 0)
    # A sanitizer build carries libasan/libubsan and a bigger binary: the limit is the shipped image's.
    sanitized = re.search(r"lib(asan|ubsan|tsan)\.so", subprocess.run(["ldd", gpunode], capture_output=True,
                                                                     text=True).stdout) is not None
    check(0 < size <= (MAX_BYTES if not sanitized else 2 * MAX_BYTES),
          "the image is %d bytes (%.1f MB), at most %d MB%s" %
          (size, size / 1e6, MAX_BYTES // 10**6, " unsanitized (this gpunode is a sanitizer build)" if sanitized else ""))

    def run(*args, mounts=(), env=None, extra=(), timeout=60):
        """Runs the image with ARGS (podman run --rm), MOUNTS as (source, target, mode) and ENV; returns
        the CompletedProcess."""
        cmd = ["run", "--rm", "--network", "none"] + run_flags + list(extra)
        for src, dst, mode in mounts:
            cmd += ["-v", "%s:%s:%s" % (src, dst, mode)]
        for k, v in (env or {}).items():
            cmd += ["-e", "%s=%s" % (k, v)]
        return podman(*(cmd + [TAG] + list(args)), timeout=timeout)

    # ---- the entrypoint, both ways ----
    for args in (["--help"], ["gpunode", "--help"]):
        r = run(*args)
        check(r.returncode == 0 and r.stdout.startswith("usage: gpunode"),
              "`podman run IMAGE %s` prints gpunode's usage (exit %d)" % (" ".join(args), r.returncode),
              r.stdout[:300] + r.stderr[-300:])
    r = run("gpunode", "--version")
    check(r.returncode == 0 and r.stdout.startswith("gpunode "), "`IMAGE gpunode --version`: %s" % r.stdout.strip())

    # ---- check --root /host: the same report inside as outside ----
    scen = os.path.join(tests, "scenarios", SCENARIO)
    mounts = [(scen + "/root", "/host", "ro"), (fake_nvml, "/test/libnvidia-ml.so.1", "ro"),
              (scen + "/nvml.json", "/test/nvml.json", "ro")]
    env = {"GPUNODE_FAKE_NVML": "/test/nvml.json", "NO_COLOR": "1"}

    def placeholders(text, root, nvml):
        text = text.replace(root, "@ROOT@").replace(nvml, "@NVML_LIBRARY@")
        text = re.sub(r'^(  "time": )"[^"]*"', r'\1"@TIME@"', text, flags=re.M)
        return re.sub(r"^(gpunode check: node .*\)) at \S+$", r"\1 at @TIME@", text, flags=re.M)

    for fmt in ("json", "text"):
        args = ["check", "--node", SCENARIO, "--output", fmt]
        inside = run(*(args + ["--root", "/host", "--nvml-library", "/test/libnvidia-ml.so.1"]), mounts=mounts, env=env)
        outside = subprocess.run([gpunode] + args + ["--root", scen + "/root", "--nvml-library", fake_nvml],
                                 capture_output=True, text=True, timeout=60,
                                 env=dict(os.environ, GPUNODE_FAKE_NVML=scen + "/nvml.json", NO_COLOR="1",
                                          NODE_NAME="", KUBECONFIG="/nonexistent", KUBERNETES_SERVICE_HOST=""))
        a = placeholders(inside.stdout, "/host", "/test/libnvidia-ml.so.1")
        b = placeholders(outside.stdout, scen + "/root", fake_nvml)
        check(a == b and a.strip() and inside.returncode == outside.returncode,
              "check --root /host (%s) inside the image: the same report and exit %d as outside (%d)" %
              (fmt, inside.returncode, outside.returncode),
              "inside stderr: %s\n--- outside\n%s\n--- inside\n%s" % (inside.stderr[-500:], b[:1500], a[:1500]))
        check(inside.stderr == "", "check inside the image writes nothing to stderr", inside.stderr[-500:])

    # ---- collect inside, check --snapshot outside ----
    out_dir = tmp + "/out"
    os.makedirs(out_dir)
    r = run("collect", "--root", "/host", "--nvml-library", "/test/libnvidia-ml.so.1", "--node", SCENARIO,
            "-o", "/out/snap.tar.gz", mounts=mounts + [(out_dir, "/out", "rw")], env=env)
    check(r.returncode == 0 and os.path.getsize(out_dir + "/snap.tar.gz") > 0 if os.path.exists(out_dir + "/snap.tar.gz") else False,
          "collect inside the image writes a snapshot (libarchive through the image's libraries; exit %d)" % r.returncode,
          r.stderr[-500:])
    if os.path.exists(out_dir + "/snap.tar.gz"):
        rep = subprocess.run([gpunode, "check", "--snapshot", out_dir + "/snap.tar.gz", "--output", "json"],
                             capture_output=True, text=True, timeout=60)
        direct = subprocess.run([gpunode, "check", "--root", scen + "/root", "--nvml-library", fake_nvml, "--node",
                                 SCENARIO, "--output", "json"], capture_output=True, text=True, timeout=60,
                                env=dict(os.environ, GPUNODE_FAKE_NVML=scen + "/nvml.json", NODE_NAME="",
                                         KUBECONFIG="/nonexistent", KUBERNETES_SERVICE_HOST=""))

        def verdict(out):
            try:
                d = json.loads(out)
            except ValueError:
                return None
            return d.get("verdict"), [(c.get("id"), c.get("status")) for c in d.get("checks", [])]
        v = verdict(rep.stdout)
        check(v is not None and v == verdict(direct.stdout),
              "check --snapshot of the image's snapshot: verdict %s and every check as the direct check's" %
              (v[0] if v else None), rep.stderr[-500:])

    # ---- the agent, in-cluster credentials only ----
    ascen = os.path.join(tests, "scenarios", AGENT_SCENARIO)
    H.make_certs(tmp + "/certs")
    shutil.copytree(ascen + "/api", tmp + "/api")
    token = "image-sa-token-0123456789"
    _, api_port = H.start_kube_server(tmp + "/certs", tmp + "/api", token, tmp + "/api.out", lifetime=120,
                                      log=tmp + "/requests.log")
    api = H.Api(api_port, tmp + "/certs/ca.crt", token)
    sa = tmp + "/serviceaccount"
    os.makedirs(sa)
    with open(sa + "/token", "w") as f:
        f.write(token)
    shutil.copy(tmp + "/certs/ca.crt", sa + "/ca.crt")
    with open(sa + "/namespace", "w") as f:
        f.write("gpunode")
    port = H.free_port()
    name = "gpunode-image-agent-%d" % os.getpid()
    cmd = ["run", "-d", "--name", name, "--network", "host", "--read-only", "--tmpfs", "/tmp:size=16m"] + run_flags
    for src, dst, mode in [(ascen + "/root", "/host", "ro"), (fake_nvml, "/test/libnvidia-ml.so.1", "ro"),
                           (ascen + "/nvml.json", "/test/nvml.json", "ro"),
                           (sa, "/var/run/secrets/kubernetes.io/serviceaccount", "ro")]:
        cmd += ["-v", "%s:%s:%s" % (src, dst, mode)]
    for k, v in {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(api_port),
                 "NODE_NAME": AGENT_SCENARIO, "GPUNODE_FAKE_NVML": "/test/nvml.json"}.items():
        cmd += ["-e", "%s=%s" % (k, v)]
    cmd += [TAG, "agent", "--root", "/host", "--listen", "127.0.0.1:%d" % port, "--check-interval", "60s",
            "--nvml-library", "/test/libnvidia-ml.so.1"]
    r = podman(*cmd)
    check(r.returncode == 0, "the agent's container starts", r.stderr[-500:])
    try:
        def http(path):
            try:
                return H.http_get("http://127.0.0.1:%d%s" % (port, path), timeout=5)[0]
            except OSError:
                return None
        check(wait(lambda: http("/metrics") == 200, 30, 0.25) is not None, "the agent serves /metrics")
        conds = wait(lambda: (lambda d: d if "GPUHardwareProblem" in d else None)(
            {c["type"]: c for c in api.get("/api/v1/nodes/" + AGENT_SCENARIO)["status"]["conditions"]}), 60, 0.25)
        check(conds is not None and conds["GPUHardwareProblem"]["status"] == "False",
              "the agent patched node %s's conditions with only the service account's credentials" % AGENT_SCENARIO,
              podman("logs", name).stderr[-1500:])
        check(wait(lambda: http("/health") == 200, 30, 0.25) is not None, "/health answers 200")
        pid = podman("inspect", "--format", "{{.State.Pid}}", name).stdout.strip()
        rss = None
        try:
            with open("/proc/%s/status" % pid) as f:
                rss = int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))
        except (OSError, AttributeError, ValueError):
            pass
        check(rss is not None, "the agent's resident memory inside the image: %s KiB" % rss)
        r = podman("stop", "-t", "15", name, timeout=30)
        rc = podman("inspect", "--format", "{{.State.ExitCode}}", name).stdout.strip()
        check(r.returncode == 0 and rc == "0", "the agent stops cleanly on SIGTERM (exit %s)" % rc,
              podman("logs", name).stderr[-1500:])
    finally:
        podman("rm", "-f", name)
finally:
    H.stop_all()
    podman("rmi", "-f", TAG + "-probe")
    if built:
        podman("rmi", "-f", TAG)
    shutil.rmtree(tmp, ignore_errors=True)

print("# image test: %.1f s" % (time.monotonic() - t0))
sys.exit(H.summary("image"))
