/* grpc_client.h: gRPC client calls to a unix socket below the host root, each bounded by a deadline. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "basic/util.h"

/* A channel to one unix socket: connects on the first call, keeps the HTTP/2 connection for the
 * calls after it, and connects again after a connection broke (a kubelet restarts). One thread
 * at a time. */
struct grpc_channel;

/* Returns a channel to the unix socket at host_path (a host path, resolved below hostfs's root
 * when connecting, so --root works and links cannot leave the root). label names the socket in
 * sentences ("the kubelet's pod-resources socket"); NULL: the path alone. Answers larger than
 * max_message bytes are refused. Does no I/O; never fails. */
struct grpc_channel *grpc_channel_new(const char *host_path, const char *label, size_t max_message);

/* Returns how sentences name the socket ("<label> <path>"), owned by the channel. */
const char *grpc_channel_label(const struct grpc_channel *ch);

/* Closes the connection, if any, and frees the channel. */
void grpc_channel_free(struct grpc_channel *ch);
static inline void grpc_channel_freep(struct grpc_channel **ch) {
        grpc_channel_free(*ch);
}
#define _cleanup_grpc_channel_ _cleanup_(grpc_channel_freep)

/* Calls method ("/package.Service/Method") with one request message (req_len bytes, protobuf)
 * and waits for its one answer, timeout_ms in all (connecting included; also sent to the server
 * as grpc-timeout). Returns 0 with the answer (malloc'd, *ret_len bytes; free it) in *ret_msg.
 * Fails with a negative errno and a sentence in *ret_error that names the socket and the method:
 *   -ENOENT no socket there, -ENOTSOCK not a socket, -EACCES no permission, -ECONNREFUSED
 *   nobody listens, -ETIMEDOUT no whole answer in time, -ECONNRESET the server closed or reset
 *   the call, -EPROTO it broke HTTP/2 or gRPC (garbage, no grpc-status, a cut message, more
 *   than one message), -EMSGSIZE an answer past max_message (refused from its length prefix),
 *   -ELIBACC libnghttp2 missing;
 *   a gRPC status other than OK: grpc_code_to_errno() of it (-EOPNOTSUPP for UNIMPLEMENTED),
 *   the status text in the sentence, and the code in *ret_status.
 * *ret_status (when not NULL) is the grpc-status the server sent, -1 when it sent none. */
int grpc_unary(struct grpc_channel *ch, const char *method, const void *req, size_t req_len, unsigned timeout_ms,
               uint8_t **ret_msg, size_t *ret_len, int *ret_status, char **ret_error);

struct grpc_h2;

/* grpc_unary's call on a given connection (what a channel does once connected; tests and the
 * fuzz target drive a connection of their own), bounded by deadline_us (grpc_now_us's clock),
 * timeout_ms only sent as grpc-timeout and named in sentences. Returns what grpc_unary returns,
 * the sentence without the socket and method; the connection may be unusable afterwards
 * (grpc_h2_usable says). */
int grpc_call_unary(struct grpc_h2 *c, const char *method, const void *req, size_t req_len, unsigned timeout_ms,
                    uint64_t deadline_us, uint8_t **ret_msg, size_t *ret_len, int *ret_status, char **ret_error);

/* Connects to the unix socket at host_path below hostfs's root, non-blocking, giving up at
 * deadline_us (grpc_now_us's clock). The socket is reached through /proc/self/fd of an O_PATH
 * descriptor opened inside the root, so neither a long root nor a symlink out of it matters.
 * Returns a connected non-blocking socket, or -ENOENT, -ENOTSOCK, -EACCES, -ECONNREFUSED,
 * -ETIMEDOUT (the listener's queue stayed full) or another -errno, with a sentence. */
int grpc_unix_connect(const char *host_path, uint64_t deadline_us, char **ret_error);
