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
# The scenario's live peers: setup_servers, fill_ports, stop_servers, no_cluster_env.
. "$here/scenario-servers.sh"
trap 'stop_servers; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
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
        fill_ports
        root=$dir/root nvml_args=(--nvml-library "$fake")
        if [ -f "$dir/nvml-in-root" ]; then
                # NVML found under the root by gpunode's own lookup: a copy of the root with the fake
                # library planted at each listed path, no --nvml-library, no LD_LIBRARY_PATH.
                root=$tmp/root-$name
                rm -rf "$root" && cp -a "$dir/root" "$root"
                while read -r p; do
                        mkdir -p "$root/$(dirname "$p")" && cp "$fake" "$root/$p" && chmod 0755 "$root/$p"
                done < "$dir/nvml-in-root"
                nvml_args=()
        fi
        for fmt in json text; do
                out=$tmp/$name.$fmt
                # No cluster unless the scenario has one: no kubeconfig, no service account, no proxy.
                "${no_cluster_env[@]}" LD_LIBRARY_PATH= GPUNODE_FAKE_NVML=$dir/nvml.json NO_COLOR=1 NODE_NAME= timeout 60 \
                        "$gpunode" check --root "$root" "${nvml_args[@]}" --node "$name" --output "$fmt" "${kube_args[@]}" "${extra[@]}" \
                        > "$out" 2> "$tmp/$name.err"
                echo "exit $?" >> "$out"
                # Paths and ports differ between runs: write them as placeholders.
                sed -i -e "s|$root|@ROOT@|g" -e "s|$fake|@NVML_LIBRARY@|g" -e "s|$tmp|@TMP@|g" \
                        -e "s|127\.0\.0\.1:$closed_port\b|127.0.0.1:@CLOSED_PORT@|g" "$out"
                [ -n "$api_port" ] && sed -i -e "s|127\.0\.0\.1:$api_port\b|127.0.0.1:@API_PORT@|g" "$out"
                [ -n "$metrics_port" ] && sed -i -e "s|127\.0\.0\.1:$metrics_port\b|127.0.0.1:@METRICS_PORT@|g" "$out"
                report_placeholders "$out"
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
