/* render_json.c: the gpunode.cluster/v1 document (a contract: fields are added, never renamed or dropped). */
#include "cluster/cluster.h"
#include "basic/util.h"

#define CLUSTER_SCHEMA "gpunode.cluster/v1"

/* Returns a JSON string of s made valid UTF-8, or null. */
static json_t *text(const char *s) {
        if (!s) return json_null();
        _cleanup_free_ char *clean = utf8_sanitize(s);
        return json_string(clean);
}

/* Returns the JSON word of a condition status. */
static const char *cond_word(enum cl_cond c) {
        switch (c) {
        case CL_COND_TRUE: return "True";
        case CL_COND_FALSE: return "False";
        case CL_COND_UNKNOWN: return "Unknown";
        case CL_COND_ABSENT: return "absent";
        }
        return "absent";
}

/* Returns one node's row as a JSON object (a new reference). */
static json_t *row_json(const struct cluster_report *r, const struct cl_row *row) {
        const struct cl_node *n = row->node;
        json_t *layers = json_array();
        int64_t hb = 0;
        for (int l = 0; l < CLUSTER_LAYERS; l++) {
                const struct cl_condition *c = &n->layers[l];
                if (c->heartbeat > hb) hb = c->heartbeat;
                json_array_append_new(
                        layers,
                        json_pack("{s:i, s:s, s:s, s:o, s:o}", "layer", l + 1, "status",
                                  n->layers[l].status == CL_COND_ABSENT ? "unknown" : check_status_name(row->layer[l]),
                                  "condition", cond_word(c->status), "reason", text(c->reason), "message",
                                  text(c->message)));
        }
        json_t *taints = json_array();
        for (size_t t = 0; t < n->n_taints; t++)
                json_array_append_new(taints, json_pack("{s:o, s:o, s:o}", "key", text(n->taints[t].key), "value",
                                                        text(n->taints[t].value), "effect", text(n->taints[t].effect)));
        json_t *agent = json_pack("{s:o, s:o, s:b, s:o, s:b}", "namespace", text(n->agent_namespace), "pod",
                                  text(n->agent_pod), "ready", n->agent_ready, "heartbeat_age_s",
                                  hb ? json_integer(r->facts->now - hb) : json_null(), "stale", row->stale);
        json_t *root = json_null();
        if (row->root_cause)
                root = json_pack("{s:o, s:o}", "layer", row->root_layer ? json_integer(row->root_layer) : json_null(),
                                 "text", text(row->root_cause));
        return json_pack(
                "{s:o, s:s, s:s, s:o, s:b, s:o, s:o, s:o, s:{s:I, s:I, s:I, s:I}, s:{s:o, s:o, s:o, s:o, s:o, s:o},"
                " s:o, s:b}",
                "name", text(n->name), "status", check_status_name(row->status), "gpu_because", n->gpu_because, "ready",
                n->ready == 1   ? json_true()
                : n->ready == 0 ? json_false()
                                : json_null(),
                "schedulable", !n->unschedulable, "taints", taints, "layers", layers, "root_cause", root, "gpus",
                "capacity", (json_int_t)n->gpu_capacity, "expected", (json_int_t)n->gpu_expected, "allocatable",
                (json_int_t)n->gpu_allocatable, "requested", (json_int_t)n->gpu_requested, "labels", "product",
                text(n->product), "driver", text(n->driver_version), "cuda", text(n->cuda_version), "instance_type",
                text(n->instance_type), "kubelet", text(n->kubelet_version), "runtime", text(n->runtime_version),
                "agent", agent, "rdma_nic", n->rdma_nic);
}

/* Returns one check as a JSON object (a new reference). */
static json_t *finding_json(const struct cl_finding *f) {
        json_t *ev = json_array();
        for (size_t e = 0; e < f->f.n_evidence; e++) json_array_append_new(ev, text(f->f.evidence[e]));
        return json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:o, s:o}", "id", f->def->id, "category",
                         cl_category_id(f->def->category), "status", check_status_name(f->f.status), "summary",
                         text(f->f.summary), "evidence", ev, "remedy", text(f->f.remedy), "blocked_by",
                         f->f.blocked_by ? json_string(f->f.blocked_by) : json_null(), "rests_on",
                         f->rests_on ? json_string(f->rests_on) : json_null());
}

/* Returns the document without "nodes" (a new reference). */
static json_t *head_json(const struct cluster_report *r) {
        const struct cluster_facts *f = r->facts;
        json_t *checks = json_array();
        for (size_t i = 0; i < r->n_findings; i++) json_array_append_new(checks, finding_json(&r->findings[i]));
        json_t *cats = json_array();
        for (int c = 0; c < CL_CATEGORIES; c++) {
                enum check_status worst = CHECK_SKIP;
                json_t *ids = json_array();
                for (size_t i = 0; i < r->n_findings; i++) {
                        if ((int)r->findings[i].def->category != c) continue;
                        json_array_append_new(ids, json_string(r->findings[i].def->id));
                        if (check_status_rank(r->findings[i].f.status) > check_status_rank(worst))
                                worst = r->findings[i].f.status;
                }
                json_array_append_new(cats, json_pack("{s:s, s:s, s:s, s:o}", "id", cl_category_id((enum cl_category)c),
                                                      "name", cl_category_name((enum cl_category)c), "status",
                                                      check_status_name(worst), "checks", ids));
        }
        json_t *root = json_null();
        if (r->root_cause)
                root = json_pack("{s:s, s:s, s:o, s:o}", "category", cl_category_id(r->root_cause->def->category),
                                 "check", r->root_cause->def->id, "summary", text(r->root_cause->f.summary), "remedy",
                                 text(r->root_cause->f.remedy));
        json_t *lists = json_object();
        static const char *const list_names[CL_LIST_COUNT] = { "nodes",          "csinodes",       "pods",
                                                               "events",         "storageclasses", "csidrivers",
                                                               "runtimeclasses", "services",       "servicemonitors" };
        for (int l = 0; l < CL_LIST_COUNT; l++)
                if (f->lists[l].rc) json_object_set_new(lists, list_names[l], text(f->lists[l].error));
        return json_pack("{s:s, s:o, s:I, s:s, s:o, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}, s:o, s:o, s:o}",
                         "schema", CLUSTER_SCHEMA, "server", text(f->server), "time", (json_int_t)f->now, "verdict",
                         verdict_name(r->verdict), "root_cause", root, "summary", "nodes", (json_int_t)f->n_nodes_total,
                         "gpu_nodes", (json_int_t)f->n_nodes, "gpu_nodes_ready", (json_int_t)r->nodes_ready,
                         "gpus_allocatable", (json_int_t)r->gpus_allocatable, "gpus_capacity",
                         (json_int_t)r->gpus_capacity, "gpus_expected", (json_int_t)r->gpus_expected, "pods",
                         (json_int_t)f->n_pods, "pending_gpu_pods", (json_int_t)f->n_pending, "api_pages",
                         (json_int_t)f->pages, "unreadable", lists, "categories", cats, "checks", checks);
}

json_t *cluster_report_to_json(const struct cluster_report *r) {
        json_t *doc = head_json(r);
        json_t *nodes = json_array();
        for (size_t i = 0; i < r->n_rows; i++) json_array_append_new(nodes, row_json(r, &r->rows[i]));
        json_object_set_new(doc, "nodes", nodes);
        return doc;
}

/* Writes the document with "nodes" last, one node a line, each built and freed in turn: the output of a
 * large cluster is never held whole in memory. */
int cluster_render_json(FILE *out, const struct cluster_report *r) {
        json_t *doc = head_json(r);
        if (!doc) return -EINVAL;
        char *head = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        json_decref(doc);
        if (!head) return -ENOMEM;
        size_t len = strlen(head);
        while (len && head[len - 1] != '}') len--; /* the closing brace: "nodes" goes before it */
        if (len) len--;
        while (len && (head[len - 1] == '\n' || head[len - 1] == ' ')) len--;
        fwrite(head, 1, len, out);
        free(head);
        fputs(",\n  \"nodes\": [", out);
        for (size_t i = 0; i < r->n_rows; i++) {
                json_t *n = row_json(r, &r->rows[i]);
                fputs(i ? ",\n    " : "\n    ", out);
                int rc = json_dumpf(n, out, JSON_COMPACT | JSON_PRESERVE_ORDER);
                json_decref(n);
                if (rc < 0) return -EIO;
        }
        fputs(r->n_rows ? "\n  ]\n}\n" : "]\n}\n", out);
        return ferror(out) ? -EIO : 0;
}
