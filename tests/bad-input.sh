#!/bin/bash
# bad-input.sh: hostile and broken inputs give a finding that says what happened: never a crash,
# a hang or a wrong verdict. A 100 MB kernel log, a FIFO where /dev/kmsg should be, unreadable
# files, a huge /proc file, an empty root.
# usage: bad-input.sh GPUNODE FAKE_NVML_LIB PEAKRSS
set -u
gpunode=$1 fake=$2 peakrss=$3
here=$(cd "$(dirname "$0")" && pwd)
healthy=$here/scenarios/hgx-h100-healthy
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
export GPUNODE_FAKE_NVML=$healthy/nvml.json NO_COLOR=1

# check_report NAME EXIT CHECK STATUS TEXT -- ARGS: runs check --output json, asserts the exit
# code and that CHECK has STATUS with TEXT in its summary or evidence.
check_report() {
        local name=$1 want_exit=$2 id=$3 want_status=$4 text=$5
        shift 6
        timeout 60 "$gpunode" check --output json --nvml-library "$fake" "$@" > "$tmp/out.json" 2> "$tmp/err"
        local code=$?
        if [ "$code" != "$want_exit" ]; then
                echo "FAIL $name: exit $code, expected $want_exit"; cat "$tmp/err"; failed=$((failed + 1)); return
        fi
        if /usr/bin/python3 - "$tmp/out.json" "$id" "$want_status" "$text" <<'PY'; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
import json, sys
doc = json.load(open(sys.argv[1]))
c = next((c for c in doc["checks"] if c["id"] == sys.argv[2]), None)
words = (c["summary"] + " " + " ".join(c["evidence"])) if c else ""
if not c or c["status"] != sys.argv[3] or sys.argv[4] not in words:
    print("FAIL %s: %s is %s: %s" % (sys.argv[2], sys.argv[2], c and c["status"], words[:400]))
    sys.exit(1)
PY
        echo "ok   $name"
}

# A 100 MB kernel log with a double-bit ECC error in the middle: found, in bounded memory.
/usr/bin/python3 - "$tmp/big.log" <<'PY'
import sys
line = b"[ 1234.567890] e1000e 0000:00:1f.6 eno1: NIC Link is Up 1000 Mbps Full Duplex, Flow Control: None\n"
chunk = line * 10000
with open(sys.argv[1], "wb") as f:
    for i in range(100):
        if i == 50:
            f.write(b"[ 2000.000001] NVRM: Xid (PCI:0000:5d:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at physAddr 0x7fffa8860 partition 7, subpartition 1.\n")
        f.write(chunk)
PY
check_report "100 MB kernel log" 2 driver.xid-errors fail "Xid 48" -- --root "$healthy/root" --kmsg "$tmp/big.log"
# The bound is far below the log's size; a sanitizer build's shadow memory gets more room.
bound=16384
ldd "$gpunode" | grep -q libasan && bound=98304
read -r ms kib code < <("$peakrss" "$gpunode" check --output json --nvml-library "$fake" --root "$healthy/root" --kmsg "$tmp/big.log")
if [ "$kib" -lt "$bound" ]; then passed=$((passed + 1)); echo "ok   100 MB log read in ${ms} ms, peak RSS ${kib} KiB"; else
        failed=$((failed + 1)); echo "FAIL 100 MB log: peak RSS ${kib} KiB (bound: ${bound} KiB)"; fi

check_report "missing --kmsg file" 1 driver.xid-errors warn "does not exist" -- --root "$healthy/root" --kmsg /nonexistent/kmsg

# A FIFO where /dev/kmsg should be: nobody writes to it; gpunode must not wait.
cp -a "$healthy/root" "$tmp/fifo-root"
rm "$tmp/fifo-root/dev/kmsg" && mkfifo "$tmp/fifo-root/dev/kmsg"
check_report "FIFO as /dev/kmsg" 1 driver.xid-errors warn "not a regular file" -- --root "$tmp/fifo-root"

# A /proc/driver/nvidia/version of 10 MB.
cp -a "$healthy/root" "$tmp/huge-root"
head -c 10000000 /dev/zero | tr '\0' 'x' > "$tmp/huge-root/proc/driver/nvidia/version"
check_report "10 MB version file" 2 driver.version fail "too large" -- --root "$tmp/huge-root"

# An empty root: nothing readable at all.
mkdir "$tmp/empty"
check_report "empty root" 2 driver.pci-devices fail "does not exist" -- --root "$tmp/empty"

# Files the user cannot read (run as nobody).
if command -v setpriv > /dev/null && [ "$(id -u)" = 0 ]; then
        cp -a "$healthy/root" "$tmp/perm-root"
        chmod -R a+rX "$tmp/perm-root" "$tmp" && chmod 600 "$tmp/perm-root/proc/modules"
        cp "$healthy/nvml.json" "$tmp/nvml.json" && chmod 644 "$tmp/nvml.json"
        # As nobody, /proc/modules cannot be read: the module check says so instead of guessing.
        GPUNODE_FAKE_NVML=$tmp/nvml.json setpriv --reuid 65534 --regid 65534 --clear-groups "$gpunode" check --output json \
                --nvml-library "$fake" --root "$tmp/perm-root" > "$tmp/nobody.json" 2>&1
        code=$?
        if [ "$code" = 2 ] && grep -q "cannot tell which modules are loaded: /proc/modules: permission denied" "$tmp/nobody.json"; then passed=$((passed + 1)); echo "ok   unreadable file as nobody"; else
                failed=$((failed + 1)); echo "FAIL unreadable file as nobody"; head -c 600 "$tmp/nobody.json"; fi
fi
echo "bad-input: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
