#!/bin/bash
# run-snapshot-tests.sh: for every node scenario, `gpunode collect` from its root and fake NVML, then
# `gpunode check --snapshot` must give the very report `gpunode check` gives on the node (JSON and
# text, exit code); collecting must leave the root untouched and the temporary folder must go.
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
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/tmpdir"
passed=0 failed=0
fail() { echo "FAIL $*"; failed=$((failed + 1)); }
for name in "${scenarios[@]}"; do
        dir=$here/scenarios/$name
        read -r -a extra < "$dir/args"
        # Scenarios that need live peers (a Kubernetes API, DCGM endpoints: --kubeconfig, --dcgm-url,
        # ...) are left out: the API is not replayed offline yet.
        if [ ${#extra[@]} -gt 0 ] && [ "${extra[0]}" != --nvml-timeout ]; then echo "skip $name (live peers)"; continue; fi
        before=$(cd "$dir/root" && find . -printf '%p %y %s %T@ %m\n' | sort | md5sum)
        if ! GPUNODE_FAKE_NVML=$dir/nvml.json NODE_NAME= "$gpunode" collect -o "$tmp/$name.tar.gz" --root "$dir/root" \
                --nvml-library "$fake" --node "$name" "${extra[@]}" 2> "$tmp/$name.collect.err"; then
                fail "$name: collect failed"; cat "$tmp/$name.collect.err"; continue
        fi
        after=$(cd "$dir/root" && find . -printf '%p %y %s %T@ %m\n' | sort | md5sum)
        [ "$before" = "$after" ] || fail "$name: collect changed the root"
        for fmt in json text; do
                GPUNODE_FAKE_NVML=$dir/nvml.json NO_COLOR=1 NODE_NAME= "$gpunode" check --root "$dir/root" \
                        --nvml-library "$fake" --node "$name" --output "$fmt" "${extra[@]}" > "$tmp/$name.node.$fmt" 2>/dev/null
                echo "exit $?" >> "$tmp/$name.node.$fmt"
                TMPDIR=$tmp/tmpdir NO_COLOR=1 NODE_NAME=elsewhere "$gpunode" check --snapshot "$tmp/$name.tar.gz" \
                        --output "$fmt" > "$tmp/$name.snap.$fmt" 2> "$tmp/$name.snap.err"
                echo "exit $?" >> "$tmp/$name.snap.$fmt"
                # Kubernetes API responses are not replayed yet (check --snapshot is offline): the
                # reason for "no cluster access" differs, nothing else may.
                sed -i -E 's/no cluster access: [^"]*/no cluster access: @OFFLINE@/' "$tmp/$name.node.$fmt" "$tmp/$name.snap.$fmt"
                if ! diff -u "$tmp/$name.node.$fmt" "$tmp/$name.snap.$fmt" > "$tmp/diff"; then
                        fail "$name ($fmt): check --snapshot differs from check on the node"; head -40 "$tmp/diff"; continue
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
echo "snapshot tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
