#!/bin/bash
# measure.sh: the resident memory and time each gRPC library choice adds to a process (the figures atop src/grpc/grpc_h2.c).
# usage: bench/grpc-libs/measure.sh BUILD_DIR [RUNS]
# Builds the m_*.c programs (m_grpc only when libgrpc-dev is installed: it is not a dependency),
# starts tests/kubelet/fake_kubelet.py under a temp root, and prints each program's median wall
# time and peak RSS over RUNS (default 21) runs of BUILD_DIR/peakrss, beside gpunode's own client
# (BUILD_DIR/tests/podres_call list allocatable) and its baseline (podres_call with no call).
set -eu
build=$(cd "$1" && pwd) runs=${2:-21}
here=$(cd "$(dirname "$0")" && pwd) src=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'kill $server 2>/dev/null || true; rm -rf "$tmp"' EXIT
cd "$tmp"
protoc-c --proto_path="$src/src/kube" --c_out=. "$src/src/kube/podresources.proto"
t() { local s=$(date +%s.%N); "$@"; echo "$(echo "$(date +%s.%N) - $s" | bc)"; }
echo "build (gcc -O2, s): m_base $(t gcc -O2 -o m_base "$here/m_base.c")" \
     "m_nghttp2 $(t gcc -O2 -o m_nghttp2 "$here/m_nghttp2.c")" \
     "m_protobufc $(t gcc -O2 -I. -o m_protobufc "$here/m_protobufc.c" podresources.pb-c.c -lprotobuf-c)"
have_grpc=false
if pkg-config --exists grpc; then
        echo "build m_grpc: $(t gcc -O2 -o m_grpc "$here/m_grpc.c" $(pkg-config --cflags --libs grpc)) s"
        have_grpc=true
fi
sock=$tmp/root/var/lib/kubelet/pod-resources/kubelet.sock
/usr/bin/python3 "$src/tests/kubelet/fake_kubelet.py" --socket "$sock" --list "$src/tests/kubelet/list.json" \
        --allocatable "$src/tests/kubelet/allocatable.json" --lifetime 600 > ready &
server=$!
for _ in $(seq 100); do grep -q ready ready 2>/dev/null && break; sleep 0.1; done
/usr/bin/python3 -c "
import grpc, sys
ch = grpc.insecure_channel('unix:$sock')
f = ch.unary_unary('/v1.PodResourcesLister/List', request_serializer=lambda b: b, response_deserializer=lambda b: b)
open('list.bin', 'wb').write(f(b''))"
median() {
        for _ in $(seq "$runs"); do "$build/peakrss" "$@"; done > runs
        local kib ms
        kib=$(sort -n -k2 runs | awk -v m=$(((runs + 1) / 2)) 'NR == m {print $2}')
        ms=$(sort -n -k1 runs | awk -v m=$(((runs + 1) / 2)) 'NR == m {print $1}')
        printf "%8s KiB %8s ms\n" "$kib" "$ms"
}
printf "%-48s %s\n" "baseline (m_base)" "$(median ./m_base)"
printf "%-48s %s\n" "dlopen libnghttp2, one session (m_nghttp2)" "$(median ./m_nghttp2)"
printf "%-48s %s\n" "libprotobuf-c, one List unpacked (m_protobufc)" "$(median ./m_protobufc list.bin)"
$have_grpc && printf "%-48s %s\n" "libgrpc, one unary List (m_grpc)" "$(median ./m_grpc "$sock")"
printf "%-48s %s\n" "podres_call, no call" "$(median "$build/tests/podres_call" --root "$tmp/root")"
printf "%-48s %s\n" "podres_call list allocatable" "$(median "$build/tests/podres_call" --root "$tmp/root" list allocatable)"
