/* http.c: the one HTTP server of a long-running gpunode, where each sink registers its routes. */
#include "daemon/http.h"
#include "basic/util.h"

struct daemon_http {
        struct http_server *server;
        struct daemon_route routes[DAEMON_MAX_ROUTES];
        size_t n_routes;
};

/* The request handler: the first route that answers, else 404. Returns nothing. */
static void handle(void *userdata, const struct http_request *req, struct http_response *r) {
        struct daemon_http *h = userdata;
        for (size_t i = 0; i < h->n_routes; i++)
                if (h->routes[i].handle(h->routes[i].userdata, req, r)) return;
        static const char not_found[] = "not found\n";
        memcpy(r->scratch, not_found, sizeof not_found - 1);
        r->status = 404;
        r->content_type = "text/plain; charset=utf-8";
        r->body[0] = (struct iovec){ r->scratch, sizeof not_found - 1 };
        r->n_body = 1;
}

int daemon_http_start(const char *listen_addr, const struct daemon_route *routes, size_t n, struct daemon_http **ret) {
        if (n > DAEMON_MAX_ROUTES) return -E2BIG;
        struct daemon_http *h = xcalloc(1, sizeof *h);
        memcpy(h->routes, routes, n * sizeof *routes);
        h->n_routes = n;
        int r = http_server_start(listen_addr, handle, h, &h->server);
        if (r < 0) {
                free(h);
                return r;
        }
        *ret = h;
        return 0;
}

struct daemon_http *daemon_http_stop(struct daemon_http *h) {
        if (!h) return NULL;
        http_server_stop(h->server);
        free(h);
        return NULL;
}
