/* test_http_server.c: cmocka tests for the exporter's HTTP request parser (real client request lines, malformed ones,
 * limits) and for the server's connection limits (idle deadlines, the per-address share). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "basic/http_server.h"
#include "basic/util.h"

/* Parses s (NUL-terminated) into *req. Returns http_parse_request's result. */
static int parse(const char *s, struct http_request *req) {
        memset(req, 0, sizeof *req);
        return http_parse_request(s, strlen(s), req);
}

/* Asserts that the request's path equals p. */
static void assert_path(const struct http_request *req, const char *p) {
        assert_int_equal(req->path_len, strlen(p));
        assert_memory_equal(req->path, p, req->path_len);
}

static void test_curl(void **state) {
        const char *s = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9400\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n";
        struct http_request req;
        assert_int_equal(parse(s, &req), (int)strlen(s));
        assert_int_equal(req.method, HTTP_GET);
        assert_path(&req, "/metrics");
        assert_int_equal(req.version_minor, 1);
        assert_true(req.keep_alive);
        assert_false(req.accept_gzip);
        assert_false(req.has_body);
        assert_int_equal(req.head_len, strlen(s));
}

static void test_prometheus(void **state) {
        /* Prometheus 2.42's scrape request (Go net/http). */
        const char *s = "GET /metrics HTTP/1.1\r\nHost: 10.0.0.5:9400\r\nUser-Agent: Prometheus/2.42.0\r\n"
                        "Accept: application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,"
                        "text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\nAccept-Encoding: gzip\r\n"
                        "X-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\n";
        struct http_request req;
        assert_int_equal(parse(s, &req), (int)strlen(s));
        assert_true(req.accept_gzip);
        assert_true(req.keep_alive);
        assert_path(&req, "/metrics");
}

static void test_wrk_pipelined(void **state) {
        const char *one = "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9400\r\n\r\n";
        char two[256];
        snprintf(two, sizeof two, "%s%s", one, one);
        struct http_request req;
        int r = parse(two, &req);
        assert_int_equal(r, (int)strlen(one));
        r = http_parse_request(two + r, strlen(two) - (size_t)r, &req);
        assert_int_equal(r, (int)strlen(one));
        assert_int_equal(req.method, HTTP_GET);
}

static void test_http10_and_connection(void **state) {
        struct http_request req;
        assert_true(parse("GET / HTTP/1.0\r\n\r\n", &req) > 0);
        assert_int_equal(req.version_minor, 0);
        assert_false(req.keep_alive);
        assert_true(parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", &req) > 0);
        assert_true(req.keep_alive);
        assert_true(parse("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", &req) > 0);
        assert_false(req.keep_alive);
        assert_true(parse("GET / HTTP/1.1\r\nHost: x\r\nConnection: TE, close\r\n\r\n", &req) > 0);
        assert_false(req.keep_alive);
        /* Bare LF line ends (netcat, hand-typed requests). */
        assert_true(parse("HEAD /health HTTP/1.1\nHost: x\n\n", &req) > 0);
        assert_int_equal(req.method, HTTP_HEAD);
        assert_path(&req, "/health");
}

static void test_targets(void **state) {
        struct http_request req;
        assert_true(parse("GET /metrics?x=1&y=2 HTTP/1.1\r\nHost: x\r\n\r\n", &req) > 0);
        assert_path(&req, "/metrics");
        assert_true(parse("GET http://node:9400/metrics HTTP/1.1\r\nHost: node\r\n\r\n", &req) > 0);
        assert_path(&req, "/metrics");
        assert_true(parse("GET http://node:9400 HTTP/1.1\r\nHost: node\r\n\r\n", &req) > 0);
        assert_path(&req, "/");
        assert_true(parse("OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", &req) > 0);
        assert_int_equal(req.method, HTTP_OTHER);
        assert_true(parse("POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello", &req) > 0);
        assert_int_equal(req.method, HTTP_OTHER);
        assert_true(req.has_body);
        assert_true(parse("get / HTTP/1.1\r\nHost: x\r\n\r\n", &req) > 0);
        assert_int_equal(req.method, HTTP_OTHER); /* methods are case-sensitive */
        /* Empty lines before the request line are ignored. */
        assert_true(parse("\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n", &req) > 0);
        assert_int_equal(req.method, HTTP_GET);
}

static void test_accept_encoding(void **state) {
        static const struct {
                const char *v;
                bool gzip;
        } cases[] = {
                { "gzip", true }, { "GZIP", true }, { "deflate, gzip;q=1.0, *;q=0.5", true }, { "gzip;q=0", false },
                { "gzip;q=0.000", false }, { "gzip;q=0.001", true }, { "gzip;q=0, identity", false }, { "*", true },
                { "identity", false }, { "", false }, { "x-gzip", false }, { "br, gzip ; q=0.8", true }, { "gzipx", false },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                if (http_accepts_gzip(cases[i].v, strlen(cases[i].v)) != cases[i].gzip) fail_msg("Accept-Encoding: %s", cases[i].v);
        }
        struct http_request req;
        assert_true(parse("GET / HTTP/1.1\r\nHost: x\r\naccept-encoding:  gzip, deflate  \r\n\r\n", &req) > 0);
        assert_true(req.accept_gzip);
}

static void test_incomplete(void **state) {
        struct http_request req;
        assert_int_equal(parse("", &req), 0);
        assert_int_equal(parse("GE", &req), 0);
        assert_int_equal(parse("GET /metrics HTTP/1.1\r\n", &req), 0);
        assert_int_equal(parse("GET /metrics HTTP/1.1\r\nHost: x\r\n", &req), 0);
        assert_int_equal(parse("GET /metrics HTTP/1.1\r\nHost: x\r\n\r", &req), 0);
}

static void test_malformed(void **state) {
        static const char *const bad[] = {
                "GET\r\n\r\n",
                "GET /\r\n\r\n",                              /* HTTP/0.9 */
                "GET / HTTP/1.1 extra\r\nHost: x\r\n\r\n",
                "GET  / HTTP/1.1\r\nHost: x\r\n\r\n",         /* two spaces */
                "GET metrics HTTP/1.1\r\nHost: x\r\n\r\n",    /* not origin-form */
                "GET / HTTP/1.1\r\nHost x\r\n\r\n",           /* no colon */
                "GET / HTTP/1.1\r\nHost : x\r\n\r\n",         /* space before colon */
                "GET / HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n", /* obs-fold */
                "GET / HTTP/1.1\r\n\r\n",                     /* HTTP/1.1 without Host */
                "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
                "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
                "GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
                "GET / HTTP/1.1\r\nHost: x\r\nX: a\x01b\r\n\r\n",
                "GET / HTTP/x.y\r\nHost: x\r\n\r\n",
                "GET /\x7f HTTP/1.1\r\nHost: x\r\n\r\n",
                "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", /* a TLS ClientHello, refused before it ends */
                "\x80\x00garbage",
                "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",    /* a method token too long to be one */
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                struct http_request req;
                int r = parse(bad[i], &req);
                if (r != -EBADMSG) fail_msg("case %zu: %d, not -EBADMSG", i, r);
        }
        struct http_request req;
        assert_int_equal(parse("GET / HTTP/2.0\r\nHost: x\r\n\r\n", &req), -EPROTONOSUPPORT);
        assert_int_equal(parse("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", &req), -EPROTONOSUPPORT);
        assert_int_equal(parse("GET / HTTP/1.2\r\nHost: x\r\n\r\n", &req), -EPROTONOSUPPORT);
}

static void test_limits(void **state) {
        struct http_request req;
        /* A head just under the cap is parsed; one past it is -E2BIG, complete or not. */
        struct buf b = { 0 };
        buf_puts(&b, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: ");
        while (b.len < HTTP_MAX_HEAD - 4) buf_puts(&b, "a");
        buf_puts(&b, "\r\n\r\n");
        assert_int_equal(b.len, HTTP_MAX_HEAD);
        assert_int_equal(http_parse_request(b.data, b.len, &req), (int)HTTP_MAX_HEAD);
        b.len = 0;
        buf_puts(&b, "GET / HTTP/1.1\r\nHost: x\r\nX-Big: ");
        while (b.len < HTTP_MAX_HEAD) buf_puts(&b, "a");
        assert_int_equal(http_parse_request(b.data, b.len, &req), -E2BIG);
        buf_puts(&b, "\r\n\r\n");
        assert_int_equal(http_parse_request(b.data, b.len, &req), -E2BIG);
        /* 1 MB of header, as a hostile client sends it. */
        while (b.len < (1u << 20)) buf_puts(&b, "aaaaaaaaaaaaaaaa");
        assert_int_equal(http_parse_request(b.data, b.len, &req), -E2BIG);
        /* Too many header fields. */
        b.len = 0;
        buf_puts(&b, "GET / HTTP/1.1\r\nHost: x\r\n");
        for (unsigned i = 0; i < HTTP_MAX_HEADERS; i++) buf_printf(&b, "X-%u: y\r\n", i);
        buf_puts(&b, "\r\n");
        assert_int_equal(http_parse_request(b.data, b.len, &req), -E2BIG);
        /* A request line that never ends. */
        b.len = 0;
        buf_puts(&b, "GET /");
        while (b.len < HTTP_MAX_HEAD + 10) buf_puts(&b, "a");
        assert_int_equal(http_parse_request(b.data, b.len, &req), -E2BIG);
        /* Empty lines alone, forever. */
        b.len = 0;
        while (b.len < HTTP_MAX_HEAD + 10) buf_puts(&b, "\r\n");
        assert_int_equal(http_parse_request(b.data, b.len, &req), -E2BIG);
        buf_free(&b);
}

static void test_no_overread(void **state) {
        /* Every prefix of a valid request parses as incomplete, reading only its own bytes (ASan checks). */
        const char *s = "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip;q=0.5\r\nConnection: keep-alive\r\n\r\n";
        size_t n = strlen(s);
        for (size_t i = 0; i < n; i++) {
                char *copy = xmalloc(i ? i : 1);
                memcpy(copy, s, i);
                struct http_request req;
                assert_int_equal(http_parse_request(copy, i, &req), 0);
                free(copy);
        }
}

/* ---- the server ---- */

/* Answers every request 200 "ok". Returns nothing. */
static void handle_ok(void *userdata, const struct http_request *req, struct http_response *resp) {
        resp->status = 200;
        memcpy(resp->scratch, "ok\n", 3);
        resp->body[0] = (struct iovec){ resp->scratch, 3 };
        resp->n_body = 1;
}

/* Returns CLOCK_MONOTONIC in milliseconds. */
static int64_t mono_ms(void) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Connects to 127.0.0.1:port from the loopback address from ("127.0.0.2": Linux routes all of
 * 127/8). Returns the socket; fails the test when it cannot connect. */
static int connect_from(const char *from, unsigned port) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        assert_true(fd >= 0);
        struct sockaddr_in a = { .sin_family = AF_INET };
        assert_int_equal(inet_pton(AF_INET, from, &a.sin_addr), 1);
        assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
        a.sin_port = htons((uint16_t)port);
        assert_int_equal(inet_pton(AF_INET, "127.0.0.1", &a.sin_addr), 1);
        assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
        return fd;
}

/* Waits up to ms for fd to become readable and reads into buf (NUL-terminated). Returns the bytes read,
 * 0 when the server closed the connection (a reset counts as closed), or -ETIMEDOUT. */
static ssize_t read_within(int fd, char *buf, size_t size, int ms) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        if (poll(&p, 1, ms) <= 0) return -ETIMEDOUT;
        ssize_t n = recv(fd, buf, size - 1, 0);
        if (n < 0) n = 0;
        buf[n] = 0;
        return n;
}

static void test_idle_expire_after_newer(void **state) {
        /* An idle connection must expire on time even though newer ones were accepted after it. */
        struct http_server *s = NULL;
        assert_int_equal(http_server_start("127.0.0.1:0", handle_ok, NULL, &s), 0);
        unsigned port = http_server_port(s);
        int64_t t0 = mono_ms();
        int old = connect_from("127.0.0.1", port);
        usleep(500 * 1000);
        int newer = connect_from("127.0.0.1", port);
        assert_int_equal(send(newer, "GET / HTTP/1.1\r\n", 16, 0), 16); /* half a request */
        char buf[256];
        assert_int_equal(read_within(old, buf, sizeof buf, (int)HTTP_TIMEOUT_MS + 2000), 0);
        int64_t waited = mono_ms() - t0;
        if (waited < (int64_t)HTTP_TIMEOUT_MS - 100 || waited > (int64_t)HTTP_TIMEOUT_MS + 1500)
                fail_msg("the idle connection was closed after %lld ms", (long long)waited);
        assert_int_equal(read_within(newer, buf, sizeof buf, 2000), 0);
        close(old);
        close(newer);
        http_server_stop(s);
}

static void test_per_address_share(void **state) {
        /* One address gets HTTP_MAX_PER_ADDRESS connections; its next is refused, another address is served. */
        struct http_server *s = NULL;
        assert_int_equal(http_server_start("127.0.0.1:0", handle_ok, NULL, &s), 0);
        unsigned port = http_server_port(s);
        int fds[HTTP_MAX_PER_ADDRESS];
        for (unsigned i = 0; i < HTTP_MAX_PER_ADDRESS; i++) fds[i] = connect_from("127.0.0.2", port);
        char buf[256];
        int over = connect_from("127.0.0.2", port);
        assert_true(read_within(over, buf, sizeof buf, 5000) > 0);
        if (!strstr(buf, "503") || !strstr(buf, "from this address")) fail_msg("past the share: %s", buf);
        close(over);
        int good = connect_from("127.0.0.1", port);
        assert_int_equal(send(good, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27, 0), 27);
        assert_true(read_within(good, buf, sizeof buf, 5000) > 0);
        if (strncmp(buf, "HTTP/1.1 200", 12) != 0) fail_msg("another address: %s", buf);
        close(good);
        for (unsigned i = 0; i < HTTP_MAX_PER_ADDRESS; i++) close(fds[i]);
        http_server_stop(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_curl),
                cmocka_unit_test(test_prometheus),
                cmocka_unit_test(test_wrk_pipelined),
                cmocka_unit_test(test_http10_and_connection),
                cmocka_unit_test(test_targets),
                cmocka_unit_test(test_accept_encoding),
                cmocka_unit_test(test_incomplete),
                cmocka_unit_test(test_malformed),
                cmocka_unit_test(test_limits),
                cmocka_unit_test(test_no_overread),
                cmocka_unit_test(test_per_address_share),
                cmocka_unit_test(test_idle_expire_after_newer),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
