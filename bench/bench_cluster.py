#!/usr/bin/python3
# bench_cluster.py: gpunode cluster --output json on synthetic clusters of 10, 1,000 and 5,000 GPU nodes (with pods and events): time, peak RSS, growth; kubectl get nodes -o json as the reference.
"""Usage: bench/bench_cluster.py [BUILD_DIR] [SIZES]   (default: build 10,1000,5000)

Not a test: prints figures from one run on this machine. The API is tests/kube-server/kube_server.py
--cluster (Python, TLS, one process) serving tests/cluster/make_cluster.py's clusters: each GPU node
with 6 pods (the agent, node-exporter, the device plugin, the RDMA plugin, 2 GPU workloads), 2 Events,
a CSINode; a tenth as many CPU nodes. Both clients list in pages of 500 (kubectl's default chunk
size), so the server's cost is in both figures: the reference is what one list of the nodes costs a
client that only reads and prints it. Time and peak RSS from bench/peakrss (the child alone)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "cluster"))
import make_cluster  # noqa: E402

build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
sizes = [int(s) for s in (sys.argv[2] if len(sys.argv) > 2 else "10,1000,5000").split(",")]
gpunode = os.path.join(build, "gpunode")
peakrss = os.path.join(build, "peakrss")
kubectl = shutil.which("kubectl")
tmp = tempfile.mkdtemp(prefix="gpunode-bench-cluster-")
subprocess.run(["sh", os.path.join(ROOT, "tests", "kube-server", "make-certs.sh"), tmp + "/certs"], check=True,
               stdout=subprocess.DEVNULL)
os.makedirs(tmp + "/empty")


def measure(cmd, env=None):
    """Returns (ms, peak KiB, exit code) of cmd, run by peakrss."""
    out = subprocess.run([peakrss] + cmd, capture_output=True, text=True, env=env).stdout.split()
    return float(out[0]), int(out[1]), int(out[2])


rows = []
for n in sizes:
    desc = make_cluster.make(n)
    path = "%s/cluster-%d.json" % (tmp, n)
    with open(path, "w") as f:
        json.dump(desc, f)
    size_mb = os.path.getsize(path) / 1e6
    n_pods, n_events, n_nodes = len(desc["pods"]), len(desc["events"]), len(desc["nodes"])
    del desc
    portf = "%s/port-%d" % (tmp, n)
    srv = subprocess.Popen(["/usr/bin/python3", os.path.join(ROOT, "tests", "kube-server", "kube_server.py"), "--certs",
                            tmp + "/certs", "--responses", tmp + "/empty", "--token", "bench", "--cluster", path,
                            "--lifetime", "600"], stdout=open(portf, "w"), stderr=subprocess.DEVNULL)
    for _ in range(600):
        t = open(portf).read().strip()
        if t.isdigit():
            break
        time.sleep(0.1)
    port = int(t)
    kc = "%s/kubeconfig-%d" % (tmp, n)
    with open(kc, "w") as f:
        f.write("apiVersion: v1\nkind: Config\nclusters:\n- name: t\n  cluster:\n    server: https://127.0.0.1:%d\n"
                "    certificate-authority: %s/certs/ca.crt\nusers:\n- name: t\n  user:\n    token: bench\n"
                "contexts:\n- name: t\n  context: {cluster: t, user: t}\ncurrent-context: t\n" % (port, tmp))
    g = [measure([gpunode, "cluster", "--kubeconfig", kc, "--output", "json"]) for _ in range(2 if n <= 1000 else 1)]
    gms, grss, grc = min(g)
    ref = None
    if kubectl:
        env = dict(os.environ, KUBECONFIG=kc, HOME=tmp)
        ref = measure([kubectl, "get", "nodes", "-o", "json", "--request-timeout", "120s"], env)
    srv.kill()
    srv.wait()
    rows.append((n, n_nodes, n_pods, n_events, size_mb, gms, grss, grc, ref))
    print("%5d GPU nodes (%d nodes, %d pods, %d events, %.1f MB of objects): gpunode cluster %.0f ms, %.1f MiB, exit %d%s"
          % (n, n_nodes, n_pods, n_events, size_mb, gms, grss / 1024, grc,
             "; kubectl get nodes -o json %.0f ms, %.1f MiB" % (ref[0], ref[1] / 1024) if ref else ""), flush=True)

print()
print("| GPU nodes | objects (MB) | gpunode cluster | peak RSS | kubectl get nodes -o json | its peak RSS |")
print("|---|---|---|---|---|---|")
for n, _, _, _, mb, ms, rss, _, ref in rows:
    print("| %d | %.1f | %.2f s | %.1f MiB | %s | %s |" % (n, mb, ms / 1000, rss / 1024, "%.2f s" % (ref[0] / 1000) if ref else "-",
                                                         "%.1f MiB" % (ref[1] / 1024) if ref else "-"))
if len(rows) >= 2:
    a, b = rows[-2], rows[-1]
    print("\ngrowth %d -> %d GPU nodes (x%.1f): time x%.2f, peak RSS x%.2f" % (
        a[0], b[0], b[0] / a[0], b[5] / a[5], b[6] / a[6]))
    if len(rows) >= 3:
        base = rows[0]
        print("above the %d-node base: time x%.2f, peak RSS x%.2f" % (
            base[0], (b[5] - base[5]) / max(1e-9, a[5] - base[5]), (b[6] - base[6]) / max(1, a[6] - base[6])))
if not kubectl:
    print("kubectl not found: no reference")
shutil.rmtree(tmp, ignore_errors=True)
