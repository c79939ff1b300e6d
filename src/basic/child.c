/* child.c: starting and killing the bounded child processes gpunode runs. */
#include "basic/child.h"
#include "basic/util.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

void child_self_path(char *buf, size_t size) {
        if (size == 0) return;
        ssize_t l = readlink("/proc/self/exe", buf, size - 1);
        buf[l > 0 && (size_t)l < size ? l : 0] = 0;
        if (!buf[0] || access(buf, X_OK) < 0) snprintf(buf, size, "/proc/self/exe");
}

/* child_spawn() with stderr err_fd (-1: /dev/null when quiet, else inherited) and the environment envp (NULL: this
 * process's). Returns the pid, or -errno. */
static pid_t spawn(const char *path, const char *const *argv, int in_fd, int out_fd, int err_fd, bool quiet,
                   const char *const *envp) {
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&attr);
        if (in_fd >= 0)
                posix_spawn_file_actions_adddup2(&fa, in_fd, STDIN_FILENO);
        else
                posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        if (out_fd >= 0) posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
        if (err_fd >= 0)
                posix_spawn_file_actions_adddup2(&fa, err_fd, STDERR_FILENO);
        else if (quiet)
                posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
        posix_spawn_file_actions_addclosefrom_np(&fa, 3); /* NVML's device files and the like stay here */
#endif
        sigset_t none, deflt;
        sigemptyset(&none);
        sigemptyset(&deflt);
        sigaddset(&deflt, SIGPIPE);
        sigaddset(&deflt, SIGTERM);
        sigaddset(&deflt, SIGINT);
        posix_spawnattr_setsigmask(&attr, &none); /* the calling thread blocks SIGTERM; the child must not */
        posix_spawnattr_setsigdefault(&attr, &deflt);
        posix_spawnattr_setpgroup(&attr, 0);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
        pid_t pid;
        int r = -posix_spawn(&pid, path, &fa, &attr, (char *const *)argv, envp ? (char *const *)envp : environ);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        return r < 0 ? r : pid;
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
