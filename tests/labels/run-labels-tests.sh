#!/bin/bash
# run-labels-tests.sh: `gpunode labels` against the fixture nodes under tests/labels/ (and the HGX
# scenario), compared exactly with expected.labels (GFD's names and formats, --no-timestamp); then
# sharing, MIG strategy, atomic file writing and NVML failure behaviour.
# usage: run-labels-tests.sh GPUNODE FAKE_NVML_LIB [--update]
set -u
gpunode=$1 fake=$2
update=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { echo "ok   $*"; passed=$((passed + 1)); }
fail() { echo "FAIL $*"; failed=$((failed + 1)); }
labels() { # NODE ARGS...: labels of tests/labels/NODE on stdout
        local n=$1; shift
        GPUNODE_FAKE_NVML=$here/$n/nvml.json "$gpunode" labels --once --root "$here/$n/root" --nvml-library "$fake" "$@"
}
for d in "$here"/*/; do
        n=$(basename "$d")
        args=()
        if [ -f "$d/args" ]; then read -ra args < "$d/args"; fi
        labels "$n" -o - --no-timestamp "${args[@]}" > "$tmp/$n.labels" 2> "$tmp/$n.err"
        rc=$?
        if [ "$update" = --update ]; then cp "$tmp/$n.labels" "$d/expected.labels"; fi
        if [ $rc -ne 0 ]; then fail "$n: exit $rc: $(cat "$tmp/$n.err")"
        elif ! diff -u "$d/expected.labels" "$tmp/$n.labels"; then fail "$n: labels differ from expected.labels"
        else ok "$n"; fi
done

# sharing: time-slicing with 4 replicas, by flag and by the device plugin's config file
labels t4 -o - --no-timestamp --sharing time-slicing --replicas 4 > "$tmp/ts" 2>&1
grep -qx 'nvidia.com/gpu.product=Tesla-T4-SHARED' "$tmp/ts" && grep -qx 'nvidia.com/gpu.replicas=4' "$tmp/ts" &&
        grep -qx 'nvidia.com/gpu.sharing-strategy=time-slicing' "$tmp/ts" && ok "time-slicing flags" || { fail "time-slicing flags"; cat "$tmp/ts"; }
cat > "$tmp/config.yaml" <<'YAML'
version: v1
sharing:
  mps:
    resources:
    - name: nvidia.com/gpu
      replicas: 2
YAML
labels l40s -o - --no-timestamp --config-file "$tmp/config.yaml" > "$tmp/mps" 2>&1
grep -qx 'nvidia.com/gpu.product=NVIDIA-L40S-SHARED' "$tmp/mps" && grep -qx 'nvidia.com/mps.capable=true' "$tmp/mps" &&
        grep -qx 'nvidia.com/gpu.sharing-strategy=mps' "$tmp/mps" && ok "mps config file" || { fail "mps config file"; cat "$tmp/mps"; }
# MPS on MIG-enabled GPUs fails, as GFD
labels a100-mig -o - --config-file "$tmp/config.yaml" > "$tmp/mpsmig" 2>&1 && fail "mps on MIG accepted" || ok "mps on MIG refused"
# The config file goes through the device plugin's parser: replicas: 2000 (once labelled) is refused by both with the
# same sentence; renameByDefault renames, so no -SHARED suffix, as GFD
sed 's/replicas: 2/replicas: 2000/; s/mps:/timeSlicing:/' "$tmp/config.yaml" > "$tmp/r2000.yaml"
want='sharing.timeSlicing.resources[0].replicas: more than 1024'
labels t4 -o - --config-file "$tmp/r2000.yaml" > /dev/null 2> "$tmp/r2000.err" && fail "replicas: 2000 accepted" ||
        { grep -qF "$tmp/r2000.yaml: $want" "$tmp/r2000.err" && ok "replicas: 2000 refused" || { fail "replicas: 2000"; cat "$tmp/r2000.err"; }; }
timeout 10 "$gpunode" device-plugin --config-file "$tmp/r2000.yaml" > /dev/null 2> "$tmp/r2000.dp" && fail "plugin took 2000" ||
        { grep -qF ": $want" "$tmp/r2000.dp" && ok "the plugin refuses it with the same sentence" || { fail "plugin 2000"; cat "$tmp/r2000.dp"; }; }
sed 's/mps:/timeSlicing:\n    renameByDefault: true/' "$tmp/config.yaml" > "$tmp/rename.yaml"
labels t4 -o - --no-timestamp --config-file "$tmp/rename.yaml" > "$tmp/rename" 2>&1
grep -qx 'nvidia.com/gpu.product=Tesla-T4' "$tmp/rename" && grep -qx 'nvidia.com/gpu.replicas=2' "$tmp/rename" &&
        ok "renameByDefault: renamed, no -SHARED" || { fail "renameByDefault"; cat "$tmp/rename"; }

# MIG strategy: single without MIG enabled labels the strategy (MIG nodes: a100-mig-single, a100-mig-mixed, h100-mig-mixed)
labels t4 -o - --no-timestamp --mig-strategy single > "$tmp/single" 2>&1
grep -qx 'nvidia.com/mig.strategy=single' "$tmp/single" && ok "mig.strategy=single" || { fail "mig.strategy=single"; cat "$tmp/single"; }
grep -q 'mig.strategy' "$here/t4/expected.labels" && fail "mig.strategy present with none" || ok "no mig.strategy with none"
# single on a node with more than one MIG profile: GFD's mig-strategy-invalid labels
labels a100-mig-mixed -o - --no-timestamp --mig-strategy single > "$tmp/invalid" 2>&1
grep -qx 'nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB-MIG-INVALID' "$tmp/invalid" && grep -qx 'nvidia.com/gpu.count=0' "$tmp/invalid" &&
        grep -qx 'nvidia.com/gpu.sharing-strategy=' "$tmp/invalid" && grep -qx 'nvidia.com/gpu.memory=0' "$tmp/invalid" &&
        ! grep -q '^nvidia.com/mig-' "$tmp/invalid" && ok "single with two MIG profiles: MIG-INVALID" || { fail "single invalid"; cat "$tmp/invalid"; }
# single with time-slicing: the MIG devices are the shared resource
labels a100-mig-single -o - --no-timestamp --mig-strategy single --sharing time-slicing --replicas 2 > "$tmp/tsmig" 2>&1
grep -qx 'nvidia.com/gpu.product=NVIDIA-A100-SXM4-80GB-MIG-1g.10gb-SHARED' "$tmp/tsmig" && grep -qx 'nvidia.com/gpu.replicas=2' "$tmp/tsmig" &&
        grep -qx 'nvidia.com/gpu.count=14' "$tmp/tsmig" && ok "single with time-slicing" || { fail "single with time-slicing"; cat "$tmp/tsmig"; }
# a MIG profile that cannot be read (no privileges for the GPU instance): exit 1, nothing written, as GFD
sed 's/"gi_profile": 0,/"gi_profile": 0, "errors": {"nvmlDeviceGetGpuInstanceById": 4},/' "$here/a100-mig/nvml.json" > "$tmp/noperm.json"
GPUNODE_FAKE_NVML=$tmp/noperm.json "$gpunode" labels --once --root "$here/a100-mig/root" --nvml-library "$fake" \
        -o "$tmp/out" --mig-strategy mixed > "$tmp/mig.err" 2>&1
[ $? -eq 1 ] && [ ! -e "$tmp/out" ] && grep -q 'Insufficient Permissions' "$tmp/mig.err" && ok "MIG profile unreadable: exit 1, nothing written" ||
        { fail "MIG profile unreadable"; cat "$tmp/mig.err"; }

# vGPU: a config space read without privileges (64 bytes) gives no vgpu labels, as GFD; a vGPU capability without
# the host driver record fails the labels, as GFD; GPUs of two PCI classes, or a class that cannot be read: gpu.mode=unknown
mkdir -p "$tmp/vg" && cp -a "$here/l40s/root" "$tmp/vg/short" && cp -a "$here/l40s/root" "$tmp/vg/mixed" && cp -a "$here/t4-vgpu-guest/root" "$tmp/vg/norec"
for c in "$tmp"/vg/short/sys/bus/pci/devices/*/config; do head -c 64 "$here/l40s/root/sys/bus/pci/devices/$(basename "$(dirname "$c")")/config" > "$c"; done
GPUNODE_FAKE_NVML=$here/l40s/nvml.json "$gpunode" labels --once -o - --no-timestamp --root "$tmp/vg/short" --nvml-library "$fake" > "$tmp/vg/short.out" 2>&1
! grep -q '^nvidia.com/vgpu' "$tmp/vg/short.out" && grep -qx 'nvidia.com/gpu.mode=graphics' "$tmp/vg/short.out" &&
        ok "config space not fully readable: no vgpu labels" || { fail "short config"; cat "$tmp/vg/short.out"; }
echo 0x030200 > "$(ls -d "$tmp"/vg/mixed/sys/bus/pci/devices/* | tail -1)/class"
GPUNODE_FAKE_NVML=$here/l40s/nvml.json "$gpunode" labels --once -o - --no-timestamp --root "$tmp/vg/mixed" --nvml-library "$fake" > "$tmp/vg/mixed.out" 2>&1
grep -qx 'nvidia.com/gpu.mode=unknown' "$tmp/vg/mixed.out" && ok "GPUs of two PCI classes: gpu.mode=unknown" || { fail "mixed classes"; cat "$tmp/vg/mixed.out"; }
rm "$(ls -d "$tmp"/vg/mixed/sys/bus/pci/devices/* | tail -1)/class"
GPUNODE_FAKE_NVML=$here/l40s/nvml.json "$gpunode" labels --once -o - --no-timestamp --root "$tmp/vg/mixed" --nvml-library "$fake" > "$tmp/vg/nocls.out" 2>&1
grep -qx 'nvidia.com/gpu.mode=unknown' "$tmp/vg/nocls.out" && ok "a PCI class that cannot be read: gpu.mode=unknown" || { fail "class unreadable"; cat "$tmp/vg/nocls.out"; }
c=$(ls "$tmp"/vg/norec/sys/bus/pci/devices/*/config)
python3 -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[0xcd]=0x05; b[0xce]=0x16; open(p,"wb").write(bytes(b))' "$c"
GPUNODE_FAKE_NVML=$here/t4-vgpu-guest/nvml.json "$gpunode" labels --once -o "$tmp/vg/norec.out" --root "$tmp/vg/norec" --nvml-library "$fake" 2> "$tmp/vg/norec.err"
[ $? -eq 1 ] && [ ! -e "$tmp/vg/norec.out" ] && grep -q 'driver version record' "$tmp/vg/norec.err" &&
        ok "a vGPU without its host driver record: exit 1, nothing written" || { fail "vGPU without record"; cat "$tmp/vg/norec.err"; }

# a fabric query failing (not "not supported") fails GFD's IMEX labeler and with it the labels
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); d["gpus"][0]["errors"]={"nvmlDeviceGetGpuFabricInfo": 999}; json.dump(d, open(sys.argv[2], "w"))' \
        "$here/h100-hgx/nvml.json" "$tmp/fabric-error.json"
GPUNODE_FAKE_NVML=$tmp/fabric-error.json "$gpunode" labels --once -o - --no-timestamp --root "$here/h100-hgx/root" --nvml-library "$fake" \
        > "$tmp/fabric.out" 2> "$tmp/fabric.err"
[ $? -eq 1 ] && [ ! -s "$tmp/fabric.out" ] && grep -q 'IMEX labeler' "$tmp/fabric.err" && ok "fabric info failing: exit 1, as GFD's IMEX labeler" ||
        { fail "fabric info failing"; cat "$tmp/fabric.out" "$tmp/fabric.err"; }

# the file: atomic, mode 0644, folders created, no temporary left; the timestamp without --no-timestamp
labels h100-hgx -o "$tmp/nfd/features.d/gfd" 2> "$tmp/err"
if [ "$(stat -c %a "$tmp/nfd/features.d/gfd" 2>/dev/null)" = 644 ] && [ "$(ls "$tmp/nfd/features.d")" = gfd ] &&
        grep -qE '^nvidia.com/gfd.timestamp=[0-9]+$' "$tmp/nfd/features.d/gfd"; then ok "file written atomically, 0644, timestamp"
else fail "file: $(ls -l "$tmp/nfd/features.d") $(cat "$tmp/err")"; fi

# NVML fails: --once writes nothing and keeps the old file; exit 1 with the reason
cp "$tmp/nfd/features.d/gfd" "$tmp/old"
GPUNODE_FAKE_NVML=$here/../fake-nvml/testdata/init-error-18.json "$gpunode" labels --once --root "$here/t4/root" \
        --nvml-library "$fake" -o "$tmp/nfd/features.d/gfd" 2> "$tmp/err"
rc=$?
if [ $rc -eq 1 ] && cmp -s "$tmp/old" "$tmp/nfd/features.d/gfd" && grep -q 'version mismatch' "$tmp/err"; then ok "NVML failure: exit 1, old labels kept (--once)"
else fail "NVML failure: exit $rc $(cat "$tmp/err")"; fi
# ... and a loop removes its labels, as GFD does
GPUNODE_FAKE_NVML=$here/../fake-nvml/testdata/init-error-18.json "$gpunode" labels --interval 1s --root "$here/t4/root" \
        --nvml-library "$fake" -o "$tmp/nfd/features.d/gfd" 2> /dev/null
[ $? -eq 1 ] && [ ! -e "$tmp/nfd/features.d/gfd" ] && ok "NVML failure in a loop: labels removed" || fail "loop failure"
# a loop writes every interval and removes its file on SIGTERM
GPUNODE_FAKE_NVML=$here/t4/nvml.json "$gpunode" labels --interval 200ms --root "$here/t4/root" --nvml-library "$fake" \
        -o "$tmp/loop/gfd" 2> /dev/null &
pid=$!
sleep 1
[ -s "$tmp/loop/gfd" ] && ok "loop writes" || fail "loop did not write"
kill -TERM $pid; wait $pid
rc=$?
[ $rc -eq 0 ] && [ ! -e "$tmp/loop/gfd" ] && ok "SIGTERM: exit 0, labels removed" || fail "SIGTERM: exit $rc"
# kill -9 at random moments: NFD reads every file in features.d but dot-files, so a temporary left by
# a killed write must be a dot-file; the next run removes gpunode's own leftovers and nothing else.
mkdir -p "$tmp/kill"
kills=${GPUNODE_TEST_KILLS:-100}
for i in $(seq "$kills"); do
        GPUNODE_FAKE_NVML=$here/t4/nvml.json "$gpunode" labels --interval 1ms --root "$here/t4/root" --nvml-library "$fake" \
                -o "$tmp/kill/gfd" 2> /dev/null &
        pid=$!
        sleep "0.0$((RANDOM % 10))$((RANDOM % 10))"
        kill -9 $pid 2> /dev/null
        wait $pid 2> /dev/null
done
visible=$(cd "$tmp/kill" && ls | grep -vx gfd)
dots=$(cd "$tmp/kill" && ls -A | grep -c '^\.gfd\.tmp-')
echo "     $kills kills: $(echo -n "$visible" | grep -c .) non-dot leftovers, $dots dot leftovers"
[ -z "$visible" ] && ok "kill -9 x$kills: no file but gfd visible to NFD" || fail "kill -9 leaves files NFD reads: $visible"
: > "$tmp/kill/.gfd.tmp-AbC123"     # an earlier run's leftover
: > "$tmp/kill/.gfd.tmp-AbC1234"    # not gpunode's pattern: kept
: > "$tmp/kill/.gfd.tmp-Ab.123"     # not gpunode's pattern: kept
: > "$tmp/kill/.other"
: > "$tmp/kill/other-feature"
mkdir "$tmp/kill/.gfd.tmp-Dir123"   # a folder, not a temporary of ours: kept
GPUNODE_FAKE_NVML=$here/t4/nvml.json "$gpunode" labels --once --root "$here/t4/root" --nvml-library "$fake" -o "$tmp/kill/gfd" 2> /dev/null
left=$(cd "$tmp/kill" && ls -A | tr '\n' ' ')
[ "$left" = ".gfd.tmp-Ab.123 .gfd.tmp-AbC1234 .gfd.tmp-Dir123 .other gfd other-feature " ] &&
        ok "a new run removes its leftover temporaries, nothing else" || fail "after a new run: $left"
# the modes hold whatever the umask: labels 0644, collect's archive 0600
( umask 000
  GPUNODE_FAKE_NVML=$here/t4/nvml.json "$gpunode" labels --once --root "$here/t4/root" --nvml-library "$fake" -o "$tmp/umask/gfd"
  GPUNODE_FAKE_NVML=$here/t4/nvml.json "$gpunode" collect --root "$here/t4/root" --nvml-library "$fake" --kmsg /dev/null \
          -o "$tmp/umask/node.tar.gz" ) > /dev/null 2>&1
[ "$(stat -c %a "$tmp/umask/gfd" 2>/dev/null)" = 644 ] && ok "umask 000: labels file 0644" ||
        fail "umask 000: labels file $(stat -c %a "$tmp/umask/gfd" 2>&1)"
[ "$(stat -c %a "$tmp/umask/node.tar.gz" 2>/dev/null)" = 600 ] && ok "umask 000: collect archive 0600" ||
        fail "umask 000: collect archive $(stat -c %a "$tmp/umask/node.tar.gz" 2>&1)"
# usage errors
"$gpunode" labels --mig-strategy double > /dev/null 2>&1; [ $? -eq 64 ] && ok "bad --mig-strategy: 64" || fail "bad --mig-strategy"
"$gpunode" labels --interval 0 > /dev/null 2>&1; [ $? -eq 64 ] && ok "bad --interval: 64" || fail "bad --interval"

# GFD's flags and environment: the same file as gpunode's own names
t4() { GPUNODE_FAKE_NVML=$here/t4/nvml.json "$gpunode" labels --root "$here/t4/root" --nvml-library "$fake" "$@"; }
t4 --once -o "$tmp/gfd/own" --no-timestamp --mig-strategy single 2> /dev/null
GFD_OUTPUT_FILE=$tmp/gfd/env GFD_ONESHOT=true GFD_NO_TIMESTAMP=1 GFD_MIG_STRATEGY=single t4 2> "$tmp/gfd.err"
[ -s "$tmp/gfd/own" ] && cmp -s "$tmp/gfd/own" "$tmp/gfd/env" && ok "GFD_OUTPUT_FILE, GFD_ONESHOT, GFD_NO_TIMESTAMP, GFD_MIG_STRATEGY: as -o --once" ||
        { fail "GFD environment: $(cat "$tmp/gfd.err")"; diff "$tmp/gfd/own" "$tmp/gfd/env"; }
t4 --oneshot --output-file "$tmp/gfd/flags" --no-timestamp=true --mig-strategy=single 2> "$tmp/gfd.err"
cmp -s "$tmp/gfd/own" "$tmp/gfd/flags" && ok "--oneshot --output-file --no-timestamp=true: as -o --once" ||
        fail "GFD flags: $(cat "$tmp/gfd.err")"
MIG_STRATEGY=single t4 --oneshot -o "$tmp/gfd/old" --no-timestamp 2> /dev/null
cmp -s "$tmp/gfd/own" "$tmp/gfd/old" && ok "MIG_STRATEGY (GFD's older name)" || fail "MIG_STRATEGY"
# a flag wins over its variable; a variable over the default
GFD_OUTPUT_FILE=$tmp/gfd/not-this GFD_MIG_STRATEGY=mixed GFD_NO_TIMESTAMP=false t4 --once -o "$tmp/gfd/flagwins" \
        --no-timestamp --mig-strategy single 2> /dev/null
cmp -s "$tmp/gfd/own" "$tmp/gfd/flagwins" && [ ! -e "$tmp/gfd/not-this" ] && ok "flags win over GFD_*" || fail "flags over GFD_*"
GFD_NO_TIMESTAMP=true t4 --once -o - --no-timestamp=false > "$tmp/gfd/ts" 2> /dev/null
grep -qE '^nvidia.com/gfd.timestamp=[0-9]+$' "$tmp/gfd/ts" && ok "--no-timestamp=false wins over GFD_NO_TIMESTAMP=true" || fail "--no-timestamp=false"
GFD_OUTPUT_FILE=- t4 --once --output-file= > "$tmp/gfd/empty" 2> /dev/null
[ -s "$tmp/gfd/empty" ] && ok "--output-file= (empty): standard output, as GFD" || fail "--output-file="
printf 'ATOS BullSequana\n' > "$tmp/gfd/product"
mkdir -p "$tmp/gfd/root" && cp -a "$here/t4/root/." "$tmp/gfd/root/" && cp "$tmp/gfd/product" "$tmp/gfd/root/machine"
GFD_MACHINE_TYPE_FILE=/machine GPUNODE_FAKE_NVML=$here/t4/nvml.json "$gpunode" labels --once -o - --root "$tmp/gfd/root" \
        --nvml-library "$fake" > "$tmp/gfd/machine" 2> /dev/null
grep -qx 'nvidia.com/gpu.machine=ATOS-BullSequana' "$tmp/gfd/machine" && ok "GFD_MACHINE_TYPE_FILE (under the root)" ||
        { fail "GFD_MACHINE_TYPE_FILE"; grep machine "$tmp/gfd/machine"; }
cat > "$tmp/gfd/config.yaml" <<'YAML'
version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 3
YAML
GFD_CONFIG_FILE=$tmp/gfd/config.yaml t4 --once -o - --no-timestamp > "$tmp/gfd/cfg" 2> /dev/null
grep -qx 'nvidia.com/gpu.replicas=3' "$tmp/gfd/cfg" && ok "GFD_CONFIG_FILE" || fail "GFD_CONFIG_FILE"
# GFD_SLEEP_INTERVAL: a Go duration; the loop writes again within it
GFD_SLEEP_INTERVAL=0m0.3s GPUNODE_FAKE_NVML=$here/t4/nvml.json "$gpunode" labels --root "$here/t4/root" --nvml-library "$fake" \
        -o "$tmp/gfd/loop" 2> /dev/null &
pid=$!
sleep 0.2; first=$(cat "$tmp/gfd/loop" 2> /dev/null | grep timestamp)
sleep 1.3; second=$(cat "$tmp/gfd/loop" 2> /dev/null | grep timestamp)
kill -TERM $pid; wait $pid
[ -n "$first" ] && [ -n "$second" ] && [ "$first" != "$second" ] && [ ! -e "$tmp/gfd/loop" ] &&
        ok "GFD_SLEEP_INTERVAL=0m0.3s: rewritten each round, removed on SIGTERM" || fail "GFD_SLEEP_INTERVAL loop: '$first' '$second'"
# --sleep-interval infinite: labelled once, the file kept when it ends (as GFD)
GPUNODE_FAKE_NVML=$here/t4/nvml.json "$gpunode" labels --root "$here/t4/root" --nvml-library "$fake" \
        --sleep-interval infinite -o "$tmp/gfd/inf" 2> /dev/null &
pid=$!
sleep 0.5
kill -TERM $pid; wait $pid
rc=$?
[ $rc -eq 0 ] && [ -s "$tmp/gfd/inf" ] && ok "--sleep-interval infinite: written once, kept on SIGTERM" || fail "infinite: exit $rc"
# --fail-on-init-error=false: NVML failing labels without GPUs (the timestamp only), exit 0
GFD_FAIL_ON_INIT_ERROR=false GPUNODE_FAKE_NVML=$here/../fake-nvml/testdata/init-error-18.json "$gpunode" labels --once \
        --root "$here/t4/root" --nvml-library "$fake" -o "$tmp/gfd/noinit" 2> "$tmp/gfd.err"
rc=$?
# (GFD's null resource manager: no GPU labels; its vGPU labeler still reads the PCI bus)
[ $rc -eq 0 ] && grep -qE '^nvidia.com/gfd.timestamp=[0-9]+$' "$tmp/gfd/noinit" && [ "$(wc -l < "$tmp/gfd/noinit")" -eq 2 ] &&
        grep -qx 'nvidia.com/vgpu.present=false' "$tmp/gfd/noinit" &&
        grep -q 'version mismatch' "$tmp/gfd.err" && ok "GFD_FAIL_ON_INIT_ERROR=false: the timestamp and vgpu.present only, exit 0" ||
        fail "fail-on-init-error=false: exit $rc $(cat "$tmp/gfd.err")"
FAIL_ON_INIT_ERROR=false GPUNODE_FAKE_NVML=$here/../fake-nvml/testdata/init-error-18.json "$gpunode" labels --once \
        --root "$here/t4/root" --nvml-library "$fake" -o - --fail-on-init-error > /dev/null 2>&1
[ $? -eq 1 ] && ok "--fail-on-init-error wins over FAIL_ON_INIT_ERROR=false: exit 1" || fail "--fail-on-init-error"
# refusals: the NodeFeature API, bad values (by flag and by variable)
"$gpunode" labels --once --use-node-feature-api > /dev/null 2> "$tmp/gfd.err"
[ $? -eq 64 ] && grep -q 'NodeFeature API is not implemented' "$tmp/gfd.err" && ok "--use-node-feature-api: refused, with the reason" ||
        fail "--use-node-feature-api: $(cat "$tmp/gfd.err")"
GFD_USE_NODE_FEATURE_API=true "$gpunode" labels --once > /dev/null 2>&1; [ $? -eq 64 ] && ok "GFD_USE_NODE_FEATURE_API=true: 64" || fail "GFD_USE_NODE_FEATURE_API=true"
GFD_USE_NODE_FEATURE_API=false t4 --once -o - --use-node-feature-api=false > /dev/null 2>&1; [ $? -eq 0 ] &&
        ok "--use-node-feature-api=false accepted" || fail "--use-node-feature-api=false"
for bad in 60 1m30 5d 0s -1s abc; do
        "$gpunode" labels --sleep-interval "$bad" > /dev/null 2>&1; r1=$?
        GFD_SLEEP_INTERVAL=$bad "$gpunode" labels > /dev/null 2>&1; r2=$?
        [ $r1 -eq 64 ] && [ $r2 -eq 64 ] && ok "sleep interval '$bad' refused (flag and variable)" || fail "sleep interval '$bad': $r1 $r2"
done
GFD_MIG_STRATEGY=double "$gpunode" labels > /dev/null 2> "$tmp/gfd.err"
[ $? -eq 64 ] && grep -q "GFD_MIG_STRATEGY must be none, single or mixed" "$tmp/gfd.err" && ok "GFD_MIG_STRATEGY=double: 64, named" || fail "GFD_MIG_STRATEGY=double"
GFD_ONESHOT=yes "$gpunode" labels > /dev/null 2> "$tmp/gfd.err"
[ $? -eq 64 ] && grep -q "GFD_ONESHOT: 'yes' is not true or false" "$tmp/gfd.err" && ok "GFD_ONESHOT=yes: 64, named" || fail "GFD_ONESHOT=yes"
"$gpunode" labels --oneshot=maybe > /dev/null 2>&1; [ $? -eq 64 ] && ok "--oneshot=maybe: 64" || fail "--oneshot=maybe"
echo "labels tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
