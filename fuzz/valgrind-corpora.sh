#!/bin/bash
# valgrind-corpora.sh: a short valgrind pass over the parsers' corpora. Each fuzz target (fuzz/fuzz_*.c) is
# built in the plain build with fuzz/standalone_main.c as replay_<name> (tests/meson.build), and runs under
# memcheck over its seed corpus, fuzz/seeds/<name>/, then the project's own fixtures of that format
# (spread evenly when there are many): no invalid access, no uninitialised use, no definite or indirect
# leak, in the driver and in the children it forks (the YAML parser runs in one; each process logs to its
# own file). This catches what AddressSanitizer cannot: reads inside libraries built without it, such as
# libjansson. Bounded: at most GPUNODE_VALGRIND_MAX_FILES inputs (default 40) and GPUNODE_VALGRIND_SECONDS
# seconds (default 6; no new input starts after that) per target: under a minute for all on two cores,
# two at the very most (15 targets, each bounded at 6 s plus valgrind's start).
# Skipped (exit 77) without valgrind or in a sanitizer build.
# usage: fuzz/valgrind-corpora.sh BUILD_TESTS_DIR [SOURCE_ROOT]
set -u
build=$1
here=$(cd "$(dirname "$0")" && pwd)
top=${2:-$(dirname "$here")}
max_files=${GPUNODE_VALGRIND_MAX_FILES:-40}
seconds=${GPUNODE_VALGRIND_SECONDS:-6}
if ! command -v valgrind > /dev/null; then echo "skipped: no valgrind"; exit 77; fi
if ldd "$build/replay_cdi" 2> /dev/null | grep -q libasan; then echo "skipped: sanitizer build"; exit 77; fi
shopt -s nullglob globstar
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Prints the fixtures of the format target $1 parses, beyond its seed corpus, one per line.
fixtures() {
        local s=$top/tests/scenarios
        case $1 in
        kfmt) printf '%s\n' "$s"/*/root/proc/modules "$s"/*/root/proc/driver/nvidia/version \
                        "$s"/*/root/proc/driver/nvidia/gpus/*/information ;;
        kmsg) printf '%s\n' "$s"/*/root/dev/kmsg ;;
        fmlog) printf '%s\n' "$s"/*/root/var/log/fabricmanager.log "$s"/*/root/var/lib/dpkg/status ;;
        dpkg) printf '%s\n' "$s"/*/root/var/lib/dpkg/status ;;
        promtext) printf '%s\n' "$top"/tests/unit/testdata/*.prom "$s"/*/metrics/*/metrics ;;
        toml) printf '%s\n' "$top"/tests/toml-test/tests/valid/**/*.toml "$top"/tests/toml-test/tests/invalid/**/*.toml ;;
        kube_objects) printf '%s\n' "$s"/*/api/**/*.json ;;
        containerd) printf '%s\n' "$s"/*/root/etc/containerd/**/*.toml ;;
        cdi) printf '%s\n' "$s"/*/root/etc/cdi/* "$s"/*/root/var/run/cdi/* ;;
        daemon_json) printf '%s\n' "$s"/*/root/etc/docker/daemon.json ;;
        crio) printf '%s\n' "$s"/*/root/etc/crio/**/*.conf ;;
        nvml_facts_json) printf '%s\n' "$top"/tests/fake-nvml/testdata/*.json "$s"/*/nvml.json ;;
        snapshot_extract) printf '%s\n' "$top"/tests/snapshots/*.tar.gz ;;
        checkpoint) printf '%s\n' "$s"/*/root/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint ;;
        cgroup) printf '%s\n' "$s"/*/root/proc/*/cgroup ;;
        esac
}

# Prints the inputs for target $1: its seeds, then fixtures spread evenly, at most max_files in all.
inputs() {
        local seeds=("$here/seeds/$1"/*) fix n step
        mapfile -t fix < <(fixtures "$1" | while read -r f; do [ -f "$f" ] && echo "$f"; done)
        [ "${#seeds[@]}" -gt 0 ] && printf '%s\n' "${seeds[@]:0:$max_files}"
        n=$((max_files - ${#seeds[@]}))
        if [ "$n" -gt 0 ] && [ "${#fix[@]}" -gt 0 ]; then
                step=$(( (${#fix[@]} + n - 1) / n ))
                for ((i = 0; i < ${#fix[@]} && n > 0; i += step, n--)); do echo "${fix[$i]}"; done
        fi
}

: > "$tmp/empty"
passed=0 failed=0 start=$SECONDS
for src in "$here"/fuzz_*.c; do
        name=$(basename "$src" .c); name=${name#fuzz_}
        exe=$build/replay_$name
        if [ ! -x "$exe" ]; then
                echo "FAIL replay_$name: not built (add $name to the replay drivers in tests/meson.build)"
                failed=$((failed + 1))
                continue
        fi
        mapfile -t files < <(inputs "$name")
        files+=("$tmp/empty")
        timeout $((seconds * 5 + 120)) valgrind -q --error-exitcode=99 --leak-check=full \
                --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect \
                --suppressions="$here/valgrind.supp" --log-file="$tmp/vg.$name.%p" \
                "$exe" -max_total_time="$seconds" "${files[@]}" > "$tmp/out.$name" 2>&1
        rc=$?
        # with -q, memcheck's findings are its "==PID==" lines; "--PID--" lines are notes (valgrind 3.19
        # knows no openat2, and hostfs falls back)
        logs=$(cat "$tmp/vg.$name".* 2> /dev/null | grep '^==[0-9]*==')
        if [ "$rc" -eq 0 ] && [ -z "$logs" ]; then
                echo "ok   replay_$name: $(tail -1 "$tmp/out.$name") (${#files[@]} inputs given)"
                passed=$((passed + 1))
        else
                echo "FAIL replay_$name (exit $rc$([ "$rc" -eq 124 ] && echo ': timed out')):"
                tail -20 "$tmp/out.$name"
                printf '%s\n' "$logs" | head -80
                failed=$((failed + 1))
        fi
done
echo "valgrind corpora: $passed passed, $failed failed, $((SECONDS - start)) s"
[ "$failed" -eq 0 ]
