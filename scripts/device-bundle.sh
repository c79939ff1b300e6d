#!/bin/bash
# device-bundle.sh: packs the built gpunode, its non-system shared libraries and the scripts it
# needs into .device/ (git-ignored), for a GPU machine that has no package registry to build from.
set -euo pipefail
cd "$(dirname "$0")/.."
ninja -C build
rm -rf .device && mkdir -p .device/lib
cp build/gpunode .device/
cp build/tests/libnvidia-ml.so.1 .device/fake-libnvidia-ml.so.1
# gpunode itself and the libraries it dlopens (src/dl_*.h), each with what it needs beyond glibc.
dlopened="libcurl.so.4 libfyaml.so.0 libarchive.so.13"
for l in $dlopened; do cp -L "/usr/lib/x86_64-linux-gnu/$l" .device/lib/; done
for bin in build/gpunode $(for l in $dlopened; do echo "/usr/lib/x86_64-linux-gnu/$l"; done); do
        ldd "$bin" | awk '/=> \// {print $3}' | while read -r lib; do
                case "$(basename "$lib")" in
                libc.so*|libm.so*|libpthread.so*|libdl.so*|ld-linux*|librt.so*|libresolv.so*) ;;
                # Every Ubuntu or Debian GPU image has these (apt and the CUDA stack need them): not carried.
                libicu*|libxml2*|libstdc++*|libgcc_s*|libcrypto*|libssl*|libz.so*|libzstd*|liblzma*|libbz2*) ;;
                libgnutls*|libp11-kit*|libunistring*|libgmp*|libnettle*|libhogweed*|libtasn1*|libidn2*|libffi*) ;;
                libkrb5*|libgssapi*|libk5crypto*|libcom_err*|libkeyutils*) ;;
                *) cp -L "$lib" .device/lib/ ;;
                esac
        done
done
ls -la .device .device/lib
