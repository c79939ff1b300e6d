// validate.mjs DEPLOY_DIR SOURCE_ROOT RULES_OUT: validates every manifest in deploy/ against the
// Kubernetes and Prometheus Operator API schemas (kubernetes-models' classes throw on a schema
// violation), proves that they do by validating broken copies, asserts RBAC least privilege and
// the DaemonSet's security settings, checks that every alert uses a series gpunode serves, and
// writes the PrometheusRule's spec.groups to RULES_OUT for `promtool check rules`.
import fs from "node:fs";
import path from "node:path";
import YAML from "yaml";
import { validate } from "./models.mjs";

const [deployDir, sourceRoot, rulesOut] = process.argv.slice(2);
if (!deployDir || !sourceRoot || !rulesOut) {
  console.error("usage: validate.mjs DEPLOY_DIR SOURCE_ROOT RULES_OUT");
  process.exit(2);
}

let failures = 0;
const fail = (msg) => { console.log(`not ok - ${msg}`); failures++; };
const ok = (msg) => console.log(`ok - ${msg}`);
const check = (cond, msg) => (cond ? ok(msg) : fail(msg));
const clone = (o) => JSON.parse(JSON.stringify(o));

function expectThrow(obj, what) {
  try { validate(obj); fail(`broken copy accepted: ${what}`); }
  catch (e) { ok(`broken copy rejected: ${what} (${String(e.message).split("\n")[0].slice(0, 100)})`); }
}

// Every manifest: one object kind per file, each valid against its schema: deploy/*.yaml and each component's.
const components = fs.readdirSync(path.join(deployDir, "components")).sort();
const yamls = (dir) => fs.readdirSync(path.join(deployDir, dir)).filter((f) => f.endsWith(".yaml") && f !== "kustomization.yaml")
  .sort().map((f) => path.join(dir, f));
const files = [...yamls("."), ...components.flatMap((c) => yamls(path.join("components", c)))].map((f) => path.normalize(f));
const objs = {};
for (const f of files) {
  const docs = YAML.parseAllDocuments(fs.readFileSync(path.join(deployDir, f), "utf8"));
  const parsed = docs.map((d) => {
    if (d.errors.length) throw new Error(`${f}: ${d.errors[0].message}`);
    return d.toJS();
  }).filter(Boolean);
  const kinds = new Set(parsed.map((o) => o.kind));
  check(kinds.size === 1, `${f}: one object kind (${[...kinds].join(", ")})`);
  for (const o of parsed) {
    try { validate(o); ok(`${f}: ${o.kind} ${o.metadata?.name} valid`); }
    catch (e) { fail(`${f}: ${o.kind} ${o.metadata?.name}: ${e.message}`); }
    (objs[o.kind] ??= []).push({ file: f, obj: o });
  }
}

// kustomization.yaml lists every manifest of deploy/ but the cluster reader's role (applied by the people who
// use it), each component lists its own, and every component is named (commented) under components:.
const kustText = fs.readFileSync(path.join(deployDir, "kustomization.yaml"), "utf8");
const kust = YAML.parse(kustText);
for (const r of kust.resources) check(files.includes(r), `kustomization resource ${r} exists`);
for (const f of files.filter((f) => !f.includes("/"))) {
  if (f === "clusterrole-cluster-reader.yaml") continue;
  check(kust.resources.includes(f), `${f} is in kustomization.yaml`);
}
check(!kust.components, "no component is on by default");
for (const c of components) {
  const ck = YAML.parse(fs.readFileSync(path.join(deployDir, "components", c, "kustomization.yaml"), "utf8"));
  check(ck.kind === "Component", `components/${c} is a kustomize Component`);
  for (const f of yamls(path.join("components", c)))
    check((ck.resources ?? []).includes(path.basename(f)), `${f} is in its component's resources`);
  check(new RegExp(`^#\\s+-\\s+components/${c}\\s*$`, "m").test(kustText), `components/${c} is named in kustomization.yaml`);
}
for (const f of ["clusterrole-taint.yaml", "clusterrolebinding-taint.yaml"])
  check(!kust.resources.includes(f), `${f} is optional (not applied by default)`);

const one = (kind, name = "gpunode") => objs[kind]?.find((o) => o.obj.metadata?.name === name)?.obj;
const ds = one("DaemonSet");
const pod = ds.spec.template.spec;
const c = pod.containers[0];

// The schemas bite: broken copies must throw.
{
  const b = clone(ds); b.spec.template.spec.containers[0].ports[0].containerPort = "x";
  expectThrow(b, "DaemonSet containerPort \"x\"");
  const b2 = clone(ds); delete b2.spec.selector;
  expectThrow(b2, "DaemonSet without spec.selector");
  const b3 = clone(ds); b3.spec.template.spec.containers[0].securityContext.privileged = "true";
  expectThrow(b3, "DaemonSet privileged a string, not a boolean");
  const r = clone(one("ClusterRole")); r.rules[0].verbs = "get";
  expectThrow(r, "ClusterRole verbs a string");
  const sm = clone(one("ServiceMonitor")); sm.spec.endpoints = { port: "metrics" };
  expectThrow(sm, "ServiceMonitor endpoints an object, not a list");
  const pr = clone(one("PrometheusRule")); delete pr.spec.groups[0].name;
  expectThrow(pr, "PrometheusRule group without a name");
  const pr2 = clone(one("PrometheusRule")); pr2.spec.groups[0].rules[0].for = "five minutes";
  expectThrow(pr2, "PrometheusRule for: \"five minutes\"");
}

// RBAC least privilege: no wildcard, no secrets or configmaps, writes only where the agent writes.
const allowedWrites = {
  "ClusterRole gpunode": { "/nodes/status": ["patch"], "/events": ["create", "patch"] },
  "ClusterRole gpunode-taint": { "/nodes": ["patch"] },
};
const readVerbs = new Set(["get", "list", "watch"]);
// The one proxy grant: `kubectl gpunode check NODE` reads an agent's /report through the API server (get only; the
// role is meant for a RoleBinding in the agent's namespace, deploy/clusterrole-cluster-reader.yaml says so).
const allowedProxy = { "ClusterRole gpunode-agent-report": ["pods/proxy"] };
function rbacProblems(role) {
  const problems = [];
  const writes = allowedWrites[`ClusterRole ${role.metadata.name}`] ?? {};
  const proxies = allowedProxy[`ClusterRole ${role.metadata.name}`] ?? [];
  for (const rule of role.rules ?? []) {
    for (const field of ["verbs", "resources", "apiGroups", "resourceNames", "nonResourceURLs"])
      if ((rule[field] ?? []).includes("*")) problems.push(`"*" in ${field}`);
    if (rule.nonResourceURLs) problems.push("nonResourceURLs");
    for (const res of rule.resources ?? []) {
      if (/^(secrets|configmaps|serviceaccounts|roles|rolebindings|clusterroles|clusterrolebindings)(\/|$)/.test(res) ||
          res.endsWith("/token") || res.endsWith("/exec") ||
          (res.endsWith("/proxy") && !(proxies.includes(res) && (rule.verbs ?? []).every((v) => v === "get"))))
        problems.push(`access to ${res}`);
      for (const apiGroup of rule.apiGroups ?? [""]) {
        for (const v of rule.verbs ?? []) {
          if (readVerbs.has(v)) continue;
          if (!(writes[`${apiGroup}/${res}`] ?? []).includes(v)) problems.push(`${v} on ${apiGroup}/${res}`);
        }
      }
    }
    for (const v of rule.verbs ?? []) if (["escalate", "bind", "impersonate"].includes(v)) problems.push(`verb ${v}`);
  }
  return problems;
}
for (const { file, obj } of objs.ClusterRole) {
  const p = rbacProblems(obj);
  check(p.length === 0, `${file}: least privilege${p.length ? ": " + p.join("; ") : ""}`);
}
{
  const base = one("ClusterRole");
  const cases = [
    [{ apiGroups: [""], resources: ["secrets"], verbs: ["get"] }, "get secrets"],
    [{ apiGroups: [""], resources: ["pods"], verbs: ["*"] }, "\"*\" verbs"],
    [{ apiGroups: ["*"], resources: ["*"], verbs: ["get"] }, "\"*\" resources"],
    [{ apiGroups: [""], resources: ["nodes"], verbs: ["patch"] }, "patch nodes in the base role"],
  ];
  for (const [rule, what] of cases) {
    const r = clone(base); r.rules.push(rule);
    check(rbacProblems(r).length > 0, `RBAC check rejects a role with ${what}`);
  }
}
// What the checks need is granted.
{
  const rules = one("ClusterRole").rules;
  const grants = (group, res, verb) => rules.some((r) => (r.apiGroups ?? []).includes(group) &&
    (r.resources ?? []).includes(res) && (r.verbs ?? []).includes(verb));
  for (const [g, r, v] of [["", "nodes", "get"], ["", "pods", "list"], ["storage.k8s.io", "csinodes", "get"],
    ["", "namespaces", "list"], ["", "nodes/status", "patch"], ["", "events", "create"], ["", "events", "patch"]])
    check(grants(g, r, v), `ClusterRole grants ${v} ${g || "core"}/${r}`);
}
// What `gpunode cluster` lists (src/cluster/fetch.c) is granted to its users, read-only; the pod proxy for
// `kubectl gpunode check NODE` only in its own role, get only, and never in the agent's or the reader's role.
{
  const reader = one("ClusterRole", "gpunode-cluster-reader");
  const proxyRole = one("ClusterRole", "gpunode-agent-report");
  check(reader && proxyRole, "ClusterRoles gpunode-cluster-reader and gpunode-agent-report exist");
  const grants = (role, group, res, verb) => (role?.rules ?? []).some((r) => (r.apiGroups ?? []).includes(group) &&
    (r.resources ?? []).includes(res) && (r.verbs ?? []).includes(verb));
  const fetchC = fs.readFileSync(path.join(sourceRoot, "src", "cluster", "fetch.c"), "utf8");
  const listed = [...new Set([...fetchC.matchAll(/"\/api(?:s\/([a-z0-9.-]+)\/v[0-9a-z]+|\/v1)\/([a-z]+)"/g)]
    .map((m) => `${m[1] ?? ""}/${m[2]}`))].map((k) => k.split("/"));
  check(listed.length >= 9, `fetch.c lists ${listed.length} resources`);
  for (const [g, r] of listed) check(grants(reader, g, r, "list"), `gpunode-cluster-reader grants list ${g || "core"}/${r}`);
  check(grants(proxyRole, "", "pods/proxy", "get") && proxyRole.rules.length === 1 &&
    proxyRole.rules[0].verbs.length === 1, "gpunode-agent-report grants only get pods/proxy");
  const leaky = clone(reader); leaky.rules.push({ apiGroups: [""], resources: ["pods/proxy"], verbs: ["get"] });
  check(rbacProblems(leaky).length > 0, "RBAC check rejects pods/proxy in the reader role");
  const writer = clone(proxyRole); writer.rules[0].verbs = ["get", "create"];
  check(rbacProblems(writer).length > 0, "RBAC check rejects create on pods/proxy");
  check(!kust.resources.includes("clusterrole-cluster-reader.yaml"), "clusterrole-cluster-reader.yaml is optional (not applied by default)");
}
for (const { obj } of objs.ClusterRoleBinding) {
  const sa = one("ServiceAccount");
  check(obj.subjects.length === 1 && obj.subjects[0].kind === "ServiceAccount" && obj.subjects[0].name === sa.metadata.name &&
    obj.subjects[0].namespace === sa.metadata.namespace, `ClusterRoleBinding ${obj.metadata.name} binds only the agent's service account`);
  check(objs.ClusterRole.some((r) => r.obj.metadata.name === obj.roleRef.name), `ClusterRoleBinding ${obj.metadata.name} refers to a role defined here`);
}

// The DaemonSet's contract.
const sc = c.securityContext;
check(pod.serviceAccountName === one("ServiceAccount").metadata.name, "DaemonSet runs as the service account");
check(pod.priorityClassName === "system-node-critical", "priorityClassName system-node-critical");
// hostPID: true for gpu.processes (NVML names processes in the caller's PID namespace), the reason beside it.
check(pod.hostPID === true && pod.hostNetwork !== true && pod.hostIPC !== true, "the host's PID namespace; no host network or IPC");
const dsText = fs.readFileSync(path.join(deployDir, "daemonset.yaml"), "utf8");
check(/#[^\n]*gpu\.processes[^]*?\n\s*hostPID: true/.test(dsText), "daemonset.yaml says why hostPID (gpu.processes)");
// NVML from the host under --root, not from the nvidia runtime (it fails the pod where the toolkit or driver is broken).
check(pod.runtimeClassName === undefined, "no runtimeClassName (the agent must start where the toolkit is broken)");
check(!(c.env ?? []).some((e) => e.name.startsWith("NVIDIA_")), "no NVIDIA_* env (nothing for the toolkit's hook to inject)");
// privileged for /dev/kmsg (the device cgroup; daemonset.yaml says why); the API rejects
// allowPrivilegeEscalation false with it, and capabilities would be ignored.
check(sc.privileged === true, "privileged (for /dev/kmsg)");
check(sc.allowPrivilegeEscalation === undefined && sc.capabilities === undefined,
  "no allowPrivilegeEscalation or capabilities next to privileged");
check(sc.readOnlyRootFilesystem === true, "readOnlyRootFilesystem");
check(sc.runAsUser === 0, "runAsUser 0 (host files are root's)");
const terms = pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms;
const termKeys = terms.map((t) => t.matchExpressions.map((e) => `${e.key}=${e.values}`).join(",")).sort();
check(JSON.stringify(termKeys) === JSON.stringify(["feature.node.kubernetes.io/pci-10de.present=true", "nvidia.com/gpu.present=true"]),
  "nodeAffinity: pci-10de.present OR nvidia.com/gpu.present");
const tol = (key, effect) => pod.tolerations.some((t) => t.key === key && t.operator === "Exists" && (!t.effect || t.effect === effect));
for (const [k, e] of [["nvidia.com/gpu", "NoSchedule"], ["gpunode.io/unhealthy", "NoSchedule"],
  ["node.kubernetes.io/not-ready", "NoExecute"], ["node.kubernetes.io/unreachable", "NoExecute"]])
  check(tol(k, e), `tolerates ${k}:${e}`);
const hostVol = pod.volumes.find((v) => v.hostPath?.path === "/");
const hostMount = c.volumeMounts.find((m) => m.name === hostVol?.name);
check(hostMount?.mountPath === "/host" && hostMount.readOnly === true && hostMount.mountPropagation === "HostToContainer",
  "host root read-only at /host, HostToContainer");
const nfd = "/etc/kubernetes/node-feature-discovery/features.d";
check(pod.volumes.every((v) => !v.hostPath || v.hostPath.path === "/" || v.hostPath.path === nfd),
  "no other hostPath volume than / and NFD's features.d");
check(c.volumeMounts.every((m) => m.readOnly === true || !pod.volumes.find((v) => v.name === m.name).hostPath ||
  (pod.volumes.find((v) => v.name === m.name).hostPath.path === nfd && m.mountPath === nfd)),
  "every hostPath mount read-only but NFD's features.d (the labels' output)");
const nodeName = c.env.find((e) => e.name === "NODE_NAME");
check(nodeName?.valueFrom?.fieldRef?.fieldPath === "spec.nodeName", "NODE_NAME from spec.nodeName");
const args = c.args.join(" ");
check(args.startsWith("agent ") && / --root \/host( |$)/.test(args) && / --listen :9400( |$)/.test(args) && / --check-interval \d+s( |$)/.test(args),
  `args: ${args}`);
check(c.readinessProbe?.httpGet?.path === "/ready" && c.readinessProbe.httpGet.port === "metrics",
  "readiness probe on /ready (a diagnosis finished), not /health (NVML works)");
check(c.livenessProbe?.httpGet?.port === "metrics", "liveness probe on the metrics port");
check(c.resources?.requests?.memory && c.resources?.limits?.memory && c.resources?.requests?.cpu, "memory request and limit, cpu request");
check(c.ports.some((p) => p.name === "metrics" && p.containerPort === 9400), "container port 9400 named metrics");

// Service -> pods, ServiceMonitor -> Service.
const svc = one("Service");
const podLabels = ds.spec.template.metadata.labels;
check(Object.entries(svc.spec.selector).every(([k, v]) => podLabels[k] === v), "Service selects the agent's pods");
check(svc.spec.ports.some((p) => p.name === "metrics" && p.port === 9400), "Service port 9400 named metrics");
const sm = one("ServiceMonitor");
check(Object.entries(sm.spec.selector.matchLabels).every(([k, v]) => svc.metadata.labels[k] === v), "ServiceMonitor selects the Service");
check(sm.spec.endpoints.every((e) => svc.spec.ports.some((p) => p.name === e.port)), "ServiceMonitor endpoints name the Service's port");
const ns = one("Namespace").metadata.name;
for (const [kind, list] of Object.entries(objs))
  for (const { file, obj } of list)
    if (!["Namespace", "ClusterRole", "ClusterRoleBinding"].includes(kind))
      check(obj.metadata.namespace === ns, `${file}: namespace ${ns}`);

// Every gpunode_* series an alert uses is one gpunode serves (its source names it).
const served = ["src/output/prometheus.c", "src/exporter/render.c"]
  .map((f) => fs.readFileSync(path.join(sourceRoot, f), "utf8")).join("\n");
const pr = one("PrometheusRule");
for (const g of pr.spec.groups) for (const r of g.rules) {
  for (const m of new Set(r.expr.match(/\bgpunode_[a-z_]+/g) ?? []))
    check(new RegExp(`[" ]${m}[ {]`).test(served), `alert ${r.alert}: ${m} is served by gpunode`);
}
const alerts = pr.spec.groups.flatMap((g) => g.rules.map((r) => r.alert));
for (const a of ["GPUNodeRootCause", "GPUNodeDiagnosisStale", "GPUNodeNVMLDown"]) check(alerts.includes(a), `alert ${a} defined`);

fs.writeFileSync(rulesOut, YAML.stringify({ groups: pr.spec.groups }));
console.log(failures ? `${failures} failed` : "all passed");
process.exit(failures ? 1 : 0);
