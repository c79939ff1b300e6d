#!/bin/bash
# setup.sh: a newcomer's first command: install the packages, build, then diagnose this machine
# and one bundled example node (an 8-GPU HGX H100, answered by the test NVML library).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
[ -d build ] || meson setup build
ninja -C build
echo "== gpunode check on this machine =="
./build/gpunode check || true
echo
echo "== gpunode check on the bundled example node tests/scenarios/hgx-h100-healthy =="
GPUNODE_FAKE_NVML=tests/scenarios/hgx-h100-healthy/nvml.json ./build/gpunode check \
        --root tests/scenarios/hgx-h100-healthy/root --nvml-library build/tests/libnvidia-ml.so.1 --node example-hgx-h100 || true
