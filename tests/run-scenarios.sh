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
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
for name in "${scenarios[@]}"; do
        dir=$here/scenarios/$name
        read -r -a extra < "$dir/args"
        for fmt in json text; do
                out=$tmp/$name.$fmt
                GPUNODE_FAKE_NVML=$dir/nvml.json NO_COLOR=1 NODE_NAME= timeout 60 "$gpunode" check \
                        --root "$dir/root" --nvml-library "$fake" --node "$name" --output "$fmt" "${extra[@]}" \
                        > "$out" 2> "$tmp/$name.err"
                echo "exit $?" >> "$out"
                # Paths differ between checkouts: write them as placeholders.
                sed -i -e "s|$dir/root|@ROOT@|g" -e "s|$fake|@NVML_LIBRARY@|g" "$out"
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
done
echo "scenarios: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
