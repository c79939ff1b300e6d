#!/bin/bash
# daemon-rss.sh: resident memory of `gpunode agent` and `gpunode exporter`, one binary against another.
# usage: bench/daemon-rss.sh BINARY_BEFORE BINARY_AFTER FAKE_NVML [SCENARIO]
#   Runs each command of each binary in turn against the same node scenario (tests/scenarios/SCENARIO,
#   default k8s-healthy: its root and NVML description, through the fake NVML), diagnosing every 1 s and
#   sampling every 1 s, scraped once a second, for BENCH_SECONDS (default 20) seconds; reads VmRSS every
#   second and VmRSS and VmHWM at the end from /proc/PID/status, and prints them (kB) with the
#   after/before ratios. The agent runs without the API (--no-conditions), its labels into a temp file.
#   Loopback only; every process started here is stopped on the way out. Figures, never pass/fail.
set -euo pipefail
if [ $# -lt 3 ]; then
        echo "usage: $0 BINARY_BEFORE BINARY_AFTER FAKE_NVML [SCENARIO]" >&2
        exit 64
fi
before=$(realpath "$1") after=$(realpath "$2") fake=$(realpath "$3") scenario=${4:-k8s-healthy}
here=$(cd "$(dirname "$0")" && pwd)
dir=$here/../tests/scenarios/$scenario
seconds=${BENCH_SECONDS:-20}
for f in "$before" "$after" "$fake" "$dir/root"; do
        [ -e "$f" ] || { echo "daemon-rss: $f not found" >&2; exit 66; }
done
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT

# free_port: prints a TCP port on 127.0.0.1 that was free a moment ago.
free_port() {
        /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# status_kb PID FIELD: prints FIELD (VmRSS, VmHWM) of /proc/PID/status in kB, or 0 when it is gone.
status_kb() {
        awk -v f="$2:" '$1 == f { print $2; found = 1 } END { if (!found) print 0 }' "/proc/$1/status" 2>/dev/null ||
                echo 0
}

# measure BINARY COMMAND: runs it for $seconds s; prints "final_rss max_rss hwm" (kB).
measure() {
        local bin=$1 cmd=$2 port extra=() max=0 rss=0 hwm=0 i
        port=$(free_port)
        if [ "$cmd" = agent ]; then
                extra=(--no-conditions --labels-output "$tmp/labels")
        fi
        env -u KUBERNETES_SERVICE_HOST -u KUBERNETES_SERVICE_PORT \
                GPUNODE_FAKE_NVML="$dir/nvml.json" NODE_NAME="$scenario" \
                "$bin" "$cmd" --listen "127.0.0.1:$port" --root "$dir/root" --nvml-library "$fake" --interval 1s \
                --check-interval 1s "${extra[@]}" >"$tmp/$cmd.log" 2>&1 &
        pid=$!
        for ((i = 0; i < seconds; i++)); do
                sleep 1
                curl -fsS -o /dev/null "http://127.0.0.1:$port/metrics" || true
                rss=$(status_kb "$pid" VmRSS)
                ((rss > max)) && max=$rss
        done
        rss=$(status_kb "$pid" VmRSS)
        hwm=$(status_kb "$pid" VmHWM)
        if ! kill -0 "$pid" 2>/dev/null; then
                echo "daemon-rss: $bin $cmd exited early; its log:" >&2
                tail -20 "$tmp/$cmd.log" >&2
                pid=
                exit 1
        fi
        kill -TERM "$pid"
        wait "$pid" || true
        pid=
        echo "$rss $max $hwm"
}

echo "# scenario $scenario, ${seconds}s each, diagnosis every 1s, sampling every 1s"
echo "# before: $before"
echo "# after:  $after"
printf "%-9s %-12s %10s %10s %7s\n" command figure "before kB" "after kB" ratio
for cmd in agent exporter; do
        measure "$before" "$cmd" >"$tmp/before"  # in this shell: the EXIT trap stops what runs
        measure "$after" "$cmd" >"$tmp/after"
        read -r b_rss b_max b_hwm <"$tmp/before"
        read -r a_rss a_max a_hwm <"$tmp/after"
        for row in "VmRSS(end) $b_rss $a_rss" "VmRSS(max) $b_max $a_max" "VmHWM $b_hwm $a_hwm"; do
                read -r name b a <<<"$row"
                printf "%-9s %-12s %10s %10s %7s\n" "$cmd" "$name" "$b" "$a" \
                        "$(awk -v a="$a" -v b="$b" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }')"
        done
done
