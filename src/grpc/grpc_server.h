/* grpc_server.h: a gRPC server on unix sockets (nghttp2, dlopen): unary and server-streaming calls, bounded. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "basic/util.h"
#include "grpc/grpc_wire.h"

/* The bounds of a server; zero fields take the defaults below. */
struct grpc_server_limits {
        size_t max_message;          /* a request message past this is refused (RESOURCE_EXHAUSTED) */
        unsigned max_connections;    /* past it, the oldest connection without a call is closed, else the new one */
        unsigned max_streams;        /* per connection: SETTINGS_MAX_CONCURRENT_STREAMS, more refused */
        unsigned call_timeout_ms;    /* a request must be whole this soon (or its grpc-timeout, if shorter) */
        unsigned preface_timeout_ms; /* a new connection must send its HTTP/2 preface this soon */
        size_t max_queued;           /* answer bytes queued for one call that the peer does not take: past it, reset */
};
#define GRPC_SERVER_MAX_MESSAGE_DEFAULT        ((size_t)4 << 20) /* grpc-go's default receive limit */
#define GRPC_SERVER_MAX_CONNECTIONS_DEFAULT    16u
#define GRPC_SERVER_MAX_STREAMS_DEFAULT        32u
#define GRPC_SERVER_CALL_TIMEOUT_MS_DEFAULT    10000u
#define GRPC_SERVER_PREFACE_TIMEOUT_MS_DEFAULT 10000u
#define GRPC_SERVER_MAX_QUEUED_DEFAULT         ((size_t)8 << 20)

struct grpc_server;
/* One call being served. Valid from its handler until it is finished (unary: the handler answered)
 * or, for a streaming call, until its close callback returned. */
struct grpc_call;

/* A method's handler: called once the whole request message (req, len bytes; owned by the server)
 * has arrived. A unary handler answers before it returns (grpc_call_reply or grpc_call_fail; one
 * that does neither answers INTERNAL); a streaming handler may keep the call and send on it later.
 * method_data is the method's data, listener_data that of the socket the call came in on. */
typedef void (*grpc_handler_fn)(struct grpc_call *call, const uint8_t *req, size_t len, void *method_data,
                                void *listener_data);

struct grpc_method {
        const char *path; /* "/v1beta1.DevicePlugin/Allocate" */
        bool streaming;   /* server streaming: the answer is many messages */
        grpc_handler_fn fn;
        void *data;
};

/* What the server counted (for logs and tests). */
struct grpc_server_stats {
        uint64_t connections, refused_connections, calls, failed_calls, protocol_errors, timeouts;
};

/* Makes a server for methods (the array is kept, not copied; it must outlive the server); limits
 * NULL: the defaults. Loads libnghttp2. Returns 0 with *ret, or -ELIBACC / -ELIBBAD (libnghttp2
 * missing) with a sentence. */
int grpc_server_new(const struct grpc_server_limits *limits, const struct grpc_method *methods, size_t n_methods,
                    struct grpc_server **ret, char **ret_error);

/* Closes every connection (streaming calls see their close callback) and listener (their socket
 * files removed when still theirs), then frees the server. */
void grpc_server_free(struct grpc_server *s);
static inline void grpc_server_freep(struct grpc_server **s) {
        grpc_server_free(*s);
}
#define _cleanup_grpc_server_ _cleanup_(grpc_server_freep)

/* Listens on a unix socket at host_path (below hostfs's root; a stale socket there is removed
 * first, any other file is refused), mode 0600. Calls on it get
 * listener_data. Returns a listener id >= 0, or -ENOENT (no such folder), -EEXIST (a file that is
 * not a socket), -EADDRINUSE (another process listens there), another -errno, with a sentence. */
int grpc_server_listen(struct grpc_server *s, const char *host_path, void *listener_data, char **ret_error);

/* Stops listening on id and removes its socket file if it is still the one bound. Connections
 * already accepted stay. */
void grpc_server_unlisten(struct grpc_server *s, int id);

/* Returns true when listener id's socket file is still there and still the one it bound (the
 * kubelet removes plugin sockets when it restarts). */
bool grpc_server_listener_present(struct grpc_server *s, int id);

/* Serves an already connected stream socket (made non-blocking here; owned from here on) as if it
 * had been accepted on a listener with listener_data: for tests and the fuzz target. Returns 0, or
 * -EMFILE past max_connections when every connection has a call open (fd closed). */
int grpc_server_adopt(struct grpc_server *s, int fd, void *listener_data);

/* Returns the number of open connections. */
size_t grpc_server_connections(const struct grpc_server *s);

/* Adds fd to the server's poll: fn(fd, userdata) runs when it is readable. Returns 0 or -ENOSPC. */
int grpc_server_watch_fd(struct grpc_server *s, int fd, void (*fn)(int fd, void *userdata), void *userdata);

/* Serves for at most max_wait_ms: one poll over listeners, connections and watched fds, then
 * accepts, reads, runs handlers, writes and ends calls past their deadline. Returns 0 (also on
 * EINTR), or -errno when poll fails. */
int grpc_server_run(struct grpc_server *s, unsigned max_wait_ms);

/* Returns the server's counters. */
const struct grpc_server_stats *grpc_server_stats(const struct grpc_server *s);

/* Answers a unary call with one message and status OK. Returns 0, or -EPIPE when the call was
 * already answered or its stream is gone, -EMSGSIZE past 4 GiB. */
int grpc_call_reply(struct grpc_call *c, const void *msg, size_t len);

/* Ends a call with status code (not OK) and a sentence (percent-encoded on the wire). Returns 0
 * or -EPIPE (already ended). */
int grpc_call_fail(struct grpc_call *c, int code, const char *fmt, ...) _printf_(3, 4);

/* Ends a streaming call with status OK after what was sent. Returns 0 or -EPIPE. */
int grpc_call_end(struct grpc_call *c);

/* Sends one message on a streaming call. Returns 0, -EPIPE (the call ended), -ENOBUFS (the peer
 * has not taken max_queued bytes: the call is reset and will close). */
int grpc_call_send(struct grpc_call *c, const void *msg, size_t len);

/* Sets what runs when a streaming call ends (the peer cancelled, the connection closed, or the
 * server is freed); the call is freed after fn returns. */
void grpc_call_on_close(struct grpc_call *c, void (*fn)(struct grpc_call *c, void *userdata), void *userdata);

/* Returns the call's method path. */
const char *grpc_call_method(const struct grpc_call *c);
