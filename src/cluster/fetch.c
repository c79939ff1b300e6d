/* fetch.c: reads the cluster through paginated, server-filtered lists into struct cluster_facts, one page in memory at
 * a time. */
#include "cluster/cluster.h"
#include "kube/kube_client.h"
#include "kube/kube_list.h"
#include "kube/kube_objects.h"
#include "basic/util.h"

#include <time.h>

/* A string -> index table (open addressing, FNV-1a); keys are borrowed from the facts. */
struct strindex {
        size_t cap, n;
        const char **keys;
        size_t *vals;
};

/* Returns the FNV-1a hash of s. */
static uint64_t hash_str(const char *s) {
        uint64_t h = 1469598103934665603ull;
        for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
        return h;
}

/* Adds key -> val (the table grows at half full). Returns nothing; aborts on out-of-memory. */
static void strindex_put(struct strindex *t, const char *key, size_t val) {
        if ((t->n + 1) * 2 > t->cap) {
                struct strindex g = { .cap = t->cap ? t->cap * 2 : 64 };
                g.keys = xcalloc(g.cap, sizeof *g.keys);
                g.vals = xcalloc(g.cap, sizeof *g.vals);
                for (size_t i = 0; i < t->cap; i++)
                        if (t->keys[i]) strindex_put(&g, t->keys[i], t->vals[i]);
                free(t->keys);
                free(t->vals);
                *t = g;
        }
        size_t i = hash_str(key) & (t->cap - 1);
        while (t->keys[i] && !streq(t->keys[i], key)) i = (i + 1) & (t->cap - 1);
        if (!t->keys[i]) t->n++;
        t->keys[i] = key;
        t->vals[i] = val;
}

/* Returns the value of key, or (size_t)-1. */
static size_t strindex_get(const struct strindex *t, const char *key) {
        if (!t || !t->cap || !key) return (size_t)-1;
        size_t i = hash_str(key) & (t->cap - 1);
        while (t->keys[i]) {
                if (streq(t->keys[i], key)) return t->vals[i];
                i = (i + 1) & (t->cap - 1);
        }
        return (size_t)-1;
}

/* Frees t (NULL is fine), not the keys it borrows. Returns nothing. */
static void strindex_free(struct strindex *t) {
        if (!t) return;
        free(t->keys);
        free(t->vals);
        free(t);
}

/* Appends a copy of s to the array *v of *n strings (unless present when unique). Returns nothing. */
static void strv_add(char ***v, size_t *n, const char *s, bool unique) {
        if (unique)
                for (size_t i = 0; i < *n; i++)
                        if (streq((*v)[i], s)) return;
        *v = xrealloc(*v, (*n + 1) * sizeof **v);
        (*v)[(*n)++] = xstrndup(s, 512);
}

/* Frees the n strings of v and v. Returns nothing. */
static void strv_free(char **v, size_t n) {
        for (size_t i = 0; i < n; i++) free(v[i]);
        free(v);
}

/* Fills kv with "k=v" for the string members of map o (at most 64). Returns nothing. */
static void strv_from_map(struct cl_strv *kv, const json_t *o) {
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)o, k, v) {
                if (kv->n >= 64 || !kube_json_str(v)) continue; /* a value cut at a NUL would be another */
                _cleanup_free_ char *s = xasprintf("%.253s=%.253s", k, kube_json_str(v));
                strv_add(&kv->v, &kv->n, s, false);
        }
}

struct cl_node *cluster_node_find(const struct cluster_facts *f, const char *name) {
        size_t i = strindex_get(f->index, name);
        return i == (size_t)-1 ? NULL : &f->nodes[i];
}

/* Sorts by name. */
static int node_cmp(const void *a, const void *b) {
        return strcmp(((const struct cl_node *)a)->name, ((const struct cl_node *)b)->name);
}

void cluster_facts_finish(struct cluster_facts *f) {
        if (f->finished) return;
        f->finished = true;
        strindex_free(f->index);
        if (f->n_nodes) qsort(f->nodes, f->n_nodes, sizeof *f->nodes, node_cmp);
        struct strindex *t = xcalloc(1, sizeof *t);
        for (size_t i = 0; i < f->n_nodes; i++) strindex_put(t, f->nodes[i].name, i);
        f->index = t;
}

/* Returns the label value key of labels, or NULL. */
static const char *label(const json_t *labels, const char *key) {
        return kube_json_str(json_object_get(labels, key));
}

/* Returns the GPUs a pod asks for: the larger of its containers' sum and its largest init container,
 * from limits (else requests) of nvidia.com/gpu and nvidia.com/mig-*. */
static int64_t pod_gpus(const json_t *spec) {
        int64_t sum = 0, init = 0;
        for (int pass = 0; pass < 2; pass++) {
                size_t i;
                const json_t *c;
                json_array_foreach(json_object_get(spec, pass ? "initContainers" : "containers"), i, c) {
                        const json_t *res = json_object_get(c, "resources");
                        const json_t *m = json_object_get(res, "limits");
                        if (!json_object_size(m)) m = json_object_get(res, "requests");
                        int64_t n = 0;
                        const char *k;
                        const json_t *v;
                        json_object_foreach((json_t *)m, k, v) {
                                int64_t q = 0;
                                if (!streq(k, "nvidia.com/gpu") && !startswith(k, "nvidia.com/mig-")) continue;
                                if (kube_quantity_int(kube_json_str(v), &q) == 0 && q > 0)
                                        n += q > CL_QUANTITY_MAX ? CL_QUANTITY_MAX : q;
                                else if (json_is_integer(v) && json_integer_value(v) > 0)
                                        n += json_integer_value(v) > CL_QUANTITY_MAX ? CL_QUANTITY_MAX
                                                                                     : json_integer_value(v);
                        }
                        if (pass)
                                init = n > init ? n : init;
                        else
                                sum += n;
                }
        }
        return sum > init ? sum : init;
}

/* Returns whether the pod's Ready condition is True. */
static bool pod_ready(const json_t *status) {
        size_t i;
        const json_t *c;
        json_array_foreach(json_object_get(status, "conditions"), i, c) {
                const char *t = kube_json_str(json_object_get(c, "type"));
                const char *s = kube_json_str(json_object_get(c, "status"));
                if (t && s && streq(t, "Ready")) return streq(s, "True");
        }
        return false;
}

/* Returns the agent's metrics port: the container port named "metrics", else 9400. */
static int agent_port(const json_t *spec) {
        size_t i, j;
        const json_t *c, *p;
        json_array_foreach(json_object_get(spec, "containers"), i, c)
                json_array_foreach(json_object_get(c, "ports"), j, p) {
                const char *n = kube_json_str(json_object_get(p, "name"));
                json_int_t port = json_integer_value(json_object_get(p, "containerPort"));
                if (n && streq(n, "metrics") && port > 0 && port < 65536) return (int)port;
        }
        return 9400;
}

enum pod_kind { POD_OTHER, POD_AGENT, POD_DCGM, POD_NODE_EXPORTER, POD_NETWORK_OPERATOR };

/* Returns true when a node's agent pod works: Running and Ready, or Running with fresh conditions on its node
 * (a pod whose readiness probe fails still diagnoses and reports; the conditions it heartbeats are the proof).
 * The node's conditions are read before the pods (the node list comes first). */
static bool agent_works(const struct cluster_facts *f, const struct cl_node *n, bool running, const json_t *status) {
        if (!running) return false;
        if (pod_ready(status)) return true;
        bool known = false;
        for (int l = 0; l < CLUSTER_LAYERS; l++) known |= n->layers[l].status != CL_COND_ABSENT;
        return known && !cl_node_stale(f, n);
}

/* Returns what a pod is by its labels and namespace. */
static enum pod_kind pod_kind(const char *ns, const json_t *labels) {
        const char *name = label(labels, "app.kubernetes.io/name"), *app = label(labels, "app");
        if (name && streq(name, "gpunode")) return POD_AGENT;
        if ((app && streq(app, "nvidia-dcgm-exporter")) ||
            (name && (streq(name, "dcgm-exporter") || streq(name, "nvidia-dcgm-exporter"))))
                return POD_DCGM;
        if ((name && (streq(name, "node-exporter") || streq(name, "prometheus-node-exporter"))) ||
            (app && (streq(app, "node-exporter") || streq(app, "prometheus-node-exporter"))))
                return POD_NODE_EXPORTER;
        if (streq(ns, "nvidia-network-operator") || (name && streq(name, "network-operator")) ||
            (app && (streq(app, "mofed-ubuntu22.04") || startswith(app, "mofed") || streq(app, "rdma-shared-dp"))))
                return POD_NETWORK_OPERATOR;
        return POD_OTHER;
}

/* Records a metrics pod's labels and namespace (the first one seen of its kind). Returns nothing. */
static void keep_labels(struct cl_strv *kv, char **ns_out, const char *ns, const json_t *labels) {
        if (*ns_out) return;
        *ns_out = xstrndup(ns, 253);
        strv_from_map(kv, labels);
}

static void pending_index_free(struct cluster_facts *f);

/* Reads one pod. Returns 0, 1 when of no concern, -EBADMSG without a name. */
static int add_pod(struct cluster_facts *f, const json_t *pod) {
        const json_t *meta = json_object_get(pod, "metadata");
        const char *ns = kube_json_str(json_object_get(meta, "namespace"));
        const char *name = kube_json_str(json_object_get(meta, "name"));
        if (!name || !*name) return -EBADMSG;
        if (!ns) ns = "default";
        f->n_pods++;
        const json_t *spec = json_object_get(pod, "spec"), *status = json_object_get(pod, "status");
        const json_t *labels = json_object_get(meta, "labels");
        const char *node = kube_json_str(json_object_get(spec, "nodeName"));
        const char *phase = kube_json_str(json_object_get(status, "phase"));
        if (!phase) phase = "Unknown";
        const char *rc = kube_json_str(json_object_get(spec, "runtimeClassName"));
        if (rc && *rc) strv_add(&f->pod_runtimeclasses, &f->n_pod_runtimeclasses, rc, true);
        struct cl_node *n = node && *node ? cluster_node_find(f, node) : NULL;
        bool running = streq(phase, "Running");
        enum pod_kind kind = pod_kind(ns, labels);
        const json_t *ann = json_object_get(meta, "annotations");
        const char *scrape = label(ann, "prometheus.io/scrape");
        switch (kind) {
        case POD_AGENT:
                keep_labels(&f->agent_labels, &f->agent_namespace, ns, labels);
                if (n && (!n->agent_pod || (!n->agent_ready && running))) {
                        free(n->agent_pod);
                        free(n->agent_namespace);
                        n->agent_pod = xstrndup(name, 253);
                        n->agent_namespace = xstrndup(ns, 253);
                        n->agent_port = agent_port(spec);
                        n->agent_ready = agent_works(f, n, running, status);
                }
                if (scrape && streq(scrape, "true")) f->metrics_pods_annotated = true;
                break;
        case POD_DCGM:
                keep_labels(&f->dcgm_labels, &f->dcgm_namespace, ns, labels);
                if (n && running) n->dcgm_exporter = true;
                if (scrape && streq(scrape, "true")) f->metrics_pods_annotated = true;
                break;
        case POD_NODE_EXPORTER:
                keep_labels(&f->node_exporter_labels, &f->node_exporter_namespace, ns, labels);
                if (n && running) n->node_exporter = true;
                break;
        case POD_NETWORK_OPERATOR:
                f->network_operator_seen = true;
                if (n && running) n->network_operator = true;
                break;
        case POD_OTHER: break;
        }
        int64_t gpus = pod_gpus(spec);
        if (gpus == 0) return kind == POD_OTHER ? 1 : 0;
        if (n && (running || streq(phase, "Pending"))) n->gpu_requested += gpus;
        if (streq(phase, "Pending") && (!node || !*node)) {
                f->pending = xrealloc(f->pending, (f->n_pending + 1) * sizeof *f->pending);
                struct cl_pending *p = &f->pending[f->n_pending++];
                *p = (struct cl_pending){ .namespace = xstrndup(ns, 253), .name = xstrndup(name, 253), .gpus = gpus };
                p->since = cl_parse_time(kube_json_str(json_object_get(meta, "creationTimestamp")));
                pending_index_free(f); /* rebuilt on the next look-up */
        }
        return 0;
}

/* Returns the pending pod ns/name, or NULL (builds the index on first use). */
static struct cl_pending *pending_find(struct cluster_facts *f, const char *ns, const char *name) {
        if (!f->pending_index) {
                struct strindex *t = xcalloc(1, sizeof *t);
                for (size_t i = 0; i < f->n_pending; i++) {
                        /* keys live in a side buffer owned by the table's users: "ns/name" strings */
                        char *k = xasprintf("%s/%s", f->pending[i].namespace, f->pending[i].name);
                        if (strindex_get(t, k) == (size_t)-1)
                                strindex_put(t, k, i);
                        else
                                free(k); /* the same pod named twice: the first one stands */
                }
                f->pending_index = t;
        }
        _cleanup_free_ char *key = xasprintf("%s/%s", ns, name);
        size_t i = strindex_get(f->pending_index, key);
        return i == (size_t)-1 ? NULL : &f->pending[i];
}

/* Frees the pending index and the keys it owns. */
static void pending_index_free(struct cluster_facts *f) {
        struct strindex *t = f->pending_index;
        if (!t) return;
        for (size_t i = 0; i < t->cap; i++) free((char *)t->keys[i]);
        strindex_free(t);
        f->pending_index = NULL;
}

/* Reads one event (FailedScheduling): its message goes to the pending pod it is about. Returns 0 or 1. */
static int add_event(struct cluster_facts *f, const json_t *ev) {
        const json_t *obj = json_object_get(ev, "involvedObject");
        const char *kind = kube_json_str(json_object_get(obj, "kind"));
        const char *ns = kube_json_str(json_object_get(obj, "namespace"));
        const char *name = kube_json_str(json_object_get(obj, "name"));
        const char *reason = kube_json_str(json_object_get(ev, "reason"));
        _cleanup_free_ char *msg = kube_json_strdup(json_object_get(ev, "message")); /* NULs as \\0 */
        f->n_events++;
        if (!kind || !streq(kind, "Pod") || !name || !msg || (reason && !streq(reason, "FailedScheduling"))) return 1;
        struct cl_pending *p = pending_find(f, ns ? ns : "default", name);
        if (!p) return 1;
        free(p->message);
        p->message = xstrndup(msg, 1024);
        return 0;
}

/* Reads one CSINode: the drivers registered on its node. Returns 0 or 1. */
static int add_csinode(struct cluster_facts *f, const json_t *o) {
        const char *name = kube_json_str(json_object_get(json_object_get(o, "metadata"), "name"));
        struct cl_node *n = name ? cluster_node_find(f, name) : NULL;
        if (!name) return -EBADMSG;
        if (!n) return 1;
        n->has_csinode = true;
        size_t i;
        const json_t *d;
        json_array_foreach(json_object_get(json_object_get(o, "spec"), "drivers"), i, d) {
                const char *dn = kube_json_str(json_object_get(d, "name"));
                if (dn && n->n_csi_drivers < 64) strv_add(&n->csi_drivers, &n->n_csi_drivers, dn, true);
        }
        return 0;
}

/* Returns whether every "k=v" of sel is in labels (an empty selector selects nothing, as a Service's). */
static bool selects(const struct cl_strv *sel, const struct cl_strv *labels) {
        if (sel->n == 0 || labels->n == 0) return false;
        for (size_t i = 0; i < sel->n; i++) {
                bool found = false;
                for (size_t j = 0; j < labels->n && !found; j++) found = streq(sel->v[i], labels->v[j]);
                if (!found) return false;
        }
        return true;
}

/* Reads one Service: kept when it selects the agent's or an exporter's pods. Returns 0 or 1. */
static int add_service(struct cluster_facts *f, const json_t *o) {
        const json_t *meta = json_object_get(o, "metadata");
        const char *ns = kube_json_str(json_object_get(meta, "namespace"));
        const char *name = kube_json_str(json_object_get(meta, "name"));
        if (!name) return -EBADMSG;
        if (!ns) ns = "default";
        struct cl_service s = { 0 };
        strv_from_map(&s.selector, json_object_get(json_object_get(o, "spec"), "selector"));
        s.selects_agent = f->agent_namespace && streq(ns, f->agent_namespace) && selects(&s.selector, &f->agent_labels);
        s.selects_dcgm = f->dcgm_namespace && streq(ns, f->dcgm_namespace) && selects(&s.selector, &f->dcgm_labels);
        s.selects_node_exporter = f->node_exporter_namespace && streq(ns, f->node_exporter_namespace) &&
                                  selects(&s.selector, &f->node_exporter_labels);
        if (!s.selects_agent && !s.selects_dcgm && !s.selects_node_exporter) {
                strv_free(s.selector.v, s.selector.n);
                return 1;
        }
        s.namespace = xstrndup(ns, 253);
        s.name = xstrndup(name, 253);
        strv_from_map(&s.labels, json_object_get(meta, "labels"));
        const char *scrape = label(json_object_get(meta, "annotations"), "prometheus.io/scrape");
        s.scrape_annotation = scrape && streq(scrape, "true");
        f->services = xrealloc(f->services, (f->n_services + 1) * sizeof *f->services);
        f->services[f->n_services++] = s;
        return 0;
}

/* Reads one ServiceMonitor. Returns 0, or -EBADMSG without a name. */
static int add_monitor(struct cluster_facts *f, const json_t *o) {
        const json_t *meta = json_object_get(o, "metadata"), *spec = json_object_get(o, "spec");
        const char *ns = kube_json_str(json_object_get(meta, "namespace"));
        const char *name = kube_json_str(json_object_get(meta, "name"));
        if (!name) return -EBADMSG;
        if (f->n_monitors >= 10000) return 1;
        struct cl_monitor m = { .namespace = xstrndup(ns ? ns : "default", 253), .name = xstrndup(name, 253) };
        const json_t *selector = json_object_get(spec, "selector");
        strv_from_map(&m.match_labels, json_object_get(selector, "matchLabels"));
        size_t e;
        const json_t *ex;
        json_array_foreach(json_object_get(selector, "matchExpressions"), e, ex) {
                if (m.match_expressions.n >= 32) break;
                const char *key = kube_json_str(json_object_get(ex, "key"));
                const char *op = kube_json_str(json_object_get(ex, "operator"));
                _cleanup_free_ char *values = xstrdup("");
                size_t k;
                const json_t *val;
                bool ok = key && op && *key && !strchr(key, ' ') && strlen(key) <= 317;
                json_array_foreach(json_object_get(ex, "values"), k, val) {
                        const char *sv = kube_json_str(val);
                        if (!sv || strchr(sv, ',') || strchr(sv, ' ') || strlen(sv) > 63 || k >= 64) {
                                ok = false;
                                break;
                        }
                        char *joined = xasprintf("%s%s%s", values, *values ? "," : "", sv);
                        free(values);
                        values = joined;
                }
                _cleanup_free_ char *text = ok ? xasprintf("%s %s %s", op, key, values) : xstrdup("Invalid");
                strv_add(&m.match_expressions.v, &m.match_expressions.n, text, false);
        }
        const json_t *nss = json_object_get(spec, "namespaceSelector");
        m.any_namespace = json_is_true(json_object_get(nss, "any"));
        size_t i;
        const json_t *v;
        json_array_foreach(json_object_get(nss, "matchNames"), i, v) if (kube_json_str(v) && m.n_namespaces < 64)
                strv_add(&m.namespaces, &m.n_namespaces, kube_json_str(v), true);
        f->monitors = xrealloc(f->monitors, (f->n_monitors + 1) * sizeof *f->monitors);
        f->monitors[f->n_monitors++] = m;
        return 0;
}

int cluster_facts_add(struct cluster_facts *f, enum cl_list l, const json_t *item) {
        if (!json_is_object(item)) return -EBADMSG;
        const json_t *meta = json_object_get(item, "metadata");
        const char *name = kube_json_str(json_object_get(meta, "name"));
        int r;
        switch (l) {
        case CL_LIST_NODES: {
                struct cl_node n;
                f->n_nodes_total++;
                r = cl_node_parse(item, &n);
                if (r != 0) return r;
                if (cluster_node_find(f, n.name)) { /* a name twice: the API never does; keep the first */
                        cl_node_free(&n);
                        return 1;
                }
                f->nodes = xrealloc(f->nodes, (f->n_nodes + 1) * sizeof *f->nodes);
                f->nodes[f->n_nodes++] = n;
                if (!f->index) f->index = xcalloc(1, sizeof(struct strindex));
                strindex_put(f->index, f->nodes[f->n_nodes - 1].name, f->n_nodes - 1);
                f->finished = false; /* sorted again before the other lists join */
                return 0;
        }
        case CL_LIST_CSINODES: cluster_facts_finish(f); return add_csinode(f, item);
        case CL_LIST_PODS: cluster_facts_finish(f); return add_pod(f, item);
        case CL_LIST_EVENTS: return add_event(f, item);
        case CL_LIST_STORAGECLASSES: {
                if (!name) return -EBADMSG;
                const json_t *ann = json_object_get(meta, "annotations");
                const char *d = label(ann, "storageclass.kubernetes.io/is-default-class");
                const char *b = label(ann, "storageclass.beta.kubernetes.io/is-default-class");
                strv_add(&f->storageclasses, &f->n_storageclasses, name, true);
                if ((d && streq(d, "true")) || (b && streq(b, "true")))
                        strv_add(&f->default_storageclasses, &f->n_default_storageclasses, name, true);
                return 0;
        }
        case CL_LIST_CSIDRIVERS:
                if (!name) return -EBADMSG;
                strv_add(&f->csidrivers, &f->n_csidrivers, name, true);
                return 0;
        case CL_LIST_RUNTIMECLASSES: {
                if (!name) return -EBADMSG;
                const char *h = kube_json_str(json_object_get(item, "handler"));
                _cleanup_free_ char *s = xasprintf("%.253s=%.253s", name, h ? h : "");
                strv_add(&f->runtimeclasses, &f->n_runtimeclasses, s, true);
                return 0;
        }
        case CL_LIST_SERVICES: return add_service(f, item);
        case CL_LIST_SERVICEMONITORS: return add_monitor(f, item);
        case CL_LIST_COUNT: break;
        }
        return -EINVAL;
}

/* The lists, in the order they are read (nodes first: the others join to them). */
static const struct {
        enum cl_list l;
        const char *what; /* "list nodes" in sentences */
        struct kube_list_request req;
        bool required;
} lists[] = {
        { CL_LIST_NODES, "nodes", { "/api/v1/nodes", NULL, NULL, 0 }, true },
        { CL_LIST_CSINODES, "csinodes (storage.k8s.io)", { "/apis/storage.k8s.io/v1/csinodes", NULL, NULL, 0 }, false },
        { CL_LIST_PODS, "pods", { "/api/v1/pods", NULL, "status.phase!=Succeeded,status.phase!=Failed", 0 }, true },
        { CL_LIST_EVENTS,
          "events",
          { "/api/v1/events", NULL, "involvedObject.kind=Pod,reason=FailedScheduling", 0 },
          false },
        { CL_LIST_STORAGECLASSES,
          "storageclasses (storage.k8s.io)",
          { "/apis/storage.k8s.io/v1/storageclasses", NULL, NULL, 0 },
          false },
        { CL_LIST_CSIDRIVERS,
          "csidrivers (storage.k8s.io)",
          { "/apis/storage.k8s.io/v1/csidrivers", NULL, NULL, 0 },
          false },
        { CL_LIST_RUNTIMECLASSES,
          "runtimeclasses (node.k8s.io)",
          { "/apis/node.k8s.io/v1/runtimeclasses", NULL, NULL, 0 },
          false },
        { CL_LIST_SERVICES, "services", { "/api/v1/services", NULL, NULL, 0 }, false },
        { CL_LIST_SERVICEMONITORS,
          "servicemonitors (monitoring.coreos.com)",
          { "/apis/monitoring.coreos.com/v1/servicemonitors", NULL, NULL, 0 },
          false },
};

struct add_ctx {
        struct cluster_facts *f;
        enum cl_list l;
};

/* kube_list_all's callback: one item to the facts; a malformed item is skipped. Returns 0. */
static int add_item(const json_t *item, void *userdata) {
        struct add_ctx *a = userdata;
        (void)cluster_facts_add(a->f, a->l, item);
        return 0;
}

void cluster_facts_free(struct cluster_facts *f) {
        if (!f) return;
        free(f->server);
        for (size_t i = 0; i < f->n_nodes; i++) cl_node_free(&f->nodes[i]);
        free(f->nodes);
        strindex_free(f->index);
        pending_index_free(f);
        for (size_t i = 0; i < f->n_pending; i++) {
                free(f->pending[i].namespace);
                free(f->pending[i].name);
                free(f->pending[i].message);
        }
        free(f->pending);
        strv_free(f->storageclasses, f->n_storageclasses);
        strv_free(f->default_storageclasses, f->n_default_storageclasses);
        strv_free(f->csidrivers, f->n_csidrivers);
        strv_free(f->runtimeclasses, f->n_runtimeclasses);
        strv_free(f->pod_runtimeclasses, f->n_pod_runtimeclasses);
        for (size_t i = 0; i < f->n_services; i++) {
                struct cl_service *s = &f->services[i];
                free(s->namespace);
                free(s->name);
                strv_free(s->labels.v, s->labels.n);
                strv_free(s->selector.v, s->selector.n);
        }
        free(f->services);
        for (size_t i = 0; i < f->n_monitors; i++) {
                struct cl_monitor *m = &f->monitors[i];
                free(m->namespace);
                free(m->name);
                strv_free(m->match_labels.v, m->match_labels.n);
                strv_free(m->match_expressions.v, m->match_expressions.n);
                strv_free(m->namespaces, m->n_namespaces);
        }
        free(f->monitors);
        strv_free(f->agent_labels.v, f->agent_labels.n);
        strv_free(f->dcgm_labels.v, f->dcgm_labels.n);
        strv_free(f->node_exporter_labels.v, f->node_exporter_labels.n);
        free(f->agent_namespace);
        free(f->dcgm_namespace);
        free(f->node_exporter_namespace);
        for (int l = 0; l < CL_LIST_COUNT; l++) free(f->lists[l].error);
        memset(f, 0, sizeof *f);
}

/* Reads every list once into f. Returns 0, or a negative errno with *ret_error (-ESTALE: start again). */
static int fetch_once(struct kube_client *c, unsigned limit, const char *node_selector, struct cluster_facts *f,
                      char **ret_error) {
        for (size_t i = 0; i < ELEMENTSOF(lists); i++) {
                struct kube_list_request req = lists[i].req;
                req.limit = limit;
                if (lists[i].l == CL_LIST_NODES && node_selector && *node_selector) req.label_selector = node_selector;
                struct add_ctx a = { f, lists[i].l };
                struct kube_list_stats st = { 0 };
                _cleanup_free_ char *err = NULL;
                int r = kube_list_all(c, &req, add_item, &a, &st, &err);
                f->pages += st.pages;
                if (lists[i].l == CL_LIST_NODES) cluster_facts_finish(f);
                if (r == 0) continue;
                /* a list the role does not grant, or a resource the server does not serve (no CRD): the
                 * checks resting on it say so; a required list, or any other failure, ends the run */
                bool partial = st.pages > 0;
                if (!lists[i].required && !partial && (r == -EPERM || r == -ENOENT)) {
                        f->lists[lists[i].l].rc = r;
                        f->lists[lists[i].l].error = TAKE_PTR(err);
                        continue;
                }
                if (r == -EPERM)
                        return errorf(ret_error, r, "cannot list %s: %s", lists[i].what, err ? err : "403 Forbidden");
                if (partial)
                        return errorf(ret_error, r,
                                      "the list of %s failed part-way, so no verdict is given (a partial "
                                      "cluster is not the cluster): %s",
                                      lists[i].what, err ? err : strerror(-r));
                return errorf(ret_error, r, "cannot list %s: %s", lists[i].what, err ? err : strerror(-r));
        }
        return 0;
}

int cluster_fetch(struct kube_client *c, unsigned limit, int64_t stale_after_s, const char *node_selector,
                  struct cluster_facts *ret, char **ret_error) {
        int r = 0;
        /* An expired continue token (410) means the list must start again, as client-go's pager does:
         * once; a second expiry is an error. */
        for (int attempt = 0; attempt < 2; attempt++) {
                memset(ret, 0, sizeof *ret);
                ret->server = xstrdup(kube_client_server(c));
                ret->now = (int64_t)time(NULL);
                ret->stale_after_s = stale_after_s;
                _cleanup_free_ char *err = NULL;
                r = fetch_once(c, limit, node_selector, ret, &err);
                if (r == 0) return 0;
                cluster_facts_free(ret);
                if (r != -ESTALE || attempt == 1) return errorf(ret_error, r, "%s", err);
        }
        return r;
}
