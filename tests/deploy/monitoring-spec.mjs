// monitoring-spec.mjs DEPLOY_DIR: prints, as JSON, what run-daemonset-alerts.py needs from deploy/: the
// PrometheusRule's spec.groups (the rules file for promtool, JSON being YAML), and the scrape as the
// Prometheus Operator sets it up: the Service (its name is the job label), the ServiceMonitor's endpoint
// (port, path, relabelings). Parsed with the `yaml` package of tests/deploy/node_modules, printed verbatim.
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";

const [dir] = process.argv.slice(2);
if (!dir) { console.error("usage: monitoring-spec.mjs DEPLOY_DIR"); process.exit(2); }
const docs = [];
for (const f of ["prometheusrule.yaml", "service.yaml", "servicemonitor.yaml"]) {
  for (const d of YAML.parseAllDocuments(fs.readFileSync(path.join(dir, f), "utf8"))) {
    if (d.errors.length) throw new Error(`${f}: ${d.errors[0].message}`);
    docs.push(d.toJS());
  }
}
const one = (kind) => {
  const o = docs.find((d) => d?.kind === kind);
  if (!o) throw new Error(`${dir}: no ${kind}`);
  return o;
};
const sm = one("ServiceMonitor");
console.log(JSON.stringify({
  groups: one("PrometheusRule").spec.groups,
  service: one("Service").metadata.name,
  namespace: one("Service").metadata.namespace,
  endpoint: sm.spec.endpoints[0],
}));
