/* grpc_server.c: gRPC's server side on nghttp2 (dlopen): unix listeners, connections, calls, every wait bounded. */
/*
 * One thread, one poll: listeners, connections and the fds a user watches (inotify, a health
 * pipe) share it, so a handler never races another. HTTP/2 itself (framing, HPACK, flow control,
 * stream states, the protocol checks) is nghttp2's; gRPC's part is grpc_wire.c's (message
 * prefix, grpc-timeout, grpc-message); this file joins them the way grpc_h2.c does for the
 * client, with a call per request stream.
 *
 * Bounds, so that no client can take the server down or hold it: at most max_connections
 * connections (more are closed on accept), max_streams open streams on each (announced in
 * SETTINGS and enforced here too), a request message refused from its length prefix past
 * max_message (nothing of it buffered), header lists capped at GRPC_SERVER_MAX_HEADER_BYTES, a
 * connection that sends no preface in preface_timeout_ms closed, a request not whole in
 * call_timeout_ms (or its grpc-timeout) answered DEADLINE_EXCEEDED, and answers a peer does not
 * read capped at max_queued bytes per call and max_queued_total bytes for the whole server (a
 * message queued on many calls is one refcounted buffer, counted once). A call the server ends
 * while the client's side is still open is reset with NO_ERROR after its trailers (as grpc-go and
 * grpc-c++ do), so it gives its slot back at once; a call whose answer is not taken for
 * send_timeout_ms (bytes queued, or trailers the peer never lets out) is reset with CANCEL, and a
 * connection whose socket takes nothing for that long is closed. When max_connections are open a
 * new connection always gets in: the one idle longest goes, preferring one without calls, then
 * one whose calls all ended. Anything nghttp2 finds broken closes that connection only.
 */
#include "grpc/grpc_server.h"
#include "basic/hostfs.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "basic/dl_nghttp2.h"

#define GRPC_SERVER_MAX_HEADER_BYTES (16u << 10)
#define GRPC_SERVER_MAX_LISTENERS    16
#define GRPC_SERVER_MAX_WATCHED      8

struct listener {
        int fd;     /* -1: unused slot */
        char *path; /* host path */
        ino_t ino;
        dev_t dev;
        void *data;
};

struct conn;

/* A framed message (prefix and body), shared by every call it is queued on. */
struct grpc_msg {
        unsigned refs;   /* holders: the maker and each call's queue */
        unsigned queued; /* call queues holding it: counted in the server's stats.queued_bytes while > 0 */
        size_t len;      /* of data: GRPC_PREFIX_LEN + the body */
        uint8_t data[];
};

struct grpc_call {
        struct conn *conn;
        struct grpc_call *next; /* in conn->calls */
        int32_t id;
        const struct grpc_method *method;
        void *listener_data;
        /* the request */
        char *path; /* :path as sent (at most 256 bytes kept) */
        bool post, grpc_content, content_type_seen;
        uint64_t timeout_ms; /* grpc-timeout, 0 none */
        size_t header_bytes;
        struct grpc_reader reader;
        uint8_t *msg;
        size_t msg_len;
        unsigned messages;
        int reader_error;     /* a refused message: answered already */
        uint64_t start_ms;    /* when its headers were whole */
        uint64_t deadline_ms; /* monotonic_ms; until the request is whole (and for streams with grpc-timeout) */
        bool dispatched;
        /* the answer */
        bool headers_sent; /* response HEADERS submitted (with a data provider) */
        bool ended;        /* status decided: nothing more may be queued */
        bool remote_ended; /* the client ended its side (END_STREAM) */
        bool reset;        /* RST_STREAM submitted: the stream closes when it goes out */
        bool rst_after;    /* trailers queued while the client still sends: reset (NO_ERROR) once they are out */
        int status;
        char *status_text;
        struct grpc_msg **q;  /* messages queued, not yet (wholly) handed to nghttp2 */
        size_t n_q, q_off;    /* q_off: bytes of q[0] already handed out */
        size_t q_bytes;       /* unsent bytes of the queue */
        uint64_t progress_ms; /* when the peer last took bytes of the answer (or it was queued) */
        bool deferred;
        void (*on_close)(struct grpc_call *c, void *userdata);
        void *close_data;
};

struct conn {
        struct grpc_server *server;
        int fd;
        nghttp2_session *session;
        void *listener_data;
        uint64_t started_ms;
        uint64_t active_ms; /* when it last sent something */
        uint64_t write_ms;  /* when its socket last took bytes (or bytes became pending) */
        bool got_frame;     /* the preface and a frame arrived */
        bool dead;          /* close at the end of this round */
        const uint8_t *pending;
        size_t pending_len;
        unsigned n_streams;
        struct grpc_call *calls;
};

struct watched {
        int fd;
        void (*fn)(int fd, void *userdata);
        void *userdata;
};

struct grpc_server {
        struct grpc_server_limits limits;
        const struct grpc_method *methods;
        size_t n_methods;
        struct listener listeners[GRPC_SERVER_MAX_LISTENERS];
        struct conn **conns;
        size_t n_conns;
        struct watched watched[GRPC_SERVER_MAX_WATCHED];
        size_t n_watched;
        nghttp2_session_callbacks *callbacks;
        struct grpc_server_stats stats; /* stats.queued_bytes: of the distinct messages queued on calls */
};

/* ---- calls ---- */

/* Returns the call attached to a stream, or NULL. */
static struct grpc_call *call_of(nghttp2_session *session, int32_t id) {
        return nghttp2_session_get_stream_user_data(session, id);
}

struct grpc_msg *grpc_msg_new(const void *msg, size_t len) {
        uint8_t prefix[GRPC_PREFIX_LEN];
        if (grpc_prefix_write(len, prefix) < 0 || len > SIZE_MAX - sizeof(struct grpc_msg) - GRPC_PREFIX_LEN)
                return NULL;
        struct grpc_msg *m = xmalloc(sizeof *m + GRPC_PREFIX_LEN + len);
        *m = (struct grpc_msg){ .refs = 1, .len = GRPC_PREFIX_LEN + len };
        memcpy(m->data, prefix, GRPC_PREFIX_LEN);
        if (len) memcpy(m->data + GRPC_PREFIX_LEN, msg, len);
        return m;
}

struct grpc_msg *grpc_msg_ref(struct grpc_msg *m) {
        if (m) m->refs++;
        return m;
}

void grpc_msg_unref(struct grpc_msg *m) {
        if (m && --m->refs == 0) free(m);
}

const uint8_t *grpc_msg_body(const struct grpc_msg *m, size_t *ret_len) {
        *ret_len = m->len - GRPC_PREFIX_LEN;
        return m->data + GRPC_PREFIX_LEN;
}

/* Appends m to c's queue (a reference taken; the server's total counts m once). */
static void q_push(struct grpc_call *c, struct grpc_msg *m) {
        if (m->queued++ == 0) c->conn->server->stats.queued_bytes += m->len;
        if (c->n_q == 0) c->progress_ms = monotonic_ms();
        c->q = xrealloc(c->q, (c->n_q + 1) * sizeof *c->q);
        c->q[c->n_q++] = grpc_msg_ref(m);
        c->q_bytes += m->len;
}

/* Drops entry i of c's queue (its unsent bytes: all of it but q_off for entry 0). */
static void q_drop(struct grpc_call *c, size_t i) {
        struct grpc_msg *m = c->q[i];
        c->q_bytes -= m->len - (i == 0 ? c->q_off : 0);
        if (i == 0) c->q_off = 0;
        if (--m->queued == 0) c->conn->server->stats.queued_bytes -= m->len;
        grpc_msg_unref(m);
        memmove(&c->q[i], &c->q[i + 1], (c->n_q - i - 1) * sizeof *c->q);
        c->n_q--;
}

/* Decides c's end: nothing more may be queued, and its stream must close within send_timeout_ms
 * of the peer's last taking bytes (its trailers included). */
static void mark_ended(struct grpc_call *c) {
        c->ended = true;
        if (!c->n_q) c->progress_ms = monotonic_ms();
}

/* Resets c's stream with an HTTP/2 error code (once); nothing more is sent on it. */
static void call_reset(struct grpc_call *c, uint32_t code) {
        if (c->reset || c->id < 0) return;
        c->reset = c->ended = true;
        while (c->n_q) q_drop(c, c->n_q - 1);
        nghttp2_submit_rst_stream(c->conn->session, NGHTTP2_FLAG_NONE, c->id, code);
}

/* Unlinks c from its connection and frees it, after its close callback. */
static void call_free(struct grpc_call *c) {
        struct conn *k = c->conn;
        if (c->on_close) {
                void (*fn)(struct grpc_call *, void *) = c->on_close;
                c->on_close = NULL;
                fn(c, c->close_data);
        }
        for (struct grpc_call **p = &k->calls; *p; p = &(*p)->next)
                if (*p == c) {
                        *p = c->next;
                        break;
                }
        if (k->n_streams) k->n_streams--;
        grpc_reader_done(&c->reader);
        free(c->msg);
        free(c->path);
        free(c->status_text);
        while (c->n_q) q_drop(c, c->n_q - 1);
        free(c->q);
        free(c);
}

/* nghttp2's data source for an answer: queued message bytes, then trailers with the status.
 * Returns the bytes copied, NGHTTP2_ERR_DEFERRED while a stream waits for more. */
static ssize_t read_answer(nghttp2_session *session, int32_t id, uint8_t *buf, size_t length, uint32_t *data_flags,
                           nghttp2_data_source *source, void *userdata) {
        struct grpc_call *c = source->ptr;
        size_t k = 0;
        while (k < length && c->n_q) {
                struct grpc_msg *m = c->q[0];
                size_t n = m->len - c->q_off < length - k ? m->len - c->q_off : length - k;
                memcpy(buf + k, m->data + c->q_off, n);
                k += n;
                c->q_off += n;
                c->q_bytes -= n;
                if (c->q_off == m->len) q_drop(c, 0); /* wholly out: no unsent bytes left to count */
        }
        if (k) c->progress_ms = monotonic_ms();
        if (c->n_q) return (ssize_t)k;
        if (!c->ended) {
                if (k) return (ssize_t)k;
                c->deferred = true;
                return NGHTTP2_ERR_DEFERRED;
        }
        *data_flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        char code[12];
        snprintf(code, sizeof code, "%d", c->status);
        _cleanup_free_ char *text = c->status_text ? grpc_message_encode(c->status_text) : NULL;
        nghttp2_nv nv[2];
        size_t n = 0;
        nv[n++] = (nghttp2_nv){ (uint8_t *)"grpc-status", (uint8_t *)code, 11, strlen(code), NGHTTP2_NV_FLAG_NONE };
        if (text)
                nv[n++] = (nghttp2_nv){ (uint8_t *)"grpc-message", (uint8_t *)text, 12, strlen(text),
                                        NGHTTP2_NV_FLAG_NONE };
        if (nghttp2_submit_trailer(session, id, nv, n) != 0) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        c->rst_after = !c->remote_ended;
        return (ssize_t)k;
}

/* Submits the response headers with the answer's data source. Returns 0 or -EIO. */
static int start_answer(struct grpc_call *c) {
        if (c->headers_sent) return 0;
        nghttp2_nv nv[] = {
                { (uint8_t *)":status", (uint8_t *)"200", 7, 3, NGHTTP2_NV_FLAG_NONE },
                { (uint8_t *)"content-type", (uint8_t *)"application/grpc", 12, 16, NGHTTP2_NV_FLAG_NONE },
        };
        nghttp2_data_provider dp = { .source.ptr = c, .read_callback = read_answer };
        if (nghttp2_submit_response(c->conn->session, c->id, nv, ELEMENTSOF(nv), &dp) != 0) return -EIO;
        c->headers_sent = true;
        return 0;
}

/* Wakes the data source of a call that waits for bytes. */
static void resume(struct grpc_call *c) {
        if (c->deferred) {
                c->deferred = false;
                nghttp2_session_resume_data(c->conn->session, c->id);
        }
}

/* Queues message m on c; latest: messages of c not yet begun are dropped first (only the newest
 * matters). Returns 0, or -ENOBUFS past max_queued bytes for the call or max_queued_total for the
 * server (nothing queued). */
static int queue_msg(struct grpc_call *c, struct grpc_msg *m, bool latest) {
        struct grpc_server *s = c->conn->server;
        if (latest)
                for (size_t i = c->n_q; i > 0; i--)
                        if (i - 1 > 0 || c->q_off == 0) q_drop(c, i - 1);
        if (c->q_bytes + m->len > s->limits.max_queued) return -ENOBUFS;
        if (m->queued == 0 && s->stats.queued_bytes + m->len > s->limits.max_queued_total) return -ENOBUFS;
        q_push(c, m);
        return 0;
}

/* Queues a copy of msg (len bytes) on c. Returns 0, -EMSGSIZE or -ENOBUFS (see queue_msg). */
static int queue_message(struct grpc_call *c, const void *msg, size_t len) {
        struct grpc_msg *m = grpc_msg_new(msg, len);
        if (!m) return -EMSGSIZE;
        int r = queue_msg(c, m, false);
        grpc_msg_unref(m);
        return r;
}

int grpc_call_reply(struct grpc_call *c, const void *msg, size_t len) {
        if (!c || c->ended || c->id < 0) return -EPIPE;
        int r = queue_message(c, msg, len);
        if (r < 0) return r;
        mark_ended(c);
        c->status = GRPC_OK;
        r = start_answer(c);
        if (r < 0) return r;
        resume(c);
        return 0;
}

/* Ends c with status code and text (taken). Returns 0 or -EPIPE. */
static int end_call(struct grpc_call *c, int code, char *text) {
        if (!c || c->ended || c->id < 0) {
                free(text);
                return -EPIPE;
        }
        mark_ended(c);
        c->status = code;
        c->status_text = text;
        if (code != GRPC_OK) c->conn->server->stats.failed_calls++;
        if (c->headers_sent) {
                resume(c);
                return 0;
        }
        /* Trailers-only: one HEADERS frame with the status and END_STREAM. */
        char num[12];
        snprintf(num, sizeof num, "%d", code);
        _cleanup_free_ char *enc = text ? grpc_message_encode(text) : NULL;
        nghttp2_nv nv[4];
        size_t n = 0;
#define NV(k, v) nv[n++] = (nghttp2_nv){ (uint8_t *)(k), (uint8_t *)(v), strlen(k), strlen(v), NGHTTP2_NV_FLAG_NONE }
        NV(":status", "200");
        NV("content-type", "application/grpc");
        NV("grpc-status", num);
        if (enc) NV("grpc-message", enc);
#undef NV
        c->headers_sent = true;
        if (nghttp2_submit_response(c->conn->session, c->id, nv, n, NULL) != 0) return -EIO;
        c->rst_after = !c->remote_ended;
        return 0;
}

int grpc_call_fail(struct grpc_call *c, int code, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        char *text = xvasprintf(fmt, ap);
        va_end(ap);
        return end_call(c, code == GRPC_OK ? GRPC_UNKNOWN : code, text);
}

int grpc_call_end(struct grpc_call *c) {
        if (!c || c->ended || c->id < 0) return -EPIPE;
        int r = start_answer(c);
        if (r < 0) return r;
        return end_call(c, GRPC_OK, NULL);
}

/* Sends m on c (latest: replacing what is not yet begun). Returns 0, -EPIPE, -ENOBUFS (reset). */
static int call_send(struct grpc_call *c, struct grpc_msg *m, bool latest) {
        if (!c || c->ended || c->id < 0) return -EPIPE;
        int r = queue_msg(c, m, latest);
        if (r == -ENOBUFS) {
                /* The peer stopped reading: no memory is promised to it. */
                call_reset(c, NGHTTP2_ENHANCE_YOUR_CALM);
                c->conn->server->stats.reset_calls++;
                return r;
        }
        if (r < 0) return r;
        r = start_answer(c);
        if (r < 0) return r;
        resume(c);
        return 0;
}

int grpc_call_send(struct grpc_call *c, const void *msg, size_t len) {
        if (!c || c->ended || c->id < 0) return -EPIPE;
        struct grpc_msg *m = grpc_msg_new(msg, len);
        if (!m) return -EMSGSIZE;
        int r = call_send(c, m, false);
        grpc_msg_unref(m);
        return r;
}

int grpc_call_send_latest(struct grpc_call *c, struct grpc_msg *m) {
        return call_send(c, m, true);
}

void grpc_call_on_close(struct grpc_call *c, void (*fn)(struct grpc_call *c, void *userdata), void *userdata) {
        c->on_close = fn;
        c->close_data = userdata;
}

const char *grpc_call_method(const struct grpc_call *c) {
        return c->path ? c->path : "";
}

/* Runs the handler of a whole request, or answers what was wrong with it. */
static void dispatch(struct grpc_call *c) {
        if (c->dispatched || c->ended) return;
        c->dispatched = true;
        struct grpc_server *s = c->conn->server;
        if (c->messages != 1 || grpc_reader_partial(&c->reader)) {
                s->stats.protocol_errors++;
                grpc_call_fail(c, GRPC_INTERNAL, "%s: expected one request message, got %s", grpc_call_method(c),
                               grpc_reader_partial(&c->reader) ? "a cut message"
                               : c->messages                   ? "more"
                                                               : "none");
                return;
        }
        s->stats.calls++;
        _cleanup_free_ uint8_t *msg = TAKE_PTR(c->msg);
        c->method->fn(c, msg, c->msg_len, c->method->data, c->listener_data);
        if (!c->method->streaming && !c->ended)
                grpc_call_fail(c, GRPC_INTERNAL, "%s: the server gave no answer", grpc_call_method(c));
        if (c->method->streaming) c->deadline_ms = c->timeout_ms ? c->start_ms + c->timeout_ms : 0;
}

/* Judges a request's headers once they are whole: a POST of application/grpc to a known method.
 * Returns nothing; a bad request is answered at once. */
static void headers_done(struct grpc_call *c) {
        struct grpc_server *s = c->conn->server;
        if (!c->post || !c->grpc_content) {
                s->stats.protocol_errors++;
                /* gRPC over HTTP/2: a request that is not gRPC gets HTTP 415 (no gRPC status). */
                nghttp2_nv nv[] = { { (uint8_t *)":status", (uint8_t *)"415", 7, 3, NGHTTP2_NV_FLAG_NONE } };
                mark_ended(c);
                c->headers_sent = true;
                nghttp2_submit_response(c->conn->session, c->id, nv, 1, NULL);
                c->rst_after = !c->remote_ended;
                return;
        }
        for (size_t i = 0; i < s->n_methods; i++)
                if (c->path && streq(c->path, s->methods[i].path)) c->method = &s->methods[i];
        if (!c->method) {
                _cleanup_free_ char *p = utf8_sanitize(grpc_call_method(c));
                grpc_call_fail(c, GRPC_UNIMPLEMENTED, "unknown method %s", p);
                return;
        }
        uint64_t limit = s->limits.call_timeout_ms;
        if (c->timeout_ms && c->timeout_ms < limit) limit = c->timeout_ms;
        c->start_ms = monotonic_ms();
        c->deadline_ms = c->start_ms + (limit ? limit : 1);
}

/* ---- nghttp2 callbacks ---- */

/* A new request stream: attaches a call to it, or refuses it past max_streams. Returns 0. */
static int on_begin_headers(nghttp2_session *session, const nghttp2_frame *frame, void *userdata) {
        struct conn *k = userdata;
        if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
        if (k->n_streams >= k->server->limits.max_streams) {
                nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, frame->hd.stream_id, NGHTTP2_REFUSED_STREAM);
                return 0;
        }
        struct grpc_call *c = xcalloc(1, sizeof *c);
        c->conn = k;
        c->id = frame->hd.stream_id;
        c->listener_data = k->listener_data;
        grpc_reader_init(&c->reader, k->server->limits.max_message);
        c->next = k->calls;
        k->calls = c;
        k->n_streams++;
        nghttp2_session_set_stream_user_data(session, c->id, c);
        return 0;
}

/* Keeps the request fields a call needs. Returns 0, or NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE
 * (nghttp2 resets the stream) past the header cap. */
static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *userdata) {
        struct grpc_call *c = call_of(session, frame->hd.stream_id);
        if (!c || frame->hd.type != NGHTTP2_HEADERS || c->dispatched) return 0;
        c->header_bytes += namelen + valuelen + 32;
        if (c->header_bytes > GRPC_SERVER_MAX_HEADER_BYTES) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
#define IS(lit) (namelen == sizeof lit - 1 && memcmp(name, lit, namelen) == 0)
        if (IS(":method"))
                c->post = valuelen == 4 && memcmp(value, "POST", 4) == 0;
        else if (IS(":path")) {
                free(c->path);
                c->path = xstrndup((const char *)value, valuelen > 256 ? 256 : valuelen);
        } else if (IS("content-type")) {
                static const char t[] = "application/grpc";
                size_t n = sizeof t - 1;
                c->grpc_content = valuelen >= n && memcmp(value, t, n) == 0 &&
                                  (valuelen == n || value[n] == '+' || value[n] == ';');
        } else if (IS("grpc-timeout")) {
                uint64_t ms;
                if (grpc_timeout_parse((const char *)value, valuelen, &ms) == 0) c->timeout_ms = ms ? ms : 1;
        }
#undef IS
        return 0;
}

/* A message of the request: the first is kept, more are counted (a unary call has one). */
static int on_request_message(uint8_t *msg, size_t len, void *userdata) {
        struct grpc_call *c = userdata;
        if (c->messages++ == 0) {
                c->msg = msg;
                c->msg_len = len;
        } else
                free(msg);
        return 0;
}

/* Feeds request DATA to the call's reader; a refused message ends the call at once. Returns 0. */
static int on_data_chunk_recv(nghttp2_session *session, uint8_t flags, int32_t id, const uint8_t *data, size_t len,
                              void *userdata) {
        struct grpc_call *c = call_of(session, id);
        if (!c || c->ended || c->dispatched || c->reader_error) return 0;
        _cleanup_free_ char *text = NULL;
        int r = grpc_reader_feed(&c->reader, data, len, on_request_message, c, &text);
        if (r < 0) {
                c->reader_error = r;
                c->conn->server->stats.protocol_errors++;
                grpc_call_fail(c, r == -EMSGSIZE ? GRPC_RESOURCE_EXHAUSTED : GRPC_INTERNAL, "%s",
                               text ? text : strerror(-r));
        }
        return 0;
}

/* Notes whole headers and the end of a request. Returns 0. */
static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *userdata) {
        struct conn *k = userdata;
        k->got_frame = true;
        if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
        struct grpc_call *c = call_of(session, frame->hd.stream_id);
        if (!c) return 0;
        if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) c->remote_ended = true;
        if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) headers_done(c);
        if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) && !c->ended) dispatch(c);
        return 0;
}

/* A stream closed: its call ends (a streaming call's close callback runs). Returns 0. */
static int on_stream_close(nghttp2_session *session, int32_t id, uint32_t error_code, void *userdata) {
        struct grpc_call *c = call_of(session, id);
        if (!c) return 0;
        nghttp2_session_set_stream_user_data(session, id, NULL);
        c->id = -1;
        call_free(c);
        return 0;
}

/* ---- connections ---- */

/* Closes a connection: its calls' close callbacks run, then everything is freed. */
static void conn_free(struct conn *k) {
        while (k->calls) {
                struct grpc_call *c = k->calls;
                if (c->id >= 0) nghttp2_session_set_stream_user_data(k->session, c->id, NULL);
                c->id = -1;
                call_free(c);
        }
        if (k->session) nghttp2_session_del(k->session);
        if (k->fd >= 0) close(k->fd);
        free(k);
}

/* Resets (NO_ERROR) the streams of k whose trailers went out while their client still sends, as
 * grpc-go and grpc-c++ servers do, so that they give their slot back. Only once nghttp2 has
 * framed all it had: a reset submitted earlier would drop the trailers still queued. Returns
 * true when it submitted one. */
static bool conn_reset_answered(struct conn *k) {
        bool any = false;
        for (struct grpc_call *c = k->calls; c; c = c->next)
                if (c->rst_after && !c->reset && !c->remote_ended) {
                        call_reset(c, NGHTTP2_NO_ERROR);
                        any = true;
                }
        return any;
}

/* Writes what nghttp2 has queued until the socket is full. Returns 0 or -errno (close it). */
static int conn_flush(struct conn *k) {
        for (;;) {
                if (k->pending_len == 0) {
                        const uint8_t *data;
                        ssize_t n = nghttp2_session_mem_send(k->session, &data);
                        if (n < 0) return -EIO;
                        if (n == 0 && conn_reset_answered(k)) continue;
                        if (n == 0) return 0;
                        k->pending = data;
                        k->pending_len = (size_t)n;
                        k->write_ms = monotonic_ms();
                }
                ssize_t w = send(k->fd, k->pending, k->pending_len, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (w < 0) {
                        if (errno == EINTR) continue;
                        if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
                        return -errno;
                }
                if (w > 0) k->write_ms = monotonic_ms();
                k->pending += w;
                k->pending_len -= (size_t)w;
        }
}

/* Reads what the socket holds (a bounded number of buffers) into nghttp2. Returns 0, -ECONNRESET
 * (the peer closed) or -EPROTO. */
static int conn_receive(struct conn *k) {
        uint8_t buf[16384];
        for (int i = 0; i < 16; i++) {
                ssize_t n = recv(k->fd, buf, sizeof buf, MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR) continue;
                        if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
                        return -ECONNRESET;
                }
                if (n == 0) return -ECONNRESET;
                k->active_ms = monotonic_ms();
                ssize_t r = nghttp2_session_mem_recv(k->session, buf, (size_t)n);
                if (r < 0) {
                        k->server->stats.protocol_errors++;
                        return -EPROTO;
                }
        }
        return 0;
}

/* Returns the number of calls of k not yet ended (a handler or a stream still at work). */
static size_t conn_live_calls(const struct conn *k) {
        size_t n = 0;
        for (const struct grpc_call *c = k->calls; c; c = c->next) n += !c->ended;
        return n;
}

/* Makes a connection of fd (non-blocking); past max_connections another one is closed to make
 * room. Returns 0, or -ENOMEM with fd closed. */
static int conn_add(struct grpc_server *s, int fd, void *listener_data) {
        if (s->n_conns >= s->limits.max_connections) {
                /* Full: a new connection always gets in (a restarted kubelet must), and the one
                 * idle longest makes room: one without calls first, then one whose calls all
                 * ended, then any. Dead ones are closed later this round anyway: they count. */
                ssize_t idle = -1;
                unsigned best = UINT_MAX;
                for (size_t i = 0; i < s->n_conns; i++) {
                        const struct conn *o = s->conns[i];
                        unsigned rank = o->dead ? 0 : o->n_streams == 0 ? 1 : conn_live_calls(o) == 0 ? 2 : 3;
                        if (rank < best || (rank == best && o->active_ms < s->conns[idle]->active_ms)) {
                                best = rank;
                                idle = (ssize_t)i;
                        }
                }
                s->stats.refused_connections++;
                struct conn *old = s->conns[idle];
                memmove(&s->conns[idle], &s->conns[idle + 1], (s->n_conns - (size_t)idle - 1) * sizeof *s->conns);
                s->n_conns--;
                conn_free(old);
        }
        struct conn *k = xcalloc(1, sizeof *k);
        k->server = s;
        k->fd = fd;
        k->listener_data = listener_data;
        k->started_ms = k->active_ms = k->write_ms = monotonic_ms();
        if (nghttp2_session_server_new(&k->session, s->callbacks, k) != 0) {
                k->session = NULL;
                conn_free(k);
                return -ENOMEM;
        }
        const nghttp2_settings_entry settings[] = {
                { NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, s->limits.max_streams },
                { NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, GRPC_SERVER_MAX_HEADER_BYTES },
        };
        if (nghttp2_submit_settings(k->session, NGHTTP2_FLAG_NONE, settings, ELEMENTSOF(settings)) != 0) {
                conn_free(k);
                return -ENOMEM;
        }
        s->stats.connections++;
        s->conns = xrealloc(s->conns, (s->n_conns + 1) * sizeof *s->conns);
        s->conns[s->n_conns++] = k;
        return 0;
}

/* Accepts one connection on listener l. Returns nothing; failures drop that connection. */
static void conn_accept(struct grpc_server *s, struct listener *l) {
        int fd = accept4(l->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd >= 0) (void)conn_add(s, fd, l->data);
}

int grpc_server_adopt(struct grpc_server *s, int fd, void *listener_data) {
        int fl = fcntl(fd, F_GETFL);
        if (fl >= 0) (void)fcntl(fd, F_SETFL, fl | O_NONBLOCK);
        return conn_add(s, fd, listener_data);
}

size_t grpc_server_connections(const struct grpc_server *s) {
        return s->n_conns;
}

/* Returns when c is reset for an answer not taken: send_timeout_ms after the peer last took bytes
 * of it, while bytes are queued or the call ended and its stream is still open; 0: never. */
static uint64_t send_deadline(const struct grpc_server *s, const struct grpc_call *c) {
        if (c->reset || c->id < 0 || (!c->n_q && !c->ended)) return 0;
        if (!c->progress_ms) return 0;
        return c->progress_ms + s->limits.send_timeout_ms;
}

/* Ends calls past their deadline, resets answers not taken, closes connections that never spoke
 * or whose socket takes nothing. */
static void enforce_deadlines(struct grpc_server *s, uint64_t now) {
        for (size_t i = 0; i < s->n_conns; i++) {
                struct conn *k = s->conns[i];
                if (!k->got_frame && now - k->started_ms > s->limits.preface_timeout_ms) {
                        s->stats.timeouts++;
                        k->dead = true;
                        continue;
                }
                if (k->pending_len && now - k->write_ms >= s->limits.send_timeout_ms) {
                        /* The peer takes nothing from the socket: nothing can go out, not even a reset. */
                        s->stats.timeouts++;
                        k->dead = true;
                        continue;
                }
                for (struct grpc_call *c = k->calls; c; c = c->next) {
                        if (c->deadline_ms && now >= c->deadline_ms && !c->ended) {
                                s->stats.timeouts++;
                                c->deadline_ms = 0;
                                grpc_call_fail(c, GRPC_DEADLINE_EXCEEDED, "%s: %s", grpc_call_method(c),
                                               c->dispatched ? "the call's deadline passed"
                                                             : "the request did not arrive in time");
                        }
                        uint64_t d = send_deadline(s, c);
                        if (d && now >= d) {
                                /* An answer the peer does not take (or trailers it never lets out). */
                                s->stats.timeouts++;
                                s->stats.reset_calls++;
                                call_reset(c, NGHTTP2_CANCEL);
                        }
                }
        }
}

/* Returns the earliest deadline of the server's calls and new connections, or UINT64_MAX. */
static uint64_t next_deadline(const struct grpc_server *s) {
        uint64_t d = UINT64_MAX;
        for (size_t i = 0; i < s->n_conns; i++) {
                const struct conn *k = s->conns[i];
                if (!k->got_frame && k->started_ms + s->limits.preface_timeout_ms < d)
                        d = k->started_ms + s->limits.preface_timeout_ms;
                if (k->pending_len && k->write_ms + s->limits.send_timeout_ms < d)
                        d = k->write_ms + s->limits.send_timeout_ms;
                for (const struct grpc_call *c = k->calls; c; c = c->next) {
                        if (c->deadline_ms && !c->ended && c->deadline_ms < d) d = c->deadline_ms;
                        uint64_t sd = send_deadline(s, c);
                        if (sd && sd < d) d = sd;
                }
        }
        return d;
}

/* ---- the server ---- */

int grpc_server_new(const struct grpc_server_limits *limits, const struct grpc_method *methods, size_t n_methods,
                    struct grpc_server **ret, char **ret_error) {
        int r = dl_nghttp2_open(ret_error);
        if (r < 0) return r;
        struct grpc_server *s = xcalloc(1, sizeof *s);
        if (limits) s->limits = *limits;
#define DEF(f, v)                                                                                                      \
        if (!s->limits.f) s->limits.f = (v)
        DEF(max_message, GRPC_SERVER_MAX_MESSAGE_DEFAULT);
        DEF(max_connections, GRPC_SERVER_MAX_CONNECTIONS_DEFAULT);
        DEF(max_streams, GRPC_SERVER_MAX_STREAMS_DEFAULT);
        DEF(call_timeout_ms, GRPC_SERVER_CALL_TIMEOUT_MS_DEFAULT);
        DEF(preface_timeout_ms, GRPC_SERVER_PREFACE_TIMEOUT_MS_DEFAULT);
        DEF(max_queued, GRPC_SERVER_MAX_QUEUED_DEFAULT);
        DEF(max_queued_total, GRPC_SERVER_MAX_QUEUED_TOTAL_DEFAULT);
        DEF(send_timeout_ms, GRPC_SERVER_SEND_TIMEOUT_MS_DEFAULT);
#undef DEF
        s->methods = methods;
        s->n_methods = n_methods;
        for (size_t i = 0; i < ELEMENTSOF(s->listeners); i++) s->listeners[i].fd = -1;
        if (nghttp2_session_callbacks_new(&s->callbacks) != 0) {
                free(s);
                return errorf(ret_error, -ENOMEM, "out of memory");
        }
        nghttp2_session_callbacks_set_on_begin_headers_callback(s->callbacks, on_begin_headers);
        nghttp2_session_callbacks_set_on_header_callback(s->callbacks, on_header);
        nghttp2_session_callbacks_set_on_frame_recv_callback(s->callbacks, on_frame_recv);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(s->callbacks, on_data_chunk_recv);
        nghttp2_session_callbacks_set_on_stream_close_callback(s->callbacks, on_stream_close);
        *ret = s;
        return 0;
}

void grpc_server_free(struct grpc_server *s) {
        if (!s) return;
        for (size_t i = 0; i < s->n_conns; i++) conn_free(s->conns[i]);
        free(s->conns);
        for (int i = 0; i < GRPC_SERVER_MAX_LISTENERS; i++) grpc_server_unlisten(s, i);
        if (s->callbacks) nghttp2_session_callbacks_del(s->callbacks);
        free(s);
}

/* Splits a host path into its folder (malloc'd) and last name. Returns 0 or -EINVAL. */
static int split_path(const char *path, char **ret_dir, const char **ret_name) {
        const char *slash = strrchr(path, '/');
        if (!slash || !slash[1] || strlen(slash + 1) > 100) return -EINVAL;
        *ret_dir = slash == path ? xstrdup("/") : xstrndup(path, (size_t)(slash - path));
        *ret_name = slash + 1;
        return 0;
}

/* Binds socket fd to name inside the folder dfd: through /proc/self/fd (any root length), else
 * root and path joined. Returns 0 or -errno. */
static int bind_at(int fd, int dfd, const char *name, const char *host_path) {
        struct sockaddr_un a = { .sun_family = AF_UNIX };
        int n = snprintf(a.sun_path, sizeof a.sun_path, "/proc/self/fd/%d/%s", dfd, name);
        if (n > 0 && (size_t)n < sizeof a.sun_path && bind(fd, (struct sockaddr *)&a, sizeof a) == 0) return 0;
        if (n > 0 && (size_t)n < sizeof a.sun_path && errno != ENOENT && errno != ENOTDIR) return -errno;
        const char *root = hostfs_root();
        n = snprintf(a.sun_path, sizeof a.sun_path, "%s%s", streq(root, "/") ? "" : root, host_path);
        if (n < 0 || (size_t)n >= sizeof a.sun_path) return -ENAMETOOLONG;
        return bind(fd, (struct sockaddr *)&a, sizeof a) == 0 ? 0 : -errno;
}

int grpc_server_listen(struct grpc_server *s, const char *host_path, void *listener_data, char **ret_error) {
        int id = -1;
        for (int i = 0; i < GRPC_SERVER_MAX_LISTENERS; i++)
                if (s->listeners[i].fd < 0) {
                        id = i;
                        break;
                }
        if (id < 0) return errorf(ret_error, -ENOSPC, "%s: too many listeners", host_path);
        _cleanup_free_ char *dir = NULL;
        const char *name;
        if (split_path(host_path, &dir, &name) < 0)
                return errorf(ret_error, -EINVAL, "%s: not a socket path", host_path);
        _cleanup_close_ int dfd = hostfs_open(dir, O_PATH | O_DIRECTORY);
        if (dfd < 0) return errorf(ret_error, dfd, "%s: cannot open its folder: %s", host_path, strerror(-dfd));
        struct stat st;
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
                if (!S_ISSOCK(st.st_mode))
                        return errorf(ret_error, -EEXIST, "%s: exists and is not a socket; not replacing it",
                                      host_path);
                /* A socket someone answers on belongs to a running plugin; a dead one is stale. */
                _cleanup_close_ int probe = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                struct sockaddr_un a = { .sun_family = AF_UNIX };
                int n = snprintf(a.sun_path, sizeof a.sun_path, "/proc/self/fd/%d/%s", dfd, name);
                if (probe >= 0 && n > 0 && (size_t)n < sizeof a.sun_path &&
                    connect(probe, (struct sockaddr *)&a, sizeof a) == 0)
                        return errorf(ret_error, -EADDRINUSE, "%s: another process listens there", host_path);
                if (unlinkat(dfd, name, 0) < 0 && errno != ENOENT)
                        return errorf(ret_error, -errno, "%s: cannot remove the stale socket: %m", host_path);
        }
        _cleanup_close_ int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0) return errorf(ret_error, -errno, "cannot create a socket: %m");
        int r = bind_at(fd, dfd, name, host_path);
        if (r < 0) return errorf(ret_error, r, "%s: cannot bind: %s", host_path, strerror(-r));
        /* Owner only (the kubelet is root). Set after bind, not with umask: umask is the whole
         * process's, and other threads create files. Connecting needs write permission, which
         * the umask's usual 022 already withholds from others until this. */
        (void)fchmodat(dfd, name, 0600, 0);
        if (listen(fd, 64) < 0) return errorf(ret_error, -errno, "%s: cannot listen: %m", host_path);
        if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errorf(ret_error, -errno, "%s: the socket vanished after bind: %m", host_path);
        struct listener *l = &s->listeners[id];
        l->fd = fd;
        fd = -1;
        l->path = xstrdup(host_path);
        l->ino = st.st_ino;
        l->dev = st.st_dev;
        l->data = listener_data;
        return id;
}

void grpc_server_unlisten(struct grpc_server *s, int id) {
        if (id < 0 || id >= GRPC_SERVER_MAX_LISTENERS || s->listeners[id].fd < 0) return;
        struct listener *l = &s->listeners[id];
        if (grpc_server_listener_present(s, id)) {
                _cleanup_free_ char *dir = NULL;
                const char *name;
                if (split_path(l->path, &dir, &name) == 0) {
                        _cleanup_close_ int dfd = hostfs_open(dir, O_PATH | O_DIRECTORY);
                        if (dfd >= 0) (void)unlinkat(dfd, name, 0);
                }
        }
        close(l->fd);
        l->fd = -1;
        free(l->path);
        l->path = NULL;
}

bool grpc_server_listener_present(struct grpc_server *s, int id) {
        if (id < 0 || id >= GRPC_SERVER_MAX_LISTENERS || s->listeners[id].fd < 0) return false;
        struct listener *l = &s->listeners[id];
        _cleanup_free_ char *dir = NULL;
        const char *name;
        if (split_path(l->path, &dir, &name) < 0) return false;
        _cleanup_close_ int dfd = hostfs_open(dir, O_PATH | O_DIRECTORY);
        struct stat st;
        if (dfd < 0 || fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) return false;
        return S_ISSOCK(st.st_mode) && st.st_ino == l->ino && st.st_dev == l->dev;
}

int grpc_server_watch_fd(struct grpc_server *s, int fd, void (*fn)(int fd, void *userdata), void *userdata) {
        if (s->n_watched >= GRPC_SERVER_MAX_WATCHED) return -ENOSPC;
        s->watched[s->n_watched++] = (struct watched){ fd, fn, userdata };
        return 0;
}

const struct grpc_server_stats *grpc_server_stats(const struct grpc_server *s) {
        return &s->stats;
}

int grpc_server_run(struct grpc_server *s, unsigned max_wait_ms) {
        size_t nl = 0, cap = GRPC_SERVER_MAX_LISTENERS + GRPC_SERVER_MAX_WATCHED + s->n_conns;
        _cleanup_free_ struct pollfd *p = xcalloc(cap, sizeof *p);
        int lid[GRPC_SERVER_MAX_LISTENERS];
        for (int i = 0; i < GRPC_SERVER_MAX_LISTENERS; i++)
                if (s->listeners[i].fd >= 0) {
                        lid[nl] = i;
                        p[nl++] = (struct pollfd){ .fd = s->listeners[i].fd, .events = POLLIN };
                }
        size_t nw = s->n_watched;
        for (size_t i = 0; i < nw; i++) p[nl + i] = (struct pollfd){ .fd = s->watched[i].fd, .events = POLLIN };
        size_t base = nl + nw, nc = s->n_conns;
        for (size_t i = 0; i < nc; i++) {
                struct conn *k = s->conns[i];
                short ev = POLLIN;
                if (k->pending_len || nghttp2_session_want_write(k->session)) ev |= POLLOUT;
                p[base + i] = (struct pollfd){ .fd = k->fd, .events = ev };
        }
        uint64_t now = monotonic_ms(), d = next_deadline(s);
        uint64_t wait = max_wait_ms;
        if (d != UINT64_MAX) wait = d <= now ? 0 : (d - now < wait ? d - now : wait);
        int n = poll(p, base + nc, (int)wait);
        if (n < 0 && errno != EINTR) return -errno;
        if (n > 0) {
                for (size_t i = 0; i < nc; i++) {
                        struct conn *k = s->conns[i];
                        if (p[base + i].revents & (POLLIN | POLLHUP | POLLERR))
                                if (conn_receive(k) < 0) k->dead = true;
                }
                for (size_t i = 0; i < nw; i++)
                        if (p[nl + i].revents & (POLLIN | POLLHUP | POLLERR))
                                s->watched[i].fn(s->watched[i].fd, s->watched[i].userdata);
                for (size_t i = 0; i < nl; i++)
                        if ((p[i].revents & POLLIN) && s->listeners[lid[i]].fd == p[i].fd)
                                conn_accept(s, &s->listeners[lid[i]]);
        }
        enforce_deadlines(s, monotonic_ms());
        /* Write what every connection has (answers queued by handlers and watched fds above), then
         * close the dead and the finished. */
        size_t kept = 0;
        for (size_t i = 0; i < s->n_conns; i++) {
                struct conn *k = s->conns[i];
                if (!k->dead && conn_flush(k) < 0) k->dead = true;
                if (!k->dead && !nghttp2_session_want_read(k->session) && !nghttp2_session_want_write(k->session) &&
                    k->pending_len == 0)
                        k->dead = true;
                if (k->dead)
                        conn_free(k);
                else
                        s->conns[kept++] = k;
        }
        s->n_conns = kept;
        return 0;
}
