/* test_child.c: child_run() and child_run_capture(): stdout and stderr bounded, the environment given or inherited,
 * input, timeouts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

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

/* Waits up to ms for pid (a child of ours) to end. Returns its wait status, or -1 when it still runs. */
static int wait_for(pid_t pid, int ms) {
        for (int waited = 0; waited < ms; waited += 10) {
                int status;
                if (waitpid(pid, &status, WNOHANG) == pid) return status;
                struct timespec t = { 0, 10 * 1000000L };
                nanosleep(&t, NULL);
        }
        return -1;
}

/* A child outlives no parent: the process that started it is SIGKILLed, the child gets SIGTERM (the parent-death
 * signal) at once instead of living on under PID 1 (before: `sleep 30` lived its 30 s). */
static void test_parent_death(void **state) {
        (void)state;
        assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0); /* the orphan comes to us, to be watched */
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t mid = fork();
        assert_true(mid >= 0);
        if (mid == 0) {
                const char *argv[] = { "sleep", "30", NULL };
                pid_t c = child_spawn("/bin/sleep", argv, -1, -1, true);
                (void)!write(p[1], &c, sizeof c);
                pause();
                _exit(0);
        }
        pid_t grandchild = 0;
        assert_int_equal(read(p[0], &grandchild, sizeof grandchild), (ssize_t)sizeof grandchild);
        assert_true(grandchild > 0);
        kill(mid, SIGKILL);
        assert_true(wait_for(mid, 2000) != -1);
        int status = wait_for(grandchild, 2000);
        if (status == -1) {
                kill(grandchild, SIGKILL);
                wait_for(grandchild, 2000);
                fail_msg("the child lived on after its parent was killed");
        }
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), SIGTERM);
        close(p[0]);
        close(p[1]);
        prctl(PR_SET_CHILD_SUBREAPER, 0);
}

/* Every stop signal is at its default in a child, even when the parent ignores it (an ignored SIGHUP
 * would be inherited through exec). */
static void test_signals_default(void **state) {
        (void)state;
        struct sigaction ign = { .sa_handler = SIG_IGN }, old_hup, old_quit;
        sigemptyset(&ign.sa_mask);
        sigaction(SIGHUP, &ign, &old_hup);
        sigaction(SIGQUIT, &ign, &old_quit);
        struct child_run_options o = { .max_output = 1 << 16, .timeout_ms = 10000, .cancel_fd = -1 };
        _cleanup_free_ char *out = NULL;
        int status;
        assert_int_equal(sh("exec grep SigIgn /proc/self/status", &o, &out, NULL, NULL, &status), 0);
        sigaction(SIGHUP, &old_hup, NULL);
        sigaction(SIGQUIT, &old_quit, NULL);
        unsigned long long ignored = strtoull(out + strlen("SigIgn:"), NULL, 16);
        assert_false(ignored & (1ULL << (SIGHUP - 1)));
        assert_false(ignored & (1ULL << (SIGQUIT - 1)));
        assert_false(ignored & (1ULL << (SIGPIPE - 1)));
}

/* A fork that fails (RLIMIT_NPROC, as nobody: root ignores the limit) is -EAGAIN and says so on stderr
 * with its cause, not in the caller's words (before: nothing but the caller's "cannot start the YAML
 * parser" or "no Kubernetes configuration"). */
static void test_fork_fails(void **state) {
        (void)state;
        char path[] = "/tmp/test-child-XXXXXX";
        int fd = mkstemp(path);
        assert_true(fd >= 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                dup2(fd, STDERR_FILENO);
                if (getuid() == 0 && (setgid(65534) < 0 || setuid(65534) < 0)) _exit(2);
                struct rlimit rl = { 1, 1 }; /* this process is the one */
                if (setrlimit(RLIMIT_NPROC, &rl) < 0) _exit(3);
                const char *argv[] = { "gpunode", "labels", NULL };
                pid_t c = child_spawn("/bin/true", argv, -1, -1, true);
                _exit(c == -EAGAIN ? 0 : c > 0 ? 4 : 5);
        }
        int status = wait_for(pid, 10000);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        char text[512] = "";
        ssize_t n = pread(fd, text, sizeof text - 1, 0);
        text[n > 0 ? n : 0] = 0;
        close(fd);
        unlink(path);
        assert_string_equal(
                text, "gpunode: cannot start a child process (gpunode labels): Resource temporarily unavailable\n");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_stderr),          cmocka_unit_test(test_envp),
                cmocka_unit_test(test_bounds),          cmocka_unit_test(test_parent_death),
                cmocka_unit_test(test_signals_default), cmocka_unit_test(test_fork_fails),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
