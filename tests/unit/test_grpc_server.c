/* test_grpc_server.c: the gRPC server against gpunode's client on socketpairs: statuses, streams, bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <poll.h>
#include <sys/socket.h>

#include "basic/util.h"
#include "grpc/grpc_client.h"
#include "grpc/grpc_h2.h"
#include "grpc/grpc_server.h"

static struct grpc_call *held; /* the open streaming call */
static int closed_calls;

static void h_echo(struct grpc_call *c, const uint8_t *req, size_t len, void *md, void *ld) {
        assert_ptr_equal(ld, (void *)0x1234);
        grpc_call_reply(c, req, len);
}

static void h_refuse(struct grpc_call *c, const uint8_t *req, size_t len, void *md, void *ld) {
        grpc_call_fail(c, GRPC_INVALID_ARGUMENT, "no such device \"%s\"", "GPU-x");
}

static void h_silent(struct grpc_call *c, const uint8_t *req, size_t len, void *md, void *ld) {
        /* answers nothing: the server answers INTERNAL */
}

static void on_closed(struct grpc_call *c, void *userdata) {
        closed_calls++;
        if (held == c) held = NULL;
}

static void h_watch(struct grpc_call *c, const uint8_t *req, size_t len, void *md, void *ld) {
        held = c;
        grpc_call_on_close(c, on_closed, NULL);
        grpc_call_send(c, "one", 3);
        grpc_call_send(c, "two", 3);
}

/* Holds each call (up to 16) without sending: the test sends on them. */
static struct grpc_call *holds[16];
static size_t n_holds;
static void on_hold_closed(struct grpc_call *c, void *userdata) {
        closed_calls++;
        for (size_t i = 0; i < n_holds; i++)
                if (holds[i] == c) holds[i] = NULL;
}
static void h_hold(struct grpc_call *c, const uint8_t *req, size_t len, void *md, void *ld) {
        grpc_call_on_close(c, on_hold_closed, NULL);
        if (n_holds < ELEMENTSOF(holds)) holds[n_holds++] = c;
}

static const struct grpc_method methods[] = {
        { "/t.S/Hold", true, h_hold, NULL },      { "/t.S/Echo", false, h_echo, NULL },
        { "/t.S/Refuse", false, h_refuse, NULL }, { "/t.S/Silent", false, h_silent, NULL },
        { "/t.S/Watch", true, h_watch, NULL },
};

/* A client's work, run in a thread while the test serves. */
struct client {
        int fd;
        atomic_bool done;
        void (*fn)(struct client *);
        int r, status;
        char *error;
        uint8_t *msg;
        size_t len;
        unsigned stream_msgs;
        char stream_text[64];
        bool cancel_after_two;
};

static void *client_main(void *arg) {
        struct client *cl = arg;
        cl->fn(cl);
        atomic_store(&cl->done, true);
        return NULL;
}

/* Runs fn on a client connected to server s through a socketpair, serving until it is done. */
static void run_client(struct grpc_server *s, struct client *cl) {
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
        assert_int_equal(grpc_server_adopt(s, sv[0], (void *)0x1234), 0);
        cl->fd = sv[1];
        atomic_init(&cl->done, false);
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, client_main, cl), 0);
        uint64_t end = monotonic_ms() + 10000;
        while (!atomic_load(&cl->done) && monotonic_ms() < end) grpc_server_run(s, 10);
        pthread_join(t, NULL);
        for (int i = 0; i < 5; i++) grpc_server_run(s, 5);
}

/* One unary call with req (len bytes) to method. */
static const char *unary_method;
static const char *unary_req;
static size_t unary_len;
static void do_unary(struct client *cl) {
        struct grpc_h2 *c = NULL;
        assert_int_equal(grpc_h2_client_new(cl->fd, 1 << 20, &c, NULL), 0);
        cl->r = grpc_call_unary(c, unary_method, unary_req, unary_len, 2000, grpc_now_us() + 3000000, &cl->msg,
                                &cl->len, &cl->status, &cl->error);
        grpc_h2_free(c);
}

static int on_stream_msg(uint8_t *msg, size_t len, void *userdata) {
        struct client *cl = userdata;
        size_t k = strlen(cl->stream_text);
        snprintf(cl->stream_text + k, sizeof cl->stream_text - k, "%.*s,", (int)len, (const char *)msg);
        cl->stream_msgs++;
        free(msg);
        return 0;
}

static void do_stream(struct client *cl) {
        struct grpc_h2 *c = NULL;
        struct grpc_h2_stream *st = NULL;
        assert_int_equal(grpc_h2_client_new(cl->fd, 1 << 20, &c, NULL), 0);
        assert_int_equal(grpc_h2_call_start(c, "/t.S/Watch", "localhost", 0, on_stream_msg, cl, &st, NULL), 0);
        assert_int_equal(grpc_h2_stream_send(st, "", 0, true), 0);
        uint64_t end = grpc_now_us() + 3000000;
        while (!grpc_h2_stream_finished(st) && grpc_now_us() < end) {
                char *e = NULL;
                grpc_h2_run(c, st, grpc_now_us() + 50000, &e);
                free(e);
                if (cl->cancel_after_two && cl->stream_msgs >= 2) break;
        }
        cl->status = st->have_status ? st->status : -1;
        grpc_h2_stream_free(st); /* an open one is reset with CANCEL; closing the connection ends it too */
        grpc_h2_free(c);
}

static struct grpc_server *server(unsigned max_message, unsigned timeout_ms) {
        struct grpc_server_limits l = { .max_message = max_message,
                                        .call_timeout_ms = timeout_ms,
                                        .preface_timeout_ms = 300,
                                        .max_connections = 4 };
        struct grpc_server *s = NULL;
        assert_int_equal(grpc_server_new(&l, methods, ELEMENTSOF(methods), &s, NULL), 0);
        return s;
}

static void test_unary(void **state) {
        struct grpc_server *s = server(1024, 2000);
        struct client cl = { .fn = do_unary };
        unary_method = "/t.S/Echo", unary_req = "hello", unary_len = 5;
        run_client(s, &cl);
        assert_int_equal(cl.r, 0);
        assert_int_equal(cl.len, 5);
        assert_memory_equal(cl.msg, "hello", 5);
        free(cl.msg);
        /* an empty message is a message */
        cl = (struct client){ .fn = do_unary };
        unary_len = 0;
        run_client(s, &cl);
        assert_int_equal(cl.r, 0);
        assert_int_equal(cl.len, 0);
        free(cl.msg);
        assert_int_equal(grpc_server_stats(s)->calls, 2);
        grpc_server_free(s);
}

static void test_statuses(void **state) {
        struct grpc_server *s = server(1024, 2000);
        static const struct {
                const char *method;
                size_t len;
                int status;
                const char *text;
        } cases[] = {
                { "/t.S/Nope", 1, GRPC_UNIMPLEMENTED, "unknown method /t.S/Nope" },
                { "/t.S/Refuse", 1, GRPC_INVALID_ARGUMENT, "no such device \"GPU-x\"" },
                { "/t.S/Silent", 1, GRPC_INTERNAL, "gave no answer" },
                { "/t.S/Echo", 2000, GRPC_RESOURCE_EXHAUSTED, "2000" },
        };
        static char big[2000];
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct client cl = { .fn = do_unary };
                unary_method = cases[i].method, unary_req = big, unary_len = cases[i].len;
                run_client(s, &cl);
                if (cl.status != cases[i].status) fail_msg("case %zu: %d %s", i, cl.status, cl.error);
                assert_int_equal(cl.status, cases[i].status);
                assert_true(cl.r < 0);
                if (!strstr(cl.error, cases[i].text)) fail_msg("case %zu: '%s' lacks '%s'", i, cl.error, cases[i].text);
                free(cl.error);
                free(cl.msg);
        }
        grpc_server_free(s);
}

static void test_stream(void **state) {
        struct grpc_server *s = server(1024, 2000);
        struct client cl = { .fn = do_stream, .cancel_after_two = true };
        closed_calls = 0;
        run_client(s, &cl);
        assert_int_equal(cl.stream_msgs, 2);
        assert_string_equal(cl.stream_text, "one,two,");
        assert_int_equal(closed_calls, 1); /* the client's CANCEL closed it on the server */
        assert_null(held);
        grpc_server_free(s);
}

/* A stream ended by the server with OK after a third message sent from outside a handler. */
static void test_stream_end(void **state) {
        struct grpc_server *s = server(1024, 2000);
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
        assert_int_equal(grpc_server_adopt(s, sv[0], NULL), 0);
        struct client cl = { .fn = do_stream, .fd = sv[1] };
        atomic_init(&cl.done, false);
        pthread_t t;
        held = NULL;
        closed_calls = 0;
        assert_int_equal(pthread_create(&t, NULL, client_main, &cl), 0);
        uint64_t end = monotonic_ms() + 5000;
        bool ended = false;
        while (!atomic_load(&cl.done) && monotonic_ms() < end) {
                grpc_server_run(s, 10);
                if (held && !ended) {
                        assert_int_equal(grpc_call_send(held, "three", 5), 0);
                        assert_int_equal(grpc_call_end(held), 0);
                        assert_int_equal(grpc_call_send(held, "four", 4), -EPIPE);
                        ended = true;
                }
        }
        pthread_join(t, NULL);
        assert_string_equal(cl.stream_text, "one,two,three,");
        assert_int_equal(cl.status, GRPC_OK);
        grpc_server_free(s);
}

/* Headers without the request's end: DEADLINE_EXCEEDED at the call timeout. */
static void do_half(struct client *cl) {
        struct grpc_h2 *c = NULL;
        struct grpc_h2_stream *st = NULL;
        assert_int_equal(grpc_h2_client_new(cl->fd, 1 << 20, &c, NULL), 0);
        assert_int_equal(grpc_h2_call_start(c, "/t.S/Echo", "localhost", 0, NULL, NULL, &st, NULL), 0);
        uint64_t t0 = monotonic_ms();
        char *e = NULL;
        grpc_h2_run(c, st, grpc_now_us() + 3000000, &e);
        free(e);
        cl->r = (int)(monotonic_ms() - t0);
        cl->status = st->have_status ? st->status : -1;
        /* The server ended the call while the client's side was open: it resets the stream
         * (NO_ERROR) after the trailers, so the stream gives its slot back. */
        for (int i = 0; i < 100 && !st->closed; i++) {
                poll(NULL, 0, 5);
                (void)grpc_h2_alive(c);
        }
        cl->stream_msgs = st->closed && st->close_code == 0;
        grpc_h2_stream_free(st);
        grpc_h2_free(c);
}

static void test_deadline(void **state) {
        struct grpc_server *s = server(1024, 200);
        struct client cl = { .fn = do_half };
        run_client(s, &cl);
        assert_int_equal(cl.status, GRPC_DEADLINE_EXCEEDED);
        assert_int_equal(cl.stream_msgs, 1); /* reset with NO_ERROR after the trailers */
        assert_true(cl.r >= 150 && cl.r < 2000);
        assert_int_equal(grpc_server_stats(s)->timeouts, 1);
        grpc_server_free(s);
}

/* A connection that never speaks is closed at the preface timeout; garbage closes it at once;
 * connections past the limit are refused. */
static void test_bounds(void **state) {
        struct grpc_server *s = server(1024, 2000);
        int a[2], b[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, a), 0);
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, b), 0);
        assert_int_equal(grpc_server_adopt(s, a[0], NULL), 0);
        assert_int_equal(grpc_server_adopt(s, b[0], NULL), 0);
        assert_int_equal(write(b[1], "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27), 27);
        for (int i = 0; i < 5; i++) grpc_server_run(s, 10);
        assert_int_equal(grpc_server_connections(s), 1); /* the garbage one is gone */
        uint64_t end = monotonic_ms() + 2000;
        while (grpc_server_connections(s) && monotonic_ms() < end) grpc_server_run(s, 50);
        assert_int_equal(grpc_server_connections(s), 0); /* the silent one too, at 300 ms */
        close(a[1]);
        close(b[1]);
        /* past the limit, the oldest idle connection makes room */
        int fds[6];
        for (int i = 0; i < 6; i++) {
                int p[2];
                assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p), 0);
                assert_int_equal(grpc_server_adopt(s, p[0], NULL), 0);
                fds[i] = p[1];
        }
        assert_int_equal(grpc_server_connections(s), 4);
        assert_int_equal(grpc_server_stats(s)->refused_connections, 2);
        char byte;
        assert_int_equal(read(fds[0], &byte, 1), 0); /* the oldest was closed, unanswered */
        for (int i = 0; i < 6; i++) close(fds[i]);
        for (int i = 0; i < 3; i++) grpc_server_run(s, 10);
        assert_int_equal(grpc_server_connections(s), 0);
        grpc_server_free(s);
}

/* Connections full and every one busy: a new connection still gets in (a restarted kubelet
 * must), and the one idle longest goes, its call closed. */
static void test_busy_limit(void **state) {
        struct grpc_server_limits l = { .max_connections = 1 };
        struct grpc_server *s = NULL;
        assert_int_equal(grpc_server_new(&l, methods, ELEMENTSOF(methods), &s, NULL), 0);
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
        assert_int_equal(grpc_server_adopt(s, sv[0], NULL), 0);
        struct client cl = { .fn = do_stream, .fd = sv[1] };
        atomic_init(&cl.done, false);
        held = NULL;
        closed_calls = 0;
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, client_main, &cl), 0);
        uint64_t end = monotonic_ms() + 5000;
        while (!held && monotonic_ms() < end) grpc_server_run(s, 10);
        assert_non_null(held);
        int p[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p), 0);
        assert_int_equal(grpc_server_adopt(s, p[0], NULL), 0);
        assert_int_equal(grpc_server_connections(s), 1);
        assert_null(held); /* the busy one was closed, its call's close callback run */
        assert_int_equal(closed_calls, 1);
        while (!atomic_load(&cl.done) && monotonic_ms() < end) grpc_server_run(s, 10);
        pthread_join(t, NULL);
        assert_true(atomic_load(&cl.done));
        close(p[1]);
        grpc_server_free(s);
}

/* A client on fd that opens n calls to method and pumps only when told (it never reads on its own). */
struct lazy {
        struct grpc_h2 *c;
        struct grpc_h2_stream *st[16];
        unsigned msgs, v39; /* messages, and those that were "v39" */
};
static int on_lazy_msg(uint8_t *msg, size_t len, void *userdata) {
        struct lazy *z = userdata;
        z->msgs++;
        z->v39 += len >= 3 && memcmp(msg, "v39", 3) == 0;
        free(msg);
        return 0;
}
static void lazy_open(struct grpc_server *s, struct lazy *z, const char *method, size_t n, bool end) {
        int sv[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
        assert_int_equal(grpc_server_adopt(s, sv[0], NULL), 0);
        assert_int_equal(grpc_h2_client_new(sv[1], 4 << 20, &z->c, NULL), 0);
        for (size_t i = 0; i < n; i++) {
                assert_int_equal(grpc_h2_call_start(z->c, method, "localhost", 0, on_lazy_msg, z, &z->st[i], NULL), 0);
                if (end) assert_int_equal(grpc_h2_stream_send(z->st[i], "", 0, true), 0);
        }
}
/* Moves bytes both ways for about ms milliseconds. */
static void pump(struct grpc_server *s, struct lazy *z, int ms) {
        uint64_t end = monotonic_ms() + (uint64_t)ms;
        do {
                struct grpc_h2_stream *open = NULL;
                for (size_t i = 0; i < ELEMENTSOF(z->st); i++)
                        if (z->st[i] && !grpc_h2_stream_finished(z->st[i])) open = z->st[i];
                char *e = NULL;
                if (open)
                        grpc_h2_run(z->c, open, grpc_now_us() + 2000, &e);
                else
                        (void)grpc_h2_alive(z->c);
                free(e);
                grpc_server_run(s, 2);
        } while (monotonic_ms() < end);
}
static void lazy_close(struct lazy *z) {
        for (size_t i = 0; i < ELEMENTSOF(z->st); i++) grpc_h2_stream_free(z->st[i]);
        grpc_h2_free(z->c);
}

/* Calls the server answered at once while the client keeps sending: each is reset (NO_ERROR)
 * after its trailers, so more of them than max_streams fit one after another. */
static void test_answered_early(void **state) {
        struct grpc_server_limits l = { .max_streams = 4, .max_connections = 2 };
        struct grpc_server *s = NULL;
        assert_int_equal(grpc_server_new(&l, methods, ELEMENTSOF(methods), &s, NULL), 0);
        struct lazy z = { 0 };
        /* headers only: the client's side stays open; 4 fill the connection's max_streams */
        lazy_open(s, &z, "/t.S/Nope", 4, false);
        pump(s, &z, 100);
        /* 4 more on the same connection: they fit only if the first 4 gave their slots back */
        for (size_t i = 4; i < 8; i++)
                assert_int_equal(grpc_h2_call_start(z.c, "/t.S/Nope", "localhost", 0, NULL, NULL, &z.st[i], NULL), 0);
        pump(s, &z, 100);
        for (size_t i = 0; i < 8; i++) {
                if (!z.st[i]->have_status)
                        fail_msg("stream %zu: no status; closed %d code %u err %s", i, z.st[i]->closed,
                                 z.st[i]->close_code, z.st[i]->error_text ? z.st[i]->error_text : "");
                assert_int_equal(z.st[i]->status, GRPC_UNIMPLEMENTED);
                assert_true(z.st[i]->closed);
                assert_int_equal(z.st[i]->close_code, 0); /* NO_ERROR, not REFUSED_STREAM */
        }
        lazy_close(&z);
        grpc_server_free(s);
}

/* A watcher that does not read: only the newest message waits (coalesced), a message shared by
 * many calls is counted once, and past send_timeout_ms the call is reset. */
static void test_unread_stream(void **state) {
        struct grpc_server_limits l = { .max_queued = 2 << 20, .max_queued_total = 3 << 20, .send_timeout_ms = 1000 };
        struct grpc_server *s = NULL;
        assert_int_equal(grpc_server_new(&l, methods, ELEMENTSOF(methods), &s, NULL), 0);
        struct lazy z = { 0 };
        n_holds = 0;
        closed_calls = 0;
        lazy_open(s, &z, "/t.S/Hold", 8, true);
        pump(s, &z, 100);
        assert_int_equal(n_holds, 8);
        /* The peer's window and the socket take the first ~1 MiB; then bytes queue. */
        static char big[256 << 10];
        for (int v = 0; v < 40; v++) {
                snprintf(big, sizeof big, "v%02d", v);
                struct grpc_msg *m = grpc_msg_new(big, sizeof big);
                for (size_t i = 0; i < n_holds; i++) {
                        int r = grpc_call_send_latest(holds[i], m);
                        if (r)
                                fail_msg("v%d call %zu: %d, %zu queued", v, i, r,
                                         (size_t)grpc_server_stats(s)->queued_bytes);
                }
                grpc_msg_unref(m);
                grpc_server_run(s, 0);
        }
        /* 8 calls x 40 x 256 KiB sent; at most 2 distinct messages wait per call, shared */
        assert_true(grpc_server_stats(s)->queued_bytes <= 3 * (sizeof big + 5));
        /* copying sends past max_queued reset the call */
        int sent = 0, r;
        while ((r = grpc_call_send(holds[0], big, sizeof big)) == 0) sent++;
        assert_int_equal(r, -ENOBUFS);
        assert_true(sent >= 5 && sent <= 8); /* 2 MiB: what waits (< 512 KiB) and 6-8 more */
        assert_int_equal(grpc_call_send(holds[0], "x", 1), -EPIPE);
        assert_int_equal(grpc_server_stats(s)->reset_calls, 1);
        /* a server-wide bound (3 MiB): distinct messages past it are refused, that call reset */
        static char mib[1 << 20];
        struct grpc_msg *a = grpc_msg_new(mib, sizeof mib), *b = grpc_msg_new(mib, sizeof mib);
        struct grpc_msg *c = grpc_msg_new(mib, sizeof mib);
        assert_int_equal(grpc_call_send_latest(holds[1], a), 0);
        assert_int_equal(grpc_call_send_latest(holds[2], b), 0);
        assert_int_equal(grpc_call_send_latest(holds[3], c), -ENOBUFS);
        assert_true(grpc_server_stats(s)->queued_bytes <= l.max_queued_total);
        assert_int_equal(grpc_server_stats(s)->reset_calls, 2);
        grpc_msg_unref(c);
        /* reading now: the newest message (v39) reaches the 4 untouched streams (holds[4..7]) and
         * the first ones' messages (at most 2 a stream: the one half sent, the newest) */
        pump(s, &z, 300);
        assert_true(z.v39 >= 4 && z.v39 <= 7);
        assert_true(z.msgs <= 8 * 3);
        assert_int_equal(closed_calls, 2); /* holds[0] and holds[3]; the others read in time */
        /* a reader that stops for good: 6 calls share 1 MiB, more than the peer's window and the
         * socket take */
        closed_calls = 0;
        for (size_t i = 0; i < n_holds; i++)
                if (holds[i]) assert_int_equal(grpc_call_send_latest(holds[i], a), 0);
        grpc_msg_unref(a);
        grpc_msg_unref(b);
        uint64_t t0 = monotonic_ms();
        while (closed_calls < 6 && monotonic_ms() - t0 < 4000) grpc_server_run(s, 50);
        uint64_t took = monotonic_ms() - t0;
        assert_int_equal(closed_calls, 6);
        /* its socket full for send_timeout_ms too: the connection itself is closed */
        assert_int_equal(grpc_server_connections(s), 0);
        if (!(took >= 900 && took < 3000)) fail_msg("took %llu ms, %d closed", (unsigned long long)took, closed_calls);
        assert_int_equal(grpc_server_stats(s)->queued_bytes, 0);
        lazy_close(&z);
        grpc_server_free(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_unary),         cmocka_unit_test(test_statuses),
                cmocka_unit_test(test_stream),        cmocka_unit_test(test_stream_end),
                cmocka_unit_test(test_deadline),      cmocka_unit_test(test_bounds),
                cmocka_unit_test(test_busy_limit),    cmocka_unit_test(test_answered_early),
                cmocka_unit_test(test_unread_stream),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
