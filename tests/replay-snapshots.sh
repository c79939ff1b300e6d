#!/bin/bash
# replay-snapshots.sh: `gpunode check --snapshot` on every snapshot of a real node committed in
# tests/snapshots/ gives the report expected next to it (made on that node, then reviewed).
# --update (or GPUNODE_UPDATE=1) rewrites the expected reports.
# usage: replay-snapshots.sh GPUNODE [--update]
set -u
gpunode=$1
update=${GPUNODE_UPDATE:-0}
[ "${2:-}" = "--update" ] && update=1
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
for snap in "$here"/snapshots/*.tar.gz; do
        name=$(basename "$snap" .tar.gz)
        for fmt in json text; do
                TMPDIR=$tmp NO_COLOR=1 "$gpunode" check --snapshot "$snap" --node "$name" --output "$fmt" > "$tmp/out" 2> "$tmp/err"
                echo "exit $?" >> "$tmp/out"
                # The time stays: it is the collection's, from the snapshot's manifest.
                sed -E -i 's/^(  "version": )"[^"]*"/\1"@VERSION@"/' "$tmp/out"
                expected=$here/snapshots/$name.expected.$fmt
                if [ "$update" = 1 ]; then cp "$tmp/out" "$expected"; fi
                if diff -u "$expected" "$tmp/out" > "$tmp/diff" && ! [ -s "$tmp/err" ]; then
                        echo "ok   $name ($fmt)"; passed=$((passed + 1))
                else
                        echo "FAIL $name ($fmt)"; head -40 "$tmp/diff"; cat "$tmp/err"; failed=$((failed + 1))
                fi
        done
done
echo "replay-snapshots: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
