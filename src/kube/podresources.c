/* podresources.c: List and GetAllocatableResources on the kubelet's pod-resources socket, answers decoded with
 * protobuf-c. */
#include "kube/podresources.h"
#include "grpc/grpc_client.h"
#include "grpc/grpc_wire.h"

#include "basic/dl_protobuf_c.h"

#include <jansson.h>
#include "podresources.pb-c.h"

struct podres_client {
        struct grpc_channel *channel;
        unsigned timeout_ms;
};

struct podres_client *podres_client_new(const char *socket, unsigned timeout_ms) {
        struct podres_client *c = xcalloc(1, sizeof *c);
        c->channel = grpc_channel_new(socket ? socket : PODRES_SOCKET, "the kubelet's pod-resources socket",
                                      PODRES_MAX_MESSAGE);
        c->timeout_ms = timeout_ms ? timeout_ms : PODRES_TIMEOUT_MS_DEFAULT;
        return c;
}

void podres_client_free(struct podres_client *c) {
        if (!c) return;
        grpc_channel_free(c->channel);
        free(c);
}

/* Frees what one devices entry holds (not the entry). */
static void devices_done(struct podres_devices *d) {
        free(d->resource_name);
        for (size_t i = 0; i < d->n_device_ids; i++) free(d->device_ids[i]);
        free(d->device_ids);
        free(d->numa_nodes);
}

void podres_list_free(struct podres_list *l) {
        if (!l) return;
        for (size_t p = 0; p < l->n_pods; p++) {
                struct podres_pod *pod = &l->pods[p];
                for (size_t c = 0; c < pod->n_containers; c++) {
                        struct podres_container *ct = &pod->containers[c];
                        for (size_t d = 0; d < ct->n_devices; d++) devices_done(&ct->devices[d]);
                        free(ct->devices);
                        free(ct->name);
                }
                free(pod->containers);
                free(pod->name);
                free(pod->namespace);
        }
        free(l->pods);
        free(l);
}

void podres_allocatable_free(struct podres_allocatable *a) {
        if (!a) return;
        for (size_t d = 0; d < a->n_devices; d++) devices_done(&a->devices[d]);
        free(a->devices);
        free(a);
}

/* protobuf-c's allocator for one answer: plain malloc, refused once the budget is spent. */
struct budget {
        ProtobufCAllocator allocator;
        size_t left;
        bool spent;
};

/* Returns size bytes from malloc, or NULL (protobuf-c then fails the unpack) past the budget. */
static void *budget_alloc(void *data, size_t size) {
        struct budget *b = data;
        if (size > b->left) {
                b->spent = true;
                return NULL;
        }
        b->left -= size;
        return xmalloc(size ? size : 1);
}

static void budget_free(void *data, void *ptr) {
        free(ptr);
}

static void budget_init(struct budget *b) {
        *b = (struct budget){ .allocator = { budget_alloc, budget_free, b }, .left = PODRES_DECODE_BUDGET };
}

/* Returns a malloc'd copy of a decoded string, or NULL when it is not UTF-8 (proto3 strings
 * must be; a kubelet's never are not). protobuf-c gives "" for an absent one. */
static char *copy_string(const char *s) {
        size_t n = strlen(s);
        if (utf8_valid_prefix(s, n) != n) return NULL;
        return xstrdup(s);
}

/* Fills d from a decoded ContainerDevices. Returns 0 or -EBADMSG with the sentence. */
static int copy_devices(const V1__ContainerDevices *in, struct podres_devices *d, char **ret_error) {
        d->resource_name = copy_string(in->resource_name);
        if (!d->resource_name) return errorf(ret_error, -EBADMSG, "a resource name is not UTF-8");
        if (in->n_device_ids) d->device_ids = xcalloc(in->n_device_ids, sizeof *d->device_ids);
        for (size_t i = 0; i < in->n_device_ids; i++) {
                d->device_ids[i] = copy_string(in->device_ids[i]);
                if (!d->device_ids[i])
                        return errorf(ret_error, -EBADMSG, "a device id of %s is not UTF-8", d->resource_name);
                d->n_device_ids++;
        }
        if (in->topology && in->topology->n_nodes) {
                d->numa_nodes = xcalloc(in->topology->n_nodes, sizeof *d->numa_nodes);
                for (size_t i = 0; i < in->topology->n_nodes; i++) d->numa_nodes[i] = in->topology->nodes[i]->id;
                d->n_numa_nodes = in->topology->n_nodes;
        }
        return 0;
}

/* Returns the sentence-carrying errno for an unpack protobuf-c refused. */
static int unpack_failed(const struct budget *b, const char *what, size_t len, char **ret_error) {
        if (b->spent)
                return errorf(ret_error, -E2BIG, "the %zu-byte %s expands past the %zu MiB decoding limit", len, what,
                              PODRES_DECODE_BUDGET >> 20);
        return errorf(ret_error, -EBADMSG, "the %zu-byte answer is not a valid %s", len, what);
}

int podres_decode_list(const uint8_t *data, size_t len, struct podres_list **ret, char **ret_error) {
        int r = dl_protobuf_c_open(ret_error);
        if (r < 0) return r;
        struct budget b;
        budget_init(&b);
        V1__ListPodResourcesResponse *in = v1__list_pod_resources_response__unpack(&b.allocator, len, data);
        if (!in) return unpack_failed(&b, "ListPodResourcesResponse", len, ret_error);

        _cleanup_podres_list_ struct podres_list *l = xcalloc(1, sizeof *l);
        if (in->n_pod_resources) l->pods = xcalloc(in->n_pod_resources, sizeof *l->pods);
        for (size_t p = 0; p < in->n_pod_resources && r == 0; p++) {
                const V1__PodResources *ip = in->pod_resources[p];
                struct podres_pod *pod = &l->pods[l->n_pods++];
                pod->name = copy_string(ip->name);
                pod->namespace = copy_string(ip->namespace_);
                if (!pod->name || !pod->namespace) {
                        r = errorf(ret_error, -EBADMSG, "a pod name or namespace is not UTF-8");
                        break;
                }
                if (ip->n_containers) pod->containers = xcalloc(ip->n_containers, sizeof *pod->containers);
                for (size_t c = 0; c < ip->n_containers && r == 0; c++) {
                        const V1__ContainerResources *ic = ip->containers[c];
                        struct podres_container *ct = &pod->containers[pod->n_containers++];
                        ct->name = copy_string(ic->name);
                        if (!ct->name) {
                                r = errorf(ret_error, -EBADMSG, "a container name of pod %s/%s is not UTF-8",
                                           pod->namespace, pod->name);
                                break;
                        }
                        if (ic->n_devices) ct->devices = xcalloc(ic->n_devices, sizeof *ct->devices);
                        for (size_t d = 0; d < ic->n_devices && r == 0; d++)
                                r = copy_devices(ic->devices[d], &ct->devices[ct->n_devices++], ret_error);
                }
        }
        v1__list_pod_resources_response__free_unpacked(in, &b.allocator);
        if (r < 0) return r;
        *ret = TAKE_PTR(l);
        return 0;
}

int podres_decode_allocatable(const uint8_t *data, size_t len, struct podres_allocatable **ret, char **ret_error) {
        int r = dl_protobuf_c_open(ret_error);
        if (r < 0) return r;
        struct budget b;
        budget_init(&b);
        V1__AllocatableResourcesResponse *in = v1__allocatable_resources_response__unpack(&b.allocator, len, data);
        if (!in) return unpack_failed(&b, "AllocatableResourcesResponse", len, ret_error);

        _cleanup_podres_allocatable_ struct podres_allocatable *a = xcalloc(1, sizeof *a);
        if (in->n_devices) a->devices = xcalloc(in->n_devices, sizeof *a->devices);
        for (size_t d = 0; d < in->n_devices && r == 0; d++)
                r = copy_devices(in->devices[d], &a->devices[a->n_devices++], ret_error);
        v1__allocatable_resources_response__free_unpacked(in, &b.allocator);
        if (r < 0) return r;
        *ret = TAKE_PTR(a);
        return 0;
}

/* Calls one method with an empty request (both requests are empty messages: zero bytes).
 * Returns grpc_unary's answer; *ret_status is the grpc-status or -1. */
static int call(struct podres_client *c, const char *method, uint8_t **ret_msg, size_t *ret_len, int *ret_status,
                char **ret_error) {
        /* Load libprotobuf-c before asking: a missing library is said once, without a call. */
        int r = dl_protobuf_c_open(ret_error);
        if (r < 0) return r;
        return grpc_unary(c->channel, method, "", 0, c->timeout_ms, ret_msg, ret_len, ret_status, ret_error);
}

/* Prefixes a decoding sentence (taken) with the socket and method. Returns r. */
static int decode_failed(struct podres_client *c, int r, const char *method, char **ret_error, char *text) {
        errorf(ret_error, r, "%s: %s: %s", grpc_channel_label(c->channel), method, text ? text : strerror(-r));
        free(text);
        return r;
}

int podres_list(struct podres_client *c, struct podres_list **ret, char **ret_error) {
        static const char method[] = "/v1.PodResourcesLister/List";
        _cleanup_free_ uint8_t *msg = NULL;
        size_t len = 0;
        int r = call(c, method, &msg, &len, NULL, ret_error);
        if (r < 0) return r;
        char *text = NULL;
        r = podres_decode_list(msg, len, ret, &text);
        if (r < 0) return decode_failed(c, r, method, ret_error, text);
        return 0;
}

int podres_allocatable(struct podres_client *c, struct podres_allocatable **ret, char **ret_error) {
        static const char method[] = "/v1.PodResourcesLister/GetAllocatableResources";
        _cleanup_free_ uint8_t *msg = NULL;
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int status = -1;
        int r = call(c, method, &msg, &len, &status, &text);
        if (r < 0) {
                if (status == GRPC_UNIMPLEMENTED)
                        return errorf(ret_error, -EOPNOTSUPP,
                                      "%s (a kubelet before 1.21 has no GetAllocatableResources)", text);
                if (status == GRPC_UNKNOWN && text && strstr(text, "GetAllocatableResources disabled"))
                        return errorf(ret_error, -EOPNOTSUPP,
                                      "%s (the kubelet's feature gate KubeletPodResourcesGetAllocatable is off)", text);
                return errorf(ret_error, r, "%s", text);
        }
        r = podres_decode_allocatable(msg, len, ret, &text);
        if (r < 0) return decode_failed(c, r, method, ret_error, TAKE_PTR(text));
        return 0;
}

/* Returns a JSON array of the strings v[0..n) (a new reference). */
static json_t *strings_json(char *const *v, size_t n) {
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++) json_array_append_new(a, json_string(v[i]));
        return a;
}

int podres_list_to_json(const struct podres_list *l, char **ret) {
        json_t *pods = json_array();
        for (size_t p = 0; p < l->n_pods; p++) {
                const struct podres_pod *pod = &l->pods[p];
                json_t *containers = json_array();
                for (size_t c = 0; c < pod->n_containers; c++) {
                        const struct podres_container *ct = &pod->containers[c];
                        json_t *devices = json_array();
                        for (size_t d = 0; d < ct->n_devices; d++) {
                                const struct podres_devices *dv = &ct->devices[d];
                                json_t *o = json_pack("{s:s?,s:o}", "resourceName", dv->resource_name, "deviceIds",
                                                      strings_json(dv->device_ids, dv->n_device_ids));
                                if (o && dv->n_numa_nodes) {
                                        json_t *nodes = json_array();
                                        for (size_t k = 0; k < dv->n_numa_nodes; k++)
                                                json_array_append_new(
                                                        nodes, json_pack("{s:I}", "ID", (json_int_t)dv->numa_nodes[k]));
                                        json_object_set_new(o, "topology", json_pack("{s:o}", "nodes", nodes));
                                }
                                if (o) json_array_append_new(devices, o);
                        }
                        json_t *o = json_pack("{s:s?,s:o}", "name", ct->name, "devices", devices);
                        if (o) json_array_append_new(containers, o);
                }
                json_t *o = json_pack("{s:s?,s:s?,s:o}", "name", pod->name, "namespace", pod->namespace, "containers",
                                      containers);
                if (o) json_array_append_new(pods, o);
        }
        json_t *root = json_pack("{s:o}", "podResources", pods);
        *ret = root ? json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
        json_decref(root);
        return *ret ? 0 : -ENOMEM;
}

/* Returns a copy of the string member key of o ("" when absent or null), or NULL when it is
 * another type or not UTF-8 text without NULs. */
static char *json_text_field(const json_t *o, const char *key) {
        const json_t *v = json_object_get(o, key);
        if (!v || json_is_null(v)) return xstrdup("");
        if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v)) return NULL;
        return copy_string(json_string_value(v));
}

/* Returns the array member key of o (absent or null: an empty array is meant, NULL returned with
 * *ret_ok true), or NULL with *ret_ok false when it is another type. */
static const json_t *json_array_field(const json_t *o, const char *key, bool *ret_ok) {
        const json_t *v = json_object_get(o, key);
        *ret_ok = !v || json_is_null(v) || json_is_array(v);
        return v && json_is_array(v) ? v : NULL;
}

/* Fills d from one ContainerDevices object. Returns 0 or -EBADMSG with a constant reason in *ret_why. */
static int devices_from_json(const json_t *j, struct podres_devices *d, const char **ret_why) {
        bool ok;
        if (!json_is_object(j)) return *ret_why = "a device entry is not an object", -EBADMSG;
        if (!(d->resource_name = json_text_field(j, "resourceName")))
                return *ret_why = "a resourceName is not text", -EBADMSG;
        const json_t *ids = json_array_field(j, "deviceIds", &ok);
        if (!ok) return *ret_why = "deviceIds is not an array", -EBADMSG;
        if (ids && json_array_size(ids)) d->device_ids = xcalloc(json_array_size(ids), sizeof *d->device_ids);
        for (size_t i = 0; ids && i < json_array_size(ids); i++) {
                const json_t *s = json_array_get(ids, i);
                if (!json_is_string(s) || strlen(json_string_value(s)) != json_string_length(s) ||
                    !(d->device_ids[i] = copy_string(json_string_value(s))))
                        return *ret_why = "a device id is not text", -EBADMSG;
                d->n_device_ids = i + 1;
        }
        const json_t *nodes = json_array_field(json_object_get(j, "topology"), "nodes", &ok);
        if (!ok) return *ret_why = "topology.nodes is not an array", -EBADMSG;
        if (nodes && json_array_size(nodes)) d->numa_nodes = xcalloc(json_array_size(nodes), sizeof *d->numa_nodes);
        for (size_t i = 0; nodes && i < json_array_size(nodes); i++) {
                const json_t *id = json_object_get(json_array_get(nodes, i), "ID");
                /* protobuf's JSON mapping writes int64 as a string; the number form is accepted too */
                if (json_is_integer(id))
                        d->numa_nodes[i] = json_integer_value(id);
                else if (!json_is_string(id) || parse_i64(json_string_value(id), &d->numa_nodes[i]) < 0)
                        return *ret_why = "a topology node ID is not an integer", -EBADMSG;
                d->n_numa_nodes = i + 1;
        }
        return 0;
}

int podres_list_from_json(const char *text, size_t len, struct podres_list **ret, char **ret_error) {
        json_error_t jerr;
        json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!root) return errorf(ret_error, -EBADMSG, "not JSON (line %d: %s)", jerr.line, jerr.text);
        struct podres_list *l = xcalloc(1, sizeof *l);
        const char *why = NULL;
        bool ok = json_is_object(root);
        const json_t *pods = ok ? json_array_field(root, "podResources", &ok) : NULL;
        if (!ok) why = "not a ListPodResourcesResponse ({\"podResources\": [...]})";
        if (!why && pods && json_array_size(pods)) l->pods = xcalloc(json_array_size(pods), sizeof *l->pods);
        for (size_t p = 0; !why && pods && p < json_array_size(pods); p++) {
                const json_t *jp = json_array_get(pods, p);
                struct podres_pod *pod = &l->pods[p];
                l->n_pods = p + 1;
                if (!json_is_object(jp)) {
                        why = "a pod is not an object";
                        break;
                }
                pod->name = json_text_field(jp, "name");
                pod->namespace = json_text_field(jp, "namespace");
                if (!pod->name || !pod->namespace) {
                        why = "a pod's name or namespace is not text";
                        break;
                }
                const json_t *cs = json_array_field(jp, "containers", &ok);
                if (!ok) {
                        why = "a pod's containers is not an array";
                        break;
                }
                if (cs && json_array_size(cs)) pod->containers = xcalloc(json_array_size(cs), sizeof *pod->containers);
                for (size_t c = 0; !why && cs && c < json_array_size(cs); c++) {
                        const json_t *jc = json_array_get(cs, c);
                        struct podres_container *ct = &pod->containers[c];
                        pod->n_containers = c + 1;
                        if (!json_is_object(jc) || !(ct->name = json_text_field(jc, "name"))) {
                                why = "a container is not an object with a text name";
                                break;
                        }
                        const json_t *ds = json_array_field(jc, "devices", &ok);
                        if (!ok) {
                                why = "a container's devices is not an array";
                                break;
                        }
                        if (ds && json_array_size(ds)) ct->devices = xcalloc(json_array_size(ds), sizeof *ct->devices);
                        for (size_t d = 0; !why && ds && d < json_array_size(ds); d++) {
                                ct->n_devices = d + 1;
                                devices_from_json(json_array_get(ds, d), &ct->devices[d], &why);
                        }
                }
        }
        json_decref(root);
        if (why) {
                podres_list_free(l);
                return errorf(ret_error, -EBADMSG, "%s", why);
        }
        *ret = l;
        return 0;
}
