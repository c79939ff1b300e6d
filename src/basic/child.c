/* child.c: starting and killing the bounded child processes gpunode runs. */
#include "basic/child.h"
#include "basic/util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

extern char **environ;

void child_self_path(char *buf, size_t size) {
        if (size == 0) return;
        ssize_t l = readlink("/proc/self/exe", buf, size - 1);
        buf[l > 0 && (size_t)l < size ? l : 0] = 0;
        if (!buf[0] || access(buf, X_OK) < 0) snprintf(buf, size, "/proc/self/exe");
}

/* The signals a child starts with at their defaults (the parent ignores SIGPIPE and catches the rest). */
static const int default_signals[] = { SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGQUIT };

/* In the forked child: makes fd the descriptor target (a descriptor already there loses FD_CLOEXEC).
 * Returns 0 or -1 (errno set); async-signal-safe. */
static int move_fd(int fd, int target) {
        if (fd == target) return fcntl(fd, F_SETFD, 0);
        return dup2(fd, target) < 0 ? -1 : 0;
}

/* In the forked child: opens /dev/null onto target. Returns 0 or -1 (errno set); async-signal-safe. */
static int null_fd(int target, int flags) {
        int fd = open("/dev/null", flags | O_CLOEXEC);
        if (fd < 0) return -1;
        int r = move_fd(fd, target);
        if (fd != target) close(fd);
        return r;
}

/* In the forked child: closes every descriptor from 3 up but keep. Returns nothing; async-signal-safe. */
static void close_from_3(int keep) {
        if (keep > 3) syscall(SYS_close_range, 3U, (unsigned)keep - 1, 0U);
        if (syscall(SYS_close_range, (unsigned)keep + 1, ~0U, 0U) == 0) return;
        /* no close_range (before 5.9): the descriptors gpunode opens are O_CLOEXEC but NVML's */
        for (int fd = 3; fd < 1024; fd++)
                if (fd != keep) close(fd);
}

/* In the forked child: sets it up (own process group, parent-death signal, signals, descriptors) and
 * executes path; on failure writes errno to err_pipe and exits 127. Never returns. */
_Noreturn static void exec_child(pid_t parent, int err_pipe, const char *path, const char *const *argv, int in_fd,
                                 int out_fd, int err_fd, bool quiet, const char *const *envp) {
        /* dispositions first: a signal that comes before the exec must not run the parent's handler */
        struct sigaction dfl = { .sa_handler = SIG_DFL };
        sigemptyset(&dfl.sa_mask);
        for (size_t i = 0; i < ELEMENTSOF(default_signals); i++) sigaction(default_signals[i], &dfl, NULL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL); /* the calling thread blocks SIGTERM; the child must not */
        int e = 0;
        /* its own group: a timeout kills whatever it started too; SIGTERM when the parent dies (a
         * killed agent must not leave its labels child writing under PID 1), unless that already
         * happened between fork and prctl */
        if (setpgid(0, 0) < 0 || prctl(PR_SET_PDEATHSIG, SIGTERM) < 0) e = errno;
        if (!e && getppid() != parent) _exit(127);
        if (!e && (in_fd >= 0 ? move_fd(in_fd, STDIN_FILENO) : null_fd(STDIN_FILENO, O_RDONLY)) < 0) e = errno;
        if (!e && out_fd >= 0 && move_fd(out_fd, STDOUT_FILENO) < 0) e = errno;
        if (!e && err_fd >= 0 && move_fd(err_fd, STDERR_FILENO) < 0) e = errno;
        if (!e && err_fd < 0 && quiet && null_fd(STDERR_FILENO, O_WRONLY) < 0) e = errno;
        if (!e) {
                close_from_3(err_pipe); /* NVML's device files and the like stay here */
                execve(path, (char *const *)argv, envp ? (char *const *)envp : environ);
                e = errno;
        }
        (void)!write(err_pipe, &e, sizeof e);
        _exit(127);
}

/* child_spawn() with stderr err_fd (-1: /dev/null when quiet, else inherited) and the environment envp (NULL: this
 * process's). A fork that fails is said on stderr with its cause (the caller's own words, e.g. "cannot read X",
 * would hide it). Returns the pid, or -errno (the fork's, or the exec's). */
static pid_t spawn(const char *path, const char *const *argv, int in_fd, int out_fd, int err_fd, bool quiet,
                   const char *const *envp) {
        int ep[2];
        if (pipe2(ep, O_CLOEXEC) < 0) return -errno;
        pid_t parent = getpid();
        pid_t pid = fork();
        if (pid == 0) {
                close(ep[0]);
                exec_child(parent, ep[1], path, argv, in_fd, out_fd, err_fd, quiet, envp);
        }
        int r = pid < 0 ? -errno : 0;
        close(ep[1]);
        if (r < 0) {
                close(ep[0]);
                fprintf(stderr, "gpunode: cannot start a child process (%s %s): %s\n", argv[0] ? argv[0] : path,
                        argv[0] && argv[1] ? argv[1] : "", strerror(-r));
                return r;
        }
        /* the exec's outcome: the pipe closes on success, carries errno on failure */
        int e = 0;
        ssize_t got;
        do got = read(ep[0], &e, sizeof e);
        while (got < 0 && errno == EINTR);
        close(ep[0]);
        if (got == (ssize_t)sizeof e) {
                while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
                }
                return -(e ? e : EIO);
        }
        return pid;
}

pid_t child_spawn(const char *path, const char *const *argv, int in_fd, int out_fd, bool quiet) {
        return spawn(path, argv, in_fd, out_fd, -1, quiet, NULL);
}

bool child_kill(pid_t pid) {
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        for (int i = 0; i < 200; i++) {
                if (waitpid(pid, NULL, WNOHANG) != 0) return true;
                struct timespec t = { 0, 10 * 1000000L };
                nanosleep(&t, NULL);
        }
        return false;
}

int child_run(const char *path, const char *const *argv, const struct child_run_options *o, char **ret_out,
              size_t *ret_len, int *ret_status, pid_t *ret_unreaped) {
        return child_run_capture(path, argv, o, ret_out, ret_len, NULL, NULL, ret_status, ret_unreaped);
}

/* Closes *fd when it is open and marks it closed. */
static void close_fd(int *fd) {
        if (*fd >= 0) close(*fd);
        *fd = -1;
}

int child_run_capture(const char *path, const char *const *argv, const struct child_run_options *o, char **ret_out,
                      size_t *ret_len, char **ret_err, size_t *ret_err_len, int *ret_status, pid_t *ret_unreaped) {
        if (ret_unreaped) *ret_unreaped = 0;
        if (ret_err) *ret_err = NULL;
        if (ret_err_len) *ret_err_len = 0;
        int in[2] = { -1, -1 }, out[2] = { -1, -1 }, err[2] = { -1, -1 };
        int r = 0;
        if (pipe2(out, O_CLOEXEC) < 0 || (o->input && pipe2(in, O_CLOEXEC) < 0) ||
            (ret_err && pipe2(err, O_CLOEXEC) < 0)) {
                r = -errno;
                for (int i = 0; i < 2; i++) close_fd(&in[i]), close_fd(&out[i]), close_fd(&err[i]);
                return r;
        }
        pid_t pid = spawn(path, argv, in[0], out[1], err[1], o->quiet, o->envp);
        close_fd(&out[1]);
        close_fd(&in[0]);
        close_fd(&err[1]);
        if (pid < 0) {
                close_fd(&out[0]);
                close_fd(&in[1]);
                close_fd(&err[0]);
                return pid;
        }
        int in_fd = in[1], out_fd = out[0], err_fd = err[0];
        size_t written = 0;
        if (in_fd >= 0 && o->input_len == 0) close_fd(&in_fd);
        /* written with poll: a child that does not read must not block the caller */
        if (in_fd >= 0) (void)!fcntl(in_fd, F_SETFL, O_NONBLOCK);
        uint64_t deadline = monotonic_ms() + o->timeout_ms;
        struct buf b = { 0 }, e = { 0 };
        /* until the child closed its stdout (it is ending) and, when captured, its stderr */
        while (out_fd >= 0 || err_fd >= 0) {
                uint64_t now = monotonic_ms();
                if (now >= deadline) {
                        r = -ETIMEDOUT;
                        break;
                }
                uint64_t left = deadline - now;
                struct pollfd p[4] = { { .fd = out_fd, .events = POLLIN },
                                       { .fd = o->cancel_fd, .events = POLLIN },
                                       { .fd = in_fd, .events = POLLOUT },
                                       { .fd = err_fd, .events = POLLIN } };
                int k = poll(p, 4, (int)(left > 1000 ? 1000 : left));
                if (k < 0 && errno != EINTR) {
                        r = -errno;
                        break;
                }
                if (k <= 0) continue;
                if (p[1].revents) {
                        r = -ECANCELED;
                        break;
                }
                if (in_fd >= 0 && p[2].revents) {
                        ssize_t w = (p[2].revents & POLLOUT) ? write(in_fd, o->input + written, o->input_len - written)
                                                             : -1;
                        if (w > 0) written += (size_t)w;
                        if (w < 0 && (errno == EINTR || errno == EAGAIN)) {
                        } else if (w <= 0 || written == o->input_len) {
                                close_fd(&in_fd); /* done, or the child stopped reading: it answers what it got */
                        }
                }
                char chunk[16384];
                if (err_fd >= 0 && p[3].revents) {
                        ssize_t got = read(err_fd, chunk, sizeof chunk);
                        if (got < 0 && errno != EINTR && errno != EAGAIN) {
                                r = -errno;
                                break;
                        }
                        if (got == 0) close_fd(&err_fd);
                        /* kept up to the cap, the rest read and dropped: a chatty child must not block on it */
                        size_t room = o->max_stderr - (e.len < o->max_stderr ? e.len : o->max_stderr);
                        if (got > 0 && room) buf_append(&e, chunk, (size_t)got < room ? (size_t)got : room);
                }
                if (out_fd < 0 || !p[0].revents) continue;
                ssize_t got = read(out_fd, chunk, sizeof chunk);
                if (got < 0) {
                        if (errno == EINTR || errno == EAGAIN) continue;
                        r = -errno;
                        break;
                }
                if (got == 0) {
                        close_fd(&out_fd);
                        continue;
                }
                if (b.len + (size_t)got > o->max_output) {
                        r = -EFBIG;
                        break;
                }
                buf_append(&b, chunk, (size_t)got);
        }
        close_fd(&in_fd);
        close_fd(&out_fd);
        close_fd(&err_fd);
        int status = -1;
        bool reaped = false;
        /* Output done: it exits at once; wait for it within the same deadline. */
        while (r == 0) {
                pid_t w = waitpid(pid, &status, WNOHANG);
                if (w == pid || (w < 0 && errno == ECHILD)) {
                        reaped = true;
                        if (w < 0) r = -EIO;
                        break;
                }
                uint64_t now = monotonic_ms();
                if (now >= deadline) {
                        r = -ETIMEDOUT;
                        break;
                }
                struct pollfd p = { .fd = o->cancel_fd, .events = POLLIN };
                uint64_t left = deadline - now;
                if (poll(&p, 1, (int)(left < 5 ? left : 5)) > 0) r = -ECANCELED;
        }
        if (!reaped && !child_kill(pid) && ret_unreaped) *ret_unreaped = pid;
        if (r < 0) {
                buf_free(&b);
                buf_free(&e);
                return r;
        }
        if (!b.data) buf_puts(&b, "");
        *ret_out = b.data;
        *ret_len = b.len;
        if (ret_err) {
                if (!e.data) buf_puts(&e, "");
                *ret_err = e.data;
                if (ret_err_len) *ret_err_len = e.len;
        } else
                buf_free(&e);
        *ret_status = status;
        return 0;
}
