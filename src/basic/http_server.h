/* http_server.h: a small HTTP/1.1 server for GET and HEAD over plain HTTP (epoll, one thread), and its request parser.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* Limits that keep hostile clients from starving good ones (README "Exporter"). */
#define HTTP_MAX_HEAD        (16u * 1024u)              /* request line and headers; larger: 431 and close */
#define HTTP_MAX_CONNECTIONS 512u                       /* beyond: accepted, answered 503 and closed */
#define HTTP_MAX_PER_ADDRESS (HTTP_MAX_CONNECTIONS / 2) /* from one client address; beyond: 503 and closed */
#define HTTP_TIMEOUT_MS      10000u /* a request must arrive, and a response progress, within this */
#define HTTP_MAX_HEADERS     100u   /* header fields in one request; more: 431 */
#define HTTP_SCRATCH_SIZE    1024u  /* bytes a handler may fill per response (struct http_response) */

enum http_method { HTTP_GET, HTTP_HEAD, HTTP_OTHER };

/* A parsed request head. Pointers point into the parsed buffer and are not NUL-terminated. */
struct http_request {
        enum http_method method;
        const char *method_str; /* the method token as sent */
        size_t method_len;
        const char *path; /* the target's path, query string removed ("/metrics") */
        size_t path_len;
        unsigned version_minor; /* HTTP/1.<minor> (0 or 1) */
        bool keep_alive;        /* the client allows the connection to stay open after the response */
        bool accept_gzip;       /* Accept-Encoding admits gzip */
        bool has_body;          /* Content-Length > 0 or Transfer-Encoding: the server answers, then closes */
        size_t head_len;        /* bytes of request line and headers, final CRLF CRLF included */
};

/*
 * Parses the request head at the start of data[0..len) (a line may end in CRLF or bare LF). Returns the
 * head's length (> 0) with *ret filled in when it is complete; 0 when more bytes are needed (and len is
 * still under HTTP_MAX_HEAD); -EBADMSG for a malformed request (400); -E2BIG when the head passes
 * HTTP_MAX_HEAD bytes or HTTP_MAX_HEADERS fields (431); -EPROTONOSUPPORT for a version other than
 * HTTP/1.0 or 1.1 (505). Never reads past data + len; linear time.
 */
int http_parse_request(const char *data, size_t len, struct http_request *ret);

/* Returns true when an Accept-Encoding value (n bytes) admits gzip: a "gzip" or "*" token without q=0. */
bool http_accepts_gzip(const char *v, size_t n);

/* A response, filled in by the handler. The body may point into scratch or into memory kept alive
 * until release(release_arg) is called, which happens once the response was sent or dropped. */
struct http_response {
        unsigned status;              /* 200, 404, ... */
        const char *content_type;     /* a static string */
        const char *content_encoding; /* NULL, or a static string ("gzip") */
        bool vary_accept_encoding;
        struct iovec body[2];
        unsigned n_body;
        void (*release)(void *arg); /* NULL: nothing to release */
        void *release_arg;
        char scratch[HTTP_SCRATCH_SIZE];
};

/* Handles a GET or HEAD request: fills resp (status 0 is answered 500). Runs on the server thread and
 * must not block. For HEAD the server sends only the headers. Returns nothing. */
typedef void (*http_handler_t)(void *userdata, const struct http_request *req, struct http_response *resp);

struct http_server;

/*
 * Listens on listen ("HOST:PORT", "[V6]:PORT"; ":PORT" is every IPv6 and IPv4 address) and serves
 * requests with handler on one thread. Returns 0 and *ret, -EINVAL for a bad address, or -errno when
 * the socket cannot be bound or the thread started.
 */
int http_server_start(const char *listen, http_handler_t handler, void *userdata, struct http_server **ret);

/* Returns the port the server listens on (useful after ":0"), or 0 when unknown. */
unsigned http_server_port(const struct http_server *s);

/* Stops the thread, closes every connection (releasing responses in flight) and frees s. Returns NULL. */
struct http_server *http_server_stop(struct http_server *s);
