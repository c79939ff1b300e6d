#!/bin/bash
# test.sh: builds gpunode twice (plain, and with address and undefined-behaviour sanitizers,
# warnings as errors) and runs every test suite on both.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d build ] || meson setup build
ninja -C build
# One test at a time: several suites start servers and time scrapes, and the machine may have
# two cores only.
meson test -C build --print-errorlogs --num-processes 1
[ -d build-asan ] || CC=gcc meson setup build-asan -Db_sanitize=address,undefined -Dwerror=true -Db_lundef=false
ninja -C build-asan
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
        meson test -C build-asan --print-errorlogs --num-processes 1
# libFuzzer targets, built with clang, each run briefly on its seed corpus.
[ -d build-fuzz ] || CC=clang meson setup build-fuzz -Dfuzz=true -Db_sanitize=address,undefined -Db_lundef=false
ninja -C build-fuzz
fuzz/run.sh build-fuzz "${GPUNODE_FUZZ_SECONDS:-10}"
