#!/bin/bash
# run-labels-hang-test.sh: `gpunode labels` asks NVML only what GFD needs, so a GPU hanging in an
# unrelated call (nvmlDeviceGetPowerUsage) does not stop the labels: they come out complete and fast,
# the same as without the hang, while `gpunode check` on the same node runs into its NVML timeout.
# usage: run-labels-hang-test.sh GPUNODE FAKE_NVML_LIB
set -u
gpunode=$1 fake=$2
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { echo "ok   $*"; passed=$((passed + 1)); }
fail() { echo "FAIL $*"; failed=$((failed + 1)); }

node=$here/h100-hgx
# The HGX fixture's description with GPU 2's power query hanging for 30 s.
python3 - "$node/nvml.json" "$tmp/hang.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["block"] = {"call": "nvmlDeviceGetPowerUsage", "gpu": 2, "seconds": 30}
json.dump(d, open(sys.argv[2], "w"))
PY
start=$(date +%s%N)
GPUNODE_FAKE_NVML=$tmp/hang.json timeout 20 "$gpunode" labels --once --root "$node/root" --nvml-library "$fake" \
        --nvml-timeout 3000 -o - --no-timestamp > "$tmp/hang.labels" 2> "$tmp/hang.err"
rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ $rc -eq 0 ] && ok "labels exit 0 while nvmlDeviceGetPowerUsage hangs" || fail "labels exit $rc: $(cat "$tmp/hang.err")"
[ $ms -lt 2500 ] && ok "labels took ${ms} ms (< 2500, the hang is 30 s)" || fail "labels took ${ms} ms"
diff -u "$node/expected.labels" "$tmp/hang.labels" > "$tmp/diff" && ok "labels identical to expected.labels" ||
        { fail "labels differ under the hang"; cat "$tmp/diff"; }
# The full probe does ask for power, and stops at its timeout (the HGX scenario's host root).
GPUNODE_FAKE_NVML=$tmp/hang.json timeout 20 "$gpunode" check --root "$here/../scenarios/hgx-h100-healthy/root" --nvml-library "$fake" \
        --nvml-timeout 300 --output json > "$tmp/check.json" 2> /dev/null
grep -q 'nvmlDeviceGetPowerUsage on GPU 2 did not return within 300 ms' "$tmp/check.json" &&
        ok "check: the full probe meets the hang" || fail "check did not report the hang"
echo "labels-hang: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
