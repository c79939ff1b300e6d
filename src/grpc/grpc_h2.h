/* grpc_h2.h: one HTTP/2 connection carrying gRPC calls (nghttp2, loaded with dlopen), bounded in time and memory. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "grpc/grpc_wire.h"

/* The most header bytes (names and values, plus 32 per field as HPACK counts them) accepted on
 * one stream, headers and trailers together; also announced as SETTINGS_MAX_HEADER_LIST_SIZE. */
#define GRPC_H2_MAX_HEADER_BYTES (64u << 10)
/* The longest grpc-message kept (the rest is cut). */
#define GRPC_H2_MAX_STATUS_TEXT 1024u

struct grpc_h2;

/* One gRPC call on a connection, as the connection saw it. A client's stream is a request it
 * sent; a server would get one per request received, with the same fields filled from the
 * request's headers. Read the fields; only grpc_h2 writes them. */
struct grpc_h2_stream {
        struct grpc_h2 *conn;
        int32_t id;
        /* what arrived */
        int http_status;        /* :status of a response, 0 until seen */
        bool grpc_content;      /* content-type application/grpc (or +proto, ;...) */
        char *content_type;     /* what it was (for a sentence), NULL when absent */
        bool have_status;       /* grpc-status seen (in trailers, or trailers-only headers) */
        int status;             /* grpc-status */
        char *status_text;      /* grpc-message, decoded; NULL when absent */
        unsigned header_blocks; /* HEADERS blocks: 1 headers (or trailers-only), 2 with trailers */
        size_t header_bytes;
        struct grpc_reader reader;
        grpc_message_fn on_message;
        void *userdata;
        bool remote_end;     /* the peer ended its side (END_STREAM) */
        bool closed;         /* the stream is closed both ways */
        uint32_t close_code; /* HTTP/2 error code it closed with (RST_STREAM, GOAWAY); 0 NO_ERROR */
        int error;           /* the first failure seen on it (negative errno), with error_text */
        char *error_text;
        /* what is to be sent: framed messages not yet handed to nghttp2 */
        struct buf out;
        size_t out_off;
        bool out_last;     /* no more messages after out */
        bool out_deferred; /* nghttp2 waits for grpc_h2_stream_send */
};

/* Takes a connected, non-blocking stream socket (fd is owned from here on, closed by
 * grpc_h2_free or on failure), loads libnghttp2 and queues the connection preface and SETTINGS
 * (client side: no server push; a 1 MiB flow-control window; header lists up to
 * GRPC_H2_MAX_HEADER_BYTES). Messages on its streams may be up to max_message bytes. Returns 0,
 * -ELIBACC / -ELIBBAD when libnghttp2 cannot be loaded, or -ENOMEM; with a sentence in
 * *ret_error. (Only the client side exists so far; a server takes the same path with
 * nghttp2_session_server_new and a stream per request.) */
int grpc_h2_client_new(int fd, size_t max_message, struct grpc_h2 **ret, char **ret_error);

/* Closes the connection and frees it; streams still open are detached (their callbacks stop). */
void grpc_h2_free(struct grpc_h2 *c);
static inline void grpc_h2_freep(struct grpc_h2 **c) {
        grpc_h2_free(*c);
}
#define _cleanup_grpc_h2_ _cleanup_(grpc_h2_freep)

/* Returns true while the connection can carry a new call: no failure, no end from the peer,
 * no GOAWAY. */
bool grpc_h2_usable(const struct grpc_h2 *c);

/* Returns grpc_h2_usable after taking in what the peer already sent (without waiting): a peer
 * that closed the connection or sent GOAWAY since the last call is seen before a new call. */
bool grpc_h2_alive(struct grpc_h2 *c);

/* Starts a call: submits the request headers for method ("/package.Service/Method") with
 * authority, content-type application/grpc, te: trailers and grpc-timeout timeout_ms (0: none).
 * Each message that arrives goes to fn (see grpc_message_fn). Returns 0 with the stream in
 * *ret, or -EPIPE (the connection is not usable) / -EIO (nghttp2 refused) with a sentence. */
int grpc_h2_call_start(struct grpc_h2 *c, const char *method, const char *authority, uint64_t timeout_ms,
                       grpc_message_fn fn, void *userdata, struct grpc_h2_stream **ret, char **ret_error);

/* Queues one message on the stream (framed here); last ends the sending side after it.
 * Returns 0, or -EMSGSIZE (past 4 GiB), -EPIPE (the stream already ended its side or closed). */
int grpc_h2_stream_send(struct grpc_h2_stream *s, const void *msg, size_t len, bool last);

/* Detaches the stream from the connection (an open one is reset with CANCEL) and frees it. */
void grpc_h2_stream_free(struct grpc_h2_stream *s);
static inline void grpc_h2_stream_freep(struct grpc_h2_stream **s) {
        grpc_h2_stream_free(*s);
}
#define _cleanup_grpc_h2_stream_ _cleanup_(grpc_h2_stream_freep)

/* Returns true when the peer has ended the stream or it was closed: nothing more will arrive. */
bool grpc_h2_stream_finished(const struct grpc_h2_stream *s);

/* Moves bytes both ways (send what nghttp2 has queued, poll, receive) until s is finished or
 * the monotonic clock (CLOCK_MONOTONIC, in microseconds) passes deadline_us. Returns 0 when s
 * is finished; -ETIMEDOUT at the deadline ("sent no answer", "did not finish its answer"); -ECONNRESET when the peer
 * closed the connection first; -EPROTO when it broke HTTP/2 (the connection is then unusable); another -errno from
 * poll, send or recv. A failure comes with a sentence in *ret_error, saying what the peer did
 * without naming it (the caller knows the socket). */
int grpc_h2_run(struct grpc_h2 *c, struct grpc_h2_stream *s, uint64_t deadline_us, char **ret_error);

/* Returns the name of an HTTP/2 error code ("CANCEL", "REFUSED_STREAM"); only after a
 * connection was made (libnghttp2 is loaded then). */
const char *grpc_h2_error_name(uint32_t code);

/* Returns CLOCK_MONOTONIC in microseconds. */
uint64_t grpc_now_us(void);
