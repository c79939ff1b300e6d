#!/bin/bash
# device-bundle.sh: packs the built gpunode, its non-system shared libraries and the scripts it
# needs into .device/ (git-ignored), for a GPU machine that has no package registry to build from.
set -euo pipefail
cd "$(dirname "$0")/.."
ninja -C build
rm -rf .device && mkdir -p .device/lib
cp build/gpunode .device/
for bin in build/gpunode; do
        ldd "$bin" | awk '/=> \// {print $3}' | while read -r lib; do
                case "$(basename "$lib")" in
                libc.so*|libm.so*|libpthread.so*|libdl.so*|ld-linux*|librt.so*) ;;
                *) cp -L "$lib" .device/lib/ ;;
                esac
        done
done
ls -la .device .device/lib
