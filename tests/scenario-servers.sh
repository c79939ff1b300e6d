# scenario-servers.sh: sourced by run-scenarios.sh and snapshot/run-snapshot-tests.sh: starts a node
# scenario's live peers (the HTTPS API stand-in, the metrics server, the kubelet's pod-resources
# service) and stops them.
# The sourcing script sets $here (the tests folder) and $tmp (its private folder), and calls
# stop_servers from its EXIT trap.

# Servers started for a scenario (layers 3 and 4): always killed, also when the script is interrupted.
pids=() sockets=()
stop_servers() {
        local p
        for p in "${pids[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
        pids=()
        # the fake kubelet's socket lives in the scenario's root: leave the tree as it was
        for p in "${sockets[@]}"; do [ -S "$p" ] && rm -f "$p"; done
        sockets=()
}
# start_kubelet LIST SOCKET: starts fake_kubelet.py answering pod-resources List with LIST (protobuf's
# JSON mapping) on SOCKET, a path in the scenario's root; returns 1 when it was not ready within 10 s.
start_kubelet() {
        local list=$1 sock=$2 out=$tmp/kubelet.out i
        : > "$out"
        /usr/bin/python3 "$here/kubelet/fake_kubelet.py" --socket "$sock" --list "$list" --lifetime 120 >> "$out" 2> /dev/null &
        pids+=($!)
        sockets+=("$sock")
        for i in $(seq 100); do
                [ "$(head -n 1 "$out" 2>/dev/null)" = ready ] && return 0
                sleep 0.1
        done
        return 1
}
# hold_closed_port: sets $port to a TCP port on 127.0.0.1 that refuses connections for as long as the
# scenario runs: a process keeps it bound without listening, so no concurrent test can take it.
hold_closed_port() {
        start_server "$tmp/hold.$RANDOM.out" /usr/bin/python3 -c 'import socket, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1], flush=True); time.sleep(300)'
}
# start_server OUT CMD...: starts CMD in the background (its pid in pids) and sets $port to the port it
# prints on its first line; returns 1 when none came within 10 s.
start_server() {
        local out=$1 i
        shift
        # Emptied here, not by the background job's redirection: a file left by the previous
        # scenario's server would otherwise hand out that dead server's port (a race under load).
        : > "$out"
        "$@" >> "$out" 2> /dev/null &
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
                        hold_closed_port || return 1
                        api_port=$port
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
        # the kubelet's pod-resources service (podresources.json: its List answer) on the root's socket
        if [ -f "$dir/podresources.json" ]; then
                start_kubelet "$dir/podresources.json" "$dir/root/var/lib/kubelet/pod-resources/kubelet.sock" || return 1
        fi
        # a port nothing listens on ("exporter down")
        hold_closed_port || return 1
        closed_port=$port
        return 0
}
# Replaces @METRICS_PORT@ and @CLOSED_PORT@ in the array extra (a scenario's args) with the ports.
fill_ports() {
        local i
        for i in "${!extra[@]}"; do
                extra[$i]=${extra[$i]//@METRICS_PORT@/${metrics_port:-0}}
                extra[$i]=${extra[$i]//@CLOSED_PORT@/$closed_port}
        done
}
# The environment gpunode runs in: no cluster unless the scenario has one (no kubeconfig, no service
# account, no proxy, a private $HOME): "${no_cluster_env[@]}" gpunode ...
no_cluster_env=(env -u KUBECONFIG -u KUBERNETES_SERVICE_HOST -u KUBERNETES_SERVICE_PORT -u http_proxy -u https_proxy
                -u HTTP_PROXY -u HTTPS_PROXY -u ALL_PROXY -u all_proxy HOME="$tmp/home")
mkdir -p "$tmp/home"

# report_placeholders FILE...: writes a report's time and version (JSON or text), which differ between
# runs and releases, as @TIME@ and @VERSION@, in place.
report_placeholders() {
        sed -E -i -e 's/^(  "time": )"[^"]*"/\1"@TIME@"/' -e 's/^(  "version": )"[^"]*"/\1"@VERSION@"/' \
                -e 's/^(gpunode check: node .*\)) at [0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$/\1 at @TIME@/' "$@"
}
