#!/bin/bash
# run-snapshot-tests.sh: for every node scenario, `gpunode collect` from its root, fake NVML and (k8s-*)
# live API and metrics servers, then, with the servers stopped, `gpunode check --snapshot` must give
# the very report `gpunode check` gave on the node (JSON and text, exit code); collecting must leave
# the root untouched and the temporary folder must go. Then: the manifest, redaction, old snapshots,
# hostile API indexes.
# usage: run-snapshot-tests.sh GPUNODE FAKE_NVML_LIB [SCENARIO...]
set -u
gpunode=$1 fake=$2
shift 2
here=$(cd "$(dirname "$0")/.." && pwd)
scenarios=("$@")
if [ ${#scenarios[@]} -eq 0 ]; then
        for d in "$here"/scenarios/*/; do scenarios+=("$(basename "$d")"); done
fi
tmp=$(mktemp -d)
# The scenarios' live peers, as run-scenarios.sh starts them: setup_servers, fill_ports, stop_servers, no_cluster_env.
. "$here/scenario-servers.sh"
trap 'stop_servers; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
mkdir "$tmp/tmpdir"
passed=0 failed=0
fail() { echo "FAIL $*"; failed=$((failed + 1)); }
for name in "${scenarios[@]}"; do
        dir=$here/scenarios/$name
        read -r -a extra < "$dir/args"
        if ! setup_servers "$dir"; then
                fail "$name: a test server did not start"; stop_servers; continue
        fi
        fill_ports
        # Options that steer the judging, not what is read (--expect-gpus N): not collect's; the replay takes them.
        collect_args=() judge_args=()
        for ((i = 0; i < ${#extra[@]}; i++)); do
                if [ "${extra[i]}" = --expect-gpus ]; then judge_args+=("${extra[i]}" "${extra[i + 1]}"); i=$((i + 1))
                else collect_args+=("${extra[i]}"); fi
        done
        before=$(cd "$dir/root" && find . -printf '%p %y %s %T@ %m\n' | sort | md5sum)
        if ! "${no_cluster_env[@]}" GPUNODE_FAKE_NVML=$dir/nvml.json NODE_NAME= timeout 60 "$gpunode" collect \
                -o "$tmp/$name.tar.gz" --root "$dir/root" --nvml-library "$fake" --node "$name" "${kube_args[@]}" \
                "${collect_args[@]}" 2> "$tmp/$name.collect.err"; then
                fail "$name: collect failed"; cat "$tmp/$name.collect.err"; stop_servers; continue
        fi
        after=$(cd "$dir/root" && find . -printf '%p %y %s %T@ %m\n' | sort | md5sum)
        [ "$before" = "$after" ] || fail "$name: collect changed the root"
        for fmt in json text; do
                "${no_cluster_env[@]}" GPUNODE_FAKE_NVML=$dir/nvml.json NO_COLOR=1 NODE_NAME= timeout 60 "$gpunode" check \
                        --root "$dir/root" --nvml-library "$fake" --node "$name" --output "$fmt" "${kube_args[@]}" "${extra[@]}" \
                        > "$tmp/$name.node.$fmt" 2>/dev/null
                echo "exit $?" >> "$tmp/$name.node.$fmt"
        done
        # Offline from here: the servers are gone, nothing may be asked again.
        stop_servers
        for fmt in json text; do
                "${no_cluster_env[@]}" TMPDIR=$tmp/tmpdir NO_COLOR=1 NODE_NAME=elsewhere timeout 60 "$gpunode" check \
                        --snapshot "$tmp/$name.tar.gz" --output "$fmt" "${judge_args[@]}" > "$tmp/$name.snap.$fmt" \
                        2> "$tmp/$name.snap.err"
                echo "exit $?" >> "$tmp/$name.snap.$fmt"
                # The replay's time is the collection's, a moment before the node's own check.
                report_placeholders "$tmp/$name.node.$fmt" "$tmp/$name.snap.$fmt"
                if ! diff -u "$tmp/$name.node.$fmt" "$tmp/$name.snap.$fmt" > "$tmp/diff"; then
                        fail "$name ($fmt): check --snapshot differs from check on the node"; head -40 "$tmp/diff"
                        echo "(check --snapshot: $(tail -n 1 "$tmp/$name.snap.$fmt"); stderr:)"; cat "$tmp/$name.snap.err"; continue
                fi
                if [ -s "$tmp/$name.snap.err" ]; then
                        fail "$name ($fmt): check --snapshot wrote to stderr:"; cat "$tmp/$name.snap.err"; continue
                fi
                if [ -n "$(ls -A "$tmp/tmpdir")" ]; then
                        fail "$name ($fmt): temporary folder left behind: $(ls "$tmp/tmpdir")"; rm -rf "${tmp:?}/tmpdir/"*; continue
                fi
                echo "ok   $name ($fmt)"
                passed=$((passed + 1))
        done
done

# The manifest: schema, every member listed with size and sha256, redaction rules present.
s=$tmp/${scenarios[0]}.tar.gz
/usr/bin/python3 - "$s" <<'PY' || fail "manifest of ${scenarios[0]}"
import hashlib, json, sys, tarfile
t = tarfile.open(sys.argv[1])
names = t.getnames()
m = json.load(t.extractfile("MANIFEST.json"))
assert m["schema"] == "gpunode.snapshot/v1", m["schema"]
for k in ("gpunode_version", "created", "node", "root", "members", "redacted", "unreadable", "redaction_rules", "kmsg", "nvml"):
    assert k in m, k
listed = {x["name"]: x for x in m["members"]}
for n in names:
    if n == "MANIFEST.json":
        continue
    assert n.rstrip("/") in listed or n in listed, "not in manifest: " + n
    x = listed.get(n) or listed.get(n.rstrip("/"))
    if x["type"] == "file":
        data = t.extractfile(n).read()
        assert x["size"] == len(data), n
        if "sha256" in x:
            assert x["sha256"] == hashlib.sha256(data).hexdigest(), n
assert names[-1] == "MANIFEST.json"
print("ok   manifest lists %d members with sizes and sha256" % len(listed))
PY

# Redaction: environments, mounted secrets, keys and kubeconfig credentials never leave the node.
r=$tmp/redact-root
mkdir -p "$r/proc/42" "$r/var/run/secrets/kubernetes.io/serviceaccount" "$r/etc/kubernetes/pki" "$r/proc/sys/kernel"
printf 'PATH=/bin\0AWS_SECRET_ACCESS_KEY=hunter2\0' > "$r/proc/42/environ"
echo nvidia-smi > "$r/proc/42/comm"
echo redact-node > "$r/proc/sys/kernel/hostname"
echo 'eyJhbGciOiJSUzI1NiJ9.sa-token' > "$r/var/run/secrets/kubernetes.io/serviceaccount/token"
printf -- '-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq\n-----END PRIVATE KEY-----\n' > "$r/etc/kubernetes/pki/apiserver.key"
cat > "$r/etc/kubernetes/kubelet.conf" <<'YAML'
apiVersion: v1
kind: Config
clusters:
- cluster:
    server: https://10.0.0.1:6443
  name: default
users:
- name: default-auth
  user:
    token: sha256~verysecret
    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQ==
YAML
/usr/bin/python3 - "$gpunode" "$r" "$tmp/redact.tar.gz" <<'PY' || fail "redaction"
import json, subprocess, sys, tarfile
gpunode, root, out = sys.argv[1:4]
# The process probe lists /proc and reads /proc/42/comm: environ must not follow (the other rules
# are unit-tested in tests/unit/test_snapshot.c).
r = subprocess.run([gpunode, "collect", "-o", out, "--root", root, "--node", "r"], capture_output=True, text=True,
                   env={"NODE_NAME": "", "PATH": "/usr/bin:/bin"})
assert r.returncode == 0, r.stderr
t = tarfile.open(out)
blob = b"".join(t.extractfile(m).read() for m in t.getmembers() if m.isfile())
assert b"hunter2" not in blob, "environ copied"
assert "root/proc/42/environ" not in t.getnames(), "environ listed"
m = json.load(t.extractfile("MANIFEST.json"))
assert any(x["path"] == "/proc/42/environ" and x["action"] == "omitted" for x in m["redacted"]) or \
       "root/proc/42/comm" in t.getnames(), m["redacted"]
print("ok   redaction: process environment never copied")
PY
# API responses: credentials in pods (env values, token annotations, last-applied-configuration,
# --token arguments) never reach the archive; the report replays the same all the same.
src=$here/scenarios/k8s-healthy
if [ -d "$src" ]; then
        leaky=$tmp/leaky
        mkdir -p "$leaky"
        cp -r "$src/api" "$leaky/api"
        ln -s "$src/metrics" "$leaky/metrics"
        /usr/bin/python3 - "$leaky/api/api/v1/pods?fieldSelector=spec.nodeName=k8s-healthy.json" <<'PY'
import json, sys
p = sys.argv[1]
d = json.load(open(p))
pod = d["items"][0]
pod["metadata"].setdefault("annotations", {}).update({
    "example.com/api-token": "leak-annotation-0001",
    "kubectl.kubernetes.io/last-applied-configuration": '{"env":[{"name":"A","value":"leak-applied-0002"}]}'})
c = pod["spec"]["containers"][0]
c["env"] = [{"name": "AWS_SECRET_ACCESS_KEY", "value": "leak-env-0003"}, {"name": "MODE", "value": "leak-env-0004"}]
c["args"] = ["--token=leak-arg-0005", "--password", "leak-arg-0006", "--verbose"]
json.dump(d, open(p, "w"))
PY
        read -r -a extra < "$src/args"
        if setup_servers "$leaky"; then
                fill_ports
                "${no_cluster_env[@]}" GPUNODE_FAKE_NVML=$src/nvml.json NODE_NAME= "$gpunode" collect -o "$tmp/leaky.tar.gz" \
                        --root "$src/root" --nvml-library "$fake" --node k8s-healthy "${kube_args[@]}" "${extra[@]}" 2> /dev/null
                "${no_cluster_env[@]}" GPUNODE_FAKE_NVML=$src/nvml.json NO_COLOR=1 NODE_NAME= "$gpunode" check --root "$src/root" \
                        --nvml-library "$fake" --node k8s-healthy --output json "${kube_args[@]}" "${extra[@]}" > "$tmp/leaky.node" 2> /dev/null
                stop_servers
                TMPDIR=$tmp/tmpdir "$gpunode" check --snapshot "$tmp/leaky.tar.gz" --output json > "$tmp/leaky.snap" 2> /dev/null
                /usr/bin/python3 - "$tmp/leaky.tar.gz" <<'PY' || fail "API response redaction"
import json, sys, tarfile
t = tarfile.open(sys.argv[1])
blob = b"".join(t.extractfile(m).read() for m in t.getmembers() if m.isfile())
leaks = [s for s in (b"leak-annotation-0001", b"leak-applied-0002", b"leak-env-0003", b"leak-env-0004",
                     b"leak-arg-0005", b"leak-arg-0006", b"scenario-token-0123456789") if s in blob]
assert not leaks, leaks
m = json.load(t.extractfile("MANIFEST.json"))
r = [x for x in m["redacted"] if x["path"].startswith("api/")]
assert r and r[0]["count"] == 6, r
print("ok   API responses: env values, token annotations and arguments redacted (%d)" % r[0]["count"])
PY
                report_placeholders "$tmp/leaky.node" "$tmp/leaky.snap"
                cmp -s "$tmp/leaky.node" "$tmp/leaky.snap" || fail "API redaction changed the replayed report"
        else
                fail "leaky: a test server did not start"; stop_servers
        fi
fi

# A snapshot of another node name, or without API answers (older gpunode), never asks the network:
# every request answers "not in the snapshot".
k=$tmp/k8s-healthy.tar.gz
if [ -f "$k" ]; then
        out=$(TMPDIR=$tmp/tmpdir "$gpunode" check --snapshot "$k" --node other-node --output json 2>&1)
        grep -q 'no cluster access: GET https://127.0.0.1:[0-9]*/api/v1/nodes/other-node: not in the snapshot' <<< "$out" \
                && echo "ok   --node other than collected: not in the snapshot" || fail "--node other: $(grep -m1 api-access -A3 <<< "$out")"
        out=$(TMPDIR=$tmp/tmpdir "$gpunode" check --snapshot "$k" --kubeconfig /dev/null 2>&1)
        [ $? = 64 ] && grep -q "cannot be given again" <<< "$out" && echo "ok   --snapshot refuses --kubeconfig" \
                || fail "--snapshot --kubeconfig: $out"
        /usr/bin/python3 - "$k" "$tmp" <<'PY'
import io, sys, tarfile
src, tmp = sys.argv[1:3]
t = tarfile.open(src)
members = [(m, t.extractfile(m).read() if m.isfile() else None) for m in t.getmembers()]
def write(name, index=None, drop_api=False):
    with tarfile.open("%s/%s.tar.gz" % (tmp, name), "w:gz") as o:
        for m, data in members:
            if m.name.startswith("api/") and (drop_api or (index is not None and m.name == "api/INDEX.json")):
                continue
            o.addfile(m, io.BytesIO(data) if data is not None else None)
        if index is not None:
            i = tarfile.TarInfo("api/INDEX.json"); i.size = len(index); o.addfile(i, io.BytesIO(index))
write("old", drop_api=True)
write("idx-garbage", index=b"\x00\xff garbage {")
write("idx-schema", index=b'{"schema": "x", "exchanges": []}')
write("idx-dotdot", index=b'{"schema": "gpunode.snapshot-api/v1", "exchanges": [{"kind": "api", "request": "/api/v1/nodes/n", '
                           b'"status": 200, "error": null, "member": "api/../root/etc/passwd.json"}]}')
write("idx-huge", index=b'{"schema": "gpunode.snapshot-api/v1", "exchanges": [' + b" " * (17 << 20) + b"]}")
write("idx-many", index=b'{"schema": "gpunode.snapshot-api/v1", "exchanges": [' +
      b",".join([b'{"kind":"api","request":"/x","error":{"class":"timeout","message":"m"}}'] * 10001) + b"]}")
write("idx-class", index=b'{"schema": "gpunode.snapshot-api/v1", "exchanges": [{"kind": "api", "request": "/x", '
                          b'"error": {"class": "exploded", "message": "m"}}]}')
PY
        out=$(TMPDIR=$tmp/tmpdir "$gpunode" check --snapshot "$tmp/old.tar.gz" --output json 2>&1)
        grep -q 'no cluster access: the snapshot holds no Kubernetes API answers' <<< "$out" && ! grep -q '"dcgm-exporter.metrics".*"fail"' <<< "$out" \
                && echo "ok   a snapshot without api/: no cluster access, nothing fetched" || fail "old snapshot: $(head -c 600 <<< "$out")"
        for bad in garbage schema dotdot huge many class; do
                out=$(TMPDIR=$tmp/tmpdir "$gpunode" check --snapshot "$tmp/idx-$bad.tar.gz" 2>&1)
                rc=$?
                if [ $rc = 65 ] && grep -q "api/INDEX.json" <<< "$out" && [ -z "$(ls -A "$tmp/tmpdir")" ]; then
                        echo "ok   hostile api/INDEX.json ($bad) refused: ${out#gpunode check: }"
                else
                        fail "hostile api/INDEX.json ($bad): exit $rc: $out"; rm -rf "${tmp:?}/tmpdir/"*
                fi
        done
fi
# Replaying the API under valgrind's memcheck (a sanitizer build checks the same by itself).
if command -v valgrind > /dev/null && ! ldd "$gpunode" | grep -q libasan; then
        for name in k8s-healthy k8s-api-hang k8s-dcgm-exporter-down; do
                [ -f "$tmp/$name.tar.gz" ] || continue
                if TMPDIR=$tmp/tmpdir valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite,indirect \
                        --show-leak-kinds=definite,indirect "$gpunode" check --snapshot "$tmp/$name.tar.gz" --output json \
                        > /dev/null 2> "$tmp/valgrind.err"; [ $? -ne 99 ]; then
                        echo "ok   valgrind: check --snapshot $name"
                else
                        fail "valgrind: check --snapshot $name"; cat "$tmp/valgrind.err"
                fi
        done
fi
echo "snapshot tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
