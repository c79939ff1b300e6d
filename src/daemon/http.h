/* http.h: the one HTTP server of a long-running gpunode, where each sink registers its routes. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "basic/http_server.h"

/* A route: answers the requests it knows (returns true having filled r), never blocking, never calling
 * NVML; false: not its path. */
struct daemon_route {
        bool (*handle)(void *userdata, const struct http_request *req, struct http_response *r);
        void *userdata;
};

#define DAEMON_MAX_ROUTES 4

struct daemon_http;

/* Listens on listen_addr (HOST:PORT, [V6]:PORT or :PORT) and serves GET and HEAD through routes[0..n),
 * asked in order (the first that answers wins), 404 for a path none knows. Returns 0 and *ret; -EINVAL
 * for an address of another form, -E2BIG past DAEMON_MAX_ROUTES, or -errno when it cannot listen. */
int daemon_http_start(const char *listen_addr, const struct daemon_route *routes, size_t n, struct daemon_http **ret);

/* Stops the server (in-flight responses end) and frees h. Returns NULL. */
struct daemon_http *daemon_http_stop(struct daemon_http *h);
