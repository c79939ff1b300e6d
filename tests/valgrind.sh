#!/bin/bash
# valgrind.sh: gpunode check on several scenarios, and gpunode exporter scraped while it samples, under
# valgrind's memcheck: no invalid access, no definite or indirect leak. Skipped (exit 77) for a sanitizer
# build, which checks the same.
# usage: valgrind.sh GPUNODE FAKE_NVML_LIB
set -u
gpunode=$1 fake=$2
here=$(cd "$(dirname "$0")" && pwd)
if ldd "$gpunode" | grep -q libasan || ! command -v valgrind > /dev/null; then echo "skipped: sanitizer build or no valgrind"; exit 77; fi
passed=0 failed=0
for name in hgx-h100-healthy gpu-fallen-off-bus api-mismatch driver-secure-boot garbage-files xid-48-then-64 nvml-call-blocks; do
        dir=$here/scenarios/$name
        read -r -a extra < "$dir/args"
        for fmt in json text; do
                if GPUNODE_FAKE_NVML=$dir/nvml.json valgrind -q --error-exitcode=99 --leak-check=full \
                        --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect \
                        "$gpunode" check --root "$dir/root" --nvml-library "$fake" --output "$fmt" "${extra[@]}" \
                        > /dev/null 2> "/tmp/gpunode-valgrind.$$"; [ $? -ne 99 ]; then
                        passed=$((passed + 1))
                else
                        echo "FAIL $name ($fmt):"; cat "/tmp/gpunode-valgrind.$$"; failed=$((failed + 1))
                fi
        done
done

# The exporter: sampling every 100 ms (MIG devices included), a layer diagnosis child every second, a
# few dozen scrapes (plain, gzip, /health, a 404) for a few seconds, then SIGTERM. /usr/bin/python3 drives
# it (curl is not always there); it exits with valgrind's status, 99 on an error or a leak.
if GPUNODE_FAKE_NVML=$here/fake-nvml/testdata/mig.json /usr/bin/python3 - "$gpunode" "$fake" \
        > "/tmp/gpunode-valgrind.$$" 2>&1 <<'EOF'
import signal, socket, subprocess, sys, time, urllib.error, urllib.request
gpunode, fake = sys.argv[1], sys.argv[2]
with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
p = subprocess.Popen(["valgrind", "-q", "--error-exitcode=99", "--leak-check=full",
                      "--errors-for-leak-kinds=definite,indirect", "--show-leak-kinds=definite,indirect",
                      gpunode, "exporter", "--listen", "127.0.0.1:%d" % port, "--nvml-library", fake,
                      "--interval", "100ms", "--check-interval", "1s"])
base = "http://127.0.0.1:%d" % port
def get(path, headers=None):
    try:
        with urllib.request.urlopen(urllib.request.Request(base + path, headers=headers or {}), timeout=10) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
deadline = time.time() + 60
while True:
    try:
        get("/health")
        break
    except Exception:
        if p.poll() is not None or time.time() > deadline:
            p.kill()
            sys.exit("exporter did not come up under valgrind")
        time.sleep(0.2)
scrapes = 0
for i in range(40):
    st, body = get("/metrics", {"Accept-Encoding": "gzip"} if i % 3 == 1 else None)
    scrapes += st == 200 and len(body) > 0
    if i % 10 == 0:
        get("/health")
        get("/nope")
    time.sleep(0.08)
if scrapes != 40 or b"GPU_I_ID" not in get("/metrics")[1]:
    print("only %d of 40 scrapes answered, or no MIG series" % scrapes)
    p.kill()
    sys.exit(1)
p.send_signal(signal.SIGTERM)
try:
    rc = p.wait(60)
except subprocess.TimeoutExpired:
    p.kill()
    sys.exit("exporter did not stop on SIGTERM under valgrind")
sys.exit(rc)
EOF
then
        passed=$((passed + 1))
else
        echo "FAIL exporter:"; cat "/tmp/gpunode-valgrind.$$"; failed=$((failed + 1))
fi
rm -f "/tmp/gpunode-valgrind.$$"
echo "valgrind: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
