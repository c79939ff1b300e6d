/* exporter_http.c: the exporter's HTTP side (libmicrohttpd): /metrics from the published page, /health, an index. */
#include "exporter.h"

#include <arpa/inet.h>
#include "dl_mhd.h"
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

/* Limits that keep hostile clients from starving good ones (see README "Exporter"). */
#define HTTP_CONNECTION_LIMIT 512     /* concurrent connections in all */
#define HTTP_CONNECTION_TIMEOUT_S 10  /* idle or slow connections are closed after this */
#define HTTP_MEMORY_PER_CONNECTION (16 * 1024) /* caps the request line and headers (431 beyond) */
#define HTTP_THREADS 2

#define CONTENT_TYPE_METRICS "text/plain; version=0.0.4; charset=utf-8"

struct exp_http {
        struct MHD_Daemon *daemon;
        struct exporter *e;
        int fd;
};

/* What a /metrics response holds on to until libmicrohttpd has sent it. */
struct metrics_reply {
        struct exp_page *page;
        size_t tail_len;
        unsigned char tail[1024];
};

/* Frees a metrics_reply. Returns nothing. */
static void metrics_reply_free(void *cls) {
        struct metrics_reply *m = cls;
        exp_page_unref(m->page);
        free(m);
}

/* Returns true when the Accept-Encoding value admits gzip (a "gzip" or "*" token without q=0). */
static bool accepts_gzip(const char *v) {
        if (!v) return false;
        while (*v) {
                while (*v == ' ' || *v == '\t' || *v == ',') v++;
                const char *tok = v;
                while (*v && *v != ',' && *v != ';' && *v != ' ') v++;
                size_t n = (size_t)(v - tok);
                bool match = (n == 4 && strncasecmp(tok, "gzip", 4) == 0) || (n == 1 && *tok == '*');
                bool zero = false;
                while (*v && *v != ',') {
                        if (*v == ';') {
                                const char *q = v + 1;
                                while (*q == ' ') q++;
                                if ((q[0] == 'q' || q[0] == 'Q') && q[1] == '=') {
                                        double d = strtod(q + 2, NULL);
                                        zero = d <= 0;
                                }
                        }
                        v++;
                }
                if (match && !zero) return true;
        }
        return false;
}

/* Queues a plain response. Returns libmicrohttpd's result. */
static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned status, const char *type, const char *body) {
        struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
        if (!r) return MHD_NO;
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
        enum MHD_Result ret = MHD_queue_response(c, status, r);
        MHD_destroy_response(r);
        return ret;
}

/* Queues /metrics: the latest page plus the ages computed now. Returns libmicrohttpd's result. */
static enum MHD_Result reply_metrics(struct exp_http *h, struct MHD_Connection *c) {
        struct metrics_reply *m = malloc(sizeof *m);
        if (!m) return MHD_NO;
        m->page = exporter_page(h->e);
        struct exp_page *p = m->page;

        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        char tailbuf[700];
        struct buf tb = { 0 };
        exp_render_ages(&tb, p->have_sample ? exp_seconds_between(&p->sample_time, &now) : -1,
                        p->have_check ? exp_seconds_between(&p->check_time, &now) : -1);
        size_t tl = tb.len < sizeof tailbuf ? tb.len : sizeof tailbuf - 1;
        memcpy(tailbuf, tb.data, tl);
        buf_free(&tb);

        bool gz = p->gz && accepts_gzip(MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT_ENCODING));
        struct MHD_IoVec iov[2];
        if (gz) {
                int n = exp_gzip_close(tailbuf, tl, p->gz_crc, p->len, m->tail);
                m->tail_len = n > 0 ? (size_t)n : 0;
                iov[0] = (struct MHD_IoVec){ p->gz, p->gz_len };
        } else {
                memcpy(m->tail, tailbuf, tl);
                m->tail_len = tl;
                iov[0] = (struct MHD_IoVec){ p->text, p->len };
        }
        iov[1] = (struct MHD_IoVec){ m->tail, m->tail_len };
        struct MHD_Response *r = MHD_create_response_from_iovec(iov, 2, metrics_reply_free, m);
        if (!r) {
                metrics_reply_free(m);
                return MHD_NO;
        }
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, CONTENT_TYPE_METRICS);
        MHD_add_response_header(r, MHD_HTTP_HEADER_VARY, MHD_HTTP_HEADER_ACCEPT_ENCODING);
        if (gz) MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_ENCODING, "gzip");
        enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_OK, r);
        MHD_destroy_response(r);
        return ret;
}

static const char index_page[] =
        "<html><head><title>gpunode exporter</title></head><body>\n"
        "<h1>gpunode exporter</h1>\n"
        "<p>DCGM-exporter-compatible GPU metrics from NVML, and the node's layer diagnosis.</p>\n"
        "<ul><li><a href=\"/metrics\">/metrics</a></li><li><a href=\"/health\">/health</a></li></ul>\n"
        "</body></html>\n";

/* libmicrohttpd's request handler. Never calls NVML. Returns libmicrohttpd's result. */
static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                              const char *version, const char *upload_data, size_t *upload_data_size, void **req_cls) {
        struct exp_http *h = cls;
        static int first_call_marker;
        if (!streq(method, MHD_HTTP_METHOD_GET) && !streq(method, MHD_HTTP_METHOD_HEAD))
                return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain; charset=utf-8", "method not allowed\n");
        /* The first call only sees the headers; answer on the second, after any (ignored) body. */
        if (!*req_cls) {
                *req_cls = &first_call_marker;
                return MHD_YES;
        }
        if (*upload_data_size) {
                *upload_data_size = 0;
                return MHD_YES;
        }
        if (streq(url, "/metrics")) return reply_metrics(h, c);
        if (streq(url, "/health") || streq(url, "/healthz")) {
                char reason[512], body[600];
                bool ok = exporter_health(h->e, reason, sizeof reason);
                snprintf(body, sizeof body, "%s\n", reason);
                return reply_text(c, ok ? MHD_HTTP_OK : MHD_HTTP_SERVICE_UNAVAILABLE, "text/plain; charset=utf-8", body);
        }
        if (streq(url, "/")) return reply_text(c, MHD_HTTP_OK, "text/html; charset=utf-8", index_page);
        return reply_text(c, MHD_HTTP_NOT_FOUND, "text/plain; charset=utf-8", "not found\n");
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
                int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
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

int exp_http_start(const char *listen_addr, struct exporter *e, struct exp_http **ret) {
        _cleanup_free_ char *host = NULL, *port = NULL;
        int r = dl_mhd_open(NULL);
        if (r < 0) return r;
        r = split_listen(listen_addr, &host, &port);
        if (r < 0) return r;
        int fd = listen_socket(host, port);
        if (fd < 0) return fd;
        struct exp_http *h = xcalloc(1, sizeof *h);
        h->e = e;
        h->fd = fd;
        h->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL,
                                     0, NULL, NULL, handle, h,
                                     MHD_OPTION_LISTEN_SOCKET, fd,
                                     MHD_OPTION_THREAD_POOL_SIZE, (unsigned)HTTP_THREADS,
                                     MHD_OPTION_CONNECTION_LIMIT, (unsigned)HTTP_CONNECTION_LIMIT,
                                     MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)HTTP_CONNECTION_TIMEOUT_S,
                                     MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)HTTP_MEMORY_PER_CONNECTION,
                                     MHD_OPTION_LISTEN_BACKLOG_SIZE, (unsigned)128,
                                     MHD_OPTION_END);
        if (!h->daemon) {
                close(fd);
                free(h);
                return -EIO;
        }
        *ret = h;
        return 0;
}

struct exp_http *exp_http_stop(struct exp_http *h) {
        if (!h) return NULL;
        MHD_stop_daemon(h->daemon);
        close(h->fd);
        free(h);
        return NULL;
}
