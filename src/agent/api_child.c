/* api_child.c: the agent's Kubernetes API requests, each run by a bounded `gpunode kube-call` child (posix_spawn of /proc/self/exe). */
#include "agent/api_child.h"
#include "basic/child.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>

#include "basic/util.h"

extern char **environ;

#define API_CHILD_GRACE_MS 2000u              /* beyond the request's timeout: start-up, configuration, exit */
#define API_CHILD_OUTPUT_SLACK ((size_t)64 << 10) /* the outcome's envelope and error sentence beyond the body */

/* Spawns self with argv in its own process group: stdin from *ret_in (a pipe, when want_in; else
 * /dev/null), stdout into *ret_out, stderr inherited (the child's few lines go to the agent's log).
 * Returns the pid, or -errno. */
static pid_t api_child_spawn(const char *const *argv, bool want_in, int *ret_in, int *ret_out) {
        int in[2] = { -1, -1 }, out[2];
        if (pipe2(out, O_CLOEXEC) < 0) return -errno;
        if (want_in && pipe2(in, O_CLOEXEC) < 0) {
                int r = -errno;
                close(out[0]);
                close(out[1]);
                return r;
        }
        char self[4096];
        child_self_path(self, sizeof self);
        /* stderr inherited: the child's few lines (an exec plugin's too) go to the agent's log */
        int r = child_spawn(self, argv, want_in ? in[0] : -1, out[1], false);
        pid_t pid = r;
        close(out[1]);
        if (want_in) close(in[0]);
        if (r < 0) {
                close(out[0]);
                if (want_in) close(in[1]);
                return r;
        }
        if (want_in) {
                /* written with poll: a child that does not read must not block the agent */
                (void)!fcntl(in[1], F_SETFL, O_NONBLOCK);
                *ret_in = in[1];
        }
        *ret_out = out[0];
        return pid;
}

/* Parses the child's outcome (text, NUL-terminated). Returns its rc with *ret and *ret_error as
 * api_child_call() gives them, or -EIO with a sentence when text is not an outcome. */
static int api_child_parse(const char *text, size_t len, const char *what, json_t **ret, char **ret_error,
                           bool *ret_setup) {
        json_error_t jerr;
        json_t *o = json_loadb(text, len, 0, &jerr);
        json_t *rc = json_object_get(o, "rc"), *error = json_object_get(o, "error"), *body = json_object_get(o, "body");
        const char *stage = json_string_value(json_object_get(o, "stage"));
        if (!json_is_object(o) || !json_is_integer(rc) || json_integer_value(rc) > 0 || json_integer_value(rc) < -4095 ||
            !(json_is_string(error) || json_is_null(error)) || !body) {
                json_decref(o);
                *ret_error = xasprintf("%s: the kube-call child printed something that is not its outcome", what);
                return -EIO;
        }
        int r = (int)json_integer_value(rc);
        if (ret_setup) *ret_setup = r < 0 && stage && (streq(stage, "config") || streq(stage, "client"));
        if (r < 0) {
                const char *e = json_string_value(error);
                *ret_error = xstrdup(e ? e : strerror(-r));
        } else if (ret && !json_is_null(body)) {
                *ret = json_incref(body);
        }
        json_decref(o);
        return r;
}

int api_child_call_setup(const char *method, const char *path, const char *patch_type, const char *body,
                         const char *kubeconfig, unsigned timeout_ms, size_t max_body, json_t **ret, char **ret_error,
                         bool *ret_setup) {
        if (ret) *ret = NULL;
        if (ret_setup) *ret_setup = false;
        _cleanup_free_ char *what = xasprintf("%s %s", method, path);
        char timeout[32], maxb[32];
        snprintf(timeout, sizeof timeout, "%ums", timeout_ms ? timeout_ms : 1);
        snprintf(maxb, sizeof maxb, "%zu", max_body);
        const char *argv[16];
        unsigned n = 0;
        argv[n++] = "gpunode";
        argv[n++] = "kube-call";
        argv[n++] = "--timeout";
        argv[n++] = timeout;
        argv[n++] = "--max-body";
        argv[n++] = maxb;
        if (kubeconfig) {
                argv[n++] = "--kubeconfig";
                argv[n++] = kubeconfig;
        }
        argv[n++] = "--";
        argv[n++] = method;
        argv[n++] = path;
        if (patch_type) argv[n++] = patch_type;
        argv[n] = NULL;
        bool want_in = body != NULL;
        int in_fd = -1, out_fd = -1;
        pid_t pid = api_child_spawn(argv, want_in, &in_fd, &out_fd);
        if (pid < 0) {
                *ret_error = xasprintf("%s: cannot start the kube-call child: %s", what, strerror(-pid));
                return pid;
        }
        size_t out_max = max_body + API_CHILD_OUTPUT_SLACK, body_len = body ? strlen(body) : 0, written = 0;
        int64_t deadline = (int64_t)monotonic_ms() + timeout_ms + API_CHILD_GRACE_MS;
        struct buf out = { 0 };
        int r = 0;
        if (want_in && body_len == 0) {
                close(in_fd);
                in_fd = -1;
        }
        for (;;) {
                int64_t left = deadline - (int64_t)monotonic_ms();
                if (left <= 0) {
                        r = -ETIMEDOUT;
                        break;
                }
                struct pollfd p[2] = { { .fd = out_fd, .events = POLLIN }, { .fd = in_fd, .events = POLLOUT } };
                int k = poll(p, in_fd >= 0 ? 2 : 1, (int)(left > 1000 ? 1000 : left));
                if (k < 0 && errno != EINTR) {
                        r = -errno;
                        break;
                }
                if (k <= 0) continue;
                if (in_fd >= 0 && p[1].revents) {
                        ssize_t w = (p[1].revents & POLLOUT) ? write(in_fd, body + written, body_len - written) : -1;
                        if (w > 0) written += (size_t)w;
                        if (w < 0 && (errno == EINTR || errno == EAGAIN)) {
                        } else if (w <= 0 || written == body_len) {
                                close(in_fd); /* done, or the child stopped reading: it answers what it got */
                                in_fd = -1;
                        }
                }
                if (!p[0].revents) continue;
                char chunk[16384];
                ssize_t got = read(out_fd, chunk, sizeof chunk);
                if (got < 0 && (errno == EINTR || errno == EAGAIN)) continue;
                if (got < 0) {
                        r = -errno;
                        break;
                }
                if (got == 0) break; /* the child closed its stdout: it is ending */
                if (out.len + (size_t)got > out_max) {
                        r = -EFBIG;
                        break;
                }
                buf_append(&out, chunk, (size_t)got);
        }
        if (in_fd >= 0) close(in_fd);
        close(out_fd);
        int status = -1;
        if (r == 0) {
                /* its output is done: it exits at once, within the same deadline */
                pid_t w;
                while ((w = waitpid(pid, &status, WNOHANG)) == 0 && (int64_t)monotonic_ms() < deadline) {
                        struct timespec t = { 0, 2 * 1000000L };
                        nanosleep(&t, NULL);
                }
                if (w == 0) r = -ETIMEDOUT;
                else if (w < 0) r = -EIO;
        }
        if (r < 0) child_kill(pid);
        if (r == 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
                if (WIFSIGNALED(status))
                        *ret_error = xasprintf("%s: the kube-call child was killed by signal %d", what, WTERMSIG(status));
                else
                        *ret_error = xasprintf("%s: the kube-call child failed (exit status %d)", what,
                                               WIFEXITED(status) ? WEXITSTATUS(status) : -1);
                buf_free(&out);
                return -EIO;
        }
        if (r < 0) {
                buf_free(&out);
                if (r == -ETIMEDOUT)
                        *ret_error = xasprintf("%s: no answer within %u ms (the kube-call child was killed)", what,
                                               timeout_ms + API_CHILD_GRACE_MS);
                else if (r == -EFBIG)
                        *ret_error = xasprintf("%s: the kube-call child wrote more than %zu bytes (killed)", what, out_max);
                else
                        *ret_error = xasprintf("%s: cannot read the kube-call child's outcome: %s", what, strerror(-r));
                return r;
        }
        r = api_child_parse(out.data ? out.data : "", out.len, what, ret, ret_error, ret_setup);
        buf_free(&out);
        return r;
}

int api_child_call(const char *method, const char *path, const char *patch_type, const char *body, const char *kubeconfig,
                   unsigned timeout_ms, size_t max_body, json_t **ret, char **ret_error) {
        return api_child_call_setup(method, path, patch_type, body, kubeconfig, timeout_ms, max_body, ret, ret_error, NULL);
}
