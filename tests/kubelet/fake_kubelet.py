#!/usr/bin/python3
# fake_kubelet.py: a stand-in for the kubelet's pod-resources gRPC service on a unix socket, honest or hostile, for tests.
"""
Run with Debian's /usr/bin/python3 (python3-grpcio, python3-protobuf).

    fake_kubelet.py --socket PATH [--mode MODE] [--list FILE] [--allocatable FILE]
                    [--pods N] [--lifetime 60]

The socket's folder is created when missing. Once listening it prints "ready" on a line of its
own on stdout and flushes; it exits by itself after --lifetime seconds, whatever it is doing.

Honest modes, served by grpcio (the same gRPC C core a Go kubelet's clients are tested against):
  normal         v1.PodResourcesLister/List and /GetAllocatableResources answer the messages
                 in --list and --allocatable (JSON in protobuf's JSON mapping, e.g.
                 {"podResources": [{"name": "p", "namespace": "ns", "containers": [...]}]})
  unimplemented  only List is served: GetAllocatableResources answers UNIMPLEMENTED, as a
                 kubelet older than the call does
  many           List answers --pods pods of one container and one GPU each, 89 bytes a pod
                 (60,000 pods are 5.3 MB, past the 4 MiB grpc-go clients accept by default;
                 200,000 are 17.8 MB, past gpunode's 16 MiB)
  denied         every call answers PERMISSION_DENIED with a grpc-message that needs
                 percent-encoding

The messages are built with python3-protobuf from descriptors written below (Debian 12 does not
package grpcio-tools' protoc), so the bytes on the wire come from Google's encoder, not ours.

Hostile modes, HTTP/2 written by hand on a plain socket:
  hang           accept, read everything, never write a byte
  close          accept, read the client's preface, close before answering
  close-mid      answer headers and the first 10 bytes of a message announced as 100 bytes,
                 then close the connection
  huge           answer headers and a message prefix announcing 100 MiB, then 16 KiB of it,
                 then stay silent with the connection open
  garbage        answer an HTTP/1.1 error page and random bytes instead of HTTP/2
  no-trailers    answer headers and a whole message, then end the stream without grpc-status
  drip           answer headers and a message announced as 100 bytes, one byte every 50 ms
  big-headers    answer 80 KB of headers (HEADERS and CONTINUATION frames)
"""

import argparse
import json
import os
import random
import signal
import socket
import struct
import sys
import threading
import time

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory

F = descriptor_pb2.FieldDescriptorProto

# (message, [(field, number, type, repeated, message type)]): the pod-resources v1 messages the
# tests send, field numbers as in k8s.io/kubelet/pkg/apis/podresources/v1/api.proto, plus the
# fields gpunode ignores (cpu_ids, memory) so that it is shown skipping them.
MESSAGES = [
    ("NUMANode", [("ID", 1, F.TYPE_INT64, False, None)]),
    ("TopologyInfo", [("nodes", 1, F.TYPE_MESSAGE, True, "NUMANode")]),
    ("ContainerDevices", [("resource_name", 1, F.TYPE_STRING, False, None),
                          ("device_ids", 2, F.TYPE_STRING, True, None),
                          ("topology", 3, F.TYPE_MESSAGE, False, "TopologyInfo")]),
    ("ContainerMemory", [("memory_type", 1, F.TYPE_STRING, False, None),
                         ("size", 2, F.TYPE_UINT64, False, None),
                         ("topology", 3, F.TYPE_MESSAGE, False, "TopologyInfo")]),
    ("ContainerResources", [("name", 1, F.TYPE_STRING, False, None),
                            ("devices", 2, F.TYPE_MESSAGE, True, "ContainerDevices"),
                            ("cpu_ids", 3, F.TYPE_INT64, True, None),
                            ("memory", 4, F.TYPE_MESSAGE, True, "ContainerMemory")]),
    ("PodResources", [("name", 1, F.TYPE_STRING, False, None),
                      ("namespace", 2, F.TYPE_STRING, False, None),
                      ("containers", 3, F.TYPE_MESSAGE, True, "ContainerResources")]),
    ("ListPodResourcesRequest", []),
    ("ListPodResourcesResponse", [("pod_resources", 1, F.TYPE_MESSAGE, True, "PodResources")]),
    ("AllocatableResourcesRequest", []),
    ("AllocatableResourcesResponse", [("devices", 1, F.TYPE_MESSAGE, True, "ContainerDevices"),
                                      ("cpu_ids", 2, F.TYPE_INT64, True, None),
                                      ("memory", 3, F.TYPE_MESSAGE, True, "ContainerMemory")]),
]


def build_message_classes(messages, package, file_name):
    """Returns {name: class} for messages ([(message, [(field, number, type, repeated, message type)])]) of
    package, built at run time from a FileDescriptorProto (Debian packages no grpcio-tools)."""
    fdp = descriptor_pb2.FileDescriptorProto(name=file_name, package=package, syntax="proto3")
    for name, fields in messages:
        m = fdp.message_type.add(name=name)
        for fname, number, ftype, repeated, mtype in fields:
            f = m.field.add(name=fname, number=number, type=ftype,
                            label=F.LABEL_REPEATED if repeated else F.LABEL_OPTIONAL)
            if mtype:
                f.type_name = "." + package + "." + mtype
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    factory = message_factory.MessageFactory(pool)
    return {name: factory.GetPrototype(pool.FindMessageTypeByName(package + "." + name)) for name, _ in messages}


def message_classes():
    """Returns {name: class} for the pod-resources MESSAGES."""
    return build_message_classes(MESSAGES, "v1", "fake_podresources.proto")


def load(cls, path, default):
    """Returns the serialized message of class cls from the JSON file path (default when None)."""
    data = default if path is None else json.load(open(path))
    return json_format.ParseDict(data, cls()).SerializeToString()


def many_pods(classes, n):
    """Returns a serialized ListPodResourcesResponse of n pods, one container and GPU each."""
    resp = classes["ListPodResourcesResponse"]()
    for i in range(n):
        pod = resp.pod_resources.add(name="job-%06d" % i, namespace="batch")
        c = pod.containers.add(name="main")
        c.devices.add(resource_name="nvidia.com/gpu",
                      device_ids=["GPU-%08x-1111-2222-3333-444455556666" % i])
    return resp.SerializeToString()


def serve_grpc(args):
    import grpc
    from concurrent import futures

    classes = message_classes()
    list_bytes = load(classes["ListPodResourcesResponse"], args.list, {"podResources": []})
    alloc_bytes = load(classes["AllocatableResourcesResponse"], args.allocatable, {"devices": []})
    if args.mode == "many":
        list_bytes = many_pods(classes, args.pods)

    def answer(data):
        def handler(request, context):
            if args.mode == "denied":
                context.abort(grpc.StatusCode.PERMISSION_DENIED, "no access to pod-resources: 100% denied\n")
            return data
        return handler

    methods = {"List": answer(list_bytes)}
    if args.mode != "unimplemented":
        methods["GetAllocatableResources"] = answer(alloc_bytes)
    ident = lambda b: b  # requests and answers stay bytes
    handlers = {name: grpc.unary_unary_rpc_method_handler(fn, request_deserializer=ident, response_serializer=ident)
                for name, fn in methods.items()}
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4),
                         options=[("grpc.max_send_message_length", -1)])
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler("v1.PodResourcesLister", handlers),))
    server.add_insecure_port("unix:" + args.socket)
    server.start()
    print("ready", flush=True)
    server.wait_for_termination()


def frame(ftype, flags, stream, payload=b""):
    """Returns one HTTP/2 frame (RFC 9113 section 4.1)."""
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", stream) + payload


def hpack_int(value, prefix_bits=7, first=0):
    """Returns an HPACK integer (RFC 7541 section 5.1) with prefix_bits in the first octet."""
    limit = (1 << prefix_bits) - 1
    if value < limit:
        return bytes([first | value])
    out = [first | limit]
    value -= limit
    while value >= 128:
        out.append(value % 128 + 128)
        value //= 128
    out.append(value)
    return bytes(out)


def hpack_literal(headers):
    """Returns an HPACK block of literal fields without indexing, names and values not Huffman-coded."""
    out = b""
    for name, value in headers:
        out += b"\x00" + hpack_int(len(name)) + name.encode() + hpack_int(len(value)) + value.encode()
    return out


DATA, HEADERS, SETTINGS, CONTINUATION = 0, 1, 4, 9
END_STREAM, END_HEADERS = 0x1, 0x4
RESPONSE_HEADERS = [(":status", "200"), ("content-type", "application/grpc")]


def read_some(conn, seconds):
    """Reads and discards what the client sends for up to seconds; returns False once it closed."""
    conn.settimeout(seconds)
    try:
        while True:
            if not conn.recv(65536):
                return False
    except socket.timeout:
        return True
    except OSError:
        return False


def hostile(conn, mode):
    """Plays one hostile mode on an accepted connection."""
    try:
        if mode == "hang":
            while read_some(conn, 3600):
                pass
            return
        if mode == "garbage":
            read_some(conn, 0.05)
            rnd = random.Random(7)
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n" +
                         bytes(rnd.randrange(256) for _ in range(4096)))
            while read_some(conn, 3600):
                pass
            return
        if mode == "close":
            read_some(conn, 0.05)
            return
        conn.sendall(frame(SETTINGS, 0, 0))
        read_some(conn, 0.1)  # the client's preface, SETTINGS and request (stream 1)
        if mode == "big-headers":
            block = hpack_literal(RESPONSE_HEADERS + [("x-pad-%02d" % i, "a" * 1000) for i in range(80)])
            pieces = [block[i:i + 16384] for i in range(0, len(block), 16384)]
            for i, piece in enumerate(pieces):
                last = END_HEADERS if i == len(pieces) - 1 else 0
                conn.sendall(frame(HEADERS if i == 0 else CONTINUATION, last, 1, piece))
            while read_some(conn, 3600):
                pass
            return
        conn.sendall(frame(HEADERS, END_HEADERS, 1, hpack_literal(RESPONSE_HEADERS)))
        if mode == "drip":
            conn.sendall(frame(DATA, 0, 1, b"\x00" + struct.pack(">I", 100)))
            for _ in range(100):
                time.sleep(0.05)
                conn.sendall(frame(DATA, 0, 1, b"\x0a"))
            return
        if mode == "close-mid":
            conn.sendall(frame(DATA, 0, 1, b"\x00" + struct.pack(">I", 100) + b"\x0a\x08" + b"x" * 8))
            time.sleep(0.05)
            return
        if mode == "huge":
            conn.sendall(frame(DATA, 0, 1, b"\x00" + struct.pack(">I", 100 << 20) + b"\x0a" * 16379))
            while read_some(conn, 3600):
                pass
            return
        if mode == "no-trailers":
            conn.sendall(frame(DATA, END_STREAM, 1, b"\x00" + struct.pack(">I", 0)))
            while read_some(conn, 3600):
                pass
            return
    finally:
        conn.close()


def serve_hostile(args):
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(args.socket)
    srv.listen(16)
    print("ready", flush=True)
    while True:
        conn, _ = srv.accept()
        threading.Thread(target=hostile, args=(conn, args.mode), daemon=True).start()


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--socket", required=True)
    p.add_argument("--mode", default="normal",
                   choices=["normal", "unimplemented", "many", "denied",
                            "hang", "close", "close-mid", "huge", "garbage", "no-trailers", "drip",
                            "big-headers"])
    p.add_argument("--list")
    p.add_argument("--allocatable")
    p.add_argument("--pods", type=int, default=60000)
    p.add_argument("--lifetime", type=int, default=60)
    args = p.parse_args()

    signal.signal(signal.SIGALRM, lambda *_: os._exit(0))
    signal.alarm(args.lifetime)
    os.makedirs(os.path.dirname(os.path.abspath(args.socket)), exist_ok=True)
    if os.path.exists(args.socket):
        os.unlink(args.socket)
    if args.mode in ("normal", "unimplemented", "many", "denied"):
        serve_grpc(args)
    else:
        serve_hostile(args)


if __name__ == "__main__":
    sys.exit(main())
