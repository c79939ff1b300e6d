#!/bin/bash
# layout.sh: the source tree keeps the rules README's layout section states: a check id leads to its
# file (check C.name is check_<C>_<name> in src/layerN_*/check_<C>*.c, N its layer), the registry is
# the one list, each folder includes only what lies below it, probes never judge, checks never read
# the host.
# usage: layout.sh SOURCE_ROOT
set -u
src=$1/src
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

# Includes point down: a folder includes itself and what lies below it, never above.
allowed() { # allowed FOLDER: the folders its files may include
        case $1 in
        basic) echo "basic" ;;
        engine) echo "basic engine" ;;
        nvml) echo "basic nvml" ;;
        nvidia) echo "basic nvidia" ;;
        grpc) echo "basic grpc" ;;
        kube) echo "basic grpc kube" ;;
        facts) echo "basic grpc kube facts" ;;
        layer1_hardware) echo "basic engine facts nvidia nvml layer1_hardware" ;;
        layer2_container) echo "basic engine facts nvidia nvml layer1_hardware layer2_container" ;;
        layer3_kubernetes) echo "basic engine facts nvidia nvml grpc kube layer1_hardware layer2_container layer3_kubernetes" ;;
        device_plugin) echo "basic grpc kube nvml device_plugin" ;;
        agent) echo "basic engine facts nvml grpc kube exporter output agent device_plugin" ;;
        cluster) echo "basic engine kube output cluster" ;;
        layer4_observability) echo "basic engine facts nvidia nvml grpc kube layer1_hardware layer2_container layer3_kubernetes layer4_observability" ;;
        agent) echo "basic engine facts nvml grpc kube layer1_hardware layer2_container layer3_kubernetes layer4_observability diagnose output exporter snapshot agent" ;;
        *) echo "*" ;;
        esac
}
for f in "$src"/*/*.[ch]; do
        folder=$(basename "$(dirname "$f")")
        allow=$(allowed "$folder")
        [ "$allow" = "*" ] && continue
        for inc in $(sed -n 's/^#include "\([a-z0-9_]*\)\/.*/\1/p' "$f"); do
                case " $allow " in
                *" $inc "*) ok ;;
                *) bad "${f#$src/} includes $inc/: $folder may include only $allow" ;;
                esac
        done
done

# Probes never judge; checks never read the host.
for f in "$src"/layer*/probe_*.c; do
        grep -q '#include "engine/' "$f" && bad "${f#$src/}: a probe includes the engine" || ok
done
for f in "$src"/layer*/check_*.c; do
        grep -qE '(^|[^a-z_])(hostfs_[a-z_]+|fopen|open|openat|stat|opendir)\(|#include "basic/hostfs.h"' "$f" && bad "${f#$src/}: a check reads the host" || ok
done
echo "layout: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
