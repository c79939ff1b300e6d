/* test_child.c: child_run() and child_run_capture(): stdout and stderr bounded, the environment given or inherited,
 * input, timeouts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/wait.h>

#include "basic/child.h"
#include "basic/util.h"

/* Runs a shell script with o. Returns child_run_capture()'s answer. */
static int sh(const char *script, const struct child_run_options *o, char **ret_out, char **ret_err,
              size_t *ret_err_len, int *ret_status) {
        const char *argv[] = { "/bin/sh", "-c", script, NULL };
        size_t len;
        return child_run_capture("/bin/sh", argv, o, ret_out, &len, ret_err, ret_err_len, ret_status, NULL);
}

/* stdout and stderr apart; stderr kept to its cap and the rest drained; none captured without ret_err. */
static void test_stderr(void **state) {
        (void)state;
        struct child_run_options o = { .max_output = 1 << 20, .timeout_ms = 10000, .cancel_fd = -1, .max_stderr = 64 };
        _cleanup_free_ char *out = NULL, *err = NULL;
        size_t err_len = 0;
        int status;
        assert_int_equal(sh("echo out; echo 'nvidia-smi: not found' >&2; exit 3", &o, &out, &err, &err_len, &status),
                         0);
        assert_string_equal(out, "out\n");
        assert_string_equal(err, "nvidia-smi: not found\n");
        assert_int_equal(err_len, 22);
        assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 3);
        free(out);
        free(err);
        out = err = NULL;

        /* 1 MiB on stderr: the first 64 bytes kept, the child not blocked on a full pipe */
        assert_int_equal(sh("head -c 1048576 /dev/zero | tr '\\0' x >&2; echo done", &o, &out, &err, &err_len, &status),
                         0);
        assert_string_equal(out, "done\n");
        assert_int_equal(err_len, 64);
        assert_int_equal(strlen(err), 64);
        assert_int_equal(strspn(err, "x"), 64);
        free(out);
        free(err);
        out = err = NULL;

        /* stdout closed early, stderr still written: both read to the end */
        assert_int_equal(sh("exec 1>&-; sleep 0.2; echo late >&2", &o, &out, &err, NULL, &status), 0);
        assert_string_equal(out, "");
        assert_string_equal(err, "late\n");
        free(out);
        free(err);
        out = err = NULL;

        /* nothing on stderr: "" */
        assert_int_equal(sh("true", &o, &out, &err, &err_len, &status), 0);
        assert_string_equal(err, "");
        assert_int_equal(err_len, 0);
        free(out);
        free(err);
        out = err = NULL;

        /* child_run() as before: stderr not captured (quiet: /dev/null) */
        o.quiet = true;
        const char *argv[] = { "/bin/sh", "-c", "echo x; echo y >&2", NULL };
        size_t len;
        assert_int_equal(child_run("/bin/sh", argv, &o, &out, &len, &status, NULL), 0);
        assert_string_equal(out, "x\n");
}

/* envp replaces the environment; NULL inherits this process's. */
static void test_envp(void **state) {
        (void)state;
        assert_int_equal(setenv("GPUNODE_CHILD_TEST", "inherited", 1), 0);
        struct child_run_options o = { .max_output = 4096, .timeout_ms = 10000, .cancel_fd = -1 };
        _cleanup_free_ char *out = NULL;
        int status;
        assert_int_equal(sh("echo \"$GPUNODE_CHILD_TEST\"", &o, &out, NULL, NULL, &status), 0);
        assert_string_equal(out, "inherited\n");
        free(out);
        out = NULL;
        const char *env[] = { "GPUNODE_CHILD_TEST=given", "PATH=/usr/bin:/bin", NULL };
        o.envp = env;
        assert_int_equal(sh("echo \"$GPUNODE_CHILD_TEST\"", &o, &out, NULL, NULL, &status), 0);
        assert_string_equal(out, "given\n");
        free(out);
        out = NULL;
        assert_int_equal(sh("env | grep -c HOME || true", &o, &out, NULL, NULL, &status), 0);
        assert_string_equal(out, "0\n");
        free(out);
        out = NULL;
        const char *empty[] = { NULL };
        o.envp = empty;
        assert_int_equal(sh("echo \"[$GPUNODE_CHILD_TEST]\"", &o, &out, NULL, NULL, &status), 0);
        assert_string_equal(out, "[]\n");
}

/* The bounds hold with stderr captured: stdout past max_output, the deadline, input handed over. */
static void test_bounds(void **state) {
        (void)state;
        struct child_run_options o = { .max_output = 10, .timeout_ms = 10000, .cancel_fd = -1, .max_stderr = 16 };
        char *out = NULL, *err = NULL;
        int status;
        assert_int_equal(sh("echo 0123456789abcdef", &o, &out, &err, NULL, &status), -EFBIG);
        assert_null(out);
        assert_null(err);
        o.max_output = 4096;
        o.timeout_ms = 200;
        assert_int_equal(sh("echo starting >&2; sleep 5", &o, &out, &err, NULL, &status), -ETIMEDOUT);
        assert_null(err);
        o.timeout_ms = 10000;
        o.input = "abc";
        o.input_len = 3;
        assert_int_equal(sh("cat; cat >&2 < /dev/null", &o, &out, &err, NULL, &status), 0);
        assert_string_equal(out, "abc");
        free(out);
        free(err);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_stderr),
                cmocka_unit_test(test_envp),
                cmocka_unit_test(test_bounds),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
