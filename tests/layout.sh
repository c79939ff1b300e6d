#!/bin/bash
# layout.sh: the source tree keeps the rules README's layout section states: a check id leads to its
# file (check C.name is check_<C>_<name> in src/layerN_*/check_<C>*.c, N its layer), the registry is
# the one list, each folder includes only what lies below it (every folder has its row), facts hold
# layers (a layer-N file reads facts of layers <= N and the node-level ones), the engine references
# nothing above it, probes never judge, checks never read the host.
# usage: layout.sh SOURCE_ROOT [BUILD_ROOT]   (BUILD_ROOT: libgpunode's objects, for the engine's symbols)
set -u
src=$1/src
build=${2:-}
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { echo "FAIL $*"; failed=$((failed + 1)); }

# Every registry entry is defined where its id says, with that id and layer.
names=$(sed -n 's/^ *X(\([a-z0-9_]*\)).*/\1/p' "$src/diagnose/registry.c")
[ "$(echo "$names" | wc -w)" -ge 40 ] && ok || bad "registry lists fewer than 40 checks"
for name in $names; do
        def=$(grep -l "^const struct check_def check_$name = {" "$src"/layer*/check_*.c)
        if [ "$(echo "$def" | wc -w)" != 1 ]; then bad "check_$name: defined in '${def}', not exactly one file"; continue; fi
        block=$(sed -n "/^const struct check_def check_$name = {/,/^};/p" "$def")
        id=$(echo "$block" | sed -n 's/.*\.id = "\([^"]*\)".*/\1/p')
        layer=$(echo "$block" | sed -n 's/.*\.layer = \([0-9]\).*/\1/p')
        component=${id%%.*}
        want_var=check_$(echo "$id" | tr '.-' '__')
        c=$(echo "$component" | tr '-' '_')
        [ "$want_var" = "check_$name" ] && ok || bad "check_$name has id $id: the variable should be $want_var"
        case $def in
        "$src"/layer${layer}_*/check_${c}*.c) ok ;;
        *) bad "$id (layer $layer) is in ${def#$src/}, not src/layer${layer}_*/check_${c}*.c" ;;
        esac
done
# No check definition outside the registry.
for var in $(grep -ho "^const struct check_def check_[a-z0-9_]*" "$src"/layer*/check_*.c | awk '{print $4}'); do
        echo "$names" | grep -qx "${var#check_}" && ok || bad "$var is defined but not in src/diagnose/registry.c"
done

# Includes point down: a folder includes itself and what lies below it, never above. Every folder under
# src/ has its row: a new folder says where it stands.
layers="layer1_hardware layer2_container layer3_kubernetes layer4_observability"
allowed() { # allowed FOLDER: the folders its files may include; "unknown" when the folder has no row
        case $1 in
        basic) echo "basic" ;;
        nvidia) echo "basic engine nvml nvidia" ;;
        nvml) echo "basic nvml" ;;
        cuda) echo "basic cuda" ;;
        grpc) echo "basic grpc" ;;
        kube) echo "basic grpc kube" ;;
        engine) echo "basic engine" ;;
        output) echo "basic engine output" ;;
        snapshot) echo "basic grpc kube nvml snapshot" ;;
        daemon) echo "basic engine facts nvidia nvml grpc kube output snapshot daemon" ;;
        exporter) echo "basic engine grpc kube nvidia nvml output daemon exporter" ;;
        facts) echo "basic grpc kube facts" ;;
        layer1_hardware) echo "basic engine facts nvidia nvml layer1_hardware" ;;
        layer2_container) echo "basic engine facts nvidia nvml layer1_hardware layer2_container" ;;
        layer3_kubernetes) echo "basic engine facts nvidia nvml grpc kube layer1_hardware layer2_container layer3_kubernetes" ;;
        layer4_observability) echo "basic engine facts nvidia nvml grpc kube $layers" ;;
        diagnose) echo "basic engine facts nvidia nvml grpc kube $layers snapshot diagnose" ;;
        dpconfig) echo "basic dpconfig" ;;
        device_plugin) echo "basic engine grpc kube nvidia nvml dpconfig output daemon device_plugin" ;;
        cluster) echo "basic engine grpc kube output cluster" ;;
        validate) echo "basic engine nvidia nvml cuda output daemon validate" ;;
        agent | dra)
                echo "basic engine facts nvidia nvml grpc kube $layers diagnose output exporter snapshot daemon" \
                        "device_plugin $1"
                ;;
        cmd)
                echo "basic engine facts nvidia nvml cuda grpc kube $layers diagnose output exporter snapshot daemon" \
                        "agent device_plugin dpconfig cluster validate dra cmd"
                ;;
        *) echo "unknown" ;;
        esac
}
for d in "$src"/*/; do
        folder=$(basename "$d")
        [ "$(allowed "$folder")" != unknown ] && ok ||
                bad "src/$folder/ has no row in layout.sh's allowed(): say what it may include"
done
nested=$(find "$src" -mindepth 3 -name '*.[ch]' | head -3 | tr '\n' ' ')
[ -z "$nested" ] && ok || bad "sources below a folder of src/ ($nested): one level of folders only"
for f in "$src"/*/*.[ch]; do
        folder=$(basename "$(dirname "$f")")
        allow=$(allowed "$folder")
        [ "$allow" = unknown ] && continue
        for inc in $(sed -n 's/^#include "\([a-z0-9_]*\)\/.*/\1/p' "$f"); do
                case " $allow " in
                *" $inc "*) ok ;;
                *) bad "${f#$src/} includes $inc/: $folder may include only $allow" ;;
                esac
        done
done

# Facts hold layers too: a file of layer N (src/layerN_*/) includes facts/layerM_*.h only for M <= N (and
# facts/node.h), names no struct or enum of a higher layer's facts header, and touches no node_facts member
# of such a type (facts->kube in layer 1): a join several layers need is a node-level fact (facts/node.h).
for n in 1 2 3 4; do
        names="" members=""
        for h in "$src"/facts/layer*_*.h; do
                m=$(basename "$h" | cut -c6)
                [ "$m" -gt "$n" ] || continue
                for t in $(sed -n 's/^\(struct\|enum\) \([a-z0-9_]*\) {.*/\2/p' "$h"); do
                        names="$names|$t"
                        member=$(sed -n "s/^ *struct $t \*\{0,1\}\([a-z0-9_]*\);.*/|\1/p" "$src/facts/node.h")
                        members="$members$member"
                done
        done
        for f in "$src"/layer${n}_*/*.[ch]; do
                for inc in $(sed -n 's/^#include "facts\/\([a-z0-9_.]*\)".*/\1/p' "$f"); do
                        case $inc in
                        node.h) ok ;;
                        layer[1-4]_*.h)
                                [ "$(echo "$inc" | cut -c6)" -le "$n" ] && ok ||
                                        bad "${f#$src/} (layer $n) includes facts/$inc: a layer reads facts of" \
                                                "its own and lower layers" ;;
                        *) bad "${f#$src/} includes facts/$inc: neither a layer's facts header nor node.h" ;;
                        esac
                done
                [ -n "$names" ] || continue
                hit=$(grep -noE "(struct|enum) (${names#|})\b" "$f" | head -1)
                [ -z "$hit" ] && ok || bad "${f#$src/}:${hit%%:*} (layer $n) names ${hit#*:}, a fact of a higher layer"
                [ -n "$members" ] || continue
                hit=$(grep -noE "(->|\.)(${members#|})\b" "$f" | head -1)
                [ -z "$hit" ] && ok ||
                        bad "${f#$src/}:${hit%%:*} (layer $n) reads node_facts' ${hit#*:}, facts of a higher layer"
        done
done

# The engine knows no layer: its objects reference only symbols defined in src/engine/ and src/basic/, or
# outside the project (libc and the libraries gpunode links).
if [ -n "$build" ]; then
        objs=$build/libgpunode.a.p
        engine=$(ls "$objs"/src_engine_*.o 2>/dev/null)
        if [ -z "$engine" ]; then
                bad "no engine objects under $objs: build first"
        else
                # "symbol object" for every symbol a project object defines
                defs=$(cd "$objs" && nm --defined-only -g -A ./*.o 2>/dev/null |
                        awk 'NF == 3 && $2 ~ /^[TDBRCVWGS]$/ {
                                o = $1; sub(/^\.\//, "", o); sub(/:.*/, "", o); print $3, o }')
                for u in $(nm -u $engine | awk '$1 == "U" {print $2}' | sort -u); do
                        obj=$(echo "$defs" | awk -v s="$u" '$1 == s {print $2; exit}')
                        case $obj in
                        "" | src_engine_* | src_basic_*) ok ;;
                        *) bad "src/engine/ references $u, defined in ${obj%.c.o} (above the engine)" ;;
                        esac
                done
        fi
fi

# Probes never judge; checks never read the host.
for f in "$src"/layer*/probe_*.c; do
        grep -q '#include "engine/' "$f" && bad "${f#$src/}: a probe includes the engine" || ok
done
for f in "$src"/layer*/check_*.c; do
        grep -qE '(^|[^a-z_])(hostfs_[a-z_]+|fopen|open|openat|stat|opendir)\(|#include "basic/hostfs.h"' "$f" && bad "${f#$src/}: a check reads the host" || ok
done
echo "layout: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
