#!/usr/bin/python3
# record-fuzz-seeds.py: writes fuzz/seeds/grpc/ from fake_kubelet.py's real answers (recorded on the wire) and messages.
"""
usage: record-fuzz-seeds.py BUILD_DIR

For every mode of fake_kubelet.py, runs BUILD_DIR/tests/podres_call list through a relay that
records what the server sent, and writes it as a seed of fuzz_grpc's connection mode (first
byte 2). Writes the List and GetAllocatableResources messages of tests/kubelet/*.json as seeds
of the decoder modes (0, 1) and a few framed messages for the reader mode (3).
"""

import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(SOURCE, "fuzz", "seeds", "grpc")
SOCKET = "var/lib/kubelet/pod-resources/kubelet.sock"


def relay(listener, upstream, record):
    """Accepts one connection on listener, relays it to upstream, appends upstream's bytes to record."""
    conn, _ = listener.accept()
    up = socket.socket(socket.AF_UNIX)
    up.connect(upstream)

    def pump(src, dst, keep):
        try:
            while True:
                b = src.recv(65536)
                if not b:
                    break
                if keep:
                    record.append(b)
                dst.sendall(b)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    t = threading.Thread(target=pump, args=(up, conn, True), daemon=True)
    t.start()
    pump(conn, up, False)
    t.join(2)


def record_mode(build, mode, tmp):
    server_root = os.path.join(tmp, "server-" + mode)
    client_root = os.path.join(tmp, "client-" + mode)
    server_sock = os.path.join(server_root, SOCKET)
    client_sock = os.path.join(client_root, SOCKET)
    os.makedirs(os.path.dirname(client_sock))
    srv = subprocess.Popen(["/usr/bin/python3", os.path.join(HERE, "fake_kubelet.py"), "--socket", server_sock,
                            "--mode", mode, "--list", os.path.join(HERE, "list.json"),
                            "--allocatable", os.path.join(HERE, "allocatable.json"), "--pods", "3", "--lifetime", "30"],
                           stdout=subprocess.PIPE)
    srv.stdout.readline()
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(client_sock)
    listener.listen(1)
    record = []
    t = threading.Thread(target=relay, args=(listener, server_sock, record), daemon=True)
    t.start()
    subprocess.run([os.path.join(build, "tests", "podres_call"), "--root", client_root, "--timeout", "500", "list"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    t.join(3)
    srv.kill()
    srv.wait()
    return b"".join(record)


def main():
    build = sys.argv[1]
    sys.path.insert(0, HERE)
    import fake_kubelet
    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ["normal", "unimplemented", "many", "denied", "close-mid", "huge", "garbage", "no-trailers",
                     "big-headers"]:
            data = record_mode(build, mode, tmp)
            open(os.path.join(OUT, "conn-" + mode), "wb").write(b"\x02" + data[:65535])
    classes = fake_kubelet.message_classes()
    lst = fake_kubelet.load(classes["ListPodResourcesResponse"], os.path.join(HERE, "list.json"), None)
    alloc = fake_kubelet.load(classes["AllocatableResourcesResponse"], os.path.join(HERE, "allocatable.json"), None)
    open(os.path.join(OUT, "list"), "wb").write(b"\x00" + lst)
    open(os.path.join(OUT, "allocatable"), "wb").write(b"\x01" + alloc)
    open(os.path.join(OUT, "list-many"), "wb").write(b"\x00" + fake_kubelet.many_pods(classes, 50))
    framed = b"".join(b"\x00" + len(m).to_bytes(4, "big") + m for m in (lst[:200], b"", alloc[:100]))
    open(os.path.join(OUT, "reader"), "wb").write(b"\x03\x02" + framed)


if __name__ == "__main__":
    main()
