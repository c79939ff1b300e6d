/* probe_cdi.c: CDI specs in /etc/cdi and /var/run/cdi (YAML via libfyaml, JSON via jansson): kind, devices, host paths. */
#include <jansson.h>
#include "basic/yaml.h"

#include "facts/node.h"
#include "facts/layer2_container.h"
#include "basic/hostfs.h"

#define CDI_READ_MAX (8u << 20)
#define CDI_MAX_ITEMS 100000

/* Appends a copy of s to a string list unless it is already there. */
static void strv_add_unique(char ***v, size_t *n, const char *s) {
        if (!s || !*s || *n >= CDI_MAX_ITEMS) return;
        for (size_t i = 0; i < *n; i++)
                if (streq((*v)[i], s)) return;
        *v = xrealloc(*v, (*n + 1) * sizeof(char *));
        (*v)[(*n)++] = utf8_sanitize(s);
}

/* Collects the host paths of one containerEdits object. */
static void collect_edits(struct cdi_spec *s, json_t *edits) {
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(edits, "deviceNodes"), i, e) {
                const char *p = json_string_value(json_object_get(e, "hostPath"));
                if (!p) p = json_string_value(json_object_get(e, "path"));
                strv_add_unique(&s->device_nodes, &s->n_device_nodes, p);
        }
        json_array_foreach(json_object_get(edits, "mounts"), i, e)
                strv_add_unique(&s->mounts, &s->n_mounts, json_string_value(json_object_get(e, "hostPath")));
        json_array_foreach(json_object_get(edits, "hooks"), i, e)
                strv_add_unique(&s->hooks, &s->n_hooks, json_string_value(json_object_get(e, "path")));
}

/* Sets s->rc and s->error; returns -EINVAL. */
static int spec_fail(struct cdi_spec *s, const char *msg) {
        s->rc = -EINVAL;
        s->error = xasprintf("%s: %s", s->path, msg);
        return -EINVAL;
}

int cdi_parse_spec(const char *path, const char *text, size_t len, bool json, struct cdi_spec *ret) {
        *ret = (struct cdi_spec){.path = xstrdup(path)};
        json_t *root = NULL;
        if (json) {
                json_error_t err;
                root = json_loadb(text, len, 0, &err);
                if (!root) {
                        _cleanup_free_ char *m = xasprintf("line %d, column %d: %s", err.line, err.column, err.text);
                        return spec_fail(ret, m);
                }
        } else {
                _cleanup_free_ char *m = NULL;
                if (yaml_to_json(text, len, &root, &m) < 0) return spec_fail(ret, m);
        }
        int r = 0;
        if (!json_is_object(root)) {
                r = spec_fail(ret, "not a CDI spec: the top level is not a mapping");
                goto out;
        }
        const char *kind = json_string_value(json_object_get(root, "kind"));
        if (!kind) {
                r = spec_fail(ret, "not a CDI spec: no `kind`");
                goto out;
        }
        ret->kind = utf8_sanitize(kind);
        const char *ver = json_string_value(json_object_get(root, "cdiVersion"));
        if (ver) ret->cdi_version = utf8_sanitize(ver);
        json_t *devices = json_object_get(root, "devices");
        if (devices && !json_is_array(devices)) {
                r = spec_fail(ret, "`devices` is not a list");
                goto out;
        }
        size_t i;
        json_t *d;
        json_array_foreach(devices, i, d) {
                strv_add_unique(&ret->devices, &ret->n_devices, json_string_value(json_object_get(d, "name")));
                collect_edits(ret, json_object_get(d, "containerEdits"));
        }
        collect_edits(ret, json_object_get(root, "containerEdits"));
out:
        json_decref(root);
        return r;
}

/* Frees n strings and the array. */
static void strv_free_n(char **v, size_t n) {
        for (size_t i = 0; i < n; i++) free(v[i]);
        free(v);
}

void cdi_spec_free(struct cdi_spec *s) {
        free(s->path);
        free(s->error);
        free(s->cdi_version);
        free(s->kind);
        strv_free_n(s->devices, s->n_devices);
        strv_free_n(s->device_nodes, s->n_device_nodes);
        strv_free_n(s->mounts, s->n_mounts);
        strv_free_n(s->hooks, s->n_hooks);
        strv_free_n(s->missing, s->n_missing);
        *s = (struct cdi_spec){0};
}

void probe_cdi(struct cdi_facts *ret) {
        *ret = (struct cdi_facts){0};
        static const char *const dirs[] = {"/etc/cdi", "/var/run/cdi"};
        for (size_t d = 0; d < ELEMENTSOF(dirs); d++) {
                _cleanup_strv_free_ char **names = NULL;
                int n = hostfs_list(dirs[d], false, &names);
                for (int i = 0; i < n && ret->n_specs < 256; i++) {
                        size_t len = strlen(names[i]);
                        bool is_json = len > 5 && streq(names[i] + len - 5, ".json");
                        bool is_yaml = (len > 5 && streq(names[i] + len - 5, ".yaml")) || (len > 4 && streq(names[i] + len - 4, ".yml"));
                        if (!is_json && !is_yaml) continue;
                        _cleanup_free_ char *p = xasprintf("%s/%s", dirs[d], names[i]);
                        _cleanup_free_ char *text = NULL;
                        size_t tlen = 0;
                        ret->specs = xrealloc(ret->specs, (ret->n_specs + 1) * sizeof *ret->specs);
                        struct cdi_spec *s = &ret->specs[ret->n_specs++];
                        int r = hostfs_read(p, CDI_READ_MAX, &text, &tlen);
                        if (r < 0) {
                                *s = (struct cdi_spec){.path = xstrdup(p), .rc = r, .error = read_error(p, r)};
                                continue;
                        }
                        if (cdi_parse_spec(p, text, tlen, is_json, s) < 0) continue;
                        char **lists[] = {s->device_nodes, s->mounts, s->hooks};
                        size_t lens[] = {s->n_device_nodes, s->n_mounts, s->n_hooks};
                        for (size_t l = 0; l < ELEMENTSOF(lists); l++)
                                for (size_t k = 0; k < lens[l]; k++)
                                        if (lists[l][k][0] == '/' && !hostfs_exists(lists[l][k]))
                                                strv_add_unique(&s->missing, &s->n_missing, lists[l][k]);
                }
        }
}

void cdi_facts_free(struct cdi_facts *f) {
        for (size_t i = 0; i < f->n_specs; i++) cdi_spec_free(&f->specs[i]);
        free(f->specs);
        *f = (struct cdi_facts){0};
}
