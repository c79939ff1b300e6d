/* json.c: the gpunode.report/v1 JSON document (a contract: never rename or drop fields). */
#include "output/output.h"
#include "basic/rfc3339.h"

#include <jansson.h>

#define REPORT_SCHEMA "gpunode.report/v1"

/* Returns a JSON string of s, made valid UTF-8 first: evidence quotes files as they are. */
static json_t *json_text(const char *s) {
        if (!s) return json_null();
        _cleanup_free_ char *clean = utf8_sanitize(s);
        return json_string(clean);
}

/* Returns the GPUs a finding is about as a new JSON array: [{gpu, uuid, pci_bus_id, xid, count,
 * first_seen, last_seen}], a member absent where the finding does not know it. */
static json_t *finding_gpus_to_json(const struct finding *f) {
        json_t *a = json_array();
        for (size_t i = 0; i < f->n_gpus; i++) {
                const struct finding_gpu *g = &f->gpus[i];
                json_t *o = json_object();
                char when[RFC3339_MAX];
                if (g->index >= 0) json_object_set_new(o, "gpu", json_integer(g->index));
                if (g->uuid) json_object_set_new(o, "uuid", json_text(g->uuid));
                if (g->pci_bus_id) json_object_set_new(o, "pci_bus_id", json_text(g->pci_bus_id));
                if (g->xid > 0) json_object_set_new(o, "xid", json_integer(g->xid));
                if (g->count > 0) json_object_set_new(o, "count", json_integer((json_int_t)g->count));
                if (g->first_seen > 0)
                        json_object_set_new(o, "first_seen", json_string(rfc3339_format(g->first_seen, when)));
                if (g->last_seen > 0)
                        json_object_set_new(o, "last_seen", json_string(rfc3339_format(g->last_seen, when)));
                json_array_append_new(a, o);
        }
        return a;
}

/* Returns one check of the report as a new JSON object (the v1 contract's fields, then "action" and,
 * for a finding about GPUs, "gpus"). */
static json_t *finding_to_json(const struct finding *f) {
        json_t *ev = json_array();
        for (size_t i = 0; i < f->n_evidence; i++) json_array_append_new(ev, json_text(f->evidence[i]));
        json_t *deps = json_array();
        for (size_t d = 0; d < CHECK_MAX_DEPS && f->def->depends[d]; d++)
                json_array_append_new(deps, json_string(f->def->depends[d]));
        json_t *o = json_pack("{s:s, s:i, s:s, s:s, s:o, s:o, s:o, s:s, s:o, s:o}", "id", f->def->id, "layer",
                              f->def->layer, "component", f->def->component, "status", check_status_name(f->status),
                              "summary", json_text(f->summary ? f->summary : ""), "evidence", ev, "remedy",
                              json_text(f->remedy), "action", finding_action_name(f->action), "blocked_by",
                              f->blocked_by ? json_string(f->blocked_by) : json_null(), "depends_on", deps);
        if (f->n_gpus) json_object_set_new(o, "gpus", finding_gpus_to_json(f));
        return o;
}

/* Returns text as a JSON string, or null for NULL (a new reference). */
static json_t *json_text_or_null(const char *text) {
        return text ? json_text(text) : json_null();
}

/* Returns the report's GPUs as the "gpus" array (a new reference): [{index, uuid, pci_bus_id, name,
 * pods: [{namespace, pod, container}]}], an empty array when NVML named none. */
static json_t *gpus_to_json(const struct report *r) {
        json_t *gpus = json_array();
        for (size_t i = 0; i < r->n_gpus; i++) {
                const struct report_gpu *g = &r->gpus[i];
                json_t *pods = json_array();
                for (size_t p = 0; p < g->n_pods; p++)
                        json_array_append_new(pods,
                                              json_pack("{s:o, s:o, s:o}", "namespace", json_text(g->pods[p].namespace),
                                                        "pod", json_text(g->pods[p].pod), "container",
                                                        json_text(g->pods[p].container)));
                json_array_append_new(gpus, json_pack("{s:I, s:o, s:o, s:o, s:o}", "index", (json_int_t)g->index,
                                                      "uuid", json_text_or_null(g->uuid), "pci_bus_id",
                                                      json_text_or_null(g->pci_bus_id), "name",
                                                      json_text_or_null(g->name), "pods", pods));
        }
        return gpus;
}

json_t *report_to_json(const struct report *r) {
        json_t *checks = json_array();
        for (size_t i = 0; i < r->n_findings; i++) json_array_append_new(checks, finding_to_json(&r->findings[i]));

        json_t *layers = json_array();
        for (int layer = LAYER_MIN; layer <= LAYER_MAX; layer++) {
                json_t *components = json_array();
                const char *seen[64];
                size_t n_seen = 0;
                for (size_t i = 0; i < r->n_findings; i++) {
                        const struct check_def *d = r->findings[i].def;
                        if (d->layer != layer) continue;
                        bool dup = false;
                        for (size_t s = 0; s < n_seen; s++) dup |= streq(seen[s], d->component);
                        if (dup || n_seen == ELEMENTSOF(seen)) continue;
                        seen[n_seen++] = d->component;
                        json_array_append_new(
                                components,
                                json_pack("{s:s, s:s}", "id", d->component, "status",
                                          layer_status_name(report_component_status(r, layer, d->component))));
                }
                json_array_append_new(
                        layers, json_pack("{s:i, s:s, s:s, s:o}", "layer", layer, "name", layer_name(layer), "status",
                                          layer_status_name(report_layer_status(r, layer)), "components", components));
        }

        json_t *root_cause = json_null();
        if (r->root_cause) {
                const struct finding *f = r->root_cause;
                root_cause = json_pack("{s:i, s:s, s:s, s:o, s:o}", "layer", f->def->layer, "component",
                                       f->def->component, "check", f->def->id, "summary", json_text(f->summary),
                                       "remedy", json_text(f->remedy));
        }
        char when[RFC3339_MAX];
        json_t *time = r->time > 0 ? json_string(rfc3339_format(r->time, when)) : json_null();
        return json_pack("{s:s, s:s, s:o, s:o, s:o, s:s, s:o, s:o, s:o, s:o}", "schema", REPORT_SCHEMA, "version",
                         r->version, "node", json_text(r->node), "root", json_text(r->root), "time", time, "verdict",
                         verdict_name(r->verdict), "root_cause", root_cause, "layers", layers, "checks", checks, "gpus",
                         gpus_to_json(r));
}

int output_json(FILE *out, const struct report *r) {
        json_t *doc = report_to_json(r);
        if (!doc) return -EINVAL;
        int rc = json_dumpf(doc, out, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        json_decref(doc);
        if (rc < 0 || fputc('\n', out) == EOF) return -EIO;
        return 0;
}
