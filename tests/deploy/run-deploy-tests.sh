#!/bin/bash
# run-deploy-tests.sh SOURCE_ROOT: validates deploy/ (meson test --suite deploy).
#   yamllint; every manifest against the Kubernetes and Prometheus Operator schemas
#   (kubernetes-models, @kubernetes-models/prometheus-operator: validate.mjs, which also proves the
#   schemas reject broken copies and asserts RBAC least privilege); promtool check rules and
#   promtool test rules on the PrometheusRule's groups; kustomize's renders (`kubectl kustomize`, else
#   `kustomize build`) of deploy/ alone, with each component, and with all of them (renders.mjs).
# The npm packages are installed into tests/deploy/node_modules from the committed package-lock.json
# when they are missing (npm ci; scripts/install-deps.sh does the same).
set -euo pipefail
root=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
here=$root/tests/deploy
deploy=$root/deploy
for tool in node npm yamllint promtool; do
        command -v "$tool" >/dev/null || { echo "run-deploy-tests: $tool not found (scripts/install-deps.sh)" >&2; exit 1; }
done
if [ ! -e "$here/node_modules/kubernetes-models/package.json" ] ||
   [ ! -e "$here/node_modules/@kubernetes-models/prometheus-operator/package.json" ] ||
   [ ! -e "$here/node_modules/yaml/package.json" ]; then
        echo "# npm ci --prefix tests/deploy"
        npm ci --prefix "$here" --no-audit --no-fund
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "# yamllint deploy/"
yamllint -d '{extends: default, rules: {line-length: {max: 120}, document-start: disable}}' "$deploy"
echo "ok - yamllint"

echo "# validate.mjs"
node "$here/validate.mjs" "$deploy" "$root" "$tmp/rules.yaml"

# kustomize: the install path (`kubectl apply -k deploy/`) rendered as kubectl renders it, with each
# component (deploy/components/) alone and all together through an overlay outside deploy/ (kustomize
# refuses an overlay inside its base).
if command -v kubectl >/dev/null; then kustomize=(kubectl kustomize)
elif command -v kustomize >/dev/null; then kustomize=(kustomize build)
else echo "run-deploy-tests: neither kubectl nor kustomize found (kubectl kustomize renders deploy/)" >&2; exit 1; fi
echo "# ${kustomize[*]} deploy/ and its components"
"${kustomize[@]}" "$deploy" > "$tmp/render-default.yaml"
mkdir -p "$tmp/overlay"
rel=$(realpath --relative-to="$tmp/overlay" "$deploy")
renders=("default=$tmp/render-default.yaml")
for comp in no-prometheus-operator taint device-plugin all; do
        if [ "$comp" = all ]; then list=$(for c in "$deploy"/components/*/; do printf ' %s/components/%s' "$rel" "$(basename "$c")"; done)
        else list=" $rel/components/$comp"; fi
        printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [%s]\ncomponents: [%s]\n' \
                "$rel" "$(echo $list | tr ' ' ',')" > "$tmp/overlay/kustomization.yaml"
        "${kustomize[@]}" "$tmp/overlay" > "$tmp/render-$comp.yaml"
        renders+=("$comp=$tmp/render-$comp.yaml")
done
node "$here/renders.mjs" "${renders[@]}"

echo "# promtool check rules"
promtool check rules "$tmp/rules.yaml"
cp "$here/rules-test.yaml" "$tmp/"
echo "# promtool test rules"
promtool test rules "$tmp/rules-test.yaml"

# promtool must fail on a broken rule too, or the two checks above prove nothing.
sed 's/expr: max by (node) (gpunode_root_cause_layer) > 0/expr: max by (node) (gpunode_root_cause_layer > 0/' \
        "$tmp/rules.yaml" >"$tmp/broken.yaml"
cmp -s "$tmp/rules.yaml" "$tmp/broken.yaml" && { echo "not ok - could not break the rules file"; exit 1; }
if promtool check rules "$tmp/broken.yaml" >/dev/null 2>&1; then echo "not ok - promtool accepted a broken expr"; exit 1; fi
echo "ok - promtool rejects a broken expr"
echo "deploy: all passed"
