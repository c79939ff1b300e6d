#!/bin/bash
# install-deps.sh: installs the Debian 12 packages gpunode needs to build, test and benchmark.
set -euo pipefail
packages=(
        gcc clang meson ninja-build pkg-config git ca-certificates
        libjansson-dev libcurl4-openssl-dev libfyaml-dev libarchive-dev libssl-dev zlib1g-dev
        libcmocka-dev valgrind openssl python3 python3-grpcio python3-protobuf pciutils
        libnghttp2-dev libprotobuf-c-dev protobuf-c-compiler
        prometheus prometheus-node-exporter wrk hyperfine libclang-rt-14-dev chromium
        nodejs yamllint
        # The image test (tests/image): podman builds the FROM scratch image; runc runs it where crun
        # refuses podman's default rlimits or a hybrid cgroup layout (nested VMs).
        podman runc
)
# Debian's npm, unless an npm is already there (NodeSource's nodejs bundles its own and conflicts
# with Debian's npm package).
command -v npm >/dev/null || packages+=(npm)
sudo=
[ "$(id -u)" -eq 0 ] || sudo=sudo
missing=()
for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# Debian starts these services when it installs them; the tests run their own instances.
for svc in prometheus prometheus-node-exporter; do
        if command -v systemctl >/dev/null && systemctl is-active -q "$svc" 2>/dev/null; then $sudo systemctl stop "$svc" || true; fi
done
# The deploy tests' npm packages (kubernetes-models, @kubernetes-models/prometheus-operator, yaml),
# pinned by tests/deploy/package-lock.json, into tests/deploy/node_modules (not committed).
npm ci --prefix "$(cd "$(dirname "$0")/.." && pwd)/tests/deploy" --no-audit --no-fund
