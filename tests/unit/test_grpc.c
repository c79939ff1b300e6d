/* test_grpc.c: gRPC's wire parts without a peer: message reassembly and its limits, status codes, grpc-timeout, grpc-message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "grpc/grpc_wire.h"

/* What the reader handed out. */
struct got {
        uint8_t *msg[8];
        size_t len[8];
        unsigned n;
        int refuse_after;       /* answer -ECANCELED once n reaches this (0: never) */
};

/* The message callback of the tests: keeps each message. Returns 0, or -ECANCELED on demand. */
static int keep(uint8_t *msg, size_t len, void *userdata) {
        struct got *g = userdata;
        assert_true(g->n < 8);
        g->msg[g->n] = msg;
        g->len[g->n++] = len;
        if (g->refuse_after && g->n >= (unsigned)g->refuse_after) return -ECANCELED;
        return 0;
}

static void got_free(struct got *g) {
        for (unsigned i = 0; i < g->n; i++) free(g->msg[i]);
}

/* Two messages (one empty) fed one byte at a time, then in one go: the same messages. */
static void test_reader_pieces(void **state) {
        const uint8_t wire[] = {0, 0, 0, 0, 3, 'a', 'b', 'c', 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 'z'};
        struct grpc_reader r;
        struct got g = {0};
        grpc_reader_init(&r, 100);
        for (size_t i = 0; i < sizeof wire; i++) {
                assert_int_equal(grpc_reader_feed(&r, wire + i, 1, keep, &g, NULL), 0);
                assert_int_equal(grpc_reader_partial(&r), i != 7 && i != 12 && i != sizeof wire - 1);
        }
        assert_int_equal(g.n, 3);
        assert_int_equal(g.len[0], 3);
        assert_memory_equal(g.msg[0], "abc", 3);
        assert_int_equal(g.len[1], 0);
        assert_non_null(g.msg[1]);
        assert_int_equal(g.len[2], 1);
        assert_int_equal(g.msg[2][0], 'z');
        got_free(&g);
        g = (struct got){0};
        assert_int_equal(grpc_reader_feed(&r, wire, sizeof wire, keep, &g, NULL), 0);
        assert_int_equal(g.n, 3);
        assert_false(grpc_reader_partial(&r));
        got_free(&g);
        grpc_reader_done(&r);
}

/* A prefix past the limit is refused as soon as it is whole, with the sizes in the sentence;
 * one exactly at the limit is accepted. */
static void test_reader_limit(void **state) {
        struct grpc_reader r;
        struct got g = {0};
        char *err = NULL;
        grpc_reader_init(&r, 16 << 20);
        const uint8_t huge[] = {0, 0x06, 0x40, 0x00, 0x00}; /* 100 MiB */
        assert_int_equal(grpc_reader_feed(&r, huge, sizeof huge, keep, &g, &err), -EMSGSIZE);
        assert_non_null(strstr(err, "104857600 bytes"));
        assert_non_null(strstr(err, "16777216"));
        free(err);
        grpc_reader_done(&r);

        grpc_reader_init(&r, 4);
        const uint8_t four[] = {0, 0, 0, 0, 4, 1, 2, 3, 4};
        assert_int_equal(grpc_reader_feed(&r, four, sizeof four, keep, &g, NULL), 0);
        assert_int_equal(g.n, 1);
        const uint8_t five[] = {0, 0, 0, 0, 5};
        assert_int_equal(grpc_reader_feed(&r, five, sizeof five, keep, &g, NULL), -EMSGSIZE);
        got_free(&g);
        grpc_reader_done(&r);
}

/* A message announced as 16 MiB of which little arrives costs what arrived, not 16 MiB. */
static void test_reader_lying_prefix(void **state) {
        struct grpc_reader r;
        struct got g = {0};
        grpc_reader_init(&r, 16 << 20);
        const uint8_t big[] = {0, 0x01, 0x00, 0x00, 0x00, 'x', 'y'};
        assert_int_equal(grpc_reader_feed(&r, big, sizeof big, keep, &g, NULL), 0);
        assert_int_equal(g.n, 0);
        assert_true(grpc_reader_partial(&r));
        assert_true(r.cap <= 64 << 10);
        assert_int_equal(r.len, 2);
        grpc_reader_done(&r);
}

/* Compressed messages and flags other than 0/1 are protocol errors; a callback's refusal stops the reader. */
static void test_reader_bad(void **state) {
        struct grpc_reader r;
        struct got g = {0};
        char *err = NULL;
        grpc_reader_init(&r, 100);
        const uint8_t compressed[] = {1, 0, 0, 0, 1, 'a'};
        assert_int_equal(grpc_reader_feed(&r, compressed, sizeof compressed, keep, &g, &err), -EPROTO);
        assert_non_null(strstr(err, "compressed"));
        free(err);
        grpc_reader_done(&r);
        grpc_reader_init(&r, 100);
        const uint8_t flag[] = {0x48, 'T', 'T', 'P', '/'};
        assert_int_equal(grpc_reader_feed(&r, flag, sizeof flag, keep, &g, &err), -EPROTO);
        assert_non_null(strstr(err, "0x48"));
        free(err);
        grpc_reader_done(&r);

        grpc_reader_init(&r, 100);
        g.refuse_after = 1;
        const uint8_t two[] = {0, 0, 0, 0, 1, 'a', 0, 0, 0, 0, 1, 'b'};
        assert_int_equal(grpc_reader_feed(&r, two, sizeof two, keep, &g, NULL), -ECANCELED);
        assert_int_equal(g.n, 1);
        got_free(&g);
        grpc_reader_done(&r);
}

static void test_prefix_write(void **state) {
        uint8_t p[GRPC_PREFIX_LEN];
        assert_int_equal(grpc_prefix_write(0x01020304, p), 0);
        const uint8_t want[] = {0, 1, 2, 3, 4};
        assert_memory_equal(p, want, sizeof want);
        assert_int_equal(grpc_prefix_write((size_t)UINT32_MAX + 1, p), -EMSGSIZE);
}

static void test_status(void **state) {
        int code = -1;
        assert_int_equal(grpc_parse_status("12", 2, &code), 0);
        assert_int_equal(code, GRPC_UNIMPLEMENTED);
        assert_int_equal(grpc_parse_status("0", 1, &code), 0);
        assert_int_equal(code, 0);
        assert_int_equal(grpc_parse_status("", 0, &code), -EINVAL);
        assert_int_equal(grpc_parse_status("-1", 2, &code), -EINVAL);
        assert_int_equal(grpc_parse_status("1 ", 2, &code), -EINVAL);
        assert_int_equal(grpc_parse_status("9999999999", 10, &code), -EINVAL);
        assert_string_equal(grpc_code_name(GRPC_UNIMPLEMENTED), "UNIMPLEMENTED");
        assert_string_equal(grpc_code_name(GRPC_UNAUTHENTICATED), "UNAUTHENTICATED");
        assert_string_equal(grpc_code_name(17), "UNKNOWN");
        assert_string_equal(grpc_code_name(-3), "UNKNOWN");
        assert_int_equal(grpc_code_to_errno(GRPC_OK), 0);
        assert_int_equal(grpc_code_to_errno(GRPC_UNIMPLEMENTED), -EOPNOTSUPP);
        assert_int_equal(grpc_code_to_errno(GRPC_DEADLINE_EXCEEDED), -ETIMEDOUT);
        assert_int_equal(grpc_code_to_errno(GRPC_PERMISSION_DENIED), -EACCES);
        assert_int_equal(grpc_code_to_errno(GRPC_RESOURCE_EXHAUSTED), -EBUSY);
        assert_int_equal(grpc_code_to_errno(GRPC_INTERNAL), -EREMOTEIO);
        assert_int_equal(grpc_code_to_errno(99), -EREMOTEIO);
        assert_int_equal(grpc_code_from_http(404), GRPC_UNIMPLEMENTED);
        assert_int_equal(grpc_code_from_http(503), GRPC_UNAVAILABLE);
        assert_int_equal(grpc_code_from_http(401), GRPC_UNAUTHENTICATED);
        assert_int_equal(grpc_code_from_http(418), GRPC_UNKNOWN);
}

static void test_timeout(void **state) {
        char b[16];
        assert_string_equal(grpc_timeout_format(5000, b), "5000m");
        assert_string_equal(grpc_timeout_format(99999999, b), "99999999m");
        assert_string_equal(grpc_timeout_format(100000000, b), "100000S");
        assert_string_equal(grpc_timeout_format(UINT64_MAX, b), "99999999H");
        uint64_t ms = 0;
        assert_int_equal(grpc_timeout_parse("5000m", 5, &ms), 0);
        assert_int_equal(ms, 5000);
        assert_int_equal(grpc_timeout_parse("2S", 2, &ms), 0);
        assert_int_equal(ms, 2000);
        assert_int_equal(grpc_timeout_parse("1H", 2, &ms), 0);
        assert_int_equal(ms, 3600000);
        assert_int_equal(grpc_timeout_parse("3M", 2, &ms), 0);
        assert_int_equal(ms, 180000);
        assert_int_equal(grpc_timeout_parse("1500u", 5, &ms), 0);
        assert_int_equal(ms, 2);
        assert_int_equal(grpc_timeout_parse("1n", 2, &ms), 0);
        assert_int_equal(ms, 1);
        assert_int_equal(grpc_timeout_parse("99999999H", 9, &ms), 0);
        assert_int_equal(ms, 99999999ull * 3600000);
        assert_int_equal(grpc_timeout_parse("123456789m", 10, &ms), -EINVAL);
        assert_int_equal(grpc_timeout_parse("m", 1, &ms), -EINVAL);
        assert_int_equal(grpc_timeout_parse("10x", 3, &ms), -EINVAL);
        assert_int_equal(grpc_timeout_parse("1-m", 3, &ms), -EINVAL);
}

static void test_message_text(void **state) {
        char *s = grpc_message_decode("no access: 100%25 denied%0A", 27);
        assert_string_equal(s, "no access: 100% denied?");
        free(s);
        /* A '%' without two hex digits stays; bytes that are not UTF-8 become '?'. */
        s = grpc_message_decode("50% off %4", 10);
        assert_string_equal(s, "50% off %4");
        free(s);
        s = grpc_message_decode("caf%C3%A9 %FF", 13);
        assert_string_equal(s, "caf\xc3\xa9 ?");
        free(s);
        s = grpc_message_decode("cut%00here", 10);
        assert_string_equal(s, "cut");
        free(s);
        s = grpc_message_encode("100% caf\xc3\xa9\n");
        assert_string_equal(s, "100%25 caf%C3%A9%0A");
        char *back = grpc_message_decode(s, strlen(s));
        assert_string_equal(back, "100% caf\xc3\xa9?");
        free(back);
        free(s);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_reader_pieces),
                cmocka_unit_test(test_reader_limit),
                cmocka_unit_test(test_reader_lying_prefix),
                cmocka_unit_test(test_reader_bad),
                cmocka_unit_test(test_prefix_write),
                cmocka_unit_test(test_status),
                cmocka_unit_test(test_timeout),
                cmocka_unit_test(test_message_text),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
