#!/usr/bin/python3
# run-device-plugin-tests.py: `gpunode device-plugin` end to end against a python3-grpcio kubelet (dp_kubelet.py) and the fake NVML.
"""usage: run-device-plugin-tests.py GPUNODE FAKE_NVML

8 GPUs registered and listed with their NUMA nodes; Allocate (envvar, CDI), an unknown device
and garbage refused with INVALID_ARGUMENT while the plugin lives on; GetPreferredAllocation on
NVLink pairs; an application Xid (13) that leaves a GPU Healthy and a critical one (79) that does
not; a GPU lost mid-stream (Unhealthy on the open ListAndWatch stream, time measured) and its
recovery; a kubelet restart (sockets removed: the plugin re-creates its socket and registers
again); SIGTERM (socket removed, exit 0); MIG mixed; time-slicing with 4 replicas and
failRequestsGreaterThanOne; a kubelet that never answers Register (bounded retries, one clear
line); the driver gone at start (the kubelet's last devices Unhealthy) and back; hostile HTTP/2
clients; a call answered early reset after its trailers, a new connection let in when 16 hold
streams, and 4 x 32 ListAndWatch streams that never read against 8,192 devices (VmHWM growth).
Prints "lost->unhealthy ms" and the VmHWM figures. Debian's /usr/bin/python3 (python3-grpcio)."""
import json, os, shutil, signal, socket, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import grpc  # noqa: E402
import dp_kubelet as K  # noqa: E402
import harness as H  # noqa: E402

gpunode, fake_nvml = sys.argv[1], sys.argv[2]
tmp = tempfile.mkdtemp(prefix="dp-tests.")
check, procs, write_desc = H.check, H.procs, H.write_json


def uuid(i):
    return "GPU-%08x-1111-2222-3333-44445555%04x" % (0xabc00000 + i, i)


def gpu(i, **kw):
    g = {"name": "NVIDIA H100 80GB HBM3", "uuid": uuid(i), "minor_number": i,
         "pci_bus_id": "00000000:%02X:00.0" % (0x18 + i), "pci_device_id": "0x233010DE",
         "memory": {"total": 85520809984, "used": 0, "free": 85520809984, "reserved": 0},
         "mig_mode": {"current": 0, "pending": 0}, "remapped_rows": {"correctable": 0, "uncorrectable": 0,
                                                                     "pending": False, "failure": False},
         "recovery_action": 0, "xid_events": []}
    g.update(kw)
    return g


def eight_gpus():
    levels = [[0 if a == b else (10 if a // 2 == b // 2 else (40 if a // 4 == b // 4 else 50)) for b in range(8)]
              for a in range(8)]
    return {"driver_version": "550.54.15", "nvml_version": "12.550.54.15", "cuda_driver_version": 12040,
            "gpus": [gpu(i) for i in range(8)], "topology_levels": levels,
            "nvlink_pairs": [[0, 1], [2, 3], [4, 5], [6, 7]]}


def make_root(name, n=8):
    root = os.path.join(tmp, name)
    os.makedirs(root + "/var/lib/kubelet/device-plugins")
    for i in range(n):
        d = root + "/sys/bus/pci/devices/0000:%02x:00.0" % (0x18 + i)
        os.makedirs(d)
        open(d + "/numa_node", "w").write("%d\n" % (i // 4))
    os.makedirs(root + "/dev")
    for node in ("nvidiactl", "nvidia-uvm"):  # no -uvm-tools, no -modeset: those are left out
        open(root + "/dev/" + node, "w").close()
    return root


def start_plugin(root, desc, *args, env=None):
    nv = os.path.join(root, "nvml.json")
    write_desc(nv, desc)
    e = dict(os.environ, GPUNODE_FAKE_NVML=nv, GPUNODE_FAKE_NVML_RELOAD="1")
    e.update(env or {})
    log = open(os.path.join(root, "plugin.log"), "w")
    p = subprocess.Popen([gpunode, "device-plugin", "--root", root, "--nvml-library", fake_nvml] + list(args),
                         env=e, stdout=log, stderr=subprocess.STDOUT)
    procs.append(p)
    return p, nv


def log_of(root):
    return open(os.path.join(root, "plugin.log")).read()


def health(msg):
    return {d.ID: d.health for d in msg.devices} if msg else {}


def code_of(fn):
    try:
        fn()
        return None
    except grpc.RpcError as e:
        return e.code()


def stop(p):
    """SIGTERM; every plugin must exit 0 (a sanitizer build's leak report makes it 1)."""
    p.send_signal(signal.SIGTERM)
    try:
        rc = p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = None
    check(rc == 0, "SIGTERM: the process exits 0 (%s)" % rc)
    return rc


# ---- 8 GPUs: registration, list, Allocate, GetPreferredAllocation, health on the stream ----
root = make_root("main")
folder = root + "/var/lib/kubelet/device-plugins"
kubelet = K.FakeKubelet(folder)
desc = eight_gpus()
p, nv = start_plugin(root, desc, "--device-list-strategy", "envvar,cdi-cri", env={"PASS_DEVICE_SPECS": "true"})
regs = kubelet.wait(lambda: kubelet.registrations, 10)
check(bool(regs), "the plugin registers with the kubelet")
if regs:
    r0 = regs[0][0]
    check(r0.version == "v1beta1" and r0.resource_name == "nvidia.com/gpu" and r0.endpoint == "gpunode-nvidia-gpu.sock"
          and r0.options.get_preferred_allocation_available,
          "Register: v1beta1, nvidia.com/gpu, endpoint gpunode-nvidia-gpu.sock, preferred allocation on")
first = kubelet.wait(lambda: kubelet.last_list("nvidia.com/gpu"), 10)
h = health(first)
check(len(h) == 8 and all(v == "Healthy" for v in h.values()) and set(h) == {uuid(i) for i in range(8)},
      "ListAndWatch: 8 GPUs by UUID, all Healthy")
if first:
    numa = {d.ID: [n.ID for n in d.topology.nodes] for d in first.devices}
    check(numa.get(uuid(0)) == [0] and numa.get(uuid(7)) == [1], "NUMA nodes from sysfs (GPU 0 on 0, GPU 7 on 1)")

c = K.PluginClient(folder + "/gpunode-nvidia-gpu.sock")
resp = c.allocate([uuid(2), uuid(3)])
cr = resp.container_responses[0]
check(K.pairs(cr.envs).get("NVIDIA_VISIBLE_DEVICES") == "%s,%s" % (uuid(2), uuid(3)),
      "Allocate: NVIDIA_VISIBLE_DEVICES names both GPUs")
check([d.name for d in cr.cdi_devices] == ["nvidia.com/gpu=" + uuid(2), "nvidia.com/gpu=" + uuid(3)],
      "Allocate: CDI devices nvidia.com/gpu=<uuid>")
check([(d.container_path, d.host_path, d.permissions) for d in cr.devices] ==
      [(x, x, "rw") for x in ("/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia2", "/dev/nvidia3")],
      "Allocate with PASS_DEVICE_SPECS: the control nodes present and each GPU's /dev/nvidia<minor>")
check(code_of(lambda: c.allocate(["GPU-nonexistent"])) == grpc.StatusCode.INVALID_ARGUMENT,
      "Allocate of an unknown device id: INVALID_ARGUMENT")
check(code_of(lambda: c.unary("Allocate", b"\xff\xff\xff\xff garbage")) == grpc.StatusCode.INVALID_ARGUMENT,
      "Allocate of bytes that are no AllocateRequest: INVALID_ARGUMENT")
check(code_of(lambda: c.unary("NoSuchMethod", b"")) == grpc.StatusCode.UNIMPLEMENTED, "an unknown method: UNIMPLEMENTED")
check(code_of(lambda: c.unary("Allocate", b"\x0a" * (5 << 20))) == grpc.StatusCode.RESOURCE_EXHAUSTED,
      "a 5 MiB request: RESOURCE_EXHAUSTED")
check(p.poll() is None and len(c.allocate([uuid(0)]).container_responses) == 1, "the plugin lives on and answers")
time.sleep(0.5)  # the topology is read once the health thread is up
pref = c.preferred([uuid(i) for i in range(8)], [], 2)
check(sorted(pref) in ([uuid(0), uuid(1)], [uuid(2), uuid(3)], [uuid(4), uuid(5)], [uuid(6), uuid(7)]),
      "GetPreferredAllocation of 2: an NVLink pair (%s)" % pref)
pref = c.preferred([uuid(i) for i in range(8)], [uuid(5)], 2)
check(sorted(pref) == [uuid(4), uuid(5)], "GetPreferredAllocation with GPU 5 required: its NVLink peer GPU 4")
pref = c.preferred([uuid(i) for i in range(8)], [uuid(0)], 4)
check(sorted(pref) == sorted(uuid(i) for i in range(4)), "GetPreferredAllocation of 4 from GPU 0: its NUMA node's four")
start = time.monotonic()
check(code_of(lambda: c.preferred([uuid(0)] * 20000, [], 20000)) == grpc.StatusCode.INVALID_ARGUMENT and
      time.monotonic() - start < 5, "GetPreferredAllocation naming one id 20,000 times: INVALID_ARGUMENT at once")
check(code_of(lambda: c.preferred([uuid(i) for i in range(8)], [], 9)) == grpc.StatusCode.INVALID_ARGUMENT,
      "GetPreferredAllocation of 9 from 8 GPUs: INVALID_ARGUMENT")

# An application Xid leaves the GPU Healthy; a critical one does not.
desc["gpus"][5]["xid_events"] = [13, 31]
write_desc(nv, desc)
time.sleep(1.0)
check(health(kubelet.last_list("nvidia.com/gpu")).get(uuid(5)) == "Healthy", "Xid 13 and 31 (application): GPU stays Healthy")
desc["gpus"][5]["xid_events"] = [13, 31, 79]
write_desc(nv, desc)
got = kubelet.wait(lambda: health(kubelet.last_list("nvidia.com/gpu")).get(uuid(5)) == "Unhealthy", 3)
check(bool(got), "Xid 79: GPU 5 Unhealthy on the stream")

# A GPU lost mid-stream, measured from the description's change to the stream's answer.
lost_ms = []
for rep in range(3):
    desc["gpus"][3]["lost"] = True
    t0 = time.monotonic()
    write_desc(nv, desc)
    got = kubelet.wait(lambda: health(kubelet.last_list("nvidia.com/gpu")).get(uuid(3)) == "Unhealthy", 5)
    lost_ms.append((time.monotonic() - t0) * 1000)
    check(bool(got), "GPU 3 lost: Unhealthy on the open ListAndWatch stream")
    desc["gpus"][3]["lost"] = False
    write_desc(nv, desc)
    got = kubelet.wait(lambda: health(kubelet.last_list("nvidia.com/gpu")).get(uuid(3)) == "Healthy", 5)
    check(bool(got), "GPU 3 back: Healthy again")
print("lost->unhealthy ms: %s" % " ".join("%.0f" % x for x in lost_ms), flush=True)
check(max(lost_ms) < 1000, "a lost GPU is Unhealthy on the stream within 1 s (max %.0f ms)" % max(lost_ms))
check(health(kubelet.last_list("nvidia.com/gpu")).get(uuid(5)) == "Unhealthy", "the Xid 79 GPU stays Unhealthy meanwhile")
desc["gpus"][6]["remapped_rows"]["failure"] = True
write_desc(nv, desc)
got = kubelet.wait(lambda: health(kubelet.last_list("nvidia.com/gpu")).get(uuid(6)) == "Unhealthy", 8)
check(bool(got), "a row remapping failure (layer 1): GPU 6 Unhealthy")
check("row remapping failed" in log_of(root), "the log names the reason")

# The driver gone mid-run (nvmlDeviceGetCount fails): every GPU Unhealthy; back: the same GPUs, no re-registration.
n_regs = len(kubelet.registrations)
desc["errors"] = {"nvmlDeviceGetCount": 9}
write_desc(nv, desc)
got = kubelet.wait(lambda: all(v == "Unhealthy" for v in health(kubelet.last_list("nvidia.com/gpu")).values()), 5)
check(bool(got), "the driver gone: all 8 GPUs Unhealthy on the stream, the plugin runs on (%s)" % (p.poll() is None))
del desc["errors"]
desc["gpus"][5]["xid_events"] = []
desc["gpus"][6]["remapped_rows"]["failure"] = False
write_desc(nv, desc)
got = kubelet.wait(lambda: all(v == "Healthy" for v in health(kubelet.last_list("nvidia.com/gpu")).values()), 10)
time.sleep(0.5)
check(bool(got) and len(kubelet.registrations) == n_regs and "with the same GPUs" in log_of(root),
      "the driver back (a reload: Xids forgotten): all 8 Healthy, the same GPUs kept (no re-registration)")

# Hostile clients: garbage, a preface then nothing, a huge prefix; the plugin lives on.
for junk in [b"GET / HTTP/1.1\r\n\r\n", os.urandom(4096), b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + os.urandom(200)]:
    s = socket.socket(socket.AF_UNIX)
    s.connect(folder + "/gpunode-nvidia-gpu.sock")
    s.sendall(junk)
    s.settimeout(2)
    try:
        s.recv(100)
    except OSError:
        pass
    s.close()
check(p.poll() is None and len(c.allocate([uuid(1)]).container_responses) == 1, "garbage clients: the plugin still answers")

# A kubelet restart: sockets removed, kubelet.sock created again.
n_regs = len(kubelet.registrations)
t0 = time.monotonic()
kubelet.restart()
got = kubelet.wait(lambda: len(kubelet.registrations) > n_regs and kubelet.last_list("nvidia.com/gpu"), 10)
check(bool(got) and os.path.exists(folder + "/gpunode-nvidia-gpu.sock"),
      "kubelet restart: socket re-created, registered again, listed (%.0f ms)" % ((time.monotonic() - t0) * 1000))
c.close()
rc = stop(p)
check(rc == 0 and not os.path.exists(folder + "/gpunode-nvidia-gpu.sock"), "SIGTERM: exit 0, socket removed")
kubelet.stop()


def stop_signal_cases():
    """SIGHUP and SIGQUIT stop the plugin as SIGTERM does: exit 0, its socket removed (issue 20: SIGHUP
    exited 129 and left the socket)."""
    for sig in (signal.SIGHUP, signal.SIGQUIT):
        r = make_root("stop-%s" % sig.name)
        f = r + "/var/lib/kubelet/device-plugins"
        kl = K.FakeKubelet(f)
        pl, _ = start_plugin(r, eight_gpus())
        listed = kl.wait(lambda: kl.last_list("nvidia.com/gpu"), 10)
        check(bool(listed) and os.path.exists(f + "/gpunode-nvidia-gpu.sock"), "%s case: the plugin serves" % sig.name)
        pl.send_signal(sig)
        try:
            code = pl.wait(10)
        except subprocess.TimeoutExpired:
            pl.kill()
            code = None
        check(code == 0 and not os.path.exists(f + "/gpunode-nvidia-gpu.sock"),
              "%s: exit 0 (%s), socket removed" % (sig.name, code))
        kl.stop()


stop_signal_cases()

# ---- MIG mixed ----
root = make_root("mig", 3)
folder = root + "/var/lib/kubelet/device-plugins"
kubelet = K.FakeKubelet(folder)


def mig(u, gi, ci, gi_prof, mem, sms):
    return {"uuid": u, "gi": gi, "ci": ci, "gi_profile": gi_prof, "ci_profile": gi_prof,
            "attributes": {"multiprocessor_count": sms, "shared_copy_engine_count": 1, "shared_decoder_count": 0,
                           "shared_encoder_count": 0, "shared_jpeg_count": 0, "shared_ofa_count": 0,
                           "gpu_instance_slice_count": 1 if gi_prof == 0 else 3,
                           "compute_instance_slice_count": 1 if gi_prof == 0 else 3, "memory_size_mb": mem},
            "memory": {"total": mem << 20, "used": 0, "free": mem << 20}}


mdesc = eight_gpus()
mdesc["gpus"] = [gpu(0, mig_mode={"current": 1, "pending": 1}, mig_max_devices=7,
                     mig_devices=[mig("MIG-aaaa0000-0000-5555-6666-777788889999", 7, 0, 0, 9728, 16),
                                  mig("MIG-aaaa0001-0000-5555-6666-777788889999", 8, 0, 0, 9728, 16),
                                  mig("MIG-aaaa0002-0000-5555-6666-777788889999", 1, 0, 2, 40192, 60)]),
                 gpu(1), gpu(2)]
os.makedirs(root + "/proc/driver/nvidia-caps")
open(root + "/proc/driver/nvidia-caps/mig-minors", "w").write(
    "config 1\nmonitor 2\n" + "".join("gpu0/gi%d/access %d\ngpu0/gi%d/ci0/access %d\n" % (g, 10 + 2 * g, g, 11 + 2 * g)
                                      for g in range(9)))
p, nv = start_plugin(root, mdesc, "--mig-strategy", "mixed", "--pass-device-specs", "true")
got = kubelet.wait(lambda: len(kubelet.lists) >= 3 and kubelet.lists, 10)
names = sorted(kubelet.lists)
check(names == ["nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/mig-3g.40gb"],
      "MIG mixed: nvidia.com/gpu, mig-1g.10gb, mig-3g.40gb (%s)" % names)
check(sorted(health(kubelet.last_list("nvidia.com/mig-1g.10gb"))) ==
      ["MIG-aaaa0000-0000-5555-6666-777788889999", "MIG-aaaa0001-0000-5555-6666-777788889999"]
      and sorted(health(kubelet.last_list("nvidia.com/gpu"))) == [uuid(1), uuid(2)],
      "MIG mixed: MIG devices by MIG UUID, the GPUs without MIG as nvidia.com/gpu")
ep = [r.endpoint for r, _ in kubelet.registrations]
check("gpunode-nvidia-mig-1g.10gb.sock" in ep, "MIG mixed: a socket per resource (%s)" % ep)
mc = K.PluginClient(folder + "/gpunode-nvidia-mig-3g.40gb.sock")
cr = mc.allocate(["MIG-aaaa0002-0000-5555-6666-777788889999"]).container_responses[0]
check(K.pairs(cr.envs).get("NVIDIA_VISIBLE_DEVICES") == "MIG-aaaa0002-0000-5555-6666-777788889999",
      "MIG Allocate: NVIDIA_VISIBLE_DEVICES names the MIG device")
check([d.container_path for d in cr.devices] == ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia0",
                                                 "/dev/nvidia-caps/nvidia-cap12", "/dev/nvidia-caps/nvidia-cap13"],
      "MIG Allocate with passDeviceSpecs: the parent's node and the GPU/compute instance capability nodes (%s)" %
      [d.container_path for d in cr.devices])
check(code_of(lambda: mc.allocate([uuid(1)])) == grpc.StatusCode.INVALID_ARGUMENT,
      "MIG Allocate of a device of another resource: INVALID_ARGUMENT")
mc.close()
stop(p)
kubelet.stop()

# ---- time-slicing: 4 replicas, renamed, failRequestsGreaterThanOne ----
root = make_root("ts")
folder = root + "/var/lib/kubelet/device-plugins"
kubelet = K.FakeKubelet(folder)
cfg = root + "/config.yaml"
open(cfg, "w").write("""version: v1
flags:
  migStrategy: none
sharing:
  timeSlicing:
    renameByDefault: true
    failRequestsGreaterThanOne: true
    resources:
    - name: nvidia.com/gpu
      replicas: 4
""")
p, nv = start_plugin(root, eight_gpus(), "--config-file", cfg)
got = kubelet.wait(lambda: kubelet.last_list("nvidia.com/gpu.shared"), 10)
ids = sorted(health(got))
check(len(ids) == 32 and ids[:4] == ["%s::%d" % (uuid(0), k) for k in range(4)],
      "time-slicing: 8 GPUs x 4 replicas as nvidia.com/gpu.shared, <uuid>::<n>")
tc = K.PluginClient(folder + "/gpunode-nvidia-gpu.shared.sock")
cr = tc.allocate([uuid(2) + "::3"]).container_responses[0]
check(K.pairs(cr.envs).get("NVIDIA_VISIBLE_DEVICES") == uuid(2), "a replica's Allocate names its GPU")
check(code_of(lambda: tc.allocate([uuid(2) + "::1", uuid(3) + "::1"])) == grpc.StatusCode.INVALID_ARGUMENT,
      "failRequestsGreaterThanOne: a request of 2 shared devices refused")
pref = tc.preferred(ids, [], 1)
check(len(pref) == 1 and pref[0] in ids, "GetPreferredAllocation of a replica")
desc = eight_gpus()
desc["gpus"][1]["lost"] = True
write_desc(nv, desc)
got = kubelet.wait(lambda: all(v == "Unhealthy" for k, v in health(kubelet.last_list("nvidia.com/gpu.shared")).items()
                               if k.startswith(uuid(1))), 5)
check(bool(got), "a lost GPU makes its 4 replicas Unhealthy")
tc.close()
stop(p)
kubelet.stop()
bad = root + "/bad.yaml"
open(bad, "w").write("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 1\n")
r = subprocess.run([gpunode, "device-plugin", "--root", root, "--config-file", bad], capture_output=True, text=True,
                   timeout=20)
check(r.returncode != 0 and "replicas" in r.stderr, "a config with replicas: 1 is refused, naming the field")

# ---- a kubelet that never answers Register ----
root = make_root("silent")
folder = root + "/var/lib/kubelet/device-plugins"
kubelet = K.FakeKubelet(folder, mode="silent")
t0 = time.monotonic()
p, nv = start_plugin(root, eight_gpus(), "--register-attempts", "3", "--register-timeout", "300ms")
deadline = time.monotonic() + 15
while time.monotonic() < deadline and "gave up after 3 attempts" not in log_of(root):
    time.sleep(0.1)
log = log_of(root)
check("gave up after 3 attempts" in log and log.count("attempt ") == 2,
      "a kubelet that never answers: 3 bounded attempts, then one clear line (%.1f s)" % (time.monotonic() - t0))
check(p.poll() is None, "the plugin keeps serving meanwhile")
stop(p)
kubelet.stop()

# ---- the driver gone at start: the kubelet's last devices Unhealthy, then back ----
root = make_root("nodriver")
folder = root + "/var/lib/kubelet/device-plugins"
open(folder + "/kubelet_internal_checkpoint", "w").write(json.dumps(
    {"Data": {"PodDeviceEntries": [], "RegisteredDevices": {"nvidia.com/gpu": [uuid(i) for i in range(8)]}},
     "Checksum": 1}))
kubelet = K.FakeKubelet(folder)
p, nv = start_plugin(root, {"init_error": 9, "gpus": []})
got = kubelet.wait(lambda: kubelet.last_list("nvidia.com/gpu"), 10)
h = health(got)
check(len(h) == 8 and all(v == "Unhealthy" for v in h.values()),
      "driver not loaded: the kubelet's 8 last devices advertised Unhealthy, no crash")
check(p.poll() is None and "NVML_ERROR_DRIVER_NOT_LOADED" in log_of(root), "the log names NVML's error")
write_desc(nv, eight_gpus())
got = kubelet.wait(lambda: (lambda h: len(h) == 8 and all(v == "Healthy" for v in h.values()))(
    health(kubelet.last_list("nvidia.com/gpu"))), 15)
check(bool(got), "the driver back: the GPUs enumerated again, Healthy")
stop(p)
kubelet.stop()

# ---- gpunode's own diagnosis recognises gpunode's plugin (the k8s-healthy scenario's node) ----
scen = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scenarios", "k8s-healthy")
root = os.path.join(tmp, "scenario")
shutil.copytree(scen + "/root", root, symlinks=True)
folder = root + "/var/lib/kubelet/device-plugins"
for f in ("kubelet.sock", "nvidia-gpu.sock"):
    os.unlink(os.path.join(folder, f))
kubelet = K.FakeKubelet(folder)
p, nv = start_plugin(root, json.load(open(scen + "/nvml.json")))
kubelet.wait(lambda: kubelet.last_list("nvidia.com/gpu"), 10)
r = subprocess.run([gpunode, "check", "--root", root, "--nvml-library", fake_nvml, "--output", "json"],
                   env=dict(os.environ, GPUNODE_FAKE_NVML=nv), capture_output=True, text=True, timeout=60)
try:
    reg = [x for x in json.loads(r.stdout)["checks"] if x["id"] == "device-plugin.registered"][0]
except (ValueError, IndexError, KeyError):
    reg = {"status": "?", "summary": r.stdout[-300:] + r.stderr[-300:]}
check(reg["status"] == "pass" and "gpunode-nvidia-gpu.sock" in reg["summary"],
      "gpunode check: device-plugin.registered passes on gpunode's socket (%s: %s)" % (reg["status"], reg["summary"]))
stop(p)
kubelet.stop()

# ---- inside the agent (--device-plugin), with the API stand-in: a GPU's loss is an Event ----
root = os.path.join(tmp, "agent")
shutil.copytree(scen + "/root", root, symlinks=True)
folder = root + "/var/lib/kubelet/device-plugins"
for f in ("kubelet.sock", "nvidia-gpu.sock"):
    os.unlink(os.path.join(folder, f))
kubelet = K.FakeKubelet(folder)
H.make_certs(tmp + "/certs")
shutil.copytree(scen + "/api", tmp + "/api")
api_srv, api_port = H.start_kube_server(tmp + "/certs", tmp + "/api", "dp-token-0123456789", tmp + "/api.out",
                                        log=tmp + "/requests.log")
H.write_kubeconfig(tmp + "/kubeconfig", api_port, tmp + "/certs/ca.crt", "dp-token-0123456789")
nv = os.path.join(root, "nvml.json")
desc = json.load(open(scen + "/nvml.json"))
write_desc(nv, desc)
port = H.free_port()
log = open(os.path.join(root, "plugin.log"), "w")
p = subprocess.Popen([gpunode, "agent", "--device-plugin", "--root", root, "--nvml-library", fake_nvml, "--listen",
                      "127.0.0.1:%d" % port, "--no-labels", "--no-kubernetes", "--node", "k8s-healthy",
                      "--kubeconfig", tmp + "/kubeconfig", "--check-interval", "60s", "--event-hold-down", "0"],
                     env=dict(os.environ, GPUNODE_FAKE_NVML=nv, GPUNODE_FAKE_NVML_RELOAD="1"), stdout=log,
                     stderr=subprocess.STDOUT)
procs.append(p)
got = kubelet.wait(lambda: kubelet.last_list("nvidia.com/gpu"), 15)
n_gpus = len(desc["gpus"])
check(len(health(got)) == n_gpus and all(v == "Healthy" for v in health(got).values()),
      "agent --device-plugin: registered, %d GPUs Healthy" % n_gpus)
lost_uuid = desc["gpus"][2]["uuid"]
desc["gpus"][2]["lost"] = True
write_desc(nv, desc)
got = kubelet.wait(lambda: health(kubelet.last_list("nvidia.com/gpu")).get(lost_uuid) == "Unhealthy", 5)
check(bool(got), "agent --device-plugin: a lost GPU Unhealthy on the stream")


def gpu_events():
    try:
        return [l for l in open(tmp + "/requests.log") if "GPUUnhealthy" in l and lost_uuid in l]
    except OSError:
        return []


deadline = time.monotonic() + 20
while time.monotonic() < deadline and not gpu_events():
    time.sleep(0.2)
check(bool(gpu_events()), "agent --device-plugin: a GPUUnhealthy Event naming the GPU is written to the API")
rc = stop(p)
check(rc == 0 and not os.path.exists(folder + "/gpunode-nvidia-gpu.sock") and "device-plugin: registered" in log_of(root),
      "agent --device-plugin: SIGTERM stops both, socket removed")
kubelet.stop()

# ---- bounds (issue 20): streams the plugin answered early, connections full, unread ListAndWatch ----
def vm_hwm(pid):
    """Returns the peak resident memory of process pid in KiB (VmHWM), 0 when unreadable."""
    try:
        for line in open("/proc/%d/status" % pid):
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


root = make_root("full")
folder = root + "/var/lib/kubelet/device-plugins"
kubelet = K.FakeKubelet(folder)
p, nv = start_plugin(root, eight_gpus())
kubelet.wait(lambda: kubelet.last_list("nvidia.com/gpu"), 10)
sock = folder + "/gpunode-nvidia-gpu.sock"
# A call answered at once (UNIMPLEMENTED) while the client still sends: trailers, then RST_STREAM NO_ERROR.
frames = K.raw_frames(sock, "/v1beta1.DevicePlugin/NoSuchMethod")
kinds = [(t, fl & 1) for t, fl, _ in frames]
check(len(frames) >= 2 and kinds[-2] == (1, 1) and frames[-1][0] == 3 and frames[-1][2] == bytes(4),
      "a call answered early: trailers-only HEADERS (END_STREAM), then RST_STREAM NO_ERROR (%s)" % kinds)
# 16 connections (the plugin's max) each holding a ListAndWatch stream, beside the kubelet's: a new one still gets in.
holders = []
for _ in range(16):
    try:
        h = K.PluginClient(sock, timeout=3, own_connection=True)
        h.stream = h.watch(lambda m, t: None)
        holders.append(h)
    except Exception:
        break
t0 = time.monotonic()
try:
    fresh = K.PluginClient(sock, timeout=3, own_connection=True)
    ok = fresh.options().get_preferred_allocation_available
    fresh.close()
except Exception:
    ok = False
ms = (time.monotonic() - t0) * 1000
print("new connection with 17 connections holding streams: %s in %.0f ms" % ("answered" if ok else "refused", ms),
      flush=True)
check(ok and ms < 2000, "connections full, every one holding a stream: a new one still gets in, answered (%.0f ms)" % ms)
for h in holders:
    h.stream.cancel()
    h.close()
check(p.poll() is None, "the plugin runs on")
stop(p)
kubelet.stop()

# 4 connections x 32 ListAndWatch streams that never read, 8,192 devices (8 GPUs x 1024 replicas), 8 health changes.
root = make_root("unread")
folder = root + "/var/lib/kubelet/device-plugins"
kubelet = K.FakeKubelet(folder)
cfg = root + "/config.yaml"
open(cfg, "w").write("version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n"
                     "      replicas: 1024\n")
p, nv = start_plugin(root, eight_gpus(), "--config-file", cfg)
got = kubelet.wait(lambda: kubelet.last_list("nvidia.com/gpu"), 15)
check(len(health(got)) == 8192, "8 GPUs x 1024 replicas: 8,192 devices listed (%d)" % len(health(got)))
time.sleep(0.3)
idle = vm_hwm(p.pid)
sock = folder + "/gpunode-nvidia-gpu.sock"
unread = [K.UnreadWatches(sock, 32) for _ in range(4)]
time.sleep(0.5)
desc = eight_gpus()
changes = 0
for rep in range(4):
    for lost in (True, False):
        desc["gpus"][rep]["lost"] = lost
        write_desc(nv, desc)
        want = "Unhealthy" if lost else "Healthy"
        changes += bool(kubelet.wait(lambda: health(kubelet.last_list("nvidia.com/gpu")).get(uuid(rep) + "::0") == want, 5))
time.sleep(0.3)
peak = vm_hwm(p.pid)
print("VmHWM KiB with 128 unread ListAndWatch streams, 8,192 devices, %d health changes: idle %d, peak %d" %
      (changes, idle, peak), flush=True)
check(changes == 8, "the kubelet's own stream sees all 8 health changes meanwhile (%d)" % changes)
check(peak - idle < 8 << 10, "unread ListAndWatch streams: the plugin's peak grows < 8 MiB (%d -> %d KiB)" % (idle, peak))
c = K.PluginClient(sock, own_connection=True)
check(c.options().get_preferred_allocation_available, "the plugin still answers a new connection")
c.close()
for u in unread:
    u.close()
stop(p)
kubelet.stop()

H.stop_all()
reports = []
for dirpath, _, names in os.walk(tmp):
    for name in names:
        if name == "plugin.log":
            text = open(os.path.join(dirpath, name), errors="replace").read()
            if "AddressSanitizer" in text or "runtime error:" in text or "LeakSanitizer" in text:
                reports.append(dirpath)
check(not reports, "no sanitizer report in any plugin's log (%s)" % reports)
if H.failed:
    print("logs kept in", tmp)
else:
    shutil.rmtree(tmp, ignore_errors=True)
sys.exit(H.summary("device-plugin"))
