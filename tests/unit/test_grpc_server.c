/* test_grpc_server.c: the gRPC server against gpunode's client on socketpairs: statuses, streams, bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
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

static const struct grpc_method methods[] = {
        { "/t.S/Echo", false, h_echo, NULL },
        { "/t.S/Refuse", false, h_refuse, NULL },
        { "/t.S/Silent", false, h_silent, NULL },
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
        grpc_h2_stream_free(st);
        grpc_h2_free(c);
}

static void test_deadline(void **state) {
        struct grpc_server *s = server(1024, 200);
        struct client cl = { .fn = do_half };
        run_client(s, &cl);
        assert_int_equal(cl.status, GRPC_DEADLINE_EXCEEDED);
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

/* A connection with a call open is never evicted: with every one busy, a new one is refused. */
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
        pthread_t t;
        assert_int_equal(pthread_create(&t, NULL, client_main, &cl), 0);
        uint64_t end = monotonic_ms() + 5000;
        while (!held && monotonic_ms() < end) grpc_server_run(s, 10);
        assert_non_null(held);
        int p[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, p), 0);
        assert_int_equal(grpc_server_adopt(s, p[0], NULL), -EMFILE);
        close(p[1]);
        grpc_call_end(held);
        while (!atomic_load(&cl.done) && monotonic_ms() < end) grpc_server_run(s, 10);
        pthread_join(t, NULL);
        assert_int_equal(cl.status, GRPC_OK);
        grpc_server_free(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_unary),      cmocka_unit_test(test_statuses), cmocka_unit_test(test_stream),
                cmocka_unit_test(test_stream_end), cmocka_unit_test(test_deadline), cmocka_unit_test(test_bounds),
                cmocka_unit_test(test_busy_limit),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
