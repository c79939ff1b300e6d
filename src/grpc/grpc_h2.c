/* grpc_h2.c: HTTP/2 for gRPC with nghttp2 (dlopen): one connection, its streams, a poll loop bounded by a deadline. */
/*
 * Why nghttp2 and protobuf-c, and not libgrpc: measured on Debian 12 (the 2-core development
 * machine; peak RSS by bench/peakrss, median of 21 runs; bench/grpc-libs/measure.sh BUILD_DIR
 * runs it all again):
 *
 *   process                                                          peak RSS    wall
 *   baseline: a C program that starts and exits (m_base)             1348 KiB    1.0 ms
 *   dlopen libnghttp2, one client session framing a request          1676-1712   1.1 ms   +330-360 KiB
 *   libprotobuf-c, one List answer unpacked and freed                1364-1392   1.1 ms   +16-44 KiB
 *   libgrpc 1.51 (C core), one unary List on the unix socket         13172 KiB   12.8 ms  +11.8 MiB
 *   gpunode's client (tests/podres_call): no call                    1364 KiB    0.9 ms
 *     List + GetAllocatableResources against fake_kubelet.py         1792 KiB    1.9 ms   +428 KiB
 *     List of 250 one-GPU pods (22 KB)                               ~2.0 MiB    2.4 ms
 *     List of 60,000 pods (5.3 MB; libgrpc refuses it: 4 MiB default) 54 MiB     170 ms
 *
 * libgrpc maps 54 shared libraries (19 MiB of files: abseil, re2, c-ares, OpenSSL, libstdc++)
 * and starts threads of its own (6 clones for one call). Its development package pulls 41 MiB
 * (libgrpc-dev 33 MiB, libabsl-dev 5.9 MiB, libre2-dev 1.2 MiB, libc-ares-dev 0.4 MiB) beside
 * a 12 MiB runtime. libnghttp2 is 190 KB and needs only libc (curl already brings it to most
 * hosts); libnghttp2-dev is 540 KB, libprotobuf-c-dev 110 KB, protobuf-c-compiler 241 KB (with
 * libprotoc32 and libprotobuf32, 6.3 MiB, at build time only). Build: m_nghttp2.c compiles in
 * 0.06 s, m_protobufc.c with protoc-c's code 0.16 s, m_grpc.c 0.19 s; gpunode's gRPC files
 * (this one, grpc_wire.c, grpc_client.c, podresources.c, protoc-c's code) add 0.7 s on one core
 * and 27 KB of code. protobuf-c's 16-44 KiB is cheap enough that a hand-written protobuf decoder
 * would buy nothing; the price it asks is one trick (podresources_pb.c) to load it with dlopen.
 *
 * So: nghttp2 does HTTP/2 (framing, HPACK, flow control, the protocol checks), gpunode does
 * gRPC's thin part (grpc_wire.c: the 5-byte message prefix, grpc-status/grpc-message trailers,
 * grpc-timeout), protoc-c's code does the messages. Both libraries are loaded with dlopen
 * (src/basic/dl_nghttp2.h, dl_protobuf_c.h), so gpunode starts without them.
 *
 * Bounds: every wait is a poll() with what is left of the caller's deadline; a message is
 * refused as soon as its length prefix passes the limit (nothing of it is buffered), and memory
 * grows with bytes that arrived, never with what a prefix announces; headers are capped at
 * GRPC_H2_MAX_HEADER_BYTES per stream; anything nghttp2 finds broken ends the connection with a
 * sentence that says what it saw.
 *
 * The connection and its streams know no side: a server (the device plugin, later) creates its
 * session with nghttp2_session_server_new, makes a stream per request in an on_begin_headers
 * callback, reads requests with the same reader and sends answers with grpc_h2_stream_send
 * (the data source already waits for more messages, as a ListAndWatch stream needs), then
 * trailers.
 */
#include "grpc/grpc_h2.h"

#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#include "basic/dl_nghttp2.h"

struct grpc_h2 {
        int fd;
        nghttp2_session *session;
        size_t max_message;
        /* bytes nghttp2 handed out and the socket did not take yet */
        const uint8_t *pending;
        size_t pending_len;
        bool eof;    /* the peer closed its end */
        bool goaway; /* the peer sent GOAWAY: no new calls */
        uint32_t goaway_code;
        int error; /* the connection is broken: negative errno, with error_text */
        char *error_text;
        char *lib_error; /* nghttp2's own sentence for the last protocol error */
};

const char *grpc_h2_error_name(uint32_t code) {
        return nghttp2_http2_strerror(code);
}

uint64_t grpc_now_us(void) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

/* Marks the connection broken. Returns r. */
static int conn_fail(struct grpc_h2 *c, int r, char *text) {
        if (!c->error) {
                c->error = r;
                c->error_text = text;
        } else
                free(text);
        return r;
}

/* Records the first failure of a stream; later ones are consequences. */
static void stream_fail(struct grpc_h2_stream *s, int r, char *text) {
        if (s->error) {
                free(text);
                return;
        }
        s->error = r;
        s->error_text = text;
}

/* Returns the stream attached to stream_id, or NULL (a stream already detached, or one the
 * peer opened: a client has none of those). */
static struct grpc_h2_stream *stream_of(nghttp2_session *session, int32_t stream_id) {
        return nghttp2_session_get_stream_user_data(session, stream_id);
}

/* Returns true when value (len bytes) is a gRPC content type: application/grpc, alone or
 * followed by "+format" or ";parameters". */
static bool is_grpc_content_type(const uint8_t *value, size_t len) {
        static const char t[] = "application/grpc";
        size_t n = sizeof t - 1;
        if (len < n || memcmp(value, t, n) != 0) return false;
        return len == n || value[n] == '+' || value[n] == ';';
}

/* nghttp2's on_header callback: keeps the fields a gRPC call needs. Returns 0, or
 * NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE (nghttp2 then resets the stream) past the header cap. */
static int on_header(nghttp2_session *session, const nghttp2_frame *frame, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *userdata) {
        struct grpc_h2_stream *s = stream_of(session, frame->hd.stream_id);
        if (!s || frame->hd.type != NGHTTP2_HEADERS) return 0;
        s->header_bytes += namelen + valuelen + 32;
        if (s->header_bytes > GRPC_H2_MAX_HEADER_BYTES) {
                stream_fail(s, -EMSGSIZE, xasprintf("sent more than %u bytes of headers", GRPC_H2_MAX_HEADER_BYTES));
                return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
        }
#define IS(lit) (namelen == sizeof lit - 1 && memcmp(name, lit, namelen) == 0)
        if (IS(":status")) {
                int v = 0;
                for (size_t i = 0; i < valuelen && i < 3; i++) v = v * 10 + (value[i] - '0');
                s->http_status = v; /* nghttp2 checked it is three digits */
        } else if (IS("content-type")) {
                s->grpc_content = is_grpc_content_type(value, valuelen);
                free(s->content_type);
                s->content_type = grpc_message_decode((const char *)value, valuelen > 100 ? 100 : valuelen);
        } else if (IS("grpc-status")) {
                int code;
                if (grpc_parse_status((const char *)value, valuelen, &code) < 0) {
                        _cleanup_free_ char *v =
                                grpc_message_decode((const char *)value, valuelen > 40 ? 40 : valuelen);
                        stream_fail(s, -EPROTO, xasprintf("sent grpc-status \"%s\", not a number", v));
                } else {
                        s->have_status = true;
                        s->status = code;
                }
        } else if (IS("grpc-message")) {
                free(s->status_text);
                s->status_text = grpc_message_decode(
                        (const char *)value, valuelen > GRPC_H2_MAX_STATUS_TEXT ? GRPC_H2_MAX_STATUS_TEXT : valuelen);
        }
#undef IS
        return 0;
}

/* nghttp2's on_frame_recv callback: counts header blocks, notes END_STREAM and GOAWAY. Returns 0. */
static int on_frame_recv(nghttp2_session *session, const nghttp2_frame *frame, void *userdata) {
        struct grpc_h2 *c = userdata;
        if (frame->hd.type == NGHTTP2_GOAWAY) {
                c->goaway = true;
                c->goaway_code = frame->goaway.error_code;
                return 0;
        }
        if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
        struct grpc_h2_stream *s = stream_of(session, frame->hd.stream_id);
        if (!s) return 0;
        if (frame->hd.type == NGHTTP2_HEADERS) s->header_blocks++;
        if (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) s->remote_end = true;
        return 0;
}

/* Called by the stream's reader with each message. Returns the stream's callback's answer. */
static int deliver(uint8_t *msg, size_t len, void *userdata) {
        struct grpc_h2_stream *s = userdata;
        if (!s->on_message) {
                free(msg);
                return 0;
        }
        return s->on_message(msg, len, s->userdata);
}

/* nghttp2's on_data_chunk_recv callback: feeds DATA to the stream's message reader; a message
 * past the limit, bad framing or a refusal of the stream's callback resets the stream
 * (CANCEL). Returns 0. */
static int on_data_chunk_recv(nghttp2_session *session, uint8_t flags, int32_t stream_id, const uint8_t *data,
                              size_t len, void *userdata) {
        struct grpc_h2_stream *s = stream_of(session, stream_id);
        if (!s || s->error) return 0;
        char *text = NULL;
        int r = grpc_reader_feed(&s->reader, data, len, deliver, s, &text);
        if (r < 0) {
                stream_fail(s, r, text ? text : xasprintf("refused a message: %s", strerror(-r)));
                nghttp2_submit_rst_stream(session, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
        }
        return 0;
}

/* nghttp2's on_stream_close callback: marks the stream closed with its error code. Returns 0. */
static int on_stream_close(nghttp2_session *session, int32_t stream_id, uint32_t error_code, void *userdata) {
        struct grpc_h2_stream *s = stream_of(session, stream_id);
        if (!s) return 0;
        s->closed = true;
        s->close_code = error_code;
        s->id = -1;
        return 0;
}

/* nghttp2's error callback: keeps its sentence on a protocol error (garbage, a bad frame). Returns 0. */
static int on_error(nghttp2_session *session, int lib_error_code, const char *msg, size_t len, void *userdata) {
        struct grpc_h2 *c = userdata;
        free(c->lib_error);
        c->lib_error = xstrndup(msg, len > 300 ? 300 : len);
        return 0;
}

int grpc_h2_client_new(int fd, size_t max_message, struct grpc_h2 **ret, char **ret_error) {
        int r = dl_nghttp2_open(ret_error);
        if (r < 0) {
                close(fd);
                return r;
        }
        struct grpc_h2 *c = xcalloc(1, sizeof *c);
        c->fd = fd;
        c->max_message = max_message;
        nghttp2_session_callbacks *cb;
        if (nghttp2_session_callbacks_new(&cb) != 0) {
                grpc_h2_free(c);
                return errorf(ret_error, -ENOMEM, "out of memory");
        }
        nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
        nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk_recv);
        nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
        nghttp2_session_callbacks_set_error_callback2(cb, on_error);
        r = nghttp2_session_client_new(&c->session, cb, c);
        nghttp2_session_callbacks_del(cb);
        if (r != 0) {
                c->session = NULL;
                grpc_h2_free(c);
                return errorf(ret_error, -ENOMEM, "cannot start an HTTP/2 session: %s", nghttp2_strerror(r));
        }
        const nghttp2_settings_entry settings[] = {
                { NGHTTP2_SETTINGS_ENABLE_PUSH, 0 },
                { NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1u << 20 },
                { NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, GRPC_H2_MAX_HEADER_BYTES },
        };
        r = nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, settings, ELEMENTSOF(settings));
        if (r == 0) r = nghttp2_session_set_local_window_size(c->session, NGHTTP2_FLAG_NONE, 0, 1 << 20);
        if (r != 0) {
                grpc_h2_free(c);
                return errorf(ret_error, -EIO, "cannot queue HTTP/2 SETTINGS: %s", nghttp2_strerror(r));
        }
        *ret = c;
        return 0;
}

void grpc_h2_free(struct grpc_h2 *c) {
        if (!c) return;
        /* nghttp2_session_del runs no callbacks: streams still attached just stop hearing. */
        if (c->session) nghttp2_session_del(c->session);
        if (c->fd >= 0) close(c->fd);
        free(c->error_text);
        free(c->lib_error);
        free(c);
}

bool grpc_h2_usable(const struct grpc_h2 *c) {
        return c && !c->error && !c->eof && !c->goaway && nghttp2_session_want_read(c->session);
}

/* nghttp2's data source for a stream's messages: copies out what is queued. Returns the byte
 * count, with EOF set once the last message is out; NGHTTP2_ERR_DEFERRED while more is to come. */
static ssize_t read_out(nghttp2_session *session, int32_t stream_id, uint8_t *buf, size_t length, uint32_t *data_flags,
                        nghttp2_data_source *source, void *userdata) {
        struct grpc_h2_stream *s = source->ptr;
        size_t left = s->out.len - s->out_off;
        size_t k = left < length ? left : length;
        if (k) memcpy(buf, s->out.data + s->out_off, k);
        s->out_off += k;
        if (s->out_off == s->out.len) {
                buf_free(&s->out);
                s->out_off = 0;
                if (s->out_last)
                        *data_flags |= NGHTTP2_DATA_FLAG_EOF;
                else if (k == 0) {
                        s->out_deferred = true;
                        return NGHTTP2_ERR_DEFERRED;
                }
        }
        return (ssize_t)k;
}

int grpc_h2_call_start(struct grpc_h2 *c, const char *method, const char *authority, uint64_t timeout_ms,
                       grpc_message_fn fn, void *userdata, struct grpc_h2_stream **ret, char **ret_error) {
        if (!grpc_h2_usable(c)) return errorf(ret_error, -EPIPE, "the connection can carry no more calls");
        char tbuf[16];
        nghttp2_nv nv[8];
        size_t n = 0;
#define NV(k, v) nv[n++] = (nghttp2_nv){ (uint8_t *)(k), (uint8_t *)(v), strlen(k), strlen(v), NGHTTP2_NV_FLAG_NONE }
        NV(":method", "POST");
        NV(":scheme", "http");
        NV(":path", method);
        NV(":authority", authority);
        NV("content-type", "application/grpc");
        NV("te", "trailers");
        NV("user-agent", "gpunode/" GPUNODE_VERSION);
        if (timeout_ms) NV("grpc-timeout", grpc_timeout_format(timeout_ms, tbuf));
#undef NV
        struct grpc_h2_stream *s = xcalloc(1, sizeof *s);
        s->conn = c;
        s->on_message = fn;
        s->userdata = userdata;
        grpc_reader_init(&s->reader, c->max_message);
        nghttp2_data_provider dp = { .source.ptr = s, .read_callback = read_out };
        int32_t id = nghttp2_submit_request(c->session, NULL, nv, n, &dp, s);
        if (id < 0) {
                free(s);
                return errorf(ret_error, -EIO, "cannot start a call: %s", nghttp2_strerror(id));
        }
        s->id = id;
        *ret = s;
        return 0;
}

int grpc_h2_stream_send(struct grpc_h2_stream *s, const void *msg, size_t len, bool last) {
        uint8_t prefix[GRPC_PREFIX_LEN];
        if (s->out_last || s->closed || !s->conn) return -EPIPE;
        if (grpc_prefix_write(len, prefix) < 0) return -EMSGSIZE;
        buf_append(&s->out, (const char *)prefix, sizeof prefix);
        if (len) buf_append(&s->out, msg, len);
        s->out_last = last;
        if (s->out_deferred) {
                s->out_deferred = false;
                nghttp2_session_resume_data(s->conn->session, s->id);
        }
        return 0;
}

void grpc_h2_stream_free(struct grpc_h2_stream *s) {
        if (!s) return;
        struct grpc_h2 *c = s->conn;
        if (c && c->session && s->id > 0 && !s->closed) {
                if (nghttp2_session_set_stream_user_data(c->session, s->id, NULL) != 0) {
                        /* Its HEADERS are still queued: nghttp2 would hand this stream to the
                         * callbacks once they go out. The connection is not pumped again. */
                        conn_fail(c, -ECANCELED, xasprintf("a call was abandoned before it was sent"));
                } else
                        nghttp2_submit_rst_stream(c->session, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_CANCEL);
        }
        grpc_reader_done(&s->reader);
        buf_free(&s->out);
        free(s->content_type);
        free(s->status_text);
        free(s->error_text);
        free(s);
}

bool grpc_h2_stream_finished(const struct grpc_h2_stream *s) {
        return s->remote_end || s->closed;
}

/* Returns a malloc'd sentence for a protocol failure: nghttp2's own words when it gave some. */
static char *protocol_sentence(struct grpc_h2 *c, int lib_code) {
        if (c->lib_error) return xasprintf("broke HTTP/2 (%s)", c->lib_error);
        return xasprintf("broke HTTP/2 (%s)", nghttp2_strerror(lib_code));
}

/* Writes what nghttp2 has to send until it has nothing more or the socket is full. Returns 0
 * or a negative errno (the connection is then broken). */
static int flush(struct grpc_h2 *c) {
        for (;;) {
                if (c->pending_len == 0) {
                        const uint8_t *data;
                        ssize_t n = nghttp2_session_mem_send(c->session, &data);
                        if (n < 0)
                                return conn_fail(c, -EIO,
                                                 xasprintf("cannot frame HTTP/2: %s", nghttp2_strerror((int)n)));
                        if (n == 0) return 0;
                        c->pending = data;
                        c->pending_len = (size_t)n;
                }
                ssize_t w = send(c->fd, c->pending, c->pending_len, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (w < 0) {
                        if (errno == EINTR) continue;
                        if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
                        int e = errno;
                        if (e == EPIPE || e == ECONNRESET)
                                return conn_fail(c, -ECONNRESET, xasprintf("closed the connection"));
                        return conn_fail(c, -e, xasprintf("cannot send: %s", strerror(e)));
                }
                c->pending += w;
                c->pending_len -= (size_t)w;
        }
}

/* Reads what the socket holds (a few buffers at most, so a fast peer cannot starve the deadline
 * check) and hands it to nghttp2. Returns 0 or a negative errno (the connection is then broken). */
static int receive(struct grpc_h2 *c) {
        uint8_t buf[65536];
        for (int i = 0; i < 16; i++) {
                ssize_t n = recv(c->fd, buf, sizeof buf, MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR) continue;
                        if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
                        int e = errno;
                        if (e == ECONNRESET) {
                                c->eof = true;
                                return 0;
                        }
                        return conn_fail(c, -e, xasprintf("cannot receive: %s", strerror(e)));
                }
                if (n == 0) {
                        c->eof = true;
                        return 0;
                }
                ssize_t k = nghttp2_session_mem_recv(c->session, buf, (size_t)n);
                if (k < 0) return conn_fail(c, -EPROTO, protocol_sentence(c, (int)k));
        }
        return 0;
}

bool grpc_h2_alive(struct grpc_h2 *c) {
        if (!grpc_h2_usable(c)) return false;
        struct pollfd p = { .fd = c->fd, .events = POLLIN };
        if (poll(&p, 1, 0) > 0 && (p.revents & (POLLIN | POLLHUP | POLLERR))) receive(c);
        return grpc_h2_usable(c);
}

int grpc_h2_run(struct grpc_h2 *c, struct grpc_h2_stream *s, uint64_t deadline_us, char **ret_error) {
        for (;;) {
                if (c->error) break;
                int r = flush(c);
                if (r < 0) break;
                if (grpc_h2_stream_finished(s)) return 0;
                if (c->eof) {
                        conn_fail(c, -ECONNRESET,
                                  c->lib_error ? protocol_sentence(c, 0)
                                  : s->header_blocks == 0
                                          ? xasprintf("closed the connection without answering")
                                          : xasprintf("closed the connection in the middle of its answer"));
                        break;
                }
                if (!nghttp2_session_want_read(c->session) && !nghttp2_session_want_write(c->session) &&
                    c->pending_len == 0) {
                        /* nghttp2 ended the session: a protocol error it answered with GOAWAY. */
                        conn_fail(c, c->goaway ? -ECONNRESET : -EPROTO,
                                  c->lib_error ? protocol_sentence(c, 0)
                                  : c->goaway  ? xasprintf("ended the connection (GOAWAY %s)",
                                                           nghttp2_http2_strerror(c->goaway_code))
                                               : xasprintf("ended the HTTP/2 session"));
                        break;
                }
                uint64_t now = grpc_now_us();
                if (now >= deadline_us)
                        return errorf(ret_error, -ETIMEDOUT, "%s",
                                      s->header_blocks == 0 ? "sent no answer" : "did not finish its answer");
                uint64_t wait_ms = (deadline_us - now + 999) / 1000;
                struct pollfd p = { .fd = c->fd, .events = POLLIN | (c->pending_len ? POLLOUT : 0) };
                int k = poll(&p, 1, wait_ms > 60000 ? 60000 : (int)wait_ms);
                if (k < 0) {
                        if (errno == EINTR) continue;
                        int e = errno;
                        return errorf(ret_error, -e, "cannot poll: %s", strerror(e));
                }
                if (k == 0) continue;
                if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
                        r = receive(c);
                        if (r < 0) break;
                }
        }
        if (grpc_h2_stream_finished(s)) return 0; /* it ended before the connection did */
        return errorf(ret_error, c->error, "%s", c->error_text);
}
