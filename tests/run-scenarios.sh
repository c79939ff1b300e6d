#!/bin/bash
# run-scenarios.sh: runs the real gpunode binary on every node scenario and diffs its reports
# with the expected ones next to it. --update (or GPUNODE_UPDATE=1) rewrites the expected files.
# usage: run-scenarios.sh GPUNODE FAKE_NVML_LIB [--update] [SCENARIO...]
set -u
gpunode=$1 fake=$2
shift 2
update=${GPUNODE_UPDATE:-0}
if [ "${1:-}" = "--update" ]; then update=1; shift; fi
here=$(cd "$(dirname "$0")" && pwd)
scenarios=("$@")
if [ ${#scenarios[@]} -eq 0 ]; then
        for d in "$here"/scenarios/*/; do scenarios+=("$(basename "$d")"); done
fi
tmp=$(mktemp -d)
# Servers started for a scenario (layers 3 and 4): always killed, also when this script is interrupted.
pids=()
stop_servers() {
        local p
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
        pids=()
}
trap 'stop_servers; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
# Prints a TCP port on 127.0.0.1 that nothing listens on right now.
free_port() {
        /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
# start_server OUT CMD...: starts CMD in the background (its pid in pids) and sets $port to the port it
# prints on its first line; returns 1 when none came within 10 s.
start_server() {
        local out=$1 i
        shift
        "$@" > "$out" 2> /dev/null &
        pids+=($!)
        for i in $(seq 100); do
                port=$(head -n 1 "$out" 2>/dev/null)
                [[ "$port" =~ ^[0-9]+$ ]] && return 0
                sleep 0.1
        done
        return 1
}
# Sets up a scenario's API server (api/, api-mode: hang or down) and metrics server (metrics/);
# sets kube_args and the ports. Returns 1 when a server did not start.
setup_servers() {
        local dir=$1 mode=normal
        kube_args=() api_port='' metrics_port='' closed_port=''
        if [ -d "$dir/api" ] || [ -f "$dir/api-mode" ]; then
                [ -f "$dir/api-mode" ] && read -r mode < "$dir/api-mode"
                if [ ! -f "$tmp/certs/ca.crt" ]; then
                        sh "$here/kube-server/make-certs.sh" "$tmp/certs" > /dev/null || return 1
                fi
                if [ "$mode" = down ]; then
                        api_port=$(free_port)
                else
                        start_server "$tmp/api.out" /usr/bin/python3 "$here/kube-server/kube_server.py" --certs "$tmp/certs" \
                                --responses "$dir/api" --token scenario-token-0123456789 --mode "$mode" --lifetime 120 || return 1
                        api_port=$port
                fi
                printf '%s\n' "apiVersion: v1" "kind: Config" "clusters:" "- name: scenario" "  cluster:" \
                        "    server: https://127.0.0.1:$api_port" "    certificate-authority: $tmp/certs/ca.crt" \
                        "users:" "- name: scenario" "  user:" "    token: scenario-token-0123456789" "contexts:" \
                        "- name: scenario" "  context: {cluster: scenario, user: scenario}" "current-context: scenario" \
                        > "$tmp/kubeconfig"
                kube_args=(--kubeconfig "$tmp/kubeconfig")
        fi
        if [ -d "$dir/metrics" ]; then
                start_server "$tmp/metrics.out" /usr/bin/python3 "$here/kube-server/metrics_server.py" --dir "$dir/metrics" \
                        --lifetime 120 || return 1
                metrics_port=$port
        fi
        # a port nothing listens on ("exporter down"), chosen after the servers took theirs
        while [ -z "$closed_port" ] || [ "$closed_port" = "$api_port" ] || [ "$closed_port" = "$metrics_port" ]; do
                closed_port=$(free_port)
        done
        return 0
}
mkdir -p "$tmp/home"
passed=0 failed=0
for name in "${scenarios[@]}"; do
        dir=$here/scenarios/$name
        read -r -a extra < "$dir/args"
        if ! setup_servers "$dir"; then
                echo "FAIL $name: a test server did not start"
                stop_servers
                failed=$((failed + 1))
                continue
        fi
        for i in "${!extra[@]}"; do
                extra[$i]=${extra[$i]//@METRICS_PORT@/${metrics_port:-0}}
                extra[$i]=${extra[$i]//@CLOSED_PORT@/$closed_port}
        done
        for fmt in json text; do
                out=$tmp/$name.$fmt
                # No cluster unless the scenario has one: no kubeconfig, no service account, no proxy.
                env -u KUBECONFIG -u KUBERNETES_SERVICE_HOST -u KUBERNETES_SERVICE_PORT -u http_proxy -u https_proxy \
                        -u HTTP_PROXY -u HTTPS_PROXY -u ALL_PROXY -u all_proxy HOME="$tmp/home" \
                        GPUNODE_FAKE_NVML=$dir/nvml.json NO_COLOR=1 NODE_NAME= timeout 60 "$gpunode" check \
                        --root "$dir/root" --nvml-library "$fake" --node "$name" --output "$fmt" "${kube_args[@]}" "${extra[@]}" \
                        > "$out" 2> "$tmp/$name.err"
                echo "exit $?" >> "$out"
                # Paths and ports differ between runs: write them as placeholders.
                sed -i -e "s|$dir/root|@ROOT@|g" -e "s|$fake|@NVML_LIBRARY@|g" -e "s|$tmp|@TMP@|g" \
                        -e "s|127\.0\.0\.1:$closed_port\b|127.0.0.1:@CLOSED_PORT@|g" "$out"
                [ -n "$api_port" ] && sed -i -e "s|127\.0\.0\.1:$api_port\b|127.0.0.1:@API_PORT@|g" "$out"
                [ -n "$metrics_port" ] && sed -i -e "s|127\.0\.0\.1:$metrics_port\b|127.0.0.1:@METRICS_PORT@|g" "$out"
                expected=$dir/expected.$fmt
                if [ "$update" = 1 ]; then
                        cp "$out" "$expected"
                elif ! diff -u "$expected" "$out" > "$tmp/diff"; then
                        echo "FAIL $name ($fmt): output differs from $expected"
                        head -60 "$tmp/diff"
                        cat "$tmp/$name.err"
                        failed=$((failed + 1))
                        continue
                fi
                if [ -s "$tmp/$name.err" ]; then
                        echo "FAIL $name ($fmt): wrote to stderr:"; cat "$tmp/$name.err"
                        failed=$((failed + 1))
                        continue
                fi
                echo "ok   $name ($fmt)"
                passed=$((passed + 1))
        done
        stop_servers
done
echo "scenarios: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
