#!/bin/bash
# cli.sh: the command line as a user meets it: help generated from the command table, exit codes,
# explain for every check id, and a failed write to stdout reported.
# usage: cli.sh GPUNODE
set -u
gpunode=$1
# Each run's own files: two builds (or two checkouts) may run this suite at once.
cli_tmp=$(mktemp -d /tmp/gpunode-cli.XXXXXX)
trap 'rm -rf "$cli_tmp"' EXIT
cli_out=$cli_tmp/out cli_err=$cli_tmp/err
passed=0 failed=0
expect() { # expect CODE DESCRIPTION -- COMMAND...
        local want=$1 what=$2; shift 3
        "$@" > "$cli_out" 2> "$cli_err"
        local got=$?
        if [ "$got" = "$want" ]; then passed=$((passed + 1)); else
                echo "FAIL $what: exit $got, expected $want"; cat "$cli_err"; failed=$((failed + 1)); fi
}
contains() { # contains TEXT DESCRIPTION: the last command's stdout holds TEXT
        if grep -qF -- "$1" "$cli_out"; then passed=$((passed + 1)); else
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
# kube-call (the agent's child) is hidden from --help, still runnable, with its own help.
"$gpunode" --help > "$cli_out"
if grep -q '^  kube-call' "$cli_out"; then echo "FAIL: --help lists kube-call"; failed=$((failed + 1)); else passed=$((passed + 1)); fi
expect 0 "kube-call --help" -- "$gpunode" kube-call --help
contains "usage: gpunode kube-call" "kube-call --help usage line"
contains "--kubeconfig FILE" "kube-call --help lists the shared --kubeconfig"
expect 64 "kube-call without a method" -- "$gpunode" kube-call
# The command column fits the longest name: every summary starts in the same column, device-plugin's too.
"$gpunode" --help > "$cli_out"
cols=$(awk '/^commands:/{on=1; next} on && /^  [a-z]/{print index($0, $2)}' "$cli_out" | sort -u)
if [ "$(echo "$cols" | wc -l)" = 1 ]; then passed=$((passed + 1)); else echo "FAIL: --help summaries start in columns $cols"; failed=$((failed + 1)); fi
contains "  device-plugin  the kubelet device plugin" "--help: device-plugin's summary apart from its name"
# The shared options' help, written once in options.c, appended for the commands that take them.
expect 0 "check --help" -- "$gpunode" check --help
for o in "--root DIR" "--kmsg FILE" "--nvml-library PATH" "--nvml-timeout MS" "--node NAME" "--kubeconfig FILE" \
        "--timeout DURATION" "--operator-namespace NS" "--dcgm-url URL" "--node-exporter-url URL" "--expect-gpus N"; do
        contains "  $o " "check --help lists $o"
done
contains "exit status: 0 healthy" "check --help ends with its exit status"
expect 0 "collect --help" -- "$gpunode" collect --help
contains "  --node-exporter-url URL " "collect --help lists the kube options in full"
expect 0 "labels --help" -- "$gpunode" labels --help
contains "  --nvml-timeout MS " "labels --help lists --nvml-timeout"
contains "  --root DIR " "labels --help lists --root"
# Every long option a command accepts is in its --help. The accepted ones are found from getopt_long
# itself, not the source: glibc lists the possibilities of an ambiguous prefix, and names a unique
# prefix's option in full when it refuses "--PREFIX=x" (no argument allowed) or a bare "--PREFIX" last
# (an argument required). An unknown option follows the first probe, so nothing runs. (The exporter is
# left out: its dcgm-exporter aliases take optional arguments, which neither probe names.)
accepted_options() { # accepted_options CMD: prints its long option names, one a line
        local cmd=$1 p out
        for p in a b c d e f g h i j k l m n o p q r s t u v w x y z; do
                out=$(timeout 5 "$gpunode" "$cmd" "--$p=x" --zz-none 2>&1 >/dev/null | head -1)
                case $out in
                *"unrecognized option '--$p=x'"*) ;;
                *"is ambiguous; possibilities:"*) echo "${out#*possibilities: }" | tr ' ' '\n' | tr -d "'" | sed 's/^--//' ;;
                *"doesn't allow an argument"*) out=${out#*option \'--} && echo "${out%%\'*}" ;;
                *) out=$(timeout 5 "$gpunode" "$cmd" "--$p" 2>&1 >/dev/null | head -1)
                   case $out in
                   *"requires an argument"*) out=${out#*option \'--} && echo "${out%%\'*}" ;;
                   *) echo "?--$p: $out" ;;
                   esac ;;
                esac
        done | grep -v '^$' | sort -u
}
for cmd in agent device-plugin; do
        "$gpunode" "$cmd" --help > "$cli_tmp/help"
        opts=$(accepted_options "$cmd")
        if [ "$(echo "$opts" | wc -l)" -lt 3 ]; then echo "FAIL $cmd: found only '$opts' as options"; failed=$((failed + 1)); fi
        for o in $opts; do
                [ "$o" = help ] && continue
                case $o in "?"*) echo "FAIL $cmd: a probe did not name its option: $o"; failed=$((failed + 1)); continue ;; esac
                if grep -qE -- "(^|[ ,])--$o( |\$)" "$cli_tmp/help"; then passed=$((passed + 1)); else
                        echo "FAIL $cmd accepts --$o, which its --help does not list"; failed=$((failed + 1)); fi
        done
done
# The root is opened by main.c for the commands that read the host; --snapshot brings its own.
for args in "check --output json" "collect -o -" "labels --once -o -"; do
        set -- $args
        expect 64 "$1 with a root that does not exist" -- "$gpunode" "$@" --root /nonexistent/root
        grep -qF "gpunode $1: cannot open root /nonexistent/root: No such file or directory" "$cli_err" &&
                passed=$((passed + 1)) || { echo "FAIL: $1: the root error"; cat "$cli_err"; failed=$((failed + 1)); }
done
GPUNODE_ROOT=/nonexistent/root expect 64 "check with GPUNODE_ROOT that does not exist" -- "$gpunode" check
grep -qF "gpunode check: cannot open root /nonexistent/root" "$cli_err" && passed=$((passed + 1)) ||
        { echo "FAIL: the root error names the command and the root"; failed=$((failed + 1)); }
here=$(cd "$(dirname "$0")" && pwd)
GPUNODE_ROOT=/nonexistent/root expect 0 "check --snapshot does not open GPUNODE_ROOT" -- \
        "$gpunode" check --snapshot "$here/snapshots/h200-real.tar.gz" --output json
expect 64 "check --output bogus" -- "$gpunode" check --output bogus
expect 64 "check --root missing" -- "$gpunode" check --root /nonexistent/root
expect 64 "check --nvml-timeout 0" -- "$gpunode" check --nvml-timeout 0
expect 64 "check --expect-gpus 0" -- "$gpunode" check --expect-gpus 0
grep -qF "gpunode check: --expect-gpus must be a number of GPUs, 1..1024, not '0'" "$cli_err" && passed=$((passed + 1)) ||
        { echo "FAIL: --expect-gpus 0 names the option and the value"; failed=$((failed + 1)); }
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
# explain xid N, explain N, explain sxid N: from the catalogs the binary holds.
expect 0 "explain xid 119" -- "$gpunode" explain xid 119
contains "GSP_RPC_TIMEOUT" "explain xid 119 names the Xid"
contains "reset-gpu" "explain xid 119 gives gpunode's remedy"
contains 'err_msg "GSP RPC Timeout"' "explain xid 119 gives dcgm-exporter's err_msg"
expect 0 "explain 154" -- "$gpunode" explain 154
contains "recovery action" "a bare number is an Xid: 154 says the line decides"
expect 0 "explain sxid 12028" -- "$gpunode" explain sxid 12028
contains "SXid 12028" "explain sxid 12028 names the SXid"
expect 1 "explain an Xid not in the catalog" -- "$gpunode" explain xid 9999
expect 64 "explain xid with no number" -- "$gpunode" explain xid abc
# A fork refused (RLIMIT_NPROC, as nobody: root is not bound by it) is said as such, not as a
# missing Kubernetes configuration.
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups)
if [ "$(id -u)" = 0 ] && command -v setpriv > /dev/null && command -v prlimit > /dev/null &&
        "${nobody[@]}" "$gpunode" --version > /dev/null 2>&1; then # (nobody may not reach the build folder)
        kc=$(mktemp /tmp/gpunode-cli-kc.XXXXXX)
        printf 'apiVersion: v1\nkind: Config\nclusters: []\n' > "$kc"
        chmod 644 "$kc"
        # (LeakSanitizer needs a thread of its own, which RLIMIT_NPROC refuses: not asked for here)
        expect 0 "kube-call under RLIMIT_NPROC" -- "${nobody[@]}" env ASAN_OPTIONS=detect_leaks=0 prlimit --nproc=1 \
                "$gpunode" kube-call --kubeconfig "$kc" GET /api/v1/nodes
        contains "cannot start the YAML parser (a child process): Resource temporarily unavailable" \
                "a refused fork is named as one"
        if grep -q "no Kubernetes configuration" "$cli_out"; then
                echo "FAIL a refused fork reads as no Kubernetes configuration"; failed=$((failed + 1))
        else passed=$((passed + 1)); fi
        rm -f "$kc"
fi

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
# --node and $NODE_NAME must be node names (DNS-1123 subdomains): refused with exit 64, the value shown escaped
expect 64 "check --node with control characters" -- \
        "$gpunode" check --root "$tmp/evil" --node "x$evil" --nvml-library /nonexistent/libnvidia-ml.so.1
"$gpunode" check --root "$tmp/evil" --node "x$evil" --nvml-library /nonexistent/libnvidia-ml.so.1 > "$tmp/out" 2>&1
noesc "$tmp/out" "check --node"
contains_file "$tmp/out" "--node 'x?]0;pwned??[2J' is not a node name" "check --node: the error names the option"
for bad in Gpu-1 gpu_1 -gpu gpu-1. gpu..1 "$(printf 'a%.0s' $(seq 254))"; do
        expect 64 "check --node '${bad:0:20}'" -- "$gpunode" check --root "$tmp/evil" --node "$bad" \
                --nvml-library /nonexistent/libnvidia-ml.so.1
done
NODE_NAME="gpu/../x" expect 64 "check with \$NODE_NAME gpu/../x" -- \
        "$gpunode" check --root "$tmp/evil" --nvml-library /nonexistent/libnvidia-ml.so.1
NODE_NAME="gpu/../x" "$gpunode" check --root "$tmp/evil" --nvml-library /nonexistent/libnvidia-ml.so.1 > "$tmp/out" 2>&1
contains_file "$tmp/out" "\$NODE_NAME 'gpu/../x' is not a node name" "\$NODE_NAME: the error names it"
# the issue's case: the node name in a snapshot's manifest (the host name's, which no rule refuses)
NODE_NAME= "$gpunode" collect --root "$tmp/evil" --nvml-library /nonexistent/libnvidia-ml.so.1 \
        -o "$tmp/evil.tar.gz" > /dev/null 2>&1
"$gpunode" check --snapshot "$tmp/evil.tar.gz" > "$tmp/out" 2>&1
noesc "$tmp/out" "check --snapshot: the manifest's node name"
contains_file "$tmp/out" 'node evil\x1b]0;pwned\x07\x1b[2j' "the manifest's node name, escaped"
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

# dcgm-exporter's flags and environment (a flag wins over its variable, a variable over the default;
# unknown DCGM_EXPORTER_* are ignored). Runs that start are stopped after half a second: what they
# took is in the start line "listening on ADDR, sampling every N s".
exporter_run() { # exporter_run ARGS...: half a second of the exporter on the fake-less NVML; stderr in $tmp/exp.err
        timeout -s INT 0.5 "$gpunode" exporter --nvml-library /nonexistent/libnvidia-ml.so.1 --check-interval 0 "$@" \
                > /dev/null 2> "$tmp/exp.err"
}
says() { # says TEXT DESCRIPTION: the last exporter_run's stderr holds TEXT
        if grep -qF -- "$1" "$tmp/exp.err"; then passed=$((passed + 1)); else
                echo "FAIL $2: stderr lacks '$1'"; cat "$tmp/exp.err"; failed=$((failed + 1)); fi
}
DCGM_EXPORTER_LISTEN=127.0.0.1:0 DCGM_EXPORTER_INTERVAL=2500 DCGM_EXPORTER_FROBNICATE=yes exporter_run
says "listening on 127.0.0.1:0, sampling every 2.5 s" "DCGM_EXPORTER_LISTEN and DCGM_EXPORTER_INTERVAL (ms); unknown variable ignored"
DCGM_EXPORTER_LISTEN=bogus DCGM_EXPORTER_INTERVAL=2500 exporter_run -a 127.0.0.1:0 -c 1500
says "listening on 127.0.0.1:0, sampling every 1.5 s" "-a and -c win over the environment"
DCGM_EXPORTER_LISTEN=bogus DCGM_EXPORTER_INTERVAL=2500 exporter_run --address 127.0.0.1:0 --interval 3s
says "listening on 127.0.0.1:0, sampling every 3 s" "--address and --interval win over the environment"
exporter_run --listen 127.0.0.1:0 --collect-interval 250
says "sampling every 0.25 s" "--collect-interval in milliseconds"
exporter_run --listen 127.0.0.1:0 --interval 1m30s
says "sampling every 90 s" "--interval takes a Go duration"
DCGM_EXPORTER_LISTEN=bogus expect 64 "DCGM_EXPORTER_LISTEN over the default" -- "$gpunode" exporter --nvml-library /nonexistent/libnvidia-ml.so.1
grep -qF "cannot listen on bogus" "$cli_err" && passed=$((passed + 1)) || { echo "FAIL: DCGM_EXPORTER_LISTEN not used"; failed=$((failed + 1)); }
for bad in 0 -5 1s 1.5 abc 86400001; do
        expect 64 "-c $bad refused" -- "$gpunode" exporter -c "$bad"
        DCGM_EXPORTER_INTERVAL=$bad expect 64 "DCGM_EXPORTER_INTERVAL=$bad refused" -- "$gpunode" exporter
done
grep -qF "DCGM_EXPORTER_INTERVAL: '86400001' is not 1..86400000 milliseconds" "$cli_err" && passed=$((passed + 1)) ||
        { echo "FAIL: the interval refusal names the variable"; failed=$((failed + 1)); }
expect 64 "--interval 1m30 refused" -- "$gpunode" exporter --interval 1m30
expect 64 "--kubernetes=maybe refused" -- "$gpunode" exporter --kubernetes=maybe
DCGM_EXPORTER_KUBERNETES=maybe expect 64 "DCGM_EXPORTER_KUBERNETES=maybe refused" -- "$gpunode" exporter
expect 64 "--kubernetes-gpu-id-type bogus refused" -- "$gpunode" exporter --kubernetes-gpu-id-type bogus
DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE=pod expect 64 "DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE=pod refused" -- "$gpunode" exporter
DCGM_EXPORTER_NO_HOSTNAME=sometimes expect 64 "DCGM_EXPORTER_NO_HOSTNAME=sometimes refused" -- "$gpunode" exporter
DCGM_EXPORTER_KUBERNETES=maybe DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE=pod exporter_run -a 127.0.0.1:0 -k --kubernetes-gpu-id-type device-name
says "listening on 127.0.0.1:0" "-k and --kubernetes-gpu-id-type win over their variables"
DCGM_EXPORTER_KUBERNETES=true DCGM_EXPORTER_KUBERNETES_GPU_ID_TYPE=device-name DCGM_EXPORTER_NO_HOSTNAME=1 exporter_run -a 127.0.0.1:0
says "listening on 127.0.0.1:0" "DCGM_EXPORTER_KUBERNETES, _GPU_ID_TYPE, _NO_HOSTNAME accepted"
exporter_run -a 127.0.0.1:0 --kubernetes=false --no-kubernetes --kubernetes=true -n --no-hostname=false
says "listening on 127.0.0.1:0" "--kubernetes=BOOL, --no-kubernetes, -n, --no-hostname=BOOL accepted"
# the collectors CSV: dcgm-exporter's format; unknown counters and wrong types refused by name and line
printf '# three counters\n\nDCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\r\n  DCGM_FI_DEV_DEC_UTIL ,   gauge, "Decoder, in %%"\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, counter, mJ\n' > "$tmp/three.csv"
printf 'DCGM_FI_DEV_SM_CLOCK, gauge, SM clock\n# DCGM_FI_DEV_ECC_SBE_VOL_TOTAL, counter, commented out\nDCGM_FI_DEV_ECC_DBE_VOL_TOTAL, counter, Total number of double-bit volatile ECC errors.\n' > "$tmp/unknown.csv"
printf 'DCGM_FI_DEV_SM_CLOCK, gauge, SM clock\nDCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, gauge, energy\n' > "$tmp/type.csv"
DCGM_EXPORTER_COLLECTORS=$tmp/unknown.csv exporter_run -a 127.0.0.1:0 -f "$tmp/three.csv"
says "serving the 3 counter(s) $tmp/three.csv names" "-f wins over DCGM_EXPORTER_COLLECTORS; quotes, CRLF, spaces"
DCGM_EXPORTER_COLLECTORS=$here/../etc/default-counters.csv exporter_run -a 127.0.0.1:0
says "serving the 24 counter(s)" "the shipped etc/default-counters.csv is accepted"
DCGM_EXPORTER_COLLECTORS=$tmp/unknown.csv expect 64 "unknown counter refused" -- "$gpunode" exporter
contains_file "$cli_err" "counter DCGM_FI_DEV_ECC_DBE_VOL_TOTAL in $tmp/unknown.csv line 3 is not one gpunode serves; it serves: DCGM_FI_DEV_SM_CLOCK, " \
        "the unknown counter named with file and line, and what is served"
contains_file "$cli_err" "DCGM_FI_DRIVER_VERSION (label)" "the served list names the driver label"
expect 64 "wrong type refused" -- "$gpunode" exporter --collectors "$tmp/type.csv"
contains_file "$cli_err" "counter DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION in $tmp/type.csv line 2 has type gauge; it is a counter" \
        "the type refusal"
csv_refused() { # csv_refused TEXT MESSAGE DESCRIPTION
        printf "$1" > "$tmp/bad.csv"
        expect 64 "$3" -- "$gpunode" exporter -f "$tmp/bad.csv"
        contains_file "$cli_err" "$2" "$3: message"
}
csv_refused 'DCGM_FI_DEV_SM_CLOCK, gauge\n' "line 1: 2 field(s), not the 3" "two fields"
csv_refused 'DCGM_FI_DEV_SM_CLOCK, gauge, SM, clock\n' "line 1: 4 field(s)" "an unquoted comma in the help"
csv_refused 'DCGM_FI_DEV_SM_CLOCK, gauge, "SM\n' "line 1: a quoted field is not closed" "an open quote"
csv_refused 'DCGM_FI_DEV_SM_CLOCK, gauge, a\nDCGM_FI_DEV_SM_CLOCK, gauge, b\n' "line 2 was named on line 1 already" "a counter twice"
csv_refused 'DCGM_FI_DEV_SM_CLOCK, gague, a\n' "type 'gague' of DCGM_FI_DEV_SM_CLOCK is not gauge, counter or label" "an unknown type"
csv_refused 'DCGM_FI_DRIVER_VERSION, gauge, a\n' "gpunode serves it as a label" "the driver version as a gauge"
csv_refused 'DCGM_FI_NVML_VERSION, label, NVML Version\n' "counter DCGM_FI_NVML_VERSION in $tmp/bad.csv line 1 is not one gpunode serves" "an unserved label"
expect 64 "a missing collectors file" -- "$gpunode" exporter -f "$tmp/none.csv"
contains_file "$cli_err" "cannot read the collectors file $tmp/none.csv" "a missing collectors file: message"
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
