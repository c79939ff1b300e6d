/* supervisor.c: children a long-running gpunode keeps alive (the labels loop), restarted with backoff. */
#include "daemon/supervisor.h"
#include "basic/child.h"
#include "basic/util.h"

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/wait.h>

#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 60000
#define STEADY_MS      60000 /* a child that ran this long starts the backoff over */
#define TERM_GRACE_MS  2000

struct supervisor {
        char *who, *name, *path;
        char **argv;
        int stop_fd; /* eventfd, written on stop */
        pthread_t thread;
        bool running;
};

/* Returns true when the stop was asked for, waiting up to ms for it. */
static bool wait_stop(struct supervisor *s, int ms) {
        struct pollfd p = { .fd = s->stop_fd, .events = POLLIN };
        return poll(&p, 1, ms) > 0;
}

/* Stops child pid: SIGTERM to its group and itself, SIGKILL after TERM_GRACE_MS. Returns nothing. */
static void stop_child(pid_t pid) {
        kill(-pid, SIGTERM);
        kill(pid, SIGTERM);
        for (int waited = 0; waited < TERM_GRACE_MS; waited += 20) {
                if (waitpid(pid, NULL, WNOHANG) != 0) return;
                struct timespec t = { 0, 20 * 1000000L };
                nanosleep(&t, NULL);
        }
        child_kill(pid);
}

/* The supervisor's thread. Returns NULL. */
static void *supervisor_main(void *arg) {
        struct supervisor *s = arg;
        unsigned backoff_ms = BACKOFF_MIN_MS;
        for (;;) {
                uint64_t started = monotonic_ms();
                pid_t pid = child_spawn(s->path, (const char *const *)s->argv, -1, -1, false);
                if (pid > 0) {
                        int status = 0;
                        bool stop = false;
                        for (;;) {
                                if (wait_stop(s, 200)) {
                                        stop = true;
                                        stop_child(pid);
                                        break;
                                }
                                if (waitpid(pid, &status, WNOHANG) == pid) break;
                        }
                        if (stop) break;
                        fprintf(stderr, "gpunode %s: the %s child exited (status %d); restarting in %u ms\n", s->who,
                                s->name, WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), backoff_ms);
                } else {
                        fprintf(stderr, "gpunode %s: cannot start the %s child: %s\n", s->who, s->name,
                                strerror((int)-pid));
                }
                if (monotonic_ms() - started > STEADY_MS) backoff_ms = BACKOFF_MIN_MS;
                if (wait_stop(s, (int)backoff_ms)) break;
                backoff_ms = backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : backoff_ms * 2;
        }
        return NULL;
}

int supervisor_start(const char *who, const char *name, const char *path, const char *const *argv,
                     struct supervisor **ret) {
        struct supervisor *s = xcalloc(1, sizeof *s);
        s->who = xstrdup(who);
        s->name = xstrdup(name);
        s->path = xstrdup(path);
        size_t n = 0;
        while (argv[n]) n++;
        s->argv = xcalloc(n + 1, sizeof *s->argv);
        for (size_t i = 0; i < n; i++) s->argv[i] = xstrdup(argv[i]);
        s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        int r = s->stop_fd < 0 ? -errno : -pthread_create(&s->thread, NULL, supervisor_main, s);
        if (r < 0) {
                supervisor_stop(s);
                return r;
        }
        s->running = true;
        *ret = s;
        return 0;
}

struct supervisor *supervisor_stop(struct supervisor *s) {
        if (!s) return NULL;
        if (s->stop_fd >= 0) {
                uint64_t one = 1;
                (void)!write(s->stop_fd, &one, sizeof one);
        }
        if (s->running) pthread_join(s->thread, NULL);
        if (s->stop_fd >= 0) close(s->stop_fd);
        for (size_t i = 0; s->argv && s->argv[i]; i++) free(s->argv[i]);
        free(s->argv);
        free(s->who);
        free(s->name);
        free(s->path);
        free(s);
        return NULL;
}
