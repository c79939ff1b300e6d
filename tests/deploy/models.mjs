// models.mjs: the schema of every kind deploy/ holds (kubernetes-models, @kubernetes-models/prometheus-operator);
// validate(obj) throws on a schema violation or a kind without a model. Shared by validate.mjs and renders.mjs.
import { Namespace, ServiceAccount, Service } from "kubernetes-models/v1";
import { DaemonSet } from "kubernetes-models/apps/v1";
import { ClusterRole, ClusterRoleBinding } from "kubernetes-models/rbac.authorization.k8s.io/v1";
import { ServiceMonitor, PrometheusRule } from "@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1";

export const models = {
  "v1/Namespace": Namespace,
  "v1/ServiceAccount": ServiceAccount,
  "v1/Service": Service,
  "apps/v1/DaemonSet": DaemonSet,
  "rbac.authorization.k8s.io/v1/ClusterRole": ClusterRole,
  "rbac.authorization.k8s.io/v1/ClusterRoleBinding": ClusterRoleBinding,
  "monitoring.coreos.com/v1/ServiceMonitor": ServiceMonitor,
  "monitoring.coreos.com/v1/PrometheusRule": PrometheusRule,
};

export function validate(obj) {
  const Model = models[`${obj.apiVersion}/${obj.kind}`];
  if (!Model) throw new Error(`no model for ${obj.apiVersion} ${obj.kind}`);
  new Model(obj).validate();
}
