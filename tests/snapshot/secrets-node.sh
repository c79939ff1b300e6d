#!/bin/bash
# secrets-node.sh: a healthy node (the k8s-healthy scenario) full of secrets: registry credentials in
# containerd's config.toml (an auth table with multi-line strings, an inline auth table,
# registry.headers Authorization, a mirror URL with user:password), a one-line daemon.json with auth,
# proxy and mirror credentials, credential arguments on dockerd's and containerd's command lines,
# secrets in the CDI spec (YAML), the kubeconfig's token and basic-auth user, Bearer tokens, httpHeaders
# and password-holding annotations in the pods the API serves, a token label on a metrics page.
# `gpunode collect` must leave none of them anywhere in the archive (every member, names and headers
# included), every redacted file must still parse, and `check --snapshot` must give the very report
# `check` gave on the node, which must be healthy.
# usage: secrets-node.sh GPUNODE FAKE_NVML_LIB
set -u
gpunode=$1 fake=$2
here=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
# The scenario's live peers: setup_servers, fill_ports, stop_servers, no_cluster_env.
. "$here/scenario-servers.sh"
trap 'stop_servers; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
failed=0
fail() { echo "FAIL $*"; failed=$((failed + 1)); }
ok() { echo "ok   $*"; }

src=$here/scenarios/k8s-healthy
node=$tmp/node
cp -a "$src" "$node"
root=$node/root

# Every secret planted below, one a line: none may reach the archive.
cat > "$tmp/secrets" <<'EOF'
s3cr3t-ml-basic-0001
s3cr3t-ml-basic-0002
s3cr3t-ml-literal-0003
s3cr3t-inline-0004
czNjcjN0LWF1dGgtMDAwNQ==
s3cr3t-idtoken-0006
s3cr3t-header-0007
s3cr3t-mirror-0008
s3cr3t-daemon-mirror-0009
s3cr3t-daemon-proxy-0010
ZGFlbW9uOnMzY3IzdC0wMDEx
s3cr3t-basic-0012
s3cr3t-password-0013
s3cr3t-aws-0014
s3cr3t-bearer-0015
s3cr3t-url-0016
s3cr3t-containerd-0017
s3cr3t-cdi-env-0018
s3cr3t-cdi-annotation-0019
s3cr3t-cdi-url-0020
s3cr3t-kubeconfig-0021
s3cr3t-pod-bearer-0022
s3cr3t-http-header-0023
s3cr3t-annotation-0024
s3cr3t-annotation-url-0025
s3cr3t-node-annotation-0026
s3cr3t-metrics-label-0027
s3cr3t-metrics-url-0028
scenario-token-0123456789
EOF

# containerd: the registry settings that nodes are bootstrapped with; the file keeps its time (the
# config-applied check compares it with containerd's start).
conf=$root/etc/containerd/config.toml
cat >> "$conf" <<'EOF'
  [plugins."io.containerd.grpc.v1.cri".registry.configs."registry.example.com".auth]
    username = "robot$ci"
    password = """
s3cr3t-ml-basic-0001
s3cr3t-ml-basic-0002"""
    identitytoken = '''s3cr3t-ml-literal-0003
'''
  [plugins."io.containerd.grpc.v1.cri".registry.configs."gcr.io"]
    auth = { username = "_json_key", password = "s3cr3t-inline-0004", auth = "czNjcjN0LWF1dGgtMDAwNQ==" }
  [plugins."io.containerd.grpc.v1.cri".registry.configs."nvcr.io".auth]
    identitytoken = "s3cr3t-idtoken-0006"
  [plugins."io.containerd.grpc.v1.cri".registry.headers]
    Authorization = ["Bearer s3cr3t-header-0007"]
    X-Meta-Source = ["node-setup"]
  [plugins."io.containerd.grpc.v1.cri".registry.mirrors."docker.io"]
    endpoint = ["https://mirror:s3cr3t-mirror-0008@mirror.example.com", "https://registry-1.docker.io"]
EOF
touch -r "$src/root/etc/containerd/config.toml" "$conf"

# Docker's daemon.json on one line, as configuration management writes it.
mkdir -p "$root/etc/docker"
printf '%s\n' '{"default-runtime":"nvidia","runtimes":{"nvidia":{"path":"nvidia-container-runtime","args":[]}},"registry-mirrors":["https://mirror:s3cr3t-daemon-mirror-0009@mirror.example.com"],"proxies":{"http-proxy":"http://proxy:s3cr3t-daemon-proxy-0010@proxy.corp:3128","no-proxy":"localhost"},"auth":"ZGFlbW9uOnMzY3IzdC0wMDEx"}' \
        > "$root/etc/docker/daemon.json"
touch -r "$conf" "$root/etc/docker/daemon.json"

# Command lines: a dockerd with credential arguments of every form, containerd with one more.
mkdir -p "$root/proc/900"
echo dockerd > "$root/proc/900/comm"
printf '%s\0' /usr/bin/dockerd --config-file /etc/docker/daemon.json --basic-auth=admin:s3cr3t-basic-0012 \
        --password s3cr3t-password-0013 AWS_SECRET_ACCESS_KEY=s3cr3t-aws-0014 -H 'Authorization: Bearer s3cr3t-bearer-0015' \
        --registry-mirror=https://u:s3cr3t-url-0016@mirror.example.com > "$root/proc/900/cmdline"
printf '%s\0' /usr/bin/containerd --config /etc/containerd/config.toml --registry-token=s3cr3t-containerd-0017 \
        > "$root/proc/812/cmdline"
touch -r "$src/root/proc/812" "$root/proc/812" "$root/proc/900"

# The CDI spec (YAML): a secret in an env entry and in annotations, one a block scalar.
cdi=$root/var/run/cdi/nvidia.yaml
sed -i 's|^  - NVIDIA_VISIBLE_DEVICES=void$|  - NVIDIA_VISIBLE_DEVICES=void\n  - REGISTRY_TOKEN=s3cr3t-cdi-env-0018|' "$cdi"
cat >> "$cdi" <<'EOF'
annotations:
  example.com/registry-password: s3cr3t-cdi-annotation-0019
  example.com/notes: |
    pulled with https://robot:s3cr3t-cdi-url-0020@nvcr.io
EOF
touch -r "$src/root/var/run/cdi/nvidia.yaml" "$cdi"

# The API: Bearer tokens in commands, httpHeaders, annotations holding a password or a URL with one.
/usr/bin/python3 - "$node/api/api/v1/pods?fieldSelector=spec.nodeName=k8s-healthy.json" "$node/api/api/v1/nodes/k8s-healthy.json" <<'PY'
import json, sys
pods, node = sys.argv[1:3]
d = json.load(open(pods))
pod = d["items"][0]
pod["metadata"].setdefault("annotations", {}).update({
    "example.com/db-config": "host=db user=app password=s3cr3t-annotation-0024 sslmode=require",
    "example.com/backend": "postgres://app:s3cr3t-annotation-url-0025@db:5432/app"})
c = pod["spec"]["containers"][0]
c["command"] = ["/bin/sh", "-c", "exec curl -sf -H 'Authorization: Bearer s3cr3t-pod-bearer-0022' http://127.0.0.1:9400/health"]
c["livenessProbe"] = {"httpGet": {"path": "/healthz", "port": 8080, "httpHeaders": [
    {"name": "Authorization", "value": "Bearer s3cr3t-http-header-0023"}, {"name": "X-Probe", "value": "liveness"}]}}
json.dump(d, open(pods, "w"))
n = json.load(open(node))
n["metadata"].setdefault("annotations", {})["example.com/bmc-password"] = "s3cr3t-node-annotation-0026"
json.dump(n, open(node, "w"))
PY

# A metrics page with a token label and a URL with credentials in a label value.
cat >> "$node/metrics/node/metrics" <<'EOF'
# HELP node_textfile_scrape_target A textfile collector's idea of where it was scraped from.
# TYPE node_textfile_scrape_target gauge
node_textfile_scrape_target{token="s3cr3t-metrics-label-0027",url="https://scraper:s3cr3t-metrics-url-0028@exporter:9100/"} 1
EOF

read -r -a extra < "$node/args"
if ! setup_servers "$node"; then
        fail "a test server did not start"
        exit 1
fi
fill_ports
# The kubeconfig: the scenario's token, and a user with basic auth and a cluster URL with credentials
# that the current context does not use.
cat > "$tmp/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: scenario
  cluster:
    server: https://127.0.0.1:$api_port
    certificate-authority: $tmp/certs/ca.crt
- name: mirror
  cluster:
    server: https://admin:s3cr3t-kubeconfig-0021@10.0.0.1:6443
users:
- name: scenario
  user:
    token: scenario-token-0123456789
- name: basic
  user:
    username: admin
    password: s3cr3t-kubeconfig-0021
contexts:
- name: scenario
  context: {cluster: scenario, user: scenario}
current-context: scenario
EOF

env=("${no_cluster_env[@]}" GPUNODE_FAKE_NVML=$node/nvml.json NO_COLOR=1 NODE_NAME=)
if ! "${env[@]}" timeout 60 "$gpunode" collect -o "$tmp/node.tar.gz" --root "$root" --nvml-library "$fake" \
        --node k8s-healthy "${kube_args[@]}" "${extra[@]}" 2> "$tmp/collect.err"; then
        fail "collect failed"; cat "$tmp/collect.err"; exit 1
fi
"${env[@]}" timeout 60 "$gpunode" check --root "$root" --nvml-library "$fake" --node k8s-healthy --output json \
        "${kube_args[@]}" "${extra[@]}" > "$tmp/node.json" 2> "$tmp/node.err"
echo "exit $?" >> "$tmp/node.json"
stop_servers

# No secret anywhere: the whole tar stream (member names, pax headers, contents) and each member.
if zcat "$tmp/node.tar.gz" | grep -a -o -F -f "$tmp/secrets" > "$tmp/leaks"; then
        fail "secrets in the archive: $(sort -u "$tmp/leaks" | tr '\n' ' ')"
else
        ok "no secret in the archive ($(wc -l < "$tmp/secrets") planted)"
fi
mkdir "$tmp/x"
tar -xzf "$tmp/node.tar.gz" -C "$tmp/x"
if grep -r -a -l -F -f "$tmp/secrets" "$tmp/x" > "$tmp/leaky-members"; then
        fail "members holding secrets: $(sed "s|$tmp/x/||" "$tmp/leaky-members" | tr '\n' ' ')"
else
        ok "no member holds a secret ($(find "$tmp/x" -type f | wc -l) files)"
fi

# What was redacted still parses, with the values replaced.
/usr/bin/python3 - "$tmp/x" <<'PY' || fail "redacted files do not parse as they should"
import json, sys, tomllib
x = sys.argv[1]
t = tomllib.load(open(x + "/root/etc/containerd/config.toml", "rb"))
reg = t["plugins"]["io.containerd.grpc.v1.cri"]["registry"]
assert reg["config_path"] == "/etc/containerd/certs.d", reg
assert reg["configs"]["registry.example.com"]["auth"]["password"] == "REDACTED", reg
assert reg["configs"]["gcr.io"]["auth"] == {"username": "_json_key", "password": "REDACTED", "auth": "REDACTED"}, reg
assert reg["headers"] == {"Authorization": ["REDACTED"], "X-Meta-Source": ["node-setup"]}, reg
assert reg["mirrors"]["docker.io"]["endpoint"] == ["https://REDACTED@mirror.example.com", "https://registry-1.docker.io"], reg
d = json.load(open(x + "/root/etc/docker/daemon.json"))
assert d["auth"] == "REDACTED" and d["proxies"]["http-proxy"] == "http://REDACTED@proxy.corp:3128", d
assert d["runtimes"]["nvidia"]["path"] == "nvidia-container-runtime", d
args = open(x + "/root/proc/900/cmdline", "rb").read().split(b"\0")
assert b"--basic-auth=REDACTED" in args and b"Authorization: Bearer REDACTED" in args, args
assert open(x + "/root/proc/812/cmdline", "rb").read().split(b"\0")[1:3] == [b"--config", b"/etc/containerd/config.toml"]
m = json.load(open(x + "/MANIFEST.json"))
paths = {r["path"] for r in m["redacted"]}
for p in ("/etc/containerd/config.toml", "/etc/docker/daemon.json", "/proc/900/cmdline", "/var/run/cdi/nvidia.yaml"):
    assert p in paths, (p, sorted(paths))
print("ok   containerd config.toml (tomllib), daemon.json, cmdlines: values replaced, structure kept; manifest lists them")
PY
/usr/bin/python3 -c 'import sys, yaml; yaml.safe_load(open(sys.argv[1]))' "$tmp/x/root/var/run/cdi/nvidia.yaml" 2> "$tmp/yaml.err" \
        && ok "CDI spec still parses (PyYAML)" || { grep -q "No module named" "$tmp/yaml.err" || fail "CDI spec: $(cat "$tmp/yaml.err")"; }

# The replay: the same report, and a healthy one (a half-redacted TOML string once made it layer 2).
TMPDIR=$tmp "${no_cluster_env[@]}" NO_COLOR=1 NODE_NAME=elsewhere timeout 60 "$gpunode" check --snapshot "$tmp/node.tar.gz" \
        --output json > "$tmp/snap.json" 2> "$tmp/snap.err"
echo "exit $?" >> "$tmp/snap.json"
report_placeholders "$tmp/node.json" "$tmp/snap.json"
if diff -u "$tmp/node.json" "$tmp/snap.json" > "$tmp/diff"; then
        ok "check --snapshot gives the node's report"
else
        fail "check --snapshot differs from check on the node"; head -40 "$tmp/diff"; cat "$tmp/snap.err"
fi
grep -q '"verdict": "healthy"' "$tmp/node.json" && tail -n 1 "$tmp/node.json" | grep -qx "exit 0" \
        && ok "the node full of secrets is healthy" \
        || fail "the node is not healthy: $(grep -m3 -E '"(verdict|summary)"' "$tmp/node.json")"
[ -s "$tmp/snap.err" ] && fail "check --snapshot wrote to stderr: $(cat "$tmp/snap.err")"
echo "secrets node: $failed failed"
[ "$failed" -eq 0 ]
