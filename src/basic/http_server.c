/* http_server.c: a small HTTP/1.1 server for GET and HEAD over plain HTTP (epoll, one thread), and its request parser.
 */
/*
 * Why by hand: the exporter needs only GET and HEAD over plain HTTP, and Debian's libmicrohttpd
 * links GnuTLS, whose load alone (libgnutls, p11-kit, nettle, hogweed, gmp, tasn1, unistring, idn2:
 * about 2.3 MiB resident) costs more than half of the exporter's 4 MiB budget. What is here: one
 * thread with epoll and non-blocking sockets; keep-alive, HTTP/1.0 and pipelining; a 16 KiB cap on
 * the request head (431); a 10 s deadline to receive a request and for each step of a response (so
 * slowloris and stalled readers are closed); 512 connections at most, and half of them from one
 * client address, so one misbehaving scraper cannot starve the others (beyond: 503 and close);
 * Content-Length responses written with one sendmsg from the handler's buffers (zero copy: the
 * handler keeps them alive until release is called). Requests with a body are answered, then closed.
 * Only the connections waiting on a partial request or a partial response hold heap memory.
 */
#include "basic/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>

#include "basic/util.h"

/* ---- the request parser ---- */

/* Returns true for a token character (RFC 9110 tchar). */
static bool is_tchar(unsigned char c) {
        if (c >= '0' && c <= '9') return true;
        if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
        return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Returns true when the n bytes at s equal the NUL-terminated word w, ignoring ASCII case. */
static bool word_eq(const char *s, size_t n, const char *w) {
        return strlen(w) == n && strncasecmp(s, w, n) == 0;
}

/* Returns true when the comma-separated list v[0..n) holds the token tok (any case). */
static bool list_has_token(const char *v, size_t n, const char *tok) {
        size_t i = 0;
        while (i < n) {
                while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ',')) i++;
                size_t start = i;
                while (i < n && v[i] != ',' && v[i] != ' ' && v[i] != '\t' && v[i] != ';') i++;
                if (word_eq(v + start, i - start, tok)) return true;
                while (i < n && v[i] != ',') i++;
        }
        return false;
}

bool http_accepts_gzip(const char *v, size_t n) {
        size_t i = 0;
        while (i < n) {
                while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ',')) i++;
                size_t start = i;
                while (i < n && v[i] != ',' && v[i] != ';' && v[i] != ' ' && v[i] != '\t') i++;
                bool match = word_eq(v + start, i - start, "gzip") || word_eq(v + start, i - start, "*");
                bool zero = false;
                while (i < n && v[i] != ',') {
                        if (v[i] == ';') {
                                size_t q = i + 1;
                                while (q < n && (v[q] == ' ' || v[q] == '\t')) q++;
                                if (q + 1 < n && (v[q] == 'q' || v[q] == 'Q') && v[q + 1] == '=') {
                                        /* A weight is zero when it has no digit other than 0 ("0", "0.000"). */
                                        q += 2;
                                        bool nonzero = false, digit = false;
                                        while (q < n && ((v[q] >= '0' && v[q] <= '9') || v[q] == '.')) {
                                                if (v[q] >= '1' && v[q] <= '9') nonzero = true;
                                                if (v[q] != '.') digit = true;
                                                q++;
                                        }
                                        zero = digit && !nonzero;
                                        i = q;
                                        continue;
                                }
                        }
                        i++;
                }
                if (match && !zero) return true;
        }
        return false;
}

/* Returns the length of the line at s (up to, not including, its LF) within n bytes, or n when there is no LF. */
static size_t line_len(const char *s, size_t n) {
        const char *lf = memchr(s, '\n', n);
        return lf ? (size_t)(lf - s) : n;
}

/* Parses the request line s[0..n) (without CR LF) into req. Returns 0, -EBADMSG or -EPROTONOSUPPORT. */
static int parse_request_line(const char *s, size_t n, struct http_request *req) {
        size_t i = 0;
        while (i < n && is_tchar((unsigned char)s[i])) i++;
        if (i == 0 || i > 32 || i >= n || s[i] != ' ') return -EBADMSG;
        req->method_str = s;
        req->method_len = i;
        req->method = word_eq(s, i, "GET") && memcmp(s, "GET", 3) == 0     ? HTTP_GET
                      : word_eq(s, i, "HEAD") && memcmp(s, "HEAD", 4) == 0 ? HTTP_HEAD
                                                                           : HTTP_OTHER;
        size_t t = ++i;
        while (i < n && (unsigned char)s[i] > 0x20 && (unsigned char)s[i] < 0x7f) i++;
        if (i == t || i >= n || s[i] != ' ') return -EBADMSG;
        const char *target = s + t;
        size_t tlen = i - t;
        i++;
        /* HTTP-version = "HTTP/" DIGIT "." DIGIT, and nothing after it. */
        if (n - i != 8 || memcmp(s + i, "HTTP/", 5) != 0 || s[i + 6] != '.' || s[i + 5] < '0' || s[i + 5] > '9' ||
            s[i + 7] < '0' || s[i + 7] > '9')
                return -EBADMSG;
        if (s[i + 5] != '1' || s[i + 7] > '1') return -EPROTONOSUPPORT;
        req->version_minor = (unsigned)(s[i + 7] - '0');

        /* origin-form "/path?query", absolute-form "http://host/path", asterisk-form "*". */
        if (tlen >= 7 &&
            (strncasecmp(target, "http://", 7) == 0 || (tlen >= 8 && strncasecmp(target, "https://", 8) == 0))) {
                size_t skip = target[4] == ':' ? 7 : 8;
                const char *slash = memchr(target + skip, '/', tlen - skip);
                if (!slash) {
                        target = "/";
                        tlen = 1;
                } else {
                        tlen -= (size_t)(slash - target);
                        target = slash;
                }
        } else if (target[0] != '/' && !(tlen == 1 && target[0] == '*')) {
                return -EBADMSG;
        }
        const char *q = memchr(target, '?', tlen);
        req->path = target;
        req->path_len = q ? (size_t)(q - target) : tlen;
        return 0;
}

int http_parse_request(const char *data, size_t len, struct http_request *ret) {
        struct http_request req = { 0 };
        size_t lim = len < HTTP_MAX_HEAD ? len : HTTP_MAX_HEAD;
        size_t pos = 0;
        /* Empty lines before the request line are ignored (RFC 9112 2.2); they count toward the cap. */
        while (pos < lim && (data[pos] == '\r' || data[pos] == '\n')) {
                if (data[pos] == '\r' && (pos + 1 >= lim || data[pos + 1] != '\n')) break;
                pos += data[pos] == '\r' ? 2 : 1;
        }
        if (pos >= lim) return len >= HTTP_MAX_HEAD ? -E2BIG : 0;

        size_t n = line_len(data + pos, lim - pos);
        if (pos + n >= lim) {
                /* No whole request line yet: refuse early what can never become one (binary, TLS). */
                size_t i = pos;
                while (i < lim && is_tchar((unsigned char)data[i])) i++;
                if (i < lim && data[i] != ' ') return -EBADMSG;
                if (i - pos > 32) return -EBADMSG;
                return len >= HTTP_MAX_HEAD ? -E2BIG : 0;
        }
        size_t ln = n;
        if (ln > 0 && data[pos + ln - 1] == '\r') ln--;
        int r = parse_request_line(data + pos, ln, &req);
        if (r < 0) return r;
        pos += n + 1;

        bool close = false, keep_alive = false, have_length = false, have_host = false;
        uint64_t length = 0;
        unsigned fields = 0;
        for (;;) {
                if (pos >= lim) return len >= HTTP_MAX_HEAD ? -E2BIG : 0;
                n = line_len(data + pos, lim - pos);
                if (pos + n >= lim) return len >= HTTP_MAX_HEAD ? -E2BIG : 0;
                const char *s = data + pos;
                ln = n;
                if (ln > 0 && s[ln - 1] == '\r') ln--;
                pos += n + 1;
                if (ln == 0) break; /* the empty line ending the head */
                if (++fields > HTTP_MAX_HEADERS) return -E2BIG;
                /* field-name ":" OWS field-value OWS; no space before the colon, no obs-fold. */
                size_t i = 0;
                while (i < ln && is_tchar((unsigned char)s[i])) i++;
                if (i == 0 || i >= ln || s[i] != ':') return -EBADMSG;
                const char *name = s;
                size_t name_len = i++;
                while (i < ln && (s[i] == ' ' || s[i] == '\t')) i++;
                size_t vend = ln;
                while (vend > i && (s[vend - 1] == ' ' || s[vend - 1] == '\t')) vend--;
                for (size_t k = i; k < vend; k++) {
                        unsigned char c = (unsigned char)s[k];
                        if ((c < 0x20 && c != '\t') || c == 0x7f) return -EBADMSG;
                }
                const char *v = s + i;
                size_t vn = vend - i;
                if (word_eq(name, name_len, "Connection")) {
                        if (list_has_token(v, vn, "close")) close = true;
                        if (list_has_token(v, vn, "keep-alive")) keep_alive = true;
                } else if (word_eq(name, name_len, "Accept-Encoding")) {
                        if (http_accepts_gzip(v, vn)) req.accept_gzip = true;
                } else if (word_eq(name, name_len, "Content-Length")) {
                        uint64_t l = 0;
                        if (vn == 0 || vn > 18) return -EBADMSG;
                        for (size_t k = 0; k < vn; k++) {
                                if (v[k] < '0' || v[k] > '9') return -EBADMSG;
                                l = l * 10 + (uint64_t)(v[k] - '0');
                        }
                        if (have_length && l != length) return -EBADMSG;
                        have_length = true;
                        length = l;
                } else if (word_eq(name, name_len, "Transfer-Encoding")) {
                        req.has_body = true;
                } else if (word_eq(name, name_len, "Host")) {
                        if (have_host) return -EBADMSG;
                        have_host = true;
                }
        }
        /* HTTP/1.1 requires exactly one Host (RFC 9112 3.2). */
        if (req.version_minor == 1 && !have_host) return -EBADMSG;
        if (length > 0) req.has_body = true;
        req.keep_alive = req.version_minor == 1 ? !close : keep_alive && !close;
        req.head_len = pos;
        *ret = req;
        return (int)pos;
}

/* ---- the server ---- */

/* A response that did not fit into the socket at once: what is left, with copies of the small parts. */
struct out {
        struct iovec iov[3];
        unsigned n_iov, cur;
        void (*release)(void *arg);
        void *release_arg;
        char head[512];
        char scratch[HTTP_SCRATCH_SIZE];
};

struct conn {
        int fd;                   /* -1 once closed (freed after the event batch) */
        struct conn *prev, *next; /* the deadline list (oldest first), or the dead list */
        bool listed;              /* on the deadline list (every live connection once accepted) */
        uint64_t deadline_ms;
        struct in6_addr peer; /* the client's address, IPv4 as ::ffff:a.b.c.d */
        char *in;             /* bytes of a request not yet complete, or pipelined behind a response */
        size_t in_len;
        struct out *out; /* the response being sent, or NULL */
        bool eof;        /* the peer shut its sending side */
        bool closing;    /* close once out is sent */
        bool writing;    /* registered for EPOLLOUT instead of EPOLLIN */
};

struct http_server {
        int listen_fd, epoll_fd, wake_fd;
        unsigned port;
        http_handler_t handler;
        void *userdata;
        pthread_t thread;
        struct conn *head, *tail; /* live connections by deadline */
        struct conn *dead;        /* closed during this event batch */
        unsigned n_conns;
        bool accept_paused;
        uint64_t accept_resume_ms;
        struct http_response resp; /* the response being built (one thread) */
        char in[HTTP_MAX_HEAD];    /* where requests are parsed */
};

/* Sentinels in epoll_event.data for the listening socket and the wake-up eventfd. */
static char LISTEN_TAG, WAKE_TAG;

/* Unlinks c from the deadline list; a connection not on it (just accepted, or closed) is left as it
 * is, and the list too. Returns nothing. */
static void list_unlink(struct http_server *s, struct conn *c) {
        if (!c->listed) return;
        if (c->prev)
                c->prev->next = c->next;
        else
                s->head = c->next;
        if (c->next)
                c->next->prev = c->prev;
        else
                s->tail = c->prev;
        c->prev = c->next = NULL;
        c->listed = false;
}

/* Gives c a new deadline, now + HTTP_TIMEOUT_MS, keeping the list sorted (every deadline is now plus
 * the same constant, so the newest goes last). Returns nothing. */
static void conn_touch(struct http_server *s, struct conn *c) {
        list_unlink(s, c);
        c->deadline_ms = monotonic_ms() + HTTP_TIMEOUT_MS;
        c->prev = s->tail;
        if (s->tail)
                s->tail->next = c;
        else
                s->head = c;
        s->tail = c;
        c->listed = true;
}

/* Releases what out holds and frees it. Returns NULL. */
static struct out *out_free(struct out *o) {
        if (!o) return NULL;
        if (o->release) o->release(o->release_arg);
        free(o);
        return NULL;
}

/* Closes c and moves it to the dead list (freed after the batch). Returns nothing. */
static void conn_close(struct http_server *s, struct conn *c) {
        if (c->fd < 0) return;
        list_unlink(s, c);
        close(c->fd);
        c->fd = -1;
        c->out = out_free(c->out);
        free(c->in);
        c->in = NULL;
        c->in_len = 0;
        c->next = s->dead;
        s->dead = c;
        s->n_conns--;
}

/* Registers c for reading or for writing. Returns 0 or -errno. */
static int conn_watch(struct http_server *s, struct conn *c, bool writing) {
        if (c->writing == writing) return 0;
        struct epoll_event ev = { .events = writing ? EPOLLOUT : EPOLLIN, .data.ptr = c };
        if (epoll_ctl(s->epoll_fd, EPOLL_CTL_MOD, c->fd, &ev) < 0) return -errno;
        c->writing = writing;
        return 0;
}

/* Returns the reason phrase of status. */
static const char *status_text(unsigned status) {
        switch (status) {
        case 200: return "OK";
        case 400: return "Bad Request";
        case 404: return "Not Found";
        case 405: return "Method Not Allowed";
        case 431: return "Request Header Fields Too Large";
        case 500: return "Internal Server Error";
        case 503: return "Service Unavailable";
        case 505: return "HTTP Version Not Supported";
        default: return "Unknown";
        }
}

/* Sends what is left of c->out. Returns 1 when it was all sent, 0 when the socket is full (c waits
 * for EPOLLOUT), or -errno when the connection failed. */
static int conn_flush(struct http_server *s, struct conn *c) {
        struct out *o = c->out;
        while (o->cur < o->n_iov) {
                struct msghdr m = { .msg_iov = o->iov + o->cur, .msg_iovlen = o->n_iov - o->cur };
                ssize_t n = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
                if (n < 0) {
                        if (errno == EINTR) continue;
                        if (errno == EAGAIN || errno == EWOULDBLOCK) return 0;
                        return -errno;
                }
                conn_touch(s, c); /* progress */
                size_t left = (size_t)n;
                while (o->cur < o->n_iov && left >= o->iov[o->cur].iov_len) left -= o->iov[o->cur++].iov_len;
                if (o->cur < o->n_iov) {
                        o->iov[o->cur].iov_base = (char *)o->iov[o->cur].iov_base + left;
                        o->iov[o->cur].iov_len -= left;
                }
        }
        return 1;
}

/*
 * Sends head and resp's body (none when head_only) on c, at once when the socket takes it all, else
 * keeps the rest in c->out. Takes over resp's release. Returns 1 when all was sent, 0 when some is
 * waiting, or -errno when the connection failed (resp is released).
 */
static int conn_send(struct http_server *s, struct conn *c, const char *head, size_t head_len,
                     struct http_response *resp, bool head_only) {
        struct iovec iov[3] = { { (void *)head, head_len } };
        unsigned n_iov = 1;
        size_t total = head_len;
        for (unsigned i = 0; !head_only && i < resp->n_body && i < 2; i++)
                if (resp->body[i].iov_len) {
                        iov[n_iov++] = resp->body[i];
                        total += resp->body[i].iov_len;
                }
        ssize_t n;
        do {
                struct msghdr m = { .msg_iov = iov, .msg_iovlen = n_iov };
                n = sendmsg(c->fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
        } while (n < 0 && errno == EINTR);
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
                int r = -errno;
                if (resp->release) resp->release(resp->release_arg);
                return r;
        }
        if ((size_t)(n < 0 ? 0 : n) == total) {
                if (resp->release) resp->release(resp->release_arg);
                return 1;
        }
        /* The rest waits: keep copies of the head and the scratch bytes, and the handler's reference. */
        struct out *o = xmalloc(sizeof *o);
        memcpy(o->head, head, head_len);
        o->release = resp->release;
        o->release_arg = resp->release_arg;
        o->n_iov = n_iov;
        o->cur = 0;
        for (unsigned i = 0; i < n_iov; i++) {
                o->iov[i] = iov[i];
                char *b = iov[i].iov_base;
                if (i == 0) {
                        o->iov[i].iov_base = o->head;
                } else if (b >= resp->scratch && b < resp->scratch + sizeof resp->scratch) {
                        size_t off = (size_t)(b - resp->scratch);
                        memcpy(o->scratch + off, b, iov[i].iov_len);
                        o->iov[i].iov_base = o->scratch + off;
                }
        }
        size_t left = n < 0 ? 0 : (size_t)n;
        while (o->cur < o->n_iov && left >= o->iov[o->cur].iov_len) left -= o->iov[o->cur++].iov_len;
        o->iov[o->cur].iov_base = (char *)o->iov[o->cur].iov_base + left;
        o->iov[o->cur].iov_len -= left;
        c->out = o;
        if (n > 0) conn_touch(s, c);
        int r = conn_watch(s, c, true);
        return r < 0 ? r : 0;
}

/* Answers an error status with a short text body and marks c to close. Returns conn_send's result. */
static int send_error(struct http_server *s, struct conn *c, unsigned status, bool head_only) {
        struct http_response *resp = &s->resp;
        char head[256];
        const char *text = status_text(status);
        int n = snprintf(head, sizeof head,
                         "HTTP/1.1 %u %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %zu\r\n"
                         "Connection: close\r\n\r\n",
                         status, text, strlen(text) + 1);
        int m = snprintf(resp->scratch, sizeof resp->scratch, "%s\n", text);
        resp->body[0] = (struct iovec){ resp->scratch, (size_t)m };
        resp->n_body = 1;
        resp->release = NULL;
        c->closing = true;
        return conn_send(s, c, head, (size_t)n, resp, head_only);
}

/* Answers req on c through the handler. Returns conn_send's result. */
static int respond(struct http_server *s, struct conn *c, const struct http_request *req) {
        struct http_response *resp = &s->resp;
        resp->status = 0;
        resp->content_type = "text/plain; charset=utf-8";
        resp->content_encoding = NULL;
        resp->vary_accept_encoding = false;
        resp->n_body = 0;
        resp->release = NULL;
        resp->release_arg = NULL;
        bool head_only = req->method == HTTP_HEAD;
        const char *extra = "";
        if (req->method == HTTP_OTHER) {
                int m = snprintf(resp->scratch, sizeof resp->scratch, "method not allowed\n");
                resp->status = 405;
                resp->body[0] = (struct iovec){ resp->scratch, (size_t)m };
                resp->n_body = 1;
                extra = "Allow: GET, HEAD\r\n";
        } else {
                s->handler(s->userdata, req, resp);
                if (resp->status == 0) {
                        if (resp->release) resp->release(resp->release_arg);
                        return send_error(s, c, 500, head_only);
                }
        }
        if (!req->keep_alive || req->has_body) c->closing = true;
        size_t len = 0;
        for (unsigned i = 0; i < resp->n_body && i < 2; i++) len += resp->body[i].iov_len;
        char head[512];
        int n = snprintf(head, sizeof head, "HTTP/1.1 %u %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s%s%s%s%s",
                         resp->status, status_text(resp->status), resp->content_type, len,
                         resp->content_encoding ? "Content-Encoding: " : "",
                         resp->content_encoding ? resp->content_encoding : "", resp->content_encoding ? "\r\n" : "",
                         resp->vary_accept_encoding ? "Vary: Accept-Encoding\r\n" : "", extra);
        if (n < 0 || (size_t)n + 40 > sizeof head) {
                if (resp->release) resp->release(resp->release_arg);
                return send_error(s, c, 500, head_only);
        }
        n += snprintf(head + n, sizeof head - (size_t)n, "%s\r\n",
                      c->closing                ? "Connection: close\r\n"
                      : req->version_minor == 0 ? "Connection: keep-alive\r\n"
                                                : "");
        return conn_send(s, c, head, (size_t)n, resp, head_only);
}

/*
 * Answers the complete requests in buf[0..len) (s->in) one after the other, stopping at one whose
 * response has to wait for the socket; keeps what is left in c->in. Closes c when it is done with it.
 * Returns nothing.
 */
static void conn_process(struct http_server *s, struct conn *c, size_t len) {
        const char *buf = s->in;
        size_t off = 0;
        while (off < len && !c->out && !c->closing) {
                struct http_request req;
                int r = http_parse_request(buf + off, len - off, &req);
                if (r == 0) break;
                int sr;
                if (r < 0) {
                        off = len;
                        sr = send_error(s, c, r == -E2BIG ? 431 : r == -EPROTONOSUPPORT ? 505 : 400, false);
                } else {
                        off += (size_t)r;
                        sr = respond(s, c, &req);
                }
                if (sr < 0) {
                        conn_close(s, c);
                        return;
                }
                if (sr == 1) conn_touch(s, c); /* a response done: the next request gets a full timeout */
        }
        if (c->out) {
                if (off < len && !c->closing) {
                        c->in = xmalloc(len - off);
                        memcpy(c->in, buf + off, len - off);
                        c->in_len = len - off;
                }
                return; /* EPOLLOUT carries on */
        }
        if (c->closing || c->eof) {
                conn_close(s, c);
                return;
        }
        if (off < len) {
                c->in = xmalloc(len - off);
                memcpy(c->in, buf + off, len - off);
                c->in_len = len - off;
        }
        if (conn_watch(s, c, false) < 0) conn_close(s, c);
}

/* Reads from c and answers what arrived. Returns nothing. */
static void conn_read(struct http_server *s, struct conn *c) {
        size_t len = 0;
        if (c->in) {
                memcpy(s->in, c->in, c->in_len);
                len = c->in_len;
                free(c->in);
                c->in = NULL;
                c->in_len = 0;
        }
        ssize_t n;
        do n = recv(c->fd, s->in + len, sizeof s->in - len, 0);
        while (n < 0 && errno == EINTR);
        if (n < 0) {
                if (errno != EAGAIN && errno != EWOULDBLOCK) {
                        conn_close(s, c);
                        return;
                }
                n = 0;
                if (len == 0) return;
        } else if (n == 0) {
                c->eof = true;
        }
        conn_process(s, c, len + (size_t)n);
}

/* Handles EPOLLOUT on c: sends on, then answers requests that waited behind the response. Returns nothing. */
static void conn_write(struct http_server *s, struct conn *c) {
        int r = conn_flush(s, c);
        if (r == 0) return;
        c->out = out_free(c->out);
        if (r < 0 || c->closing) {
                conn_close(s, c);
                return;
        }
        conn_touch(s, c);
        size_t len = c->in_len;
        if (c->in) {
                memcpy(s->in, c->in, len);
                free(c->in);
                c->in = NULL;
                c->in_len = 0;
        }
        conn_process(s, c, len);
}

/* Returns the address in sa as an IPv6 address (IPv4 mapped to ::ffff:a.b.c.d; :: for another family). */
static struct in6_addr peer_address(const struct sockaddr_storage *sa) {
        struct in6_addr a = { 0 };
        if (sa->ss_family == AF_INET6) {
                a = ((const struct sockaddr_in6 *)sa)->sin6_addr;
        } else if (sa->ss_family == AF_INET) {
                a.s6_addr[10] = a.s6_addr[11] = 0xff;
                memcpy(a.s6_addr + 12, &((const struct sockaddr_in *)sa)->sin_addr, 4);
        }
        return a;
}

/* Returns how many live connections come from peer, counting up to HTTP_MAX_PER_ADDRESS at most. Walks
 * the deadline list, which holds every live connection. Cannot fail. */
static unsigned conns_from(const struct http_server *s, const struct in6_addr *peer) {
        unsigned n = 0;
        for (const struct conn *c = s->head; c && n < HTTP_MAX_PER_ADDRESS; c = c->next)
                if (memcmp(&c->peer, peer, sizeof *peer) == 0) n++;
        return n;
}

/* Answers 503 with the line why on fd, a connection just accepted, without waiting, and closes fd.
 * Returns nothing; a client that cannot take the answer at once just sees the connection closed. */
static void refuse(int fd, const char *why) {
        char msg[256];
        int n = snprintf(msg, sizeof msg,
                         "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
                         "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                         strlen(why), why);
        if (n > 0 && (size_t)n < sizeof msg) (void)!send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
        close(fd);
}

/* Accepts the waiting connections (a bounded number per call), refusing those past HTTP_MAX_CONNECTIONS
 * or past HTTP_MAX_PER_ADDRESS from one client address. Returns nothing. */
static void accept_some(struct http_server *s) {
        for (int i = 0; i < 64; i++) {
                struct sockaddr_storage sa = { 0 };
                socklen_t sl = sizeof sa;
                int fd = accept4(s->listen_fd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
                if (fd < 0) {
                        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                                /* Out of descriptors: stop accepting for a moment rather than spin. */
                                epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, s->listen_fd, NULL);
                                s->accept_paused = true;
                                s->accept_resume_ms = monotonic_ms() + 100;
                        }
                        return;
                }
                if (s->n_conns >= HTTP_MAX_CONNECTIONS) {
                        refuse(fd, "too many connections\n");
                        continue;
                }
                struct in6_addr peer = peer_address(&sa);
                /* Counting walks the list, so only once one address could have its share at all. */
                if (s->n_conns >= HTTP_MAX_PER_ADDRESS && conns_from(s, &peer) >= HTTP_MAX_PER_ADDRESS) {
                        refuse(fd, "too many connections from this address\n");
                        continue;
                }
                int one = 1;
                setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                struct conn *c = xcalloc(1, sizeof *c);
                c->fd = fd;
                c->peer = peer;
                struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
                if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
                        close(fd);
                        free(c);
                        continue;
                }
                s->n_conns++;
                conn_touch(s, c);
        }
}

/* The server thread: waits on epoll, answers, expires connections past their deadline, until woken
 * through wake_fd. Returns NULL. */
static void *server_main(void *arg) {
        struct http_server *s = arg;
        struct epoll_event events[64];
        for (;;) {
                int timeout = -1;
                uint64_t now = monotonic_ms();
                if (s->head) timeout = s->head->deadline_ms > now ? (int)(s->head->deadline_ms - now) + 1 : 0;
                if (s->accept_paused) {
                        int t = s->accept_resume_ms > now ? (int)(s->accept_resume_ms - now) + 1 : 0;
                        if (timeout < 0 || t < timeout) timeout = t;
                }
                int n = epoll_wait(s->epoll_fd, events, (int)ELEMENTSOF(events), timeout);
                if (n < 0 && errno != EINTR) break;
                bool stop = false;
                for (int i = 0; i < n; i++) {
                        void *p = events[i].data.ptr;
                        if (p == &WAKE_TAG) {
                                stop = true;
                        } else if (p == &LISTEN_TAG) {
                                accept_some(s);
                        } else {
                                struct conn *c = p;
                                if (c->fd < 0) continue;
                                if (c->writing)
                                        conn_write(s, c);
                                else
                                        conn_read(s, c);
                        }
                }
                now = monotonic_ms();
                while (s->head && s->head->deadline_ms <= now) conn_close(s, s->head);
                while (s->dead) {
                        struct conn *c = s->dead;
                        s->dead = c->next;
                        free(c);
                }
                if (s->accept_paused && now >= s->accept_resume_ms) {
                        struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &LISTEN_TAG };
                        if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->listen_fd, &ev) == 0)
                                s->accept_paused = false;
                        else
                                s->accept_resume_ms = now + 100;
                }
                if (stop) break;
        }
        while (s->head) conn_close(s, s->head);
        while (s->dead) {
                struct conn *c = s->dead;
                s->dead = c->next;
                free(c);
        }
        return NULL;
}

/* Opens, binds and listens on a socket for host (NULL: every address) and port. Returns the fd or -errno. */
static int listen_socket(const char *host, const char *port) {
        struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
        struct addrinfo *res = NULL;
        hints.ai_family = host ? AF_UNSPEC : AF_INET6;
        int r = getaddrinfo(host, port, &hints, &res);
        if (r != 0 && !host) {
                hints.ai_family = AF_INET;
                r = getaddrinfo(host, port, &hints, &res);
        }
        if (r != 0) return -EINVAL;
        int err = -EADDRNOTAVAIL;
        for (struct addrinfo *a = res; a; a = a->ai_next) {
                int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, a->ai_protocol);
                if (fd < 0) {
                        err = -errno;
                        /* No IPv6 in this network namespace: every address means IPv4's. */
                        if (!host && a->ai_family == AF_INET6) {
                                freeaddrinfo(res);
                                return listen_socket("0.0.0.0", port);
                        }
                        continue;
                }
                int one = 1, zero = 0;
                setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
                if (a->ai_family == AF_INET6 && !host) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
                if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, 128) == 0) {
                        freeaddrinfo(res);
                        return fd;
                }
                err = -errno;
                close(fd);
                if (!host && a->ai_family == AF_INET6 && err == -EADDRNOTAVAIL) {
                        freeaddrinfo(res);
                        return listen_socket("0.0.0.0", port);
                }
        }
        freeaddrinfo(res);
        return err;
}

/* Splits "HOST:PORT", "[V6]:PORT" or ":PORT" into host (NULL for every address) and port. Returns 0 or -EINVAL. */
static int split_listen(const char *s, char **ret_host, char **ret_port) {
        const char *colon;
        char *host = NULL;
        if (s[0] == '[') {
                const char *end = strchr(s, ']');
                if (!end || end[1] != ':') return -EINVAL;
                host = xstrndup(s + 1, (size_t)(end - s - 1));
                colon = end + 1;
        } else {
                colon = strrchr(s, ':');
                if (!colon) return -EINVAL;
                if (colon > s) host = xstrndup(s, (size_t)(colon - s));
        }
        uint64_t port;
        if (parse_u64(colon + 1, 10, &port) < 0 || port > 65535) {
                free(host);
                return -EINVAL;
        }
        *ret_host = host;
        *ret_port = xstrdup(colon + 1);
        return 0;
}

int http_server_start(const char *listen_addr, http_handler_t handler, void *userdata, struct http_server **ret) {
        _cleanup_free_ char *host = NULL, *port = NULL;
        int r = split_listen(listen_addr, &host, &port);
        if (r < 0) return r;
        int fd = listen_socket(host, port);
        if (fd < 0) return fd;
        struct http_server *s = xcalloc(1, sizeof *s);
        s->listen_fd = fd;
        s->handler = handler;
        s->userdata = userdata;
        s->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
        s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        struct sockaddr_storage ss;
        socklen_t sl = sizeof ss;
        if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
                s->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                         : ((struct sockaddr_in *)&ss)->sin_port);
        r = -errno;
        if (s->epoll_fd >= 0 && s->wake_fd >= 0) {
                struct epoll_event lev = { .events = EPOLLIN, .data.ptr = &LISTEN_TAG };
                struct epoll_event wev = { .events = EPOLLIN, .data.ptr = &WAKE_TAG };
                r = 0;
                if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fd, &lev) < 0 ||
                    epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->wake_fd, &wev) < 0)
                        r = -errno;
                if (r == 0) r = -pthread_create(&s->thread, NULL, server_main, s);
        }
        if (r < 0) {
                if (s->epoll_fd >= 0) close(s->epoll_fd);
                if (s->wake_fd >= 0) close(s->wake_fd);
                close(fd);
                free(s);
                return r;
        }
        *ret = s;
        return 0;
}

unsigned http_server_port(const struct http_server *s) {
        return s ? s->port : 0;
}

struct http_server *http_server_stop(struct http_server *s) {
        if (!s) return NULL;
        uint64_t one = 1;
        (void)!write(s->wake_fd, &one, sizeof one);
        pthread_join(s->thread, NULL);
        close(s->listen_fd);
        close(s->epoll_fd);
        close(s->wake_fd);
        free(s);
        return NULL;
}
