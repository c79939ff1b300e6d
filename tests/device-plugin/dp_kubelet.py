#!/usr/bin/python3
# dp_kubelet.py: a kubelet's side of the device plugin API v1beta1 in python3-grpcio, for tests: the Registration server and a plugin client.
"""
Run with Debian's /usr/bin/python3 (python3-grpcio, python3-protobuf). Debian 12 packages no
grpcio-tools, so the v1beta1 messages are built here from descriptors written by hand (field
numbers as in k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1/api.proto): the bytes on the wire come
from Google's encoder, not gpunode's.

FakeKubelet(folder, mode) serves v1beta1.Registration/Register on <folder>/kubelet.sock as the
kubelet does: on a Register it connects back to <folder>/<endpoint> (grpc-go's blocking dial, like
the kubelet's), asks GetDevicePluginOptions and opens ListAndWatch, recording every answer with
its arrival time. mode "silent": a plain socket that accepts and reads but never answers.
restart() does what a kubelet start does: removes every file of the folder but the checkpoint,
then listens again.
"""

import os
import sys
import socket
import threading
import time

import grpc
from concurrent import futures
from google.protobuf import descriptor_pb2

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "kubelet"))
import fake_kubelet  # noqa: E402  (its descriptor builder)

F = descriptor_pb2.FieldDescriptorProto
S, B, I64, I32, M = F.TYPE_STRING, F.TYPE_BOOL, F.TYPE_INT64, F.TYPE_INT32, F.TYPE_MESSAGE

# (message, [(field, number, type, repeated, message type)])
MESSAGES = [
    ("DevicePluginOptions", [("pre_start_required", 1, B, False, None),
                             ("get_preferred_allocation_available", 2, B, False, None)]),
    ("RegisterRequest", [("version", 1, S, False, None), ("endpoint", 2, S, False, None),
                         ("resource_name", 3, S, False, None), ("options", 4, M, False, "DevicePluginOptions")]),
    ("Empty", []),
    ("NUMANode", [("ID", 1, I64, False, None)]),
    ("TopologyInfo", [("nodes", 1, M, True, "NUMANode")]),
    ("Device", [("ID", 1, S, False, None), ("health", 2, S, False, None), ("topology", 3, M, False, "TopologyInfo")]),
    ("ListAndWatchResponse", [("devices", 1, M, True, "Device")]),
    ("ContainerPreferredAllocationRequest", [("available_deviceIDs", 1, S, True, None),
                                             ("must_include_deviceIDs", 2, S, True, None),
                                             ("allocation_size", 3, I32, False, None)]),
    ("PreferredAllocationRequest", [("container_requests", 1, M, True, "ContainerPreferredAllocationRequest")]),
    ("ContainerPreferredAllocationResponse", [("deviceIDs", 1, S, True, None)]),
    ("PreferredAllocationResponse", [("container_responses", 1, M, True, "ContainerPreferredAllocationResponse")]),
    ("ContainerAllocateRequest", [("devices_ids", 1, S, True, None)]),
    ("AllocateRequest", [("container_requests", 1, M, True, "ContainerAllocateRequest")]),
    # map<string, string> is on the wire a repeated message of key = 1, value = 2
    ("StringPair", [("key", 1, S, False, None), ("value", 2, S, False, None)]),
    ("Mount", [("container_path", 1, S, False, None), ("host_path", 2, S, False, None), ("read_only", 3, B, False, None)]),
    ("DeviceSpec", [("container_path", 1, S, False, None), ("host_path", 2, S, False, None),
                    ("permissions", 3, S, False, None)]),
    ("CDIDevice", [("name", 1, S, False, None)]),
    ("ContainerAllocateResponse", [("envs", 1, M, True, "StringPair"), ("mounts", 2, M, True, "Mount"),
                                   ("devices", 3, M, True, "DeviceSpec"), ("annotations", 4, M, True, "StringPair"),
                                   ("cdi_devices", 5, M, True, "CDIDevice")]),
    ("AllocateResponse", [("container_responses", 1, M, True, "ContainerAllocateResponse")]),
]


PB = fake_kubelet.build_message_classes(MESSAGES, "v1beta1", "fake_deviceplugin.proto")
IDENT = lambda b: b


def pairs(repeated):
    """Returns {key: value} of a map field read as StringPair entries."""
    return {p.key: p.value for p in repeated}


class PluginClient:
    """The kubelet's calls to a plugin socket (unix path)."""

    def __init__(self, path, timeout=10, own_connection=False):
        """Connects to path within timeout seconds; own_connection: a connection of its own, not one
        grpc-core shares among channels to the same socket."""
        self.path = path
        self.channel = grpc.insecure_channel("unix://" + path, options=OWN if own_connection else None)
        grpc.channel_ready_future(self.channel).result(timeout=timeout)

    def unary(self, method, req_bytes, timeout=5):
        call = self.channel.unary_unary("/v1beta1.DevicePlugin/" + method, request_serializer=IDENT,
                                        response_deserializer=IDENT)
        return call(req_bytes, timeout=timeout)

    def options(self):
        return PB["DevicePluginOptions"].FromString(self.unary("GetDevicePluginOptions", b""))

    def allocate(self, *containers):
        req = PB["AllocateRequest"]()
        for ids in containers:
            req.container_requests.add(devices_ids=list(ids))
        return PB["AllocateResponse"].FromString(self.unary("Allocate", req.SerializeToString()))

    def preferred(self, available, must, size):
        req = PB["PreferredAllocationRequest"]()
        req.container_requests.add(available_deviceIDs=list(available), must_include_deviceIDs=list(must),
                                   allocation_size=size)
        resp = PB["PreferredAllocationResponse"].FromString(self.unary("GetPreferredAllocation", req.SerializeToString()))
        return list(resp.container_responses[0].deviceIDs)

    def watch(self, on_message):
        """Opens ListAndWatch in a thread; on_message(ListAndWatchResponse, time) for each answer."""
        call = self.channel.unary_stream("/v1beta1.DevicePlugin/ListAndWatch", request_serializer=IDENT,
                                         response_deserializer=IDENT)
        stream = call(b"")

        def run():
            try:
                for b in stream:
                    on_message(PB["ListAndWatchResponse"].FromString(b), time.monotonic())
            except grpc.RpcError:
                pass
        threading.Thread(target=run, daemon=True).start()
        return stream

    def close(self):
        self.channel.close()


# A channel's own subchannel, hence its own connection (grpc-core shares one per target otherwise).
OWN = [("grpc.use_local_subchannel_pool", 1)]


class answered_early:
    """A connection of its own holding one stream the server answers at once: a client-streaming call
    to a method no plugin has, whose request stream never ends (the client's side stays open)."""

    def __init__(self, path):
        self.channel = grpc.insecure_channel("unix://" + path, options=OWN)
        self.stop = threading.Event()

        def requests():
            yield b""
            self.stop.wait()   # never half-closes while held
        call = self.channel.stream_unary("/v1beta1.DevicePlugin/NoSuchMethod", request_serializer=IDENT,
                                         response_deserializer=IDENT)
        self.future = call.future(requests())

    def code(self, timeout):
        """Returns the status the server answered with, or None when none came within timeout seconds."""
        try:
            self.future.result(timeout=timeout)
            return grpc.StatusCode.OK
        except grpc.FutureTimeoutError:
            return None
        except grpc.RpcError as e:
            return e.code()

    def close(self):
        self.stop.set()
        self.channel.close()


def raw_frames(path, method, timeout=3):
    """Opens a raw HTTP/2 connection to path, starts one call to method with its headers only (no
    END_STREAM: the client's side stays open) and returns the frames the server sends on stream 1
    as (type, flags, payload) until it resets the stream or timeout seconds pass."""
    def lit(name, value):  # HPACK literal header field without indexing, new name, no Huffman
        return bytes([0, len(name)]) + name + bytes([len(value)]) + value
    block = b"".join([lit(b":method", b"POST"), lit(b":scheme", b"http"), lit(b":path", method.encode()),
                      lit(b":authority", b"localhost"), lit(b"content-type", b"application/grpc"),
                      lit(b"te", b"trailers")])
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(timeout)
    s.connect(path)
    s.sendall(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0]) +
              len(block).to_bytes(3, "big") + bytes([1, 4]) + (1).to_bytes(4, "big") + block)
    buf, frames, end = b"", [], time.monotonic() + timeout
    try:
        while time.monotonic() < end:
            while len(buf) >= 9 and len(buf) >= 9 + int.from_bytes(buf[:3], "big"):
                n = int.from_bytes(buf[:3], "big")
                t, fl, sid = buf[3], buf[4], int.from_bytes(buf[5:9], "big") & 0x7fffffff
                payload, buf = buf[9:9 + n], buf[9 + n:]
                if t == 4 and not fl & 1:
                    s.sendall(bytes([0, 0, 0, 4, 1, 0, 0, 0, 0]))  # SETTINGS ack
                if sid == 1:
                    frames.append((t, fl, payload))
                    if t == 3:
                        return frames
            d = s.recv(65536)
            if not d:
                break
            buf += d
    except OSError:
        pass
    finally:
        s.close()
    return frames


class UnreadWatches:
    """A connection of its own with n ListAndWatch streams that are started and never read."""

    def __init__(self, path, n):
        self.channel = grpc.insecure_channel("unix://" + path, options=OWN)
        call = self.channel.unary_stream("/v1beta1.DevicePlugin/ListAndWatch", request_serializer=IDENT,
                                         response_deserializer=IDENT)
        self.streams = [call(b"") for _ in range(n)]

    def close(self):
        for s in self.streams:
            s.cancel()
        self.channel.close()


class FakeKubelet:
    def __init__(self, folder, mode="normal"):
        self.folder = folder
        self.mode = mode
        self.lock = threading.Condition()
        self.registrations = []     # (RegisterRequest, time)
        self.lists = {}             # resource -> [(ListAndWatchResponse, time)]
        self.clients = []
        self.server = None
        self.raw = None
        os.makedirs(folder, exist_ok=True)
        self.start()

    def _on_register(self, request, context):
        req = PB["RegisterRequest"].FromString(request)
        with self.lock:
            self.registrations.append((req, time.monotonic()))
            self.lock.notify_all()
        # The kubelet dials the plugin before Register returns (grpc.WithBlock), then watches it.
        client = PluginClient(os.path.join(self.folder, req.endpoint))
        client.options()
        name = req.resource_name

        def got(msg, t):
            with self.lock:
                self.lists.setdefault(name, []).append((msg, t))
                self.lock.notify_all()
        client.stream = client.watch(got)
        self.clients.append(client)
        return PB["Empty"]().SerializeToString()

    def start(self):
        path = os.path.join(self.folder, "kubelet.sock")
        if self.mode == "silent":
            self.raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.raw.bind(path)
            self.raw.listen(16)
            self.held = []

            def accept():
                while True:
                    try:
                        c, _ = self.raw.accept()
                    except OSError:
                        return
                    self.held.append(c)   # read nothing, answer nothing, close nothing
            threading.Thread(target=accept, daemon=True).start()
            return
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
        handler = grpc.unary_unary_rpc_method_handler(self._on_register, request_deserializer=IDENT,
                                                      response_serializer=IDENT)
        self.server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(
            "v1beta1.Registration", {"Register": handler}),))
        self.server.add_insecure_port("unix://" + path)
        self.server.start()

    def stop(self):
        for c in self.clients:
            c.stream.cancel()
            c.close()
        self.clients = []
        if self.server:
            self.server.stop(0)
            self.server = None
        if self.raw:
            self.raw.close()
            self.raw = None

    def restart(self):
        """A kubelet restart: stop, remove the folder's files but the checkpoint, listen again."""
        self.stop()
        for name in os.listdir(self.folder):
            if name != "kubelet_internal_checkpoint":
                os.unlink(os.path.join(self.folder, name))
        with self.lock:
            self.lists = {}
        self.start()

    def wait(self, pred, timeout):
        """Waits until pred() (called with the lock held) is true. Returns its value or None."""
        end = time.monotonic() + timeout
        with self.lock:
            while True:
                v = pred()
                if v:
                    return v
                left = end - time.monotonic()
                if left <= 0:
                    return None
                self.lock.wait(left)

    def last_list(self, resource):
        l = self.lists.get(resource)
        return l[-1][0] if l else None
