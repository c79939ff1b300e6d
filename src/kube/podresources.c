/* podresources.c: List and GetAllocatableResources on the kubelet's pod-resources socket, answers decoded with protobuf-c. */
#include "kube/podresources.h"
#include "grpc/grpc_client.h"
#include "grpc/grpc_wire.h"

#include "basic/dl_protobuf_c.h"
#include "podresources.pb-c.h"

struct podres_client {
        struct grpc_channel *channel;
        unsigned timeout_ms;
};

struct podres_client *podres_client_new(const char *socket, unsigned timeout_ms) {
        struct podres_client *c = xcalloc(1, sizeof *c);
        c->channel = grpc_channel_new(socket ? socket : PODRES_SOCKET, "the kubelet's pod-resources socket", PODRES_MAX_MESSAGE);
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
        *b = (struct budget){.allocator = {budget_alloc, budget_free, b}, .left = PODRES_DECODE_BUDGET};
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
                if (!d->device_ids[i]) return errorf(ret_error, -EBADMSG, "a device id of %s is not UTF-8", d->resource_name);
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
                                r = errorf(ret_error, -EBADMSG, "a container name of pod %s/%s is not UTF-8", pod->namespace,
                                           pod->name);
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
                        return errorf(ret_error, -EOPNOTSUPP, "%s (a kubelet before 1.21 has no GetAllocatableResources)", text);
                if (status == GRPC_UNKNOWN && text && strstr(text, "GetAllocatableResources disabled"))
                        return errorf(ret_error, -EOPNOTSUPP, "%s (the kubelet's feature gate KubeletPodResourcesGetAllocatable is off)",
                                      text);
                return errorf(ret_error, r, "%s", text);
        }
        r = podres_decode_allocatable(msg, len, ret, &text);
        if (r < 0) return decode_failed(c, r, method, ret_error, TAKE_PTR(text));
        return 0;
}
