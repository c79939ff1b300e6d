/* grpc_client.c: gRPC unary calls over a unix socket below the host root: connect, call, judge the answer. */
#include "grpc/grpc_client.h"
#include "grpc/grpc_h2.h"
#include "basic/hostfs.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

struct grpc_channel {
        char *path;  /* the host path */
        char *label; /* "<label> <path>" or the path: how sentences name the socket */
        size_t max_message;
        struct grpc_h2 *conn; /* NULL until a call connects, and after a failure */
};

struct grpc_channel *grpc_channel_new(const char *host_path, const char *label, size_t max_message) {
        struct grpc_channel *ch = xcalloc(1, sizeof *ch);
        ch->path = xstrdup(host_path);
        ch->label = label ? xasprintf("%s %s", label, host_path) : xstrdup(host_path);
        ch->max_message = max_message;
        return ch;
}

const char *grpc_channel_label(const struct grpc_channel *ch) {
        return ch->label;
}

void grpc_channel_free(struct grpc_channel *ch) {
        if (!ch) return;
        grpc_h2_free(ch->conn);
        free(ch->path);
        free(ch->label);
        free(ch);
}

/* Connects s to addr, waiting for a full listener queue to drain until deadline_us. Returns 0
 * or -errno (-ETIMEDOUT when the queue stayed full). */
static int connect_until(int s, const struct sockaddr_un *addr, uint64_t deadline_us) {
        for (;;) {
                if (connect(s, (const struct sockaddr *)addr, sizeof *addr) == 0) return 0;
                int e = errno;
                if (e == EINTR) continue;
                if (e == EINPROGRESS) {
                        /* Not seen for AF_UNIX on Linux, but the portable way costs little. */
                        uint64_t now = grpc_now_us();
                        if (now >= deadline_us) return -ETIMEDOUT;
                        struct pollfd p = { .fd = s, .events = POLLOUT };
                        int k = poll(&p, 1, (int)((deadline_us - now + 999) / 1000));
                        if (k < 0 && errno != EINTR) return -errno;
                        if (k <= 0) continue;
                        int err = 0;
                        socklen_t len = sizeof err;
                        if (getsockopt(s, SOL_SOCKET, SO_ERROR, &err, &len) < 0) return -errno;
                        return err ? -err : 0;
                }
                if (e != EAGAIN) return -e;
                /* The listener's queue is full (it does not accept): try again shortly. */
                if (grpc_now_us() + 10000 >= deadline_us) return -ETIMEDOUT;
                poll(NULL, 0, 10);
        }
}

int grpc_unix_connect(const char *host_path, uint64_t deadline_us, char **ret_error) {
        _cleanup_close_ int pfd = hostfs_open(host_path, O_PATH);
        if (pfd < 0) {
                if (pfd == -ENOENT) return errorf(ret_error, pfd, "there is no such socket");
                if (pfd == -EACCES) return errorf(ret_error, pfd, "permission denied on the way to it");
                return errorf(ret_error, pfd, "cannot open it: %s", strerror(-pfd));
        }
        struct stat st;
        if (fstat(pfd, &st) < 0) return errorf(ret_error, -errno, "cannot stat it: %m");
        if (!S_ISSOCK(st.st_mode)) return errorf(ret_error, -ENOTSOCK, "it is not a socket");

        _cleanup_close_ int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (s < 0) return errorf(ret_error, -errno, "cannot create a socket: %m");
        struct sockaddr_un addr = { .sun_family = AF_UNIX };
        snprintf(addr.sun_path, sizeof addr.sun_path, "/proc/self/fd/%d", pfd);
        int r = connect_until(s, &addr, deadline_us);
        if (r == -ENOENT && access("/proc/self/fd", F_OK) < 0) {
                /* No /proc: the root and path joined, when that fits in sun_path. */
                const char *root = hostfs_root();
                int n = snprintf(addr.sun_path, sizeof addr.sun_path, "%s%s", streq(root, "/") ? "" : root, host_path);
                if (n < 0 || (size_t)n >= sizeof addr.sun_path)
                        return errorf(ret_error, -ENAMETOOLONG,
                                      "without /proc, its path is too long for a unix socket address");
                r = connect_until(s, &addr, deadline_us);
        }
        if (r == -ECONNREFUSED) return errorf(ret_error, r, "nothing listens on it (connection refused)");
        if (r == -EACCES || r == -EPERM)
                return errorf(ret_error, -EACCES, "permission denied (it takes root, or the socket's group)");
        if (r == -ETIMEDOUT) return errorf(ret_error, r, "the listener accepted no connection in time");
        if (r < 0) return errorf(ret_error, r, "cannot connect: %s", strerror(-r));
        int fd = s;
        s = -1;
        return fd;
}

/* What a unary call collected from its stream. */
struct unary {
        uint8_t *msg;
        size_t len;
        unsigned count; /* messages seen */
};

static void unary_done(struct unary *u) {
        free(u->msg);
}

/* The stream's message callback: keeps the first, refuses a second. Returns 0 or -EPROTO. */
static int unary_message(uint8_t *msg, size_t len, void *userdata) {
        struct unary *u = userdata;
        if (u->count++ > 0) {
                free(msg);
                return -EPROTO;
        }
        u->msg = msg;
        u->len = len;
        return 0;
}

/* Judges a finished stream. Returns 0 when it carried grpc-status OK and exactly one whole
 * message, else a negative errno with the sentence of what was wrong in *ret_text. */
static int judge(const struct grpc_h2_stream *s, const struct unary *u, char **ret_text) {
        if (u->count > 1) return errorf(ret_text, -EPROTO, "answered more than one message to a unary call");
        if (s->error) return errorf(ret_text, s->error, "%s", s->error_text);
        if (!s->remote_end) {
                if (s->close_code == 7 /* REFUSED_STREAM */)
                        return errorf(ret_text, -EAGAIN, "refused the call (REFUSED_STREAM): try again");
                return errorf(ret_text, -ECONNRESET, "reset the call (%s)", grpc_h2_error_name(s->close_code));
        }
        if (s->http_status != 200 && !s->have_status) {
                int code = grpc_code_from_http(s->http_status);
                return errorf(ret_text, grpc_code_to_errno(code), "answered HTTP status %d, not gRPC (%s)",
                              s->http_status, grpc_code_name(code));
        }
        if (!s->have_status) return errorf(ret_text, -EPROTO, "ended the call without a grpc-status");
        if (s->status != GRPC_OK)
                return errorf(ret_text, grpc_code_to_errno(s->status), "answered %s%s%s", grpc_code_name(s->status),
                              s->status_text && *s->status_text ? ": " : "", s->status_text ? s->status_text : "");
        if (!s->grpc_content)
                return errorf(ret_text, -EPROTO, "answered content-type %s, not application/grpc",
                              s->content_type ? s->content_type : "(none)");
        if (grpc_reader_partial(&s->reader))
                return errorf(ret_text, -EPROTO, "ended the call in the middle of a message");
        if (u->count == 0) return errorf(ret_text, -EPROTO, "answered no message to a unary call");
        return 0;
}

int grpc_call_unary(struct grpc_h2 *c, const char *method, const void *req, size_t req_len, unsigned timeout_ms,
                    uint64_t deadline_us, uint8_t **ret_msg, size_t *ret_len, int *ret_status, char **ret_error) {
        _cleanup_free_ char *text = NULL;
        _cleanup_(unary_done) struct unary u = { 0 };
        _cleanup_grpc_h2_stream_ struct grpc_h2_stream *s = NULL;
        if (ret_status) *ret_status = -1;
        int r = grpc_h2_call_start(c, method, "localhost", timeout_ms, unary_message, &u, &s, ret_error);
        if (r < 0) return r;
        r = grpc_h2_stream_send(s, req, req_len, true);
        if (r < 0) return errorf(ret_error, r, "cannot send the request: %s", strerror(-r));
        r = grpc_h2_run(c, s, deadline_us, &text);
        if (r == -ETIMEDOUT) return errorf(ret_error, r, "%s within %u ms", text, timeout_ms);
        if (r < 0) return errorf(ret_error, r, "%s", text);
        if (ret_status && s->have_status) *ret_status = s->status;
        r = judge(s, &u, ret_error);
        if (r < 0) return r;
        *ret_msg = TAKE_PTR(u.msg);
        *ret_len = u.len;
        return 0;
}

int grpc_unary(struct grpc_channel *ch, const char *method, const void *req, size_t req_len, unsigned timeout_ms,
               uint8_t **ret_msg, size_t *ret_len, int *ret_status, char **ret_error) {
        uint64_t deadline = grpc_now_us() + (uint64_t)timeout_ms * 1000;
        _cleanup_free_ char *text = NULL;
        int status = -1, r;

        if (ch->conn && !grpc_h2_alive(ch->conn)) {
                grpc_h2_free(ch->conn);
                ch->conn = NULL;
        }
        if (!ch->conn) {
                int fd = grpc_unix_connect(ch->path, deadline, &text);
                if (fd < 0) {
                        r = fd;
                        goto fail;
                }
                r = grpc_h2_client_new(fd, ch->max_message, &ch->conn, &text);
                if (r < 0) goto fail;
        }
        r = grpc_call_unary(ch->conn, method, req, req_len, timeout_ms, deadline, ret_msg, ret_len, &status, &text);
        if (ret_status) *ret_status = status;
        if (r == 0) return 0;
        /* A gRPC status is an answer: the connection stays for the next call. Anything else
         * (a deadline, a cut or refused answer) leaves it in a state not worth trusting. */
        if (!(status > 0 && r == grpc_code_to_errno(status))) {
                grpc_h2_free(ch->conn);
                ch->conn = NULL;
        }
fail:
        return errorf(ret_error, r, "%s: %s: %s", ch->label, method, text ? text : strerror(-r));
}
