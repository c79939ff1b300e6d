/* child.h: the bounded child processes gpunode runs (its own diagnosis, labels, API calls): how they
 * are started, and how they are killed. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Writes the path of this program into buf: what /proc/self/exe links to (under valgrind
 * /proc/self/exe itself is valgrind), or "/proc/self/exe" when that file was deleted or replaced.
 * Returns nothing; never fails (buf holds at least "/proc/self/exe" when size allows). */
void child_self_path(char *buf, size_t size);

/* Starts path with argv in its own process group (a timeout then kills whatever it started too),
 * with no signal blocked and SIGPIPE, SIGTERM, SIGINT, SIGHUP and SIGQUIT at their defaults, whatever
 * the calling thread blocks; descriptors 3 and up are closed in it. It gets SIGTERM when the calling
 * thread ends (PR_SET_PDEATHSIG: a gpunode killed, even with SIGKILL, leaves no child behind; so the
 * thread that starts a child must outlive it), and does not run if this process ended before it could
 * ask for that. stdin is in_fd (-1: /dev/null), stdout out_fd (-1: inherited), stderr /dev/null when
 * quiet, else inherited. Returns the pid, or -errno: a failed fork (said on stderr: "gpunode: cannot
 * start a child process (gpunode labels): Resource temporarily unavailable") or the exec's error
 * (-ENOENT for a missing path). */
pid_t child_spawn(const char *path, const char *const *argv, int in_fd, int out_fd, bool quiet);

/* Kills pid's process group and pid with SIGKILL and reaps it, waiting up to 2 s. Returns true when
 * reaped, false when it is still there (stuck in the kernel). */
bool child_kill(pid_t pid);

/* How child_run() bounds one child. */
struct child_run_options {
        const char *input; /* written to its stdin (without blocking); NULL: stdin is /dev/null */
        size_t input_len;
        size_t max_output;       /* more on its stdout is -EFBIG */
        unsigned timeout_ms;     /* for the whole run: output and exit */
        int cancel_fd;           /* -1: none; readable: stop now (-ECANCELED) */
        bool quiet;              /* its stderr to /dev/null, else inherited (unless child_run_capture() takes it) */
        const char *const *envp; /* its environment, NULL-terminated; NULL: this process's */
        size_t max_stderr;       /* child_run_capture(): stderr bytes kept; the rest is read and dropped */
};

/*
 * Runs path with argv (child_spawn()), hands it o->input, and collects its stdout until it closes it
 * and exits. Returns 0 with the malloc'd, NUL-terminated output in *ret_out (*ret_len bytes) and its
 * wait status in *ret_status (the caller judges the exit code); -ETIMEDOUT past o->timeout_ms, -EFBIG
 * past o->max_output, -ECANCELED when o->cancel_fd became readable, -errno when it cannot be started
 * or read. On every failure the child is killed with its group and reaped; one that cannot be reaped
 * within 2 s is handed back in *ret_unreaped (when not NULL) for the caller to reap later.
 */
int child_run(const char *path, const char *const *argv, const struct child_run_options *o, char **ret_out,
              size_t *ret_len, int *ret_status, pid_t *ret_unreaped);

/* child_run(), with the child's stderr captured too when ret_err is not NULL: its first o->max_stderr bytes in
 * *ret_err (malloc'd, NUL-terminated, *ret_err_len bytes when ret_err_len is not NULL; "" when it wrote none), read
 * until the child closes it, within the same deadline; more is not an error. Returns as child_run(); on failure
 * *ret_err is NULL. */
int child_run_capture(const char *path, const char *const *argv, const struct child_run_options *o, char **ret_out,
                      size_t *ret_len, char **ret_err, size_t *ret_err_len, int *ret_status, pid_t *ret_unreaped);
