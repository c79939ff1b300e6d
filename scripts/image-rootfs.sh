#!/bin/bash
# image-rootfs.sh: lays out the image's whole file system in a folder, from a built tree on a Debian 12
# machine (the Containerfile's build stage, or this one): gpunode, the shared libraries it links and the
# ones it dlopens with their dependency closure (ldd), the CA bundle, the default counters, an entrypoint.
# The Containerfile's final stage is FROM scratch and copies this folder.
#
# usage: scripts/image-rootfs.sh BUILD_DIR OUT_DIR
#   BUILD_DIR  a meson build folder holding the gpunode binary
#   OUT_DIR    the folder to fill (must not exist, or be empty)
# Exits 1 with a message naming what is missing (the binary, a library, the CA bundle), 64 on usage.
#
# Not in the image, on purpose: NVML (libnvidia-ml.so.1) and libcuda.so.1, the host driver's own, which
# gpunode loads from under --root; the dynamic loader's stubs they need (libdl, libpthread, librt, libm)
# are. libicudata (31 MB, reached only through libarchive -> libxml2 -> ICU, never used: snapshots are
# tar.gz) is replaced by ICU's stub data (scripts/image-icu-stubdata.c) unless GPUNODE_IMAGE_FULL_ICU=1.
set -euo pipefail
if [ $# -ne 2 ]; then
        echo "usage: $0 BUILD_DIR OUT_DIR" >&2
        exit 64
fi
build=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
src=$(dirname "$here")
die() {
        echo "image-rootfs.sh: $*" >&2
        exit 1
}
[ -x "$build/gpunode" ] || die "$build/gpunode: no such executable (build it first: ninja -C $build)"
if [ -e "$out" ] && [ -n "$(ls -A "$out")" ]; then die "$out: exists and is not empty"; fi
for tool in ldd ldconfig readelf cc strip; do
        command -v "$tool" >/dev/null || die "$tool: not found (it is in Debian's libc-bin, binutils, gcc)"
done

# The libraries gpunode dlopens, by soname, as src/basic/dl_libs.c names them: the driver's excepted.
mapfile -t dlopened < <(grep -o '"lib[A-Za-z0-9_+-]*\.so\.[0-9.]*"' "$src/src/basic/dl_libs.c" | tr -d '"' |
        grep -v -e '^libnvidia-ml' -e '^libcuda' | sort -u)
[ ${#dlopened[@]} -gt 0 ] || die "$src/src/basic/dl_libs.c: no dlopened library names found"
# glibc's stubs the host's libnvidia-ml.so.1 and libcuda.so.1 list as NEEDED; libgcc_s: glibc dlopens it
# to unwind a cancelled thread.
extra=(libdl.so.2 libpthread.so.0 librt.so.1 libm.so.6 libgcc_s.so.1)

# path_of SONAME: prints the file the loader finds for SONAME on this machine (ldconfig's cache).
path_of() {
        local p
        p=$(ldconfig -p | awk -v n="$1" '$1 == n && /x86-64|x32|AArch64|64bit/ { print $NF; exit }')
        [ -n "$p" ] || p=$(ldconfig -p | awk -v n="$1" '$1 == n { print $NF; exit }')
        [ -n "$p" ] || die "$1: not installed (gpunode dlopens it; see the Containerfile's build stage packages)"
        echo "$p"
}

mkdir -p "$out"
declare -A libs=() # soname -> path
add_closure() {    # FILE: adds FILE's ldd closure to libs
        local line name path
        while read -r line; do
                case $line in
                *" => not found"*) die "$1 needs ${line%% *}, which is not installed" ;;
                *" => /"*)
                        name=${line%% =>*}
                        path=${line#*=> }
                        path=${path%% (*}
                        libs[$name]=$path
                        ;;
                esac
        done < <(ldd "$1")
}
add_closure "$build/gpunode"
for so in "${dlopened[@]}" "${extra[@]}"; do
        p=$(path_of "$so")
        libs[$so]=$p
        add_closure "$p"
done

# Merged /usr, as in Debian 12: one folder of libraries, /lib and /bin as links.
interp=$(readelf -l "$build/gpunode" | sed -n 's/.*Requesting program interpreter: \(.*\)\]/\1/p')
[ -n "$interp" ] || die "$build/gpunode: no program interpreter (a static build needs no image libraries)"
multiarch=$(dirname "$(readlink -f "${libs[libc.so.6]}")")
multiarch=${multiarch#/usr}
multiarch=${multiarch#/lib/} # x86_64-linux-gnu
install -d -m 0755 "$out/usr/bin" "$out/usr/lib/$multiarch" "$out/etc/ssl/certs" "$out/etc/gpunode" "$out/tmp" \
        "$out/proc" "$out/sys" "$out/dev" "$out/host"
chmod 1777 "$out/tmp"
ln -s usr/bin "$out/bin"
ln -s usr/lib "$out/lib"
install -D -m 0755 "$(readlink -f "$interp")" "$out/usr$interp"
case $interp in /lib64/*) ln -s usr/lib64 "$out/lib64" ;; esac

icu_full=${GPUNODE_IMAGE_FULL_ICU:-0}
for name in "${!libs[@]}"; do
        dest=$out/usr/lib/$multiarch/$name
        [ "$(readlink -f "${libs[$name]}")" = "$(readlink -f "$interp")" ] && continue
        if [[ $name == libicudata.so.* ]] && [ "$icu_full" != 1 ]; then
                major=${name#libicudata.so.}
                cc -O2 -shared -fPIC -nostdlib -DICU_ENTRY="icudt${major}_dat" -Wl,-soname,"$name" \
                        -o "$dest" "$here/image-icu-stubdata.c"
                continue
        fi
        install -m 0755 "$(readlink -f "${libs[$name]}")" "$dest"
done
# The loader's cache: dlopen by soname finds the libraries without searching.
printf '/usr/lib/%s\n' "$multiarch" > "$out/etc/ld.so.conf"
ldconfig -r "$out"

install -m 0755 "$build/gpunode" "$out/usr/bin/gpunode"
strip --strip-unneeded "$out/usr/bin/gpunode"
install -m 0644 "$src/etc/default-counters.csv" "$out/etc/gpunode/default-counters.csv"
ca=/etc/ssl/certs/ca-certificates.crt
[ -s "$ca" ] || die "$ca: missing (Debian's ca-certificates package)"
install -m 0644 "$ca" "$out/etc/ssl/certs/ca-certificates.crt"

# The entrypoint: `IMAGE ARGS` runs `gpunode ARGS` (as images whose entrypoint is the binary do), and
# `IMAGE gpunode ARGS` the same (as images with the binary on PATH do). dash is the only other program.
install -m 0755 "$(readlink -f /bin/sh)" "$out/usr/bin/sh"
cat > "$out/usr/bin/gpunode-entrypoint" << 'EOF'
#!/bin/sh
# gpunode's image entrypoint: IMAGE ARGS and IMAGE gpunode ARGS both run gpunode ARGS, as PID 1.
case "${1:-}" in gpunode | /usr/bin/gpunode) shift ;; esac
exec /usr/bin/gpunode "$@"
EOF
chmod 0755 "$out/usr/bin/gpunode-entrypoint"
