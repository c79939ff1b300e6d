// renders.mjs NAME=FILE...: validates what kustomize rendered from deploy/ (run-deploy-tests.sh renders it with
// `kubectl kustomize`: the default, each component alone, all of them together) against the schemas
// (models.mjs), and asserts what each component changes: no-prometheus-operator removes exactly the
// ServiceMonitor and the PrometheusRule, taint adds its role, its binding and --taint to the agent's args,
// device-plugin adds its DaemonSet; everything else is the default's, unchanged.
import fs from "node:fs";
import YAML from "yaml";
import { validate } from "./models.mjs";

let failures = 0;
const check = (cond, msg) => { console.log(`${cond ? "ok" : "not ok"} - ${msg}`); if (!cond) failures++; };
const renders = {};
for (const a of process.argv.slice(2)) {
  const [name, file] = a.split("=");
  renders[name] = YAML.parseAllDocuments(fs.readFileSync(file, "utf8")).map((d) => {
    if (d.errors.length) throw new Error(`${name}: ${d.errors[0].message}`);
    return d.toJS();
  }).filter(Boolean);
}
const key = (o) => `${o.kind}/${o.metadata.namespace ?? ""}/${o.metadata.name}`;
const byKey = (objs) => Object.fromEntries(objs.map((o) => [key(o), o]));
for (const [name, objs] of Object.entries(renders)) {
  let bad = 0;
  for (const o of objs) {
    try { validate(o); } catch (e) { bad++; check(false, `${name}: ${key(o)}: ${e.message.split("\n")[0]}`); }
  }
  check(bad === 0 && objs.length > 0, `${name}: all ${objs.length} objects valid`);
  const keys = objs.map(key);
  check(new Set(keys).size === keys.length, `${name}: no object twice`);
  for (const o of objs)
    if (!["Namespace", "ClusterRole", "ClusterRoleBinding"].includes(o.kind))
      check(o.metadata.namespace === "gpunode", `${name}: ${key(o)} in namespace gpunode`);
  for (const ds of objs.filter((o) => o.kind === "DaemonSet"))
    check(ds.spec.template.spec.containers.every((c) => /^gpunode(:|$)/.test(c.image)), `${name}: ${key(ds)} runs the gpunode image`);
}
const base = byKey(renders.default ?? []);
const agentArgs = (objs) => objs.find((o) => o.kind === "DaemonSet" && o.metadata.name === "gpunode")?.spec.template.spec.containers[0].args;
const diff = (name) => {
  const r = byKey(renders[name] ?? []);
  return { added: Object.keys(r).filter((k) => !base[k]).sort(), removed: Object.keys(base).filter((k) => !r[k]).sort(),
    changed: Object.keys(r).filter((k) => base[k] && JSON.stringify(r[k]) !== JSON.stringify(base[k])).sort() };
};
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
check(["ServiceMonitor", "PrometheusRule", "DaemonSet", "Service"].every((k) => Object.keys(base).some((x) => x.startsWith(k + "/"))),
  "default: the agent's DaemonSet, Service, ServiceMonitor and PrometheusRule");
check(!Object.keys(base).some((k) => k.includes("taint") || k.includes("device-plugin")), "default: no taint RBAC, no device plugin");
{
  const d = diff("no-prometheus-operator");
  check(same(d, { added: [], removed: ["PrometheusRule/gpunode/gpunode", "ServiceMonitor/gpunode/gpunode"], changed: [] }),
    `no-prometheus-operator: removes the ServiceMonitor and the PrometheusRule only (${JSON.stringify(d)})`);
}
{
  const d = diff("taint");
  check(same(d.added, ["ClusterRole//gpunode-taint", "ClusterRoleBinding//gpunode-taint"]) && same(d.removed, []) &&
    same(d.changed, ["DaemonSet/gpunode/gpunode"]), `taint: adds its role and binding, changes the agent (${JSON.stringify(d)})`);
  check(same(agentArgs(renders.taint), [...agentArgs(renders.default), "--taint"]), "taint: the agent's args end with --taint");
}
{
  const d = diff("device-plugin");
  check(same(d, { added: ["DaemonSet/gpunode/gpunode-device-plugin"], removed: [], changed: [] }),
    `device-plugin: adds its DaemonSet only (${JSON.stringify(d)})`);
}
{
  const d = diff("all");
  check(same(d.added, ["ClusterRole//gpunode-taint", "ClusterRoleBinding//gpunode-taint", "DaemonSet/gpunode/gpunode-device-plugin"]) &&
    same(d.removed, ["PrometheusRule/gpunode/gpunode", "ServiceMonitor/gpunode/gpunode"]),
    `all three together: each one's change (${JSON.stringify(d)})`);
}
console.log(failures ? `renders: ${failures} failed` : "renders: all passed");
process.exit(failures ? 1 : 0);
