// daemonset-spec.mjs DAEMONSET_YAML: prints, as JSON, what run-daemonset-args.py needs from the
// DaemonSet's pod template: the namespace, the service account, the first container's args, env,
// ports, probes, resources and volumeMounts, and the pod's volumes. Parsed with the `yaml` package
// of tests/deploy/node_modules (python3-yaml is not guaranteed), printed verbatim: no defaults.
import fs from "node:fs";
import YAML from "yaml";

const [file] = process.argv.slice(2);
if (!file) { console.error("usage: daemonset-spec.mjs DAEMONSET_YAML"); process.exit(2); }
const docs = YAML.parseAllDocuments(fs.readFileSync(file, "utf8")).map((d) => {
  if (d.errors.length) throw new Error(`${file}: ${d.errors[0].message}`);
  return d.toJS();
});
const ds = docs.find((o) => o?.kind === "DaemonSet");
if (!ds) throw new Error(`${file}: no DaemonSet`);
const pod = ds.spec.template.spec;
const c = pod.containers[0];
console.log(JSON.stringify({
  name: ds.metadata.name,
  namespace: ds.metadata.namespace ?? "default",
  serviceAccountName: pod.serviceAccountName ?? "default",
  container: c.name,
  command: c.command ?? null,
  args: c.args ?? [],
  env: c.env ?? [],
  ports: c.ports ?? [],
  readinessProbe: c.readinessProbe ?? null,
  livenessProbe: c.livenessProbe ?? null,
  resources: c.resources ?? {},
  securityContext: c.securityContext ?? {},
  volumeMounts: c.volumeMounts ?? [],
  volumes: pod.volumes ?? [],
}));
