/* fuzz_dp_server.c: libFuzzer target for a plugin client's bytes: HTTP/2 to the server, Allocate requests. */
/*
 * The first byte picks what the rest is:
 *   0  a client's bytes on a connection to the gRPC server (from its preface on), served by a
 *      unary echo method and a streaming one until the bytes are used up
 *   1  an AllocateRequest for a resource of 8 GPUs (2: of 8 x 4 time-slicing replicas)
 *   3  a PreferredAllocationRequest for the 8 GPUs (4: for the replicas)
 * fuzz/seeds/dp_server holds python3-grpcio clients' bytes (tests/device-plugin) and requests.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "device_plugin/dp_allocate.h"
#include "grpc/grpc_server.h"

static void h_echo(struct grpc_call *c, const uint8_t *req, size_t len, void *md, void *ld) {
        grpc_call_reply(c, req, len);
}

static void h_watch(struct grpc_call *c, const uint8_t *req, size_t len, void *md, void *ld) {
        grpc_call_send(c, req, len);
        grpc_call_send(c, "x", 1);
}

static const struct grpc_method methods[] = {
        { "/v1beta1.DevicePlugin/Allocate", false, h_echo, NULL },
        { "/v1beta1.DevicePlugin/ListAndWatch", true, h_watch, NULL },
};

static struct dp_gpu gpus[8];
static struct dp_device plain[8], shared[32];
static char ids[40][64];

/* Builds the fixed resources once. */
static void setup(struct dp_resource *r_plain, struct dp_resource *r_shared) {
        for (int i = 0; i < 8; i++) {
                gpus[i] = (struct dp_gpu){ .index = (unsigned)i, .numa = i / 4 };
                snprintf(gpus[i].uuid, sizeof gpus[i].uuid, "GPU-%d", i);
                snprintf(ids[i], sizeof ids[i], "GPU-%d", i);
                plain[i] = (struct dp_device){ .id = ids[i], .visible = ids[i], .uuid = ids[i], .gpu = (size_t)i };
                for (int k = 0; k < 4; k++) {
                        char *id = ids[8 + i * 4 + k];
                        snprintf(id, 64, "GPU-%d::%d", i, k);
                        shared[i * 4 + k] = (struct dp_device){ .id = id,
                                                                .visible = ids[i],
                                                                .uuid = ids[i],
                                                                .gpu = (size_t)i,
                                                                .replicated = true,
                                                                .replica = (unsigned)k };
                }
        }
        *r_plain = (struct dp_resource){ .name = "nvidia.com/gpu", .devices = plain, .n_devices = 8 };
        *r_shared = (struct dp_resource){
                .name = "nvidia.com/gpu.shared", .devices = shared, .n_devices = 32, .replicated = true
        };
}

/* Feeds data to a server connection and serves until it is used up and answered. */
static void serve_bytes(const uint8_t *data, size_t size) {
        struct grpc_server_limits l = {
                .max_message = 4096, .max_queued = 1 << 16, .call_timeout_ms = 50, .preface_timeout_ms = 50
        };
        struct grpc_server *s = NULL;
        if (grpc_server_new(&l, methods, 2, &s, NULL) < 0) abort();
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0) abort();
        if (grpc_server_adopt(s, sv[0], NULL) < 0) abort();
        size_t off = 0;
        for (int round = 0; round < 64 && (off < size || grpc_server_connections(s)); round++) {
                if (off < size) {
                        ssize_t w = send(sv[1], data + off, size - off, MSG_DONTWAIT | MSG_NOSIGNAL);
                        if (w > 0) off += (size_t)w;
                        if (off == size) shutdown(sv[1], SHUT_WR);
                }
                grpc_server_run(s, 0);
                char sink[65536];
                while (recv(sv[1], sink, sizeof sink, MSG_DONTWAIT) > 0) {
                }
        }
        close(sv[1]);
        grpc_server_free(s);
}

/* Returns 0 always: libFuzzer's contract; crashes and sanitizer reports are the findings. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static struct dp_resource r_plain, r_shared;
        if (!r_plain.name) setup(&r_plain, &r_shared);
        if (size < 1 || size > 1 << 16) return 0;
        uint8_t kind = data[0];
        data++, size--;
        if (kind == 0) {
                serve_bytes(data, size);
                return 0;
        }
        struct dp_alloc_context ctx = { .resource = (kind == 2 || kind == 4) ? &r_shared : &r_plain,
                                        .list_strategies = DP_LIST_ENVVAR | DP_LIST_VOLUME_MOUNTS |
                                                           DP_LIST_CDI_ANNOTATIONS | DP_LIST_CDI_CRI,
                                        .cdi_annotation_prefix = "cdi.k8s.io/",
                                        .fail_requests_greater_than_one = size & 1,
                                        .gpus = gpus,
                                        .n_gpus = 8 };
        uint8_t *out = NULL;
        size_t out_len = 0;
        char *err = NULL;
        int r = kind <= 2 ? dp_allocate(&ctx, data, size, &out, &out_len, &err)
                          : dp_preferred(&ctx, data, size, &out, &out_len, &err);
        if (r == 0 && err) abort();
        if (r != 0 && (out || !err)) abort();
        free(out);
        free(err);
        return 0;
}
