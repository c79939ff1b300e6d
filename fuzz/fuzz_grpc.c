/* fuzz_grpc.c: libFuzzer target for gRPC: a server's bytes on an HTTP/2 connection, message reassembly, the pod-resources decoders. */
/*
 * The first byte picks what the rest is:
 *   0  a serialized ListPodResourcesResponse          1  an AllocatableResourcesResponse
 *   2  what a server sends on the connection of one List call (HTTP/2 frames, from its
 *      preface on), the answer then decoded as a ListPodResourcesResponse
 *   3  DATA bytes for the message reader, fed in pieces of 1 to 8 bytes (the second byte says
 *      which), plus the status, timeout and status-text parsers on the same bytes
 * fuzz/seeds/grpc holds recorded answers of fake_kubelet.py (tests/kubelet/), in every mode.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "grpc/grpc_client.h"
#include "grpc/grpc_h2.h"
#include "grpc/grpc_wire.h"
#include "kube/podresources.h"

/* Checks a decoded list: every string there, counts consistent. Aborts otherwise. */
static void check_list(const struct podres_list *l) {
        for (size_t p = 0; p < l->n_pods; p++) {
                const struct podres_pod *pod = &l->pods[p];
                if (!pod->name || !pod->namespace) abort();
                for (size_t c = 0; c < pod->n_containers; c++) {
                        const struct podres_container *ct = &pod->containers[c];
                        if (!ct->name) abort();
                        for (size_t d = 0; d < ct->n_devices; d++) {
                                if (!ct->devices[d].resource_name) abort();
                                for (size_t i = 0; i < ct->devices[d].n_device_ids; i++)
                                        if (!ct->devices[d].device_ids[i]) abort();
                        }
                }
        }
}

/* Decodes data as a List answer and checks the contract: 0 with a list and no sentence, or
 * a failure with a sentence and no list. */
static void decode_list(const uint8_t *data, size_t size) {
        struct podres_list *l = NULL;
        char *err = NULL;
        if (podres_decode_list(data, size, &l, &err) == 0) {
                if (!l || err) abort();
                check_list(l);
        } else if (l || !err) {
                abort();
        }
        podres_list_free(l);
        free(err);
}

static void decode_allocatable(const uint8_t *data, size_t size) {
        struct podres_allocatable *a = NULL;
        char *err = NULL;
        if (podres_decode_allocatable(data, size, &a, &err) == 0) {
                if (!a || err) abort();
                for (size_t d = 0; d < a->n_devices; d++)
                        if (!a->devices[d].resource_name) abort();
        } else if (a || !err) {
                abort();
        }
        podres_allocatable_free(a);
        free(err);
}

/* One List call on a socket pair whose other end holds data and then ends. */
static void connection(const uint8_t *data, size_t size) {
        int sv[2];
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0) abort();
        int sndbuf = 1 << 20;
        setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
        size_t off = 0;
        while (off < size) {
                ssize_t w = send(sv[1], data + off, size - off, MSG_NOSIGNAL);
                if (w <= 0) break; /* larger than the socket holds: the rest is lost, as if cut */
                off += (size_t)w;
        }
        shutdown(sv[1], SHUT_WR); /* the client's own bytes still fit in sv[1]'s receive buffer */
        struct grpc_h2 *c = NULL;
        char *err = NULL;
        if (grpc_h2_client_new(sv[0], 1 << 20, &c, &err) < 0) abort();
        uint8_t *msg = NULL;
        size_t len = 0;
        int status;
        int r = grpc_call_unary(c, "/v1.PodResourcesLister/List", "", 0, 1000, grpc_now_us() + 200000, &msg, &len, &status,
                                &err);
        if (r == 0) {
                if (!msg || err || status != 0) abort();
                decode_list(msg, len);
        } else if (msg || !err) {
                abort();
        }
        free(msg);
        free(err);
        grpc_h2_free(c);
        close(sv[1]);
}

/* Collects messages for the reader mode. */
static int drop(uint8_t *msg, size_t len, void *userdata) {
        size_t *total = userdata;
        *total += len;
        free(msg);
        return 0;
}

static void reader(const uint8_t *data, size_t size) {
        if (size == 0) return;
        size_t piece = (size_t)(data[0] % 8) + 1;
        data++;
        size--;
        struct grpc_reader r;
        grpc_reader_init(&r, 4096);
        size_t total = 0;
        for (size_t off = 0; off < size; off += piece) {
                char *err = NULL;
                int q = grpc_reader_feed(&r, data + off, size - off < piece ? size - off : piece, drop, &total, &err);
                if (q < 0) {
                        if (!err) abort();
                        free(err);
                        break;
                }
                if (err) abort();
        }
        if (r.cap > 4096 || r.len > r.want) abort();
        grpc_reader_done(&r);
        int code;
        uint64_t ms;
        grpc_parse_status((const char *)data, size, &code);
        grpc_timeout_parse((const char *)data, size, &ms);
        free(grpc_message_decode((const char *)data, size));
}

/* Returns 0 always: libFuzzer's contract; crashes and sanitizer reports are the findings. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size == 0) return 0;
        switch (data[0] % 4) {
        case 0: decode_list(data + 1, size - 1); break;
        case 1: decode_allocatable(data + 1, size - 1); break;
        case 2: connection(data + 1, size - 1); break;
        default: reader(data + 1, size - 1); break;
        }
        return 0;
}
