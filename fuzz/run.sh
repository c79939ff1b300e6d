#!/bin/bash
# run.sh: runs every built libFuzzer target for a while on its seed corpus (fuzz/seeds/<name>,
# when present) and fails on the first crash, leak or timeout it finds.
# usage: fuzz/run.sh BUILD_DIR [SECONDS_EACH]
set -u
build=$1 seconds=${2:-10}
here=$(cd "$(dirname "$0")" && pwd)
passed=0 failed=0
for exe in "$build"/fuzz/fuzz_*; do
        [ -x "$exe" ] && [ -f "$exe" ] || continue
        name=$(basename "$exe"); name=${name#fuzz_}
        corpus=$(mktemp -d)
        seeds=()
        [ -d "$here/seeds/$name" ] && seeds=("$here/seeds/$name")
        if "$exe" -max_total_time="$seconds" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
                -artifact_prefix="$corpus/" "$corpus" "${seeds[@]}" > "$corpus/log" 2>&1; then
                echo "ok   fuzz_$name: $(awk "/number_of_executed_units/ {print \$2}" "$corpus/log") runs in ${seconds} s"
                passed=$((passed + 1))
        else
                echo "FAIL fuzz_$name"; tail -40 "$corpus/log"
                failed=$((failed + 1))
        fi
        rm -rf "$corpus"
done
echo "fuzz: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
