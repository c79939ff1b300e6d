/* test_rfc3339.c: times as Kubernetes writes them (metadata, conditions, Events) and as gpunode's reports do. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>

#include "basic/rfc3339.h"
#include "basic/util.h"

static void test_parse(void **state) {
        (void)state;
        static const struct {
                const char *in;
                int64_t want;
        } good[] = {
                { "1970-01-01T00:00:00Z", 0 },
                { "2026-12-02T06:10:00Z", 1796191800 },
                /* lastHeartbeatTime, creationTimestamp: seconds; Events' eventTime: microseconds */
                { "2024-08-30T11:43:09Z", 1725018189 },
                { "2024-08-30T11:43:09.123456Z", 1725018189 },
                { "2024-08-30T13:43:09+02:00", 1725018189 },
                { "2024-08-30T06:13:09-05:30", 1725018189 },
                { "2024-02-29T00:00:00Z", 1709164800 },
                { "2024-08-30t11:43:09z", 1725018189 },
        };
        for (size_t i = 0; i < ELEMENTSOF(good); i++) {
                int64_t t = -1;
                if (rfc3339_parse(good[i].in, &t) != 0 || t != good[i].want)
                        fail_msg("%s: got %lld, want %lld", good[i].in, (long long)t, (long long)good[i].want);
        }
        static const char *const bad[] = {
                "", "2024", "2024-08-30", "2024-08-30T11:43:09", "2024-08-30T11:43:09Z ", " 2024-08-30T11:43:09Z",
                "2024-8-30T11:43:09Z", "2024-08-30T11:43:9Z", "2024-13-01T00:00:00Z", "2023-02-29T00:00:00Z",
                "2024-02-31T00:00:00Z", "2024-08-30T24:00:00Z", "2024-08-30T11:60:00Z", "2024-08-30T11:43:09.Z",
                "2024-08-30T11:43:09+2:00", "2024-08-30T11:43:09+24:00", "2024-08-30T11:43:09UTC", "tomorrow",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                int64_t t = 42;
                if (rfc3339_parse(bad[i], &t) != -EINVAL) fail_msg("'%s' was accepted as %lld", bad[i], (long long)t);
                assert_int_equal(t, 42);
        }
        int64_t t;
        assert_int_equal(rfc3339_parse(NULL, &t), -EINVAL);
}

static void test_format_round_trip(void **state) {
        (void)state;
        char buf[RFC3339_MAX];
        assert_string_equal(rfc3339_format(0, buf), "1970-01-01T00:00:00Z");
        assert_string_equal(rfc3339_format(1796191800, buf), "2026-12-02T06:10:00Z");
        for (int64_t t = 0; t < INT64_C(4102444800); t += INT64_C(86399) * 37) {
                int64_t back = -1;
                assert_int_equal(rfc3339_parse(rfc3339_format(t, buf), &back), 0);
                assert_int_equal(back, t);
        }
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_parse),
                cmocka_unit_test(test_format_round_trip),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
