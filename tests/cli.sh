#!/bin/bash
# cli.sh: the command line as a user meets it: help generated from the command table, exit codes,
# explain for every check id, and a failed write to stdout reported.
# usage: cli.sh GPUNODE
set -u
gpunode=$1
passed=0 failed=0
expect() { # expect CODE DESCRIPTION -- COMMAND...
        local want=$1 what=$2; shift 3
        "$@" > /tmp/gpunode-cli.out 2> /tmp/gpunode-cli.err
        local got=$?
        if [ "$got" = "$want" ]; then passed=$((passed + 1)); else
                echo "FAIL $what: exit $got, expected $want"; cat /tmp/gpunode-cli.err; failed=$((failed + 1)); fi
}
contains() { # contains TEXT DESCRIPTION: the last command's stdout holds TEXT
        if grep -qF -- "$1" /tmp/gpunode-cli.out; then passed=$((passed + 1)); else
                echo "FAIL $2: output lacks '$1'"; failed=$((failed + 1)); fi
}

expect 0 "--help" -- "$gpunode" --help
contains "check" "--help lists check"
contains "explain" "--help lists explain"
expect 0 "--version" -- "$gpunode" --version
contains "gpunode " "--version prints the version"
expect 64 "no command" -- "$gpunode"
expect 64 "unknown command" -- "$gpunode" frobnicate
expect 64 "prefix is not a command" -- "$gpunode" chec
for cmd in $("$gpunode" --help | awk '/^commands:/{on=1; next} on && /^  [a-z]/{print $1}'); do
        expect 0 "$cmd --help" -- "$gpunode" "$cmd" --help
        contains "usage: gpunode $cmd" "$cmd --help usage line"
        expect 0 "help $cmd" -- "$gpunode" help "$cmd"
done
expect 64 "check --output bogus" -- "$gpunode" check --output bogus
expect 64 "check --root missing" -- "$gpunode" check --root /nonexistent/root
expect 64 "check --nvml-timeout 0" -- "$gpunode" check --nvml-timeout 0
expect 64 "check extra argument" -- "$gpunode" check extra

# explain covers every check id the report can contain.
expect 0 "explain" -- "$gpunode" explain
ids=$("$gpunode" check --root / --output json 2>/dev/null | /usr/bin/python3 -c 'import json,sys; print(" ".join(c["id"] for c in json.load(sys.stdin)["checks"]))')
[ -n "$ids" ] || { echo "FAIL: no check ids from check --output json"; failed=$((failed + 1)); }
for id in $ids; do
        expect 0 "explain $id" -- "$gpunode" explain "$id"
        contains "reads:" "explain $id says what it reads"
        contains "outcomes:" "explain $id says what outcomes mean"
        contains "remedy:" "explain $id gives the remedy"
done
expect 0 "explain by text" -- "$gpunode" explain "version mismatch"
contains "driver.version-match" "explain text search finds the check"
expect 1 "explain unknown" -- "$gpunode" explain "no such symptom anywhere"

# The device nodes are facts: --record-paths lists them (what collect copies), and the files gpunode
# writes have their mode whatever the umask.
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
healthy=$here/scenarios/hgx-h100-healthy/root
(umask 000; NODE_NAME= "$gpunode" check --root "$healthy" --node n --nvml-library /nonexistent/libnvidia-ml.so.1 \
        --record-paths "$tmp/paths" --output json > /dev/null 2>&1)
for p in /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia0; do
        if grep -qx "$p" "$tmp/paths"; then passed=$((passed + 1)); else
                echo "FAIL: check --record-paths does not list $p"; failed=$((failed + 1)); fi
done
mode=$(stat -c %a "$tmp/paths")
if [ "$mode" = 644 ]; then passed=$((passed + 1)); else echo "FAIL: --record-paths file has mode $mode under umask 000"; failed=$((failed + 1)); fi
# A refused --record-paths with --snapshot leaves no extracted snapshot behind in $TMPDIR.
mkdir "$tmp/tmpdir"
TMPDIR=$tmp/tmpdir expect 64 "check --snapshot with an unwritable --record-paths" -- \
        "$gpunode" check --snapshot "$here/snapshots/h200-real.tar.gz" --record-paths /nonexistent/dir/paths
left=$(ls -A "$tmp/tmpdir")
if [ -z "$left" ]; then passed=$((passed + 1)); else echo "FAIL: --snapshot left $left in TMPDIR"; failed=$((failed + 1)); fi

# Strings from outside (a snapshot's node name, the host name file, --node, kernel log lines, file and
# member names in errors) reach the terminal escaped: no ESC or BEL byte, the escape spelled \x1b.
evil=$'\e]0;pwned\a\e[2J'
noesc() { # noesc FILE DESCRIPTION: FILE holds no ESC, BEL or C1 CSI byte
        if LC_ALL=C grep -q $'[\x1b\x07\x9b]' "$1"; then echo "FAIL $2: raw escape in the output"; failed=$((failed + 1))
        else passed=$((passed + 1)); fi
}
cp -a "$here/scenarios/app-xids-only/root" "$tmp/evil"
printf 'evil%s\n' "$evil" > "$tmp/evil/proc/sys/kernel/hostname"
printf '4,900,6000000,-;NVRM: Xid (PCI:0000:18:00): 79, pid=1, name=%s, GPU has fallen off the bus.\n' "$evil" \
        >> "$tmp/evil/dev/kmsg"
NODE_NAME= "$gpunode" check --root "$tmp/evil" --nvml-library /nonexistent/libnvidia-ml.so.1 -v > "$tmp/out" 2>&1
noesc "$tmp/out" "check: host name file and kernel log line"
contains_file() { # contains_file FILE TEXT DESCRIPTION
        if grep -qF -- "$2" "$1"; then passed=$((passed + 1)); else
                echo "FAIL $3: output lacks '$2'"; head -3 "$1" | cat -v; failed=$((failed + 1)); fi
}
contains_file "$tmp/out" 'node evil\x1b]0;pwned\x07\x1b[2j' "the host name, escaped"
contains_file "$tmp/out" 'name=?]0;pwned??[2J' "the kernel log line, control bytes replaced by its parser"
"$gpunode" check --root "$tmp/evil" --node "x$evil" --nvml-library /nonexistent/libnvidia-ml.so.1 > "$tmp/out" 2>&1
noesc "$tmp/out" "check --node"
# the issue's case: the node name in a snapshot's manifest
NODE_NAME= "$gpunode" collect --root "$tmp/evil" --node "snap$evil" --nvml-library /nonexistent/libnvidia-ml.so.1 \
        -o "$tmp/evil.tar.gz" > /dev/null 2>&1
"$gpunode" check --snapshot "$tmp/evil.tar.gz" > "$tmp/out" 2>&1
noesc "$tmp/out" "check --snapshot: the manifest's node name"
contains_file "$tmp/out" 'node snap\x1b]0;pwned\x07\x1b[2J' "the manifest's node name, escaped"
# errors naming outside things: a root, a member of a hostile archive
"$gpunode" check --root "/nonexistent/$evil" > "$tmp/out" 2>&1
noesc "$tmp/out" "check --root error"
/usr/bin/python3 - "$tmp/hostile.tar.gz" "$evil" <<'PY'
import io, sys, tarfile
with tarfile.open(sys.argv[1], "w:gz") as t:
        data = b"x"
        i = tarfile.TarInfo("bogus" + sys.argv[2])
        i.size = len(data)
        t.addfile(i, io.BytesIO(data))
PY
"$gpunode" check --snapshot "$tmp/hostile.tar.gz" > "$tmp/out" 2>&1
noesc "$tmp/out" "check --snapshot error naming a hostile member"
"$gpunode" collect --root "/nonexistent/$evil" -o - > "$tmp/out" 2>&1
noesc "$tmp/out" "collect --root error"
"$gpunode" labels --once --config-file "/nonexistent/$evil" > "$tmp/out" 2>&1
noesc "$tmp/out" "labels --config-file error"
"$gpunode" exporter --root "/nonexistent/$evil" > "$tmp/out" 2>&1
noesc "$tmp/out" "exporter --root error"
# SIGTERM or SIGINT ends check --snapshot at once, even while its report is stuck on a full pipe
# that nobody reads: exit 128+signal within 2 s of the signal, the extracted folder removed. The
# delays land in extraction (the signal waits for the folder to be complete), the analysis and the
# blocked write.
for sig in TERM INT TERM INT; do
        for delay in 0 0.1 0.4 1.0; do
                result=$(TMPDIR=$tmp/tmpdir /usr/bin/python3 - "$gpunode" "$here/snapshots/h200-real.tar.gz" "$sig" "$delay" <<'PY'
import fcntl, os, signal, subprocess, sys, time
gpunode, snap, sig, delay = sys.argv[1], sys.argv[2], getattr(signal, "SIG" + sys.argv[3]), float(sys.argv[4])
r, w = os.pipe()
fcntl.fcntl(w, 1031, 4096)  # F_SETPIPE_SZ: the JSON report does not fit, and nobody reads
p = subprocess.Popen([gpunode, "check", "--snapshot", snap, "--output", "json"], stdout=w,
                     stderr=subprocess.DEVNULL, restore_signals=True)
os.close(w)
time.sleep(delay)
p.send_signal(sig)
t = time.monotonic()
try:
    rc = p.wait(timeout=5)
except subprocess.TimeoutExpired:
    p.kill()
    p.wait()
    rc = "none (still running 5 s after the signal)"
print(rc, int((time.monotonic() - t) * 1000))
PY
)
                set -- $result
                want=$((128 + $(kill -l "$sig")))
                left=$(ls -A "$tmp/tmpdir")
                # killed by the signal itself (python says -N) only when it came before gpunode held it
                if { [ "$1" = "$want" ] || [ "$1" = "-$(kill -l "$sig")" ]; } && [ "${*: -1}" -lt 2000 ] && [ -z "$left" ]; then
                        passed=$((passed + 1))
                else
                        echo "FAIL: SIG$sig after ${delay}s: exit $result ms (want $want), left '$left'"
                        failed=$((failed + 1))
                        rm -rf "${tmp:?}/tmpdir/"*
                fi
        done
done
rm -rf "$tmp"

# A closed or full stdout is an error, not a silent success.
if [ -w /dev/full ]; then
        "$gpunode" explain > /dev/full 2>/dev/null
        code=$?
        if [ "$code" = 70 ]; then passed=$((passed + 1)); else echo "FAIL: write to /dev/full exited $code, expected 70"; failed=$((failed + 1)); fi
fi
echo "cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
