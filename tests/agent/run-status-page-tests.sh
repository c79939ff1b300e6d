#!/bin/bash
# run-status-page-tests.sh: the agent's status page in a real browser: Debian's headless chromium loads
# pages rendered from scenario reports over real HTTP and the test reads the DOM it built (verdict, root
# cause, four layers, no script, a hostile string as text), measures the page's width in a 360 px frame,
# and takes phone and desktop screenshots.
# usage: run-status-page-tests.sh RENDER_PAGE SOURCE_ROOT [--update-docs]
#   --update-docs also copies the phone screenshots to SOURCE_ROOT/docs/status-page-{healthy,failing}.png
# Exits 77 (meson's skip) only when chromium is not installed (scripts/install-deps.sh installs it).
set -u
render=$1 root=$2 update=${3:-}
chromium=$(command -v chromium || command -v chromium-browser || true)
[ -n "$chromium" ] || { echo "SKIP: chromium is not installed (scripts/install-deps.sh installs it)"; exit 77; }
python=/usr/bin/python3
tmp=$(mktemp -d)
server=
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { echo "FAIL $*"; failed=$((failed + 1)); }

# Runs headless chromium on its own profile; stderr (dbus complaints in a container) goes to a log.
browser() {
        timeout 60 "$chromium" --headless --no-sandbox --disable-gpu --no-first-run --disable-dev-shm-usage \
                --hide-scrollbars --user-data-dir="$tmp/profile" "$@" 2>>"$tmp/chromium.log"
}

# The pages: a healthy node, failing ones, and a failing one whose evidence is hostile.
www=$tmp/www
mkdir -p "$www" "$tmp/shots"
pages=()
for s in hgx-h100-healthy gpu-fallen-off-bus gpu-xid79-held-by-pod; do
        [ -f "$root/tests/scenarios/$s/expected.json" ] || continue
        sed '$ { /^exit [0-9]*$/d }' "$root/tests/scenarios/$s/expected.json" > "$tmp/$s.json"
        pages+=("$s")
done
hostile='<script>alert(1)</script><img src=x onerror=alert(2)> "dq" '"'"'sq'"'"' & done'
$python - "$tmp/gpu-fallen-off-bus.json" "$tmp/hostile.json" "$hostile" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for c in r["checks"]:
    if c["id"] == r["root_cause"]["check"]:
        c["evidence"].append(sys.argv[3])
r["node"] = "</title><script>alert(3)</script>"
json.dump(r, open(sys.argv[2], "w"))
PY
pages+=(hostile)
for p in "${pages[@]}"; do
        start=$(date +%s%N)
        "$render" "$tmp/$p.json" > "$www/$p.html" || bad "$p: render_page failed"
        ms=$(( ($(date +%s%N) - start) / 1000000 ))
        echo "# $p: $(stat -c %s "$www/$p.html") bytes, rendered in ${ms} ms (process included)"
done

# One probe page (the test's own JavaScript, never the status page's): each page in a 360 px wide
# frame, its scroll width written into the DOM once all have loaded.
{
        echo '<!DOCTYPE html><html><body><pre id="out"></pre>'
        for p in "${pages[@]}"; do echo "<iframe id=\"$p\" src=\"$p.html\" style=\"width:360px;height:640px;border:0\"></iframe>"; done
        echo '<script>window.onload=function(){var o="";document.querySelectorAll("iframe").forEach(function(f){'
        echo 'var d=f.contentDocument.documentElement;o+=f.id+" "+d.scrollWidth+"\n";});'
        echo 'document.getElementById("out").textContent=o;};</script></body></html>'
} > "$www/probe.html"

# A real HTTP server for the pages: Debian's python3, on a free port.
$python -u -m http.server 0 --bind 127.0.0.1 --directory "$www" > "$tmp/server.log" 2>&1 &
server=$!
port=
for _ in $(seq 50); do
        port=$(sed -n 's/.*port \([0-9]*\).*/\1/p' "$tmp/server.log" | head -1)
        [ -n "$port" ] && break
        sleep 0.1
done
[ -n "$port" ] || { echo "FAIL: http.server did not start"; cat "$tmp/server.log"; exit 1; }
base=http://127.0.0.1:$port

for p in "${pages[@]}"; do
        dom=$tmp/$p.dom
        browser --dump-dom "$base/$p.html" > "$dom"
        [ -s "$dom" ] && ok || { bad "$p: chromium dumped no DOM"; continue; }
        grep -qi '<script' "$dom" && bad "$p: a <script> element in the DOM" || ok
        [ "$(grep -c '<section class="layer" id="layer-[1-4]">' "$dom")" = 4 ] && ok || bad "$p: not four layer sections"
        grep -q 'href="/metrics"' "$dom" && grep -q 'href="/report"' "$dom" && ok || bad "$p: links to /metrics and /report missing"
        grep -q '<meta name="viewport"' "$dom" && ok || bad "$p: no viewport meta"
        case $p in
        hgx-h100-healthy)
                grep -q '<p class="vword">✓ healthy</p>' "$dom" && ok || bad "$p: verdict healthy not shown"
                grep -q 'None: nothing failed.' "$dom" && ok || bad "$p: no 'no root cause' line"
                ;;
        *)
                grep -q '<p class="vword">✗ failed</p>' "$dom" && ok || bad "$p: verdict failed not shown"
                grep -q '<code class="rc-check">driver.gpu-fallen-off-bus</code>' "$dom" && ok \
                        || bad "$p: root-cause check id not shown"
                grep -q '<p class="remedy"><strong>Remedy:</strong> cordon and drain the node' "$dom" && ok \
                        || bad "$p: root-cause remedy not shown"
                ;;
        esac
        case $p in
        gpu-xid79-held-by-pod)
                grep -q '<section id="gpus">' "$dom" && grep -q 'ml/llama-ft-worker-0' "$dom" && ok \
                        || bad "$p: GPU table or the pod holding GPU 4 missing"
                ;;
        hostile)
                grep -qF '&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt; "dq" '"'"'sq'"'"' &amp; done' "$dom" \
                        && ok || bad "$p: the hostile evidence is not shown as text"
                grep -qi '<img' "$dom" && bad "$p: an <img> element from the evidence" || ok
                grep -qF '<title>gpunode: &lt;/title&gt;&lt;script&gt;alert(3)&lt;/script&gt; - FAILED</title>' "$dom" \
                        && ok || bad "$p: the hostile node name is not escaped in the title"
                ;;
        esac
        for shot in phone:390,844 desktop:1280,900; do
                png=$tmp/shots/$p-${shot%%:*}.png
                browser --screenshot="$png" --window-size="${shot#*:}" "$base/$p.html" > /dev/null
                if [ -s "$png" ] && [ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]; then ok
                else bad "$p: no ${shot%%:*} screenshot"; fi
        done
done

# No horizontal scroll at 360 px.
browser --virtual-time-budget=10000 --dump-dom "$base/probe.html" > "$tmp/probe.dom"
for p in "${pages[@]}"; do
        w=$(tr ">" "\n" < "$tmp/probe.dom" | sed -n "s/^$p \([0-9]*\)$/\1/p")
        echo "# $p: width at 360 px: ${w:-?} px"
        [ -n "$w" ] && [ "$w" -le 360 ] && ok || bad "$p: scroll width at 360 px is '${w}', wider than the screen"
done

if [ "$update" = --update-docs ]; then
        mkdir -p "$root/docs"
        cp "$tmp/shots/hgx-h100-healthy-phone.png" "$root/docs/status-page-healthy.png"
        cp "$tmp/shots/gpu-xid79-held-by-pod-phone.png" "$root/docs/status-page-failing.png"
fi
echo "status page: $passed passed, $failed failed"
[ "$failed" -eq 0 ] || { echo "--- chromium log (tail)"; tail -5 "$tmp/chromium.log"; }
[ "$failed" -eq 0 ]
