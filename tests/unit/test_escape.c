/* test_escape.c: escape_terminal and fprintf_escaped: outside strings reach a terminal inert. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "basic/util.h"

/* Asserts that escape_terminal(in) is want. */
static void expect_escaped(const char *in, const char *want) {
        char *got = escape_terminal(in);
        assert_string_equal(got, want);
        free(got);
}

static void test_plain_text_kept(void **state) {
        expect_escaped("", "");
        expect_escaped("gpu-node-7 (root /host)", "gpu-node-7 (root /host)");
        expect_escaped("C:\\path \\x1b stays", "C:\\path \\x1b stays"); /* the backslash is not doubled */
        expect_escaped("Grüße, 東京, 😀", "Grüße, 東京, 😀");                /* printable UTF-8 kept */
        expect_escaped("\xc2\xa0nbsp \xc2\xa9", "\xc2\xa0nbsp \xc2\xa9");    /* U+00A0, U+00A9: past C1 */
}

static void test_controls_escaped(void **state) {
        /* the title sequence: set the window title, ring the bell, clear the screen */
        expect_escaped("\x1b]0;pwned\x07\x1b[2J", "\\x1b]0;pwned\\x07\\x1b[2J");
        expect_escaped("a\nb\rc\td", "a\\nb\\rc\\td");
        expect_escaped("\x01\x08\x1f\x7f", "\\x01\\x08\\x1f\\x7f");
        expect_escaped("x\x1b", "x\\x1b");
}

static void test_c1_and_bidi_escaped(void **state) {
        /* U+009B is CSI on terminals that take C1 in UTF-8; U+0085 NEL; U+0080 */
        expect_escaped("\xc2\x9b" "2J", "\\xc2\\x9b2J");
        expect_escaped("\xc2\x85\xc2\x80\xc2\x9f", "\\xc2\\x85\\xc2\\x80\\xc2\\x9f");
        /* bidirectional overrides and isolates (U+202E RLO, U+2066 LRI, U+2069 PDI); U+2028 kept */
        expect_escaped("a\xe2\x80\xae" "b", "a\\xe2\\x80\\xaeb");
        expect_escaped("\xe2\x81\xa6x\xe2\x81\xa9", "\\xe2\\x81\\xa6x\\xe2\\x81\\xa9");
        expect_escaped("\xe2\x80\xa9", "\xe2\x80\xa9");
}

static void test_invalid_utf8_escaped(void **state) {
        /* a raw C1 byte, a lone continuation, an overlong '/', a surrogate, past U+10FFFF, a cut sequence */
        expect_escaped("\x9b" "2J", "\\x9b2J");
        expect_escaped("\x80", "\\x80");
        expect_escaped("\xc0\xaf", "\\xc0\\xaf");
        expect_escaped("\xed\xa0\x80", "\\xed\\xa0\\x80");
        expect_escaped("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80");
        expect_escaped("ok\xe6\x9d", "ok\\xe6\\x9d");
        expect_escaped("\xff\xfe garbage", "\\xff\\xfe garbage");
}

static void test_output_has_no_control_bytes(void **state) {
        /* every byte value, in every position: the result holds no C0, DEL or invalid UTF-8 */
        char in[3 * 256 + 1];
        size_t n = 0;
        for (int c = 1; c < 256; c++) {
                in[n++] = (char)c;
                in[n++] = 'a';
        }
        in[n] = 0;
        char *got = escape_terminal(in);
        size_t len = strlen(got);
        assert_int_equal(utf8_valid_prefix(got, len), len);
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)got[i];
                if (c < 0x20 || c == 0x7f) fail_msg("control byte 0x%02x at %zu", c, i);
                if (c == 0xc2 && (unsigned char)got[i + 1] < 0xa0) fail_msg("C1 control at %zu", i);
        }
        free(got);
}

static void test_fprintf_escaped(void **state) {
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        assert_non_null(f);
        int n = fprintf_escaped(f, "gpunode check: cannot open %s: %s\n", "/x\x1b[2J", "No such file");
        assert_true(n > 0);
        fprintf_escaped(f, "no newline %d", 7);
        fclose(f);
        assert_string_equal(text, "gpunode check: cannot open /x\\x1b[2J: No such file\nno newline 7");
        assert_int_equal(n, (int)strlen("gpunode check: cannot open /x\\x1b[2J: No such file\n"));
        free(text);
        /* %m reads errno as it was at the call */
        text = NULL;
        f = open_memstream(&text, &size);
        errno = ENOENT;
        fprintf_escaped(f, "%m\n");
        fclose(f);
        assert_string_equal(text, "No such file or directory\n");
        free(text);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_plain_text_kept),
                cmocka_unit_test(test_controls_escaped),
                cmocka_unit_test(test_c1_and_bidi_escaped),
                cmocka_unit_test(test_invalid_utf8_escaped),
                cmocka_unit_test(test_output_has_no_control_bytes),
                cmocka_unit_test(test_fprintf_escaped),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
