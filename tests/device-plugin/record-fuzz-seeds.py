#!/usr/bin/python3
# record-fuzz-seeds.py: writes fuzz/seeds/dp_server/ (python3-grpcio clients' bytes, v1beta1 requests) and fuzz/seeds/dp_config/ (NVIDIA's example configs).
"""usage: record-fuzz-seeds.py SOURCE_ROOT. Run by hand when the formats change; the seeds are committed."""
import os, socket, sys, tempfile, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grpc  # noqa: E402
import dp_kubelet as K  # noqa: E402

top = sys.argv[1]
out = os.path.join(top, "fuzz", "seeds", "dp_server")
os.makedirs(out, exist_ok=True)
SETTINGS = b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"  # an empty server SETTINGS frame


def record(name, call):
    """Captures what a grpcio client sends for call(channel) to a server that only says SETTINGS."""
    d = tempfile.mkdtemp()
    path = d + "/s.sock"
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(1)
    got = bytearray()

    def serve():
        c, _ = srv.accept()
        c.sendall(SETTINGS)
        c.settimeout(0.3)
        try:
            while True:
                b = c.recv(65536)
                if not b:
                    break
                got.extend(b)
        except OSError:
            pass
        c.close()
    t = threading.Thread(target=serve)
    t.start()
    ch = grpc.insecure_channel("unix://" + path)
    try:
        call(ch)
    except grpc.RpcError:
        pass
    t.join()
    ch.close()
    open(os.path.join(out, name), "wb").write(b"\x00" + bytes(got))


def unary(method, msg):
    return lambda ch: ch.unary_unary("/v1beta1.DevicePlugin/" + method, request_serializer=K.IDENT,
                                     response_deserializer=K.IDENT)(msg, timeout=0.5)


def stream(ch):
    for _ in ch.unary_stream("/v1beta1.DevicePlugin/ListAndWatch", request_serializer=K.IDENT,
                             response_deserializer=K.IDENT)(b"", timeout=0.5):
        pass


alloc = K.PB["AllocateRequest"]()
alloc.container_requests.add(devices_ids=["GPU-1", "GPU-2"])
alloc.container_requests.add(devices_ids=["GPU-3"])
shared = K.PB["AllocateRequest"]()
shared.container_requests.add(devices_ids=["GPU-1::0", "GPU-1::3"])
pref = K.PB["PreferredAllocationRequest"]()
pref.container_requests.add(available_deviceIDs=["GPU-%d" % i for i in range(8)], must_include_deviceIDs=["GPU-5"],
                            allocation_size=3)
spref = K.PB["PreferredAllocationRequest"]()
spref.container_requests.add(available_deviceIDs=["GPU-%d::%d" % (i, k) for i in range(8) for k in range(4)],
                             allocation_size=4)
record("conn-allocate", unary("Allocate", alloc.SerializeToString()))
record("conn-list-and-watch", stream)
record("conn-options", unary("GetDevicePluginOptions", b""))
open(os.path.join(out, "allocate"), "wb").write(b"\x01" + alloc.SerializeToString())
open(os.path.join(out, "allocate-shared"), "wb").write(b"\x02" + shared.SerializeToString())
open(os.path.join(out, "preferred"), "wb").write(b"\x03" + pref.SerializeToString())
open(os.path.join(out, "preferred-shared"), "wb").write(b"\x04" + spref.SerializeToString())

cfg = os.path.join(top, "fuzz", "seeds", "dp_config")
os.makedirs(cfg, exist_ok=True)
seeds = {
    "readme-flags.yaml": 'version: v1\nflags:\n  migStrategy: "none"\n  failOnInitError: true\n  nvidiaDriverRoot: "/"\n'
                         '  plugin:\n    passDeviceSpecs: false\n    deviceListStrategy: "envvar"\n    deviceIDStrategy: "uuid"\n',
    "time-slicing.yaml": "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n    failRequestsGreaterThanOne: true\n"
                         "    resources:\n    - name: nvidia.com/gpu\n      replicas: 10\n",
    "operator-mixed.yaml": "version: v1\nflags:\n  migStrategy: mixed\nsharing:\n  timeSlicing:\n    resources:\n"
                           "    - name: nvidia.com/gpu\n      replicas: 8\n    - name: nvidia.com/mig-1g.5gb\n      replicas: 2\n"
                           "    - name: nvidia.com/mig-3g.20gb\n      replicas: 3\n      rename: mig-3g.shared\n"
                           "      devices: [0, \"1\", \"GPU-aa\", \"0:1\"]\n",
    "json.json": '{"version": "v1", "flags": {"plugin": {"deviceListStrategy": ["cdi-cri", "envvar"]}}, '
                 '"sharing": {"timeSlicing": {"resources": [{"name": "nvidia.com/gpu", "replicas": 4, "devices": 2}]}}}',
    "mps.yaml": "version: v1\nsharing:\n  mps:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 10\n",
}
for name, text in seeds.items():
    open(os.path.join(cfg, name), "w").write(text)
print("wrote", out, cfg)
