#!/bin/bash
# krew-package.sh: packs gpunode for Krew (`kubectl krew install gpunode`): a tar.gz holding the binary as
# kubectl-gpunode, and a copy of deploy/krew/gpunode.yaml with that archive's version, uri and sha256.
#
# usage: scripts/krew-package.sh [BUILD_DIR [OUT_DIR]]
#   BUILD_DIR  a meson build folder holding gpunode (default: build; --buildtype=release for a release)
#   OUT_DIR    where the archive and gpunode.yaml go (default: BUILD_DIR/krew; created)
# Environment: KREW_URI_BASE, the URL the archive will be published under (default: the template's
# placeholder host). Prints the archive's path and sha256. Exits 1 when a step fails, 64 on usage.
# The archive is reproducible: the same binary gives the same bytes (sorted names, mtime 0, uid 0, gzip -n).
set -euo pipefail
if [ $# -gt 2 ]; then
        echo "usage: $0 [BUILD_DIR [OUT_DIR]]" >&2
        exit 64
fi
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
build=${1:-build}
out=${2:-$build/krew}
die() {
        echo "krew-package.sh: $*" >&2
        exit 1
}
[ -x "$build/gpunode" ] || die "$build/gpunode: no such executable (build it first: ninja -C $build)"
version=$("$build/gpunode" --version | awk '{ print $2 }')
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+ ]] || die "$build/gpunode --version: '$version' is not a semantic version"
case $(uname -m) in
x86_64) arch=amd64 ;;
aarch64) arch=arm64 ;;
*) die "$(uname -m): no Krew arch name known for it" ;;
esac
name=kubectl-gpunode-v$version-linux-$arch.tar.gz
base=${KREW_URI_BASE:-https://example.invalid/gpunode/v$version}
mkdir -p "$out"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
install -m 0755 "$build/gpunode" "$stage/kubectl-gpunode"
strip --strip-unneeded "$stage/kubectl-gpunode"
tar -C "$stage" --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf - kubectl-gpunode |
        gzip -n -9 > "$out/$name"
sha=$(sha256sum "$out/$name" | awk '{ print $1 }')
# The manifest's copy: version, the platform's uri and sha256 (one platform: this machine's).
sed -e "s|^  version: .*|  version: v$version|" \
        -e "s|^      uri: .*|      uri: ${base%/}/$name|" \
        -e "s|^      sha256: .*|      sha256: \"$sha\"|" \
        -e "s|^          arch: .*|          arch: $arch|" \
        "$src/deploy/krew/gpunode.yaml" > "$out/gpunode.yaml"
grep -q "sha256: \"$sha\"" "$out/gpunode.yaml" || die "$src/deploy/krew/gpunode.yaml: no platform sha256 line to fill"
echo "$out/$name $sha"
echo "$out/gpunode.yaml: kubectl krew install --manifest=$out/gpunode.yaml --archive=$out/$name"
