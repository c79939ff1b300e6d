#!/bin/bash
# image-build.sh: builds gpunode's image from a built tree, with no registry: the Containerfile's final
# stage (FROM scratch) over a root made here by scripts/image-rootfs.sh, so no base image is pulled.
#
# usage: scripts/image-build.sh [BUILD_DIR [TAG]]
#   BUILD_DIR  a meson build folder holding gpunode (default: build)
#   TAG        the image's name (default: localhost/gpunode:dev)
# Environment: PODMAN (default podman; buildah works too), PODMAN_FLAGS (global flags such as
# "--storage-driver vfs" where overlay mounts are refused).
# Prints the image's size last. Exits 1 when a step fails (the failing command's message above it), 64 on
# usage.
#
# The image runs a stripped copy of BUILD_DIR's gpunode: build it with --buildtype=release for the one
# you ship (the Containerfile does). `podman build --isolation chroot`: the final stage has no RUN step,
# so nothing runs inside a container while building and neither user namespaces nor a runtime are needed.
set -euo pipefail
if [ $# -gt 2 ]; then
        echo "usage: $0 [BUILD_DIR [TAG]]" >&2
        exit 64
fi
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
build=${1:-build} tag=${2:-localhost/gpunode:dev}
podman=${PODMAN:-podman}
read -r -a flags <<< "${PODMAN_FLAGS:-}"
command -v "$podman" >/dev/null || {
        echo "image-build.sh: $podman: not found (Debian: apt-get install podman)" >&2
        exit 1
}
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
"$here/image-rootfs.sh" "$build" "$ctx/rootfs"
# The Containerfile's last stage, its one COPY taking the root from the context instead of the build stage.
sed -n '/^FROM scratch/,$p' "$src/Containerfile" | sed 's|^COPY --from=build /rootfs/ /$|COPY rootfs/ /|' > "$ctx/Containerfile"
grep -qx 'COPY rootfs/ /' "$ctx/Containerfile" || {
        echo "image-build.sh: $src/Containerfile: no 'FROM scratch' stage with 'COPY --from=build /rootfs/ /'" >&2
        exit 1
}
case $podman in
*buildah) "$podman" "${flags[@]}" bud --isolation chroot -q -t "$tag" -f "$ctx/Containerfile" "$ctx" ;;
*) "$podman" "${flags[@]}" build --isolation chroot -q -t "$tag" -f "$ctx/Containerfile" "$ctx" ;;
esac
size=$("$podman" "${flags[@]}" image inspect --format '{{.Size}}' "$tag")
echo "image $tag: $size bytes ($((size / 1000000)) MB)"
