/* dp_allocate.c: Allocate (envvar, volume mounts, CDI) and GetPreferredAllocation (topology-aware best effort). */
#include "device_plugin/dp_allocate.h"
#include "basic/util.h"
#include "grpc/grpc_wire.h"

#include "device_plugin/dp_pb.h"

#define VISIBLE_ENV "NVIDIA_VISIBLE_DEVICES"
#define MOUNT_ROOT  "/var/run/nvidia-container-devices"

/* protobuf-c's allocator for one request: malloc, refused past the budget. */
struct budget {
        ProtobufCAllocator allocator;
        size_t left;
};

static void *budget_alloc(void *data, size_t size) {
        struct budget *b = data;
        if (size > b->left) return NULL;
        b->left -= size;
        return malloc(size ? size : 1);
}

static void budget_free(void *data, void *ptr) {
        free(ptr);
}

static void budget_init(struct budget *b) {
        *b = (struct budget){ .allocator = { budget_alloc, budget_free, b }, .left = DP_DECODE_BUDGET };
}

/* Packs a message. Returns 0 with *ret, *ret_len. */
static int pack(const ProtobufCMessage *m, uint8_t **ret, size_t *ret_len) {
        size_t n = protobuf_c_message_get_packed_size(m);
        uint8_t *buf = xmalloc(n ? n : 1);
        protobuf_c_message_pack(m, buf);
        *ret = buf;
        *ret_len = n;
        return 0;
}

/* Returns a malloc'd, quotable spelling of the bytes s[0..n) (at most 100 of them, then "..."):
 * printable ASCII as is, NUL as \0, every other byte (and '"', '\\') as \xNN. Never fails. */
static char *escape_bytes(const uint8_t *s, size_t n) {
        struct buf b = { 0 };
        for (size_t i = 0; i < n && i < 100; i++) {
                if (s[i] == 0)
                        buf_puts(&b, "\\0");
                else if (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"' && s[i] != '\\')
                        buf_append(&b, (const char *)&s[i], 1);
                else
                        buf_printf(&b, "\\x%02x", s[i]);
        }
        if (n > 100) buf_puts(&b, "...");
        return b.data ? b.data : xstrdup("");
}

/* Reads a base-128 varint at *p (before e), advancing *p. Returns 0 with *ret, or -1 when it is
 * truncated or longer than 10 bytes. */
static int read_varint(const uint8_t **p, const uint8_t *e, uint64_t *ret) {
        uint64_t v = 0;
        for (unsigned shift = 0; shift < 70 && *p < e; shift += 7) {
                uint8_t c = *(*p)++;
                v |= (uint64_t)(c & 0x7f) << shift;
                if (!(c & 0x80)) {
                        *ret = v;
                        return 0;
                }
        }
        return -1;
}

/* Looks through the wire bytes buf[0..len) of a message of descriptor desc, and the messages it
 * holds (depth levels more), for a string field with a NUL byte in it: protobuf strings are
 * length-delimited, protobuf-c's unpacked C strings would end at the NUL. Returns the field's
 * descriptor with the string's bytes in *ret_s, *ret_n; NULL when there is none (or when the bytes do
 * not parse, which the unpack reports). */
static const ProtobufCFieldDescriptor *find_nul_string(const ProtobufCMessageDescriptor *desc, const uint8_t *buf,
                                                       size_t len, int depth, const uint8_t **ret_s, size_t *ret_n) {
        const uint8_t *p = buf, *e = buf + len;
        while (p < e) {
                uint64_t key, n;
                if (read_varint(&p, e, &key) < 0) return NULL;
                switch (key & 7) {
                case 0:
                        if (read_varint(&p, e, &n) < 0) return NULL;
                        continue;
                case 1:
                        if (e - p < 8) return NULL;
                        p += 8;
                        continue;
                case 5:
                        if (e - p < 4) return NULL;
                        p += 4;
                        continue;
                case 2: break;
                default: return NULL; /* groups: none in deviceplugin.proto */
                }
                if (read_varint(&p, e, &n) < 0 || n > (uint64_t)(e - p)) return NULL;
                const ProtobufCFieldDescriptor *f = NULL;
                for (unsigned i = 0; i < desc->n_fields && !f; i++)
                        if (desc->fields[i].id == key >> 3) f = &desc->fields[i];
                if (f && f->type == PROTOBUF_C_TYPE_STRING && memchr(p, 0, n)) {
                        *ret_s = p;
                        *ret_n = n;
                        return f;
                }
                if (f && f->type == PROTOBUF_C_TYPE_MESSAGE && depth > 0) {
                        const ProtobufCFieldDescriptor *g =
                                find_nul_string(f->descriptor, p, n, depth - 1, ret_s, ret_n);
                        if (g) return g;
                }
                p += n;
        }
        return NULL;
}

/* Refuses a request (desc, req, len bytes) naming a device ID with a NUL byte in it. Returns 0, or
 * GRPC_INVALID_ARGUMENT with a sentence naming the field and the ID, escaped. */
static int refuse_nul_ids(const ProtobufCMessageDescriptor *desc, const uint8_t *req, size_t len, char **ret_error) {
        const uint8_t *s;
        size_t n;
        const ProtobufCFieldDescriptor *f = find_nul_string(desc, req, len, 4, &s, &n);
        if (!f) return 0;
        _cleanup_free_ char *safe = escape_bytes(s, n);
        return errorf(ret_error, GRPC_INVALID_ARGUMENT,
                      "%s: device id \"%s\" holds a NUL byte (no device is named so; it is not the ID before the NUL)",
                      f->name, safe);
}

/* Returns the device of id in the resource, or NULL; a sentence for the unknown one in *ret_error. */
static const struct dp_device *lookup(const struct dp_alloc_context *ctx, const char *id, char **ret_error) {
        const struct dp_device *d = dp_resource_find(ctx->resource, id);
        if (!d) {
                _cleanup_free_ char *safe = utf8_sanitize(id);
                errorf(ret_error, GRPC_INVALID_ARGUMENT, "unknown device id \"%.100s\" for resource %s", safe,
                       ctx->resource->name);
        }
        return d;
}

int dp_allocate(const struct dp_alloc_context *ctx, const uint8_t *req, size_t len, uint8_t **ret, size_t *ret_len,
                char **ret_error) {
        int r = dl_protobuf_c_open(ret_error);
        if (r < 0) return r;
        struct budget b;
        budget_init(&b);
        V1beta1__AllocateRequest *in = v1beta1__allocate_request__unpack(&b.allocator, len, req);
        if (!in)
                return errorf(ret_error, GRPC_INVALID_ARGUMENT, "the AllocateRequest (%zu bytes) does not decode", len);
        r = refuse_nul_ids(in->base.descriptor, req, len, ret_error);
        if (r) {
                protobuf_c_message_free_unpacked(&in->base, &b.allocator);
                return r;
        }
        size_t total = 0;
        for (size_t c = 0; c < in->n_container_requests; c++) total += in->container_requests[c]->n_devices_ids;
        size_t n = in->n_container_requests;
        if (total > DP_MAX_REQUEST_IDS || n > DP_MAX_REQUEST_IDS) {
                protobuf_c_message_free_unpacked(&in->base, &b.allocator);
                return errorf(ret_error, GRPC_INVALID_ARGUMENT, "the request names %zu devices, more than %u", total,
                              DP_MAX_REQUEST_IDS);
        }
        V1beta1__AllocateResponse out = V1BETA1__ALLOCATE_RESPONSE__INIT;
        V1beta1__ContainerAllocateResponse *cr = xcalloc(n ? n : 1, sizeof *cr);
        V1beta1__ContainerAllocateResponse **crp = xcalloc(n ? n : 1, sizeof *crp);
        /* Everything the answer points at, freed at the end. */
        size_t n_ctl = 0;
        while (ctx->control_nodes && ctx->control_nodes[n_ctl]) n_ctl++;
        char **owned = xcalloc(total * 8 + n * (4 + n_ctl) + 1, sizeof *owned);
        size_t n_owned = 0;
        void **blocks = xcalloc(n * 12 + 1, sizeof *blocks);
        size_t n_blocks = 0;
#define OWN(s)   (owned[n_owned++] = (s))
#define BLOCK(p) (blocks[n_blocks++] = (p))
        r = 0;
        for (size_t c = 0; c < n; c++) {
                V1beta1__ContainerAllocateRequest *q = in->container_requests[c];
                V1beta1__ContainerAllocateResponse *o = &cr[c];
                v1beta1__container_allocate_response__init(o);
                crp[c] = o;
                if (ctx->resource->replicated && ctx->fail_requests_greater_than_one && q->n_devices_ids > 1) {
                        r = errorf(ret_error, GRPC_INVALID_ARGUMENT,
                                   "request for '%s: %zu' too large: maximum request size for shared resources is 1",
                                   ctx->resource->name, q->n_devices_ids);
                        goto done;
                }
                /* The devices, replicas folded onto their GPU, in the order asked. */
                const struct dp_device **devs = BLOCK(xcalloc(q->n_devices_ids + 1, sizeof *devs));
                size_t nd = 0;
                for (size_t i = 0; i < q->n_devices_ids; i++) {
                        const struct dp_device *d = lookup(ctx, q->devices_ids[i], ret_error);
                        if (!d) {
                                r = GRPC_INVALID_ARGUMENT;
                                goto done;
                        }
                        bool dup = false;
                        for (size_t k = 0; k < nd; k++) dup |= streq(devs[k]->uuid, d->uuid);
                        if (!dup) devs[nd++] = d;
                }
                struct buf list = { 0 };
                for (size_t k = 0; k < nd; k++) buf_printf(&list, "%s%s", k ? "," : "", devs[k]->visible);
                char *visible = OWN(list.data ? list.data : xstrdup(""));
                size_t n_env = 0;
                V1beta1__ContainerAllocateResponse__EnvsEntry *env = BLOCK(xcalloc(1, sizeof *env));
                V1beta1__ContainerAllocateResponse__EnvsEntry **envp = BLOCK(xcalloc(1, sizeof *envp));
                if (ctx->list_strategies & (DP_LIST_ENVVAR | DP_LIST_VOLUME_MOUNTS)) {
                        v1beta1__container_allocate_response__envs_entry__init(env);
                        env->key = (char *)VISIBLE_ENV;
                        env->value = ctx->list_strategies & DP_LIST_ENVVAR ? visible : (char *)MOUNT_ROOT;
                        envp[0] = env;
                        n_env = 1;
                }
                o->n_envs = n_env;
                o->envs = envp;
                if (ctx->list_strategies & DP_LIST_VOLUME_MOUNTS) {
                        V1beta1__Mount *m = BLOCK(xcalloc(nd + 1, sizeof *m));
                        V1beta1__Mount **mp = BLOCK(xcalloc(nd + 1, sizeof *mp));
                        for (size_t k = 0; k < nd; k++) {
                                v1beta1__mount__init(&m[k]);
                                m[k].host_path = (char *)"/dev/null";
                                m[k].container_path = OWN(xasprintf(MOUNT_ROOT "/%s", devs[k]->visible));
                                m[k].read_only = true;
                                mp[k] = &m[k];
                        }
                        o->n_mounts = nd;
                        o->mounts = mp;
                }
                if (ctx->list_strategies & DP_LIST_CDI_ANNOTATIONS && nd) {
                        struct buf names = { 0 };
                        for (size_t k = 0; k < nd; k++)
                                buf_printf(&names, "%snvidia.com/gpu=%s", k ? "," : "", devs[k]->uuid);
                        V1beta1__ContainerAllocateResponse__AnnotationsEntry *a = BLOCK(xcalloc(1, sizeof *a));
                        V1beta1__ContainerAllocateResponse__AnnotationsEntry **ap = BLOCK(xcalloc(1, sizeof *ap));
                        v1beta1__container_allocate_response__annotations_entry__init(a);
                        /* CDI's annotation key: <prefix><plugin>_<response id>, one per answer. */
                        a->key = OWN(xasprintf("%snvidia-device-plugin_%s", ctx->cdi_annotation_prefix, devs[0]->uuid));
                        a->value = OWN(names.data);
                        ap[0] = a;
                        o->n_annotations = 1;
                        o->annotations = ap;
                }
                if (ctx->pass_device_specs) {
                        /* the control nodes, then each device's, each once */
                        size_t cap = n_ctl + 1;
                        for (size_t k = 0; k < nd; k++)
                                for (size_t j = 0; devs[k]->nodes && devs[k]->nodes[j]; j++) cap++;
                        V1beta1__DeviceSpec *ds = BLOCK(xcalloc(cap, sizeof *ds));
                        V1beta1__DeviceSpec **dsp = BLOCK(xcalloc(cap, sizeof *dsp));
                        size_t m = 0;
                        const char *root = ctx->dev_root && !streq(ctx->dev_root, "/") ? ctx->dev_root : "";
                        for (size_t k = 0; k <= nd; k++) {
                                char *const *nodes = k == 0 ? ctx->control_nodes : devs[k - 1]->nodes;
                                for (size_t j = 0; nodes && nodes[j]; j++) {
                                        bool dup = false;
                                        for (size_t u = 0; u < m; u++) dup |= streq(ds[u].container_path, nodes[j]);
                                        if (dup) continue;
                                        v1beta1__device_spec__init(&ds[m]);
                                        ds[m].container_path = nodes[j];
                                        ds[m].host_path = OWN(xasprintf("%s%s", root, nodes[j]));
                                        ds[m].permissions = (char *)"rw";
                                        dsp[m] = &ds[m];
                                        m++;
                                }
                        }
                        o->n_devices = m;
                        o->devices = dsp;
                }
                if (ctx->list_strategies & DP_LIST_CDI_CRI) {
                        V1beta1__CDIDevice *cd = BLOCK(xcalloc(nd + 1, sizeof *cd));
                        V1beta1__CDIDevice **cdp = BLOCK(xcalloc(nd + 1, sizeof *cdp));
                        for (size_t k = 0; k < nd; k++) {
                                v1beta1__cdidevice__init(&cd[k]);
                                cd[k].name = OWN(xasprintf("nvidia.com/gpu=%s", devs[k]->uuid));
                                cdp[k] = &cd[k];
                        }
                        o->n_cdi_devices = nd;
                        o->cdi_devices = cdp;
                }
        }
        out.n_container_responses = n;
        out.container_responses = crp;
        pack(&out.base, ret, ret_len);
done:
#undef OWN
#undef BLOCK
        for (size_t i = 0; i < n_owned; i++) free(owned[i]);
        for (size_t i = 0; i < n_blocks; i++) free(blocks[i]);
        free(owned);
        free(blocks);
        free(cr);
        free(crp);
        protobuf_c_message_free_unpacked(&in->base, &b.allocator);
        return r;
}

/* Returns the connectivity of GPUs a and b: the link callback's answer, else NUMA (10 same, 0 not). */
static int link_of(const struct dp_alloc_context *ctx, size_t a, size_t b) {
        int v = ctx->link ? ctx->link(ctx->link_data, a, b) : -1;
        if (v >= 0) return v;
        if (a < ctx->n_gpus && b < ctx->n_gpus && ctx->gpus[a].numa >= 0)
                return ctx->gpus[a].numa == ctx->gpus[b].numa ? 10 : 0;
        return 0;
}

/* Picks size devices out of avail (n), after the must ones (already in out[0..*n_out]), for one
 * container. Returns nothing; fills out and *n_out. */
static void pick(const struct dp_alloc_context *ctx, const struct dp_device **avail, size_t n, size_t size,
                 const struct dp_device **out, size_t *n_out) {
        bool *used = xcalloc(n + 1, sizeof *used);
        for (size_t i = 0; i < n; i++)
                for (size_t k = 0; k < *n_out; k++)
                        if (avail[i] == out[k]) used[i] = true;
        if (ctx->resource->replicated) {
                /* Spread: each time the GPU with the most free replicas not yet picked from. */
                size_t ng = ctx->n_gpus ? ctx->n_gpus : 1;
                size_t *free_on = xcalloc(ng, sizeof *free_on), *taken = xcalloc(ng, sizeof *taken);
                for (size_t i = 0; i < n; i++)
                        if (!used[i] && avail[i]->gpu < ng) free_on[avail[i]->gpu]++;
                for (size_t k = 0; k < *n_out; k++)
                        if (out[k]->gpu < ng) taken[out[k]->gpu]++;
                while (*n_out < size) {
                        ssize_t best = -1;
                        for (size_t i = 0; i < n; i++) {
                                if (used[i] || avail[i]->gpu >= ng) continue;
                                size_t g = avail[i]->gpu;
                                if (best < 0) {
                                        best = (ssize_t)i;
                                        continue;
                                }
                                size_t bg = avail[best]->gpu;
                                if (taken[g] < taken[bg] || (taken[g] == taken[bg] && free_on[g] > free_on[bg]))
                                        best = (ssize_t)i;
                        }
                        if (best < 0) break;
                        used[best] = true;
                        out[(*n_out)++] = avail[best];
                        free_on[avail[best]->gpu]--;
                        taken[avail[best]->gpu]++;
                }
                free(free_on);
                free(taken);
                free(used);
                return;
        }
        while (*n_out < size) {
                ssize_t best = -1;
                long best_score = -1;
                for (size_t i = 0; i < n; i++) {
                        if (used[i]) continue;
                        long score = 0;
                        if (*n_out) {
                                for (size_t k = 0; k < *n_out; k++) score += link_of(ctx, out[k]->gpu, avail[i]->gpu);
                        } else {
                                /* The first: the one whose best size-1 peers are best connected. */
                                int *peer = xcalloc(n + 1, sizeof *peer);
                                size_t np = 0;
                                for (size_t j = 0; j < n; j++)
                                        if (j != i && !used[j]) peer[np++] = link_of(ctx, avail[i]->gpu, avail[j]->gpu);
                                for (size_t t = 0; t + 1 < size && t < np; t++) {
                                        size_t m = t;
                                        for (size_t j = t + 1; j < np; j++)
                                                if (peer[j] > peer[m]) m = j;
                                        int tmp = peer[t];
                                        peer[t] = peer[m];
                                        peer[m] = tmp;
                                        score += peer[t];
                                }
                                free(peer);
                        }
                        if (score > best_score) {
                                best_score = score;
                                best = (ssize_t)i;
                        }
                }
                if (best < 0) break;
                used[best] = true;
                out[(*n_out)++] = avail[best];
        }
        free(used);
}

int dp_preferred(const struct dp_alloc_context *ctx, const uint8_t *req, size_t len, uint8_t **ret, size_t *ret_len,
                 char **ret_error) {
        int r = dl_protobuf_c_open(ret_error);
        if (r < 0) return r;
        struct budget b;
        budget_init(&b);
        V1beta1__PreferredAllocationRequest *in = v1beta1__preferred_allocation_request__unpack(&b.allocator, len, req);
        if (!in)
                return errorf(ret_error, GRPC_INVALID_ARGUMENT,
                              "the PreferredAllocationRequest (%zu bytes) does not decode", len);
        r = refuse_nul_ids(in->base.descriptor, req, len, ret_error);
        if (r) {
                protobuf_c_message_free_unpacked(&in->base, &b.allocator);
                return r;
        }
        size_t n = in->n_container_requests;
        V1beta1__PreferredAllocationResponse out = V1BETA1__PREFERRED_ALLOCATION_RESPONSE__INIT;
        V1beta1__ContainerPreferredAllocationResponse *cr = xcalloc(n ? n : 1, sizeof *cr);
        V1beta1__ContainerPreferredAllocationResponse **crp = xcalloc(n ? n : 1, sizeof *crp);
        char ***ids = xcalloc(n ? n : 1, sizeof *ids);
        r = 0;
        for (size_t c = 0; c < n; c++) {
                V1beta1__ContainerPreferredAllocationRequest *q = in->container_requests[c];
                v1beta1__container_preferred_allocation_response__init(&cr[c]);
                crp[c] = &cr[c];
                if (q->n_available_deviceids > DP_MAX_REQUEST_IDS ||
                    q->n_must_include_deviceids > q->n_available_deviceids + DP_MAX_REQUEST_IDS) {
                        r = errorf(ret_error, GRPC_INVALID_ARGUMENT, "the request names more than %u devices",
                                   DP_MAX_REQUEST_IDS);
                        goto done;
                }
                if (q->allocation_size < 0 || (size_t)q->allocation_size > q->n_available_deviceids) {
                        r = errorf(ret_error, GRPC_INVALID_ARGUMENT,
                                   "allocation_size %d cannot be met from %zu available devices", q->allocation_size,
                                   q->n_available_deviceids);
                        goto done;
                }
                size_t size = (size_t)q->allocation_size;
                const struct dp_device **avail = xcalloc(q->n_available_deviceids + 1, sizeof *avail);
                const struct dp_device **pickd = xcalloc(size + q->n_must_include_deviceids + 1, sizeof *pickd);
                size_t na = 0, np = 0;
                for (size_t i = 0; i < q->n_available_deviceids && !r; i++) {
                        avail[na] = lookup(ctx, q->available_deviceids[i], ret_error);
                        if (!avail[na]) {
                                r = GRPC_INVALID_ARGUMENT;
                                break;
                        }
                        /* The kubelet names each device once; repeats would only make the picking quadratic in
                         * the request's size (ids resolve to the resource's devices, so at most n_devices stay). */
                        bool dup = false;
                        for (size_t k = 0; k < na && !dup; k++) dup = avail[k] == avail[na];
                        if (dup) {
                                _cleanup_free_ char *safe = utf8_sanitize(q->available_deviceids[i]);
                                r = errorf(ret_error, GRPC_INVALID_ARGUMENT, "device id \"%.100s\" is named twice",
                                           safe);
                                break;
                        }
                        na++;
                }
                if (!r && size > ctx->resource->n_devices)
                        r = errorf(ret_error, GRPC_INVALID_ARGUMENT,
                                   "allocation_size %zu is more than the %zu devices of %s", size,
                                   ctx->resource->n_devices, ctx->resource->name);
                for (size_t i = 0; i < q->n_must_include_deviceids && !r; i++) {
                        const struct dp_device *d = lookup(ctx, q->must_include_deviceids[i], ret_error);
                        if (!d) {
                                r = GRPC_INVALID_ARGUMENT;
                                break;
                        }
                        /* The kubelet's contract: must_include is a subset of available. One that is not would be
                         * answered as a preference for a device that is taken or not offered. */
                        bool offered = false;
                        for (size_t k = 0; k < na && !offered; k++) offered = avail[k] == d;
                        if (!offered) {
                                _cleanup_free_ char *safe = utf8_sanitize(q->must_include_deviceids[i]);
                                r = errorf(ret_error, GRPC_INVALID_ARGUMENT,
                                           "must_include device id \"%.100s\" is not among the available devices",
                                           safe);
                                break;
                        }
                        bool dup = false;
                        for (size_t k = 0; k < np; k++) dup |= pickd[k] == d;
                        if (!dup && np < size) pickd[np++] = d;
                }
                if (!r) pick(ctx, avail, na, size, pickd, &np);
                ids[c] = xcalloc(np + 1, sizeof **ids);
                for (size_t k = 0; k < np; k++) ids[c][k] = pickd[k]->id;
                cr[c].n_deviceids = np;
                cr[c].deviceids = ids[c];
                free(avail);
                free(pickd);
                if (r) goto done;
        }
        out.n_container_responses = n;
        out.container_responses = crp;
        pack(&out.base, ret, ret_len);
done:
        for (size_t c = 0; c < n; c++) free(ids[c]);
        free(ids);
        free(cr);
        free(crp);
        protobuf_c_message_free_unpacked(&in->base, &b.allocator);
        return r;
}
