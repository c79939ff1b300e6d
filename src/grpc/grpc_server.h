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
        unsigned max_connections;    /* past it, the connection idle longest is closed (see grpc_server_adopt) */
        unsigned max_streams;        /* per connection: SETTINGS_MAX_CONCURRENT_STREAMS, more refused */
        unsigned call_timeout_ms;    /* a request must be whole this soon (or its grpc-timeout, if shorter) */
        unsigned preface_timeout_ms; /* a new connection must send its HTTP/2 preface this soon */
        size_t max_queued;           /* answer bytes queued for one call that the peer does not take: past it, reset */
        size_t max_queued_total;     /* answer bytes queued on the whole server (a shared message counted once) */
        unsigned send_timeout_ms;    /* an answer (or its trailers) not taken this long: the call is reset; a
                                      * socket that takes nothing this long: the connection is closed */
};
#define GRPC_SERVER_MAX_MESSAGE_DEFAULT        ((size_t)4 << 20) /* grpc-go's default receive limit */
#define GRPC_SERVER_MAX_CONNECTIONS_DEFAULT    16u
#define GRPC_SERVER_MAX_STREAMS_DEFAULT        32u
#define GRPC_SERVER_CALL_TIMEOUT_MS_DEFAULT    10000u
#define GRPC_SERVER_PREFACE_TIMEOUT_MS_DEFAULT 10000u
#define GRPC_SERVER_MAX_QUEUED_DEFAULT         ((size_t)8 << 20)
#define GRPC_SERVER_MAX_QUEUED_TOTAL_DEFAULT   ((size_t)32 << 20)
#define GRPC_SERVER_SEND_TIMEOUT_MS_DEFAULT    30000u

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
        uint64_t reset_calls;  /* streams reset for an answer not taken (past max_queued, send_timeout_ms) */
        uint64_t queued_bytes; /* now: answer bytes queued on calls, each shared message once */
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
 * had been accepted on a listener with listener_data: for tests and the fuzz target. Past
 * max_connections it still gets in and the connection idle longest (last bytes received) is
 * closed, preferring one without calls, then one whose calls all ended (counted in
 * refused_connections). Returns 0, or -ENOMEM (fd closed). */
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

/* A framed message that many calls can queue without a copy each (a ListAndWatch answer for
 * every watcher). Single-threaded like the server; a message is queued on one server's calls. */
struct grpc_msg;

/* Returns a new message holding a copy of msg (len bytes), one reference; NULL past 4 GiB. */
struct grpc_msg *grpc_msg_new(const void *msg, size_t len);
/* Takes a reference to m (NULL: nothing). Returns m. */
struct grpc_msg *grpc_msg_ref(struct grpc_msg *m);
/* Drops a reference to m (NULL: nothing); the last one frees it. */
void grpc_msg_unref(struct grpc_msg *m);
/* Returns m's body (what grpc_msg_new copied) with its length in *ret_len. */
const uint8_t *grpc_msg_body(const struct grpc_msg *m, size_t *ret_len);

/* Sends m on a streaming call where only the newest message matters: messages queued on c that
 * have not begun to go out are dropped first (one half sent is finished). The call takes its own
 * reference. Returns 0, -EPIPE (the call ended), -ENOBUFS (past max_queued for the call or
 * max_queued_total for the server: the call is reset and will close). */
int grpc_call_send_latest(struct grpc_call *c, struct grpc_msg *m);

/* Sets what runs when a streaming call ends (the peer cancelled, the connection closed, or the
 * server is freed); the call is freed after fn returns. */
void grpc_call_on_close(struct grpc_call *c, void (*fn)(struct grpc_call *c, void *userdata), void *userdata);

/* Returns the call's method path. */
const char *grpc_call_method(const struct grpc_call *c);
