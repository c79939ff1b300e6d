/* probe_cdi.c: CDI specs in /etc/cdi and /var/run/cdi (YAML via libfyaml, JSON via jansson): kind, devices, host paths.
 */
#include <jansson.h>
#include "basic/yaml.h"

#include "facts/node.h"
#include "facts/layer2_container.h"
#include "basic/hostfs.h"

/* Bounds on one spec: a node's spec (nvidia-ctk cdi generate) is tens of KiB with hundreds of device
 * nodes and mounts; more is refused, naming the spec, rather than parsed at any cost. Parsing is linear:
 * a 4 MiB spec (about 50,000 devices) takes well under a second, jansson's tree about 20 times the
 * text, and libfyaml's document (YAML, in yaml.c's child) 50 times, bounded there at 256 MiB. */
#define CDI_SPEC_MAX_BYTES (4u << 20)
#define CDI_MAX_ITEMS      100000

/* One list of a spec being collected: the strings in order, a set of those seen (a jansson object used
 * for its hash table: keys only), and its capacity, doubled as it fills. */
struct strlist {
        char ***v;
        size_t *n;
        size_t cap;
        json_t *seen;
        const char *what; /* "device nodes", for the bound's error */
};

/* Returns a list filling *v and *n (both start empty). */
static struct strlist strlist_new(char ***v, size_t *n, const char *what) {
        json_t *seen = json_object();
        if (!seen) {
                fputs("gpunode: out of memory\n", stderr);
                abort();
        }
        return (struct strlist){ .v = v, .n = n, .seen = seen, .what = what };
}

/* Frees the list's set (the strings stay in *v). */
static void strlist_done(struct strlist *l) {
        json_decref(l->seen);
        l->seen = NULL;
}

/* Appends a sanitized copy of s unless it is NULL, empty or already listed, in constant amortized
 * time. Returns 0, or -E2BIG when the list already holds CDI_MAX_ITEMS strings. */
static int strlist_add(struct strlist *l, const char *s) {
        if (!s || !*s) return 0;
        char *c = utf8_sanitize(s);
        if (json_object_get(l->seen, c)) {
                free(c);
                return 0;
        }
        if (*l->n >= CDI_MAX_ITEMS) {
                free(c);
                return -E2BIG;
        }
        if (*l->n == l->cap) {
                l->cap = l->cap ? 2 * l->cap : 16;
                *l->v = xrealloc(*l->v, l->cap * sizeof(char *));
        }
        (*l->v)[(*l->n)++] = c;
        if (json_object_set_new_nocheck(l->seen, c, json_null()) < 0) {
                fputs("gpunode: out of memory\n", stderr);
                abort();
        }
        return 0;
}

/* The lists of one spec being parsed. */
struct spec_lists {
        struct strlist devices, device_nodes, mounts, hooks;
};

/* Adds s to l; on the bound, sets *full to l (the first list to pass it). Returns nothing. */
static void add_or_full(struct strlist *l, const char *s, const struct strlist **full) {
        if (!*full && strlist_add(l, s) < 0) *full = l;
}

/* Collects the host paths of one containerEdits object; *full is set to the first list over its bound. */
static void collect_edits(struct spec_lists *L, json_t *edits, const struct strlist **full) {
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(edits, "deviceNodes"), i, e) {
                const char *p = json_string_value(json_object_get(e, "hostPath"));
                if (!p) p = json_string_value(json_object_get(e, "path"));
                add_or_full(&L->device_nodes, p, full);
        }
        json_array_foreach(json_object_get(edits, "mounts"), i, e)
                add_or_full(&L->mounts, json_string_value(json_object_get(e, "hostPath")), full);
        json_array_foreach(json_object_get(edits, "hooks"), i, e)
                add_or_full(&L->hooks, json_string_value(json_object_get(e, "path")), full);
}

/* Sets s->rc and s->error; returns -EINVAL. */
static int spec_fail(struct cdi_spec *s, const char *msg) {
        s->rc = -EINVAL;
        s->error = xasprintf("%s: %s", s->path, msg);
        return -EINVAL;
}

int cdi_parse_spec(const char *path, const char *text, size_t len, bool json, struct cdi_spec *ret) {
        *ret = (struct cdi_spec){ .path = xstrdup(path) };
        if (len > CDI_SPEC_MAX_BYTES) {
                _cleanup_free_ char *m =
                        xasprintf("%zu bytes, more than the %u MiB a CDI spec may hold", len, CDI_SPEC_MAX_BYTES >> 20);
                return spec_fail(ret, m);
        }
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
        struct spec_lists L = {
                .devices = strlist_new(&ret->devices, &ret->n_devices, "devices"),
                .device_nodes = strlist_new(&ret->device_nodes, &ret->n_device_nodes, "device nodes"),
                .mounts = strlist_new(&ret->mounts, &ret->n_mounts, "mounts"),
                .hooks = strlist_new(&ret->hooks, &ret->n_hooks, "hooks"),
        };
        const struct strlist *full = NULL;
        size_t i;
        json_t *d;
        json_array_foreach(devices, i, d) {
                if (full) break;
                add_or_full(&L.devices, json_string_value(json_object_get(d, "name")), &full);
                collect_edits(&L, json_object_get(d, "containerEdits"), &full);
        }
        collect_edits(&L, json_object_get(root, "containerEdits"), &full);
        if (full) {
                _cleanup_free_ char *m =
                        xasprintf("more than %d %s, refused (a node's spec lists hundreds)", CDI_MAX_ITEMS, full->what);
                r = spec_fail(ret, m);
        }
        strlist_done(&L.devices);
        strlist_done(&L.device_nodes);
        strlist_done(&L.mounts);
        strlist_done(&L.hooks);
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
        *s = (struct cdi_spec){ 0 };
}

void probe_cdi(struct cdi_facts *ret) {
        *ret = (struct cdi_facts){ 0 };
        static const char *const dirs[] = { "/etc/cdi", "/var/run/cdi" };
        for (size_t d = 0; d < ELEMENTSOF(dirs); d++) {
                _cleanup_strv_free_ char **names = NULL;
                int n = hostfs_list(dirs[d], false, &names);
                for (int i = 0; i < n && ret->n_specs < 256; i++) {
                        size_t len = strlen(names[i]);
                        bool is_json = len > 5 && streq(names[i] + len - 5, ".json");
                        bool is_yaml = (len > 5 && streq(names[i] + len - 5, ".yaml")) ||
                                       (len > 4 && streq(names[i] + len - 4, ".yml"));
                        if (!is_json && !is_yaml) continue;
                        _cleanup_free_ char *p = xasprintf("%s/%s", dirs[d], names[i]);
                        _cleanup_free_ char *text = NULL;
                        size_t tlen = 0;
                        ret->specs = xrealloc(ret->specs, (ret->n_specs + 1) * sizeof *ret->specs);
                        struct cdi_spec *s = &ret->specs[ret->n_specs++];
                        int r = hostfs_read(p, CDI_SPEC_MAX_BYTES, &text, &tlen);
                        if (r < 0) {
                                *s = (struct cdi_spec){
                                        .path = xstrdup(p),
                                        .rc = r,
                                        .error = r == -EFBIG ? xasprintf("%s: more than the %u MiB a CDI spec may hold",
                                                                         p, CDI_SPEC_MAX_BYTES >> 20)
                                                             : read_error(p, r)
                                };
                                continue;
                        }
                        if (cdi_parse_spec(p, text, tlen, is_json, s) < 0) continue;
                        struct strlist missing = strlist_new(&s->missing, &s->n_missing, "missing paths");
                        char **lists[] = { s->device_nodes, s->mounts, s->hooks };
                        size_t lens[] = { s->n_device_nodes, s->n_mounts, s->n_hooks };
                        for (size_t l = 0; l < ELEMENTSOF(lists); l++)
                                for (size_t k = 0; k < lens[l]; k++)
                                        if (lists[l][k][0] == '/' && !hostfs_exists(lists[l][k]))
                                                (void)strlist_add(&missing, lists[l][k]);
                        strlist_done(&missing);
                }
        }
}

void cdi_facts_free(struct cdi_facts *f) {
        for (size_t i = 0; i < f->n_specs; i++) cdi_spec_free(&f->specs[i]);
        free(f->specs);
        *f = (struct cdi_facts){ 0 };
}
