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

pid_t child_spawn(const char *path, const char *const *argv, int in_fd, int out_fd, bool quiet) {
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&attr);
        if (in_fd >= 0) posix_spawn_file_actions_adddup2(&fa, in_fd, STDIN_FILENO);
        else posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        if (out_fd >= 0) posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
        if (quiet) posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
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
        int r = -posix_spawn(&pid, path, &fa, &attr, (char *const *)argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        return r < 0 ? r : pid;
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
        if (ret_unreaped) *ret_unreaped = 0;
        int in[2] = { -1, -1 }, out[2];
        if (pipe2(out, O_CLOEXEC) < 0) return -errno;
        if (o->input && pipe2(in, O_CLOEXEC) < 0) {
                int r = -errno;
                close(out[0]);
                close(out[1]);
                return r;
        }
        pid_t pid = child_spawn(path, argv, in[0], out[1], o->quiet);
        close(out[1]);
        if (in[0] >= 0) close(in[0]);
        if (pid < 0) {
                close(out[0]);
                if (in[1] >= 0) close(in[1]);
                return pid;
        }
        int in_fd = in[1];
        size_t written = 0;
        if (in_fd >= 0 && o->input_len == 0) {
                close(in_fd);
                in_fd = -1;
        }
        /* written with poll: a child that does not read must not block the caller */
        if (in_fd >= 0) (void)!fcntl(in_fd, F_SETFL, O_NONBLOCK);
        uint64_t deadline = monotonic_ms() + o->timeout_ms;
        struct buf b = { 0 };
        int r = 0;
        for (;;) {
                uint64_t now = monotonic_ms();
                if (now >= deadline) {
                        r = -ETIMEDOUT;
                        break;
                }
                uint64_t left = deadline - now;
                struct pollfd p[3] = { { .fd = out[0], .events = POLLIN }, { .fd = o->cancel_fd, .events = POLLIN },
                                       { .fd = in_fd, .events = POLLOUT } };
                int k = poll(p, 3, (int)(left > 1000 ? 1000 : left));
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
                        ssize_t w = (p[2].revents & POLLOUT) ? write(in_fd, o->input + written, o->input_len - written) : -1;
                        if (w > 0) written += (size_t)w;
                        if (w < 0 && (errno == EINTR || errno == EAGAIN)) {
                        } else if (w <= 0 || written == o->input_len) {
                                close(in_fd); /* done, or the child stopped reading: it answers what it got */
                                in_fd = -1;
                        }
                }
                if (!p[0].revents) continue;
                char chunk[16384];
                ssize_t got = read(out[0], chunk, sizeof chunk);
                if (got < 0) {
                        if (errno == EINTR || errno == EAGAIN) continue;
                        r = -errno;
                        break;
                }
                if (got == 0) break; /* the child closed its stdout: it is ending */
                if (b.len + (size_t)got > o->max_output) {
                        r = -EFBIG;
                        break;
                }
                buf_append(&b, chunk, (size_t)got);
        }
        if (in_fd >= 0) close(in_fd);
        close(out[0]);
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
                return r;
        }
        if (!b.data) buf_puts(&b, "");
        *ret_out = b.data;
        *ret_len = b.len;
        *ret_status = status;
        return 0;
}
