#!/bin/bash
# valgrind.sh: gpunode check on several scenarios under valgrind's memcheck: no invalid access,
# no definite or indirect leak. Skipped (exit 77) for a sanitizer build, which checks the same.
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
rm -f "/tmp/gpunode-valgrind.$$"
echo "valgrind: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
