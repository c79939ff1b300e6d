/* kube_checkpoint.c: reads the kubelet's device manager checkpoint with jansson; both DeviceIDs formats. */
#include "kube/kube_checkpoint.h"
#include "basic/util.h"

#include <jansson.h>

void kube_checkpoint_free(struct kube_checkpoint *c) {
        if (!c) return;
        for (size_t i = 0; i < c->n_resources; i++) {
                free(c->resources[i].name);
                for (size_t d = 0; d < c->resources[i].n_devices; d++) free(c->resources[i].devices[d]);
                free(c->resources[i].devices);
        }
        free(c->resources);
        for (size_t i = 0; i < c->n_entries; i++) {
                struct kube_checkpoint_entry *e = &c->entries[i];
                free(e->pod_uid);
                free(e->container);
                free(e->resource);
                for (size_t d = 0; d < e->n_devices; d++) free(e->devices[d]);
                free(e->devices);
        }
        free(c->entries);
        free(c);
}

/* Appends the strings of a JSON array to *v; non-strings are counted in *skipped. Returns 0, or
 * -EBADMSG when arr is not an array. */
static int add_strings(const json_t *arr, char ***v, size_t *n, size_t *skipped) {
        if (!json_is_array(arr)) return -EBADMSG;
        size_t i;
        const json_t *s;
        json_array_foreach(arr, i, s) {
                const char *str = json_string_value(s);
                if (!str || !*str) {
                        (*skipped)++;
                        continue;
                }
                *v = xrealloc(*v, (*n + 1) * sizeof **v);
                (*v)[(*n)++] = xstrdup(str);
        }
        return 0;
}

/* Returns a malloc'd copy of a string member, or NULL when absent or not a string. */
static char *member(const json_t *o, const char *key) {
        const char *s = json_string_value(json_object_get(o, key));
        return s ? xstrdup(s) : NULL;
}

/* Fills e from one PodDeviceEntry. Returns 0, or -EBADMSG when it is malformed. */
static int parse_entry(const json_t *o, struct kube_checkpoint *c, struct kube_checkpoint_entry *e) {
        if (!json_is_object(o)) return -EBADMSG;
        const json_t *ids = json_object_get(o, "DeviceIDs");
        e->pod_uid = member(o, "PodUID");
        e->container = member(o, "ContainerName");
        e->resource = member(o, "ResourceName");
        if (!e->resource) return -EBADMSG;
        if (json_is_array(ids)) {
                c->flat = true;
                return add_strings(ids, &e->devices, &e->n_devices, &c->n_skipped);
        }
        if (json_is_object(ids)) {
                /* kubelet >= 1.20: {"<NUMA node>": ["id", ...], ...}; "-1" when without topology */
                c->numa_keyed = true;
                const char *k;
                const json_t *v;
                json_object_foreach((json_t *)ids, k, v) if (add_strings(v, &e->devices, &e->n_devices, &c->n_skipped) <
                                                             0) c->n_skipped++;
                return 0;
        }
        if (ids == NULL || json_is_null(ids)) return 0; /* Go writes null for an empty slice */
        return -EBADMSG;
}

/* Frees what one checkpoint entry owns and zeroes it. */
static void entry_clear(struct kube_checkpoint_entry *e) {
        free(e->pod_uid);
        free(e->container);
        free(e->resource);
        for (size_t d = 0; d < e->n_devices; d++) free(e->devices[d]);
        free(e->devices);
        *e = (struct kube_checkpoint_entry){ 0 };
}

int kube_checkpoint_parse(const char *data, size_t len, struct kube_checkpoint **ret, char **ret_error) {
        if (len > KUBE_CHECKPOINT_MAX_SIZE) {
                *ret_error = xasprintf("the checkpoint is larger than %zu bytes", KUBE_CHECKPOINT_MAX_SIZE);
                return -EFBIG;
        }
        json_error_t jerr;
        json_t *root = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!root) {
                *ret_error = xasprintf("not JSON: %s at line %d", jerr.text, jerr.line);
                return -EBADMSG;
        }
        const json_t *d = json_object_get(root, "Data");
        if (!json_is_object(d)) {
                json_decref(root);
                *ret_error = xstrdup("no \"Data\" object");
                return -EBADMSG;
        }
        const json_t *reg = json_object_get(d, "RegisteredDevices");
        const json_t *entries = json_object_get(d, "PodDeviceEntries");
        if ((reg && !json_is_object(reg) && !json_is_null(reg)) ||
            (entries && !json_is_array(entries) && !json_is_null(entries))) {
                json_decref(root);
                *ret_error = xstrdup("RegisteredDevices is not an object or PodDeviceEntries not an array");
                return -EBADMSG;
        }
        struct kube_checkpoint *c = xcalloc(1, sizeof *c);
        if (json_is_object(reg)) {
                const char *k;
                const json_t *v;
                json_object_foreach((json_t *)reg, k, v) {
                        struct kube_checkpoint_resource r = { .name = xstrdup(k) };
                        if (!json_is_null(v) && add_strings(v, &r.devices, &r.n_devices, &c->n_skipped) < 0)
                                c->n_skipped++;
                        c->resources = xrealloc(c->resources, (c->n_resources + 1) * sizeof *c->resources);
                        c->resources[c->n_resources++] = r;
                }
        }
        if (json_is_array(entries)) {
                size_t i;
                const json_t *o;
                json_array_foreach(entries, i, o) {
                        struct kube_checkpoint_entry e = { 0 };
                        if (parse_entry(o, c, &e) < 0) {
                                entry_clear(&e);
                                c->n_skipped++;
                                continue;
                        }
                        c->entries = xrealloc(c->entries, (c->n_entries + 1) * sizeof *c->entries);
                        c->entries[c->n_entries++] = e;
                }
        }
        json_decref(root);
        *ret = c;
        return 0;
}

const struct kube_checkpoint_resource *kube_checkpoint_find(const struct kube_checkpoint *c, const char *resource) {
        for (size_t i = 0; c && i < c->n_resources; i++)
                if (streq(c->resources[i].name, resource)) return &c->resources[i];
        return NULL;
}

size_t kube_device_id_base_len(const char *id) {
        const char *s = strstr(id, "::");
        return s ? (size_t)(s - id) : strlen(id);
}
