/* http.c: the exporter's routes on the daemon's HTTP server: /metrics from the published page, /health, an index. */
#include "exporter/exporter.h"

#include "basic/http_server.h"

#define CONTENT_TYPE_METRICS "text/plain; version=0.0.4; charset=utf-8"
#define CONTENT_TYPE_TEXT    "text/plain; charset=utf-8"

/* Drops the page reference a /metrics response held while it was sent. Returns nothing. */
static void release_page(void *arg) {
        exp_page_unref(arg);
}

/* Fills r with a text body copied into its scratch. Returns nothing. */
static void reply_text(struct http_response *r, unsigned status, const char *type, const char *body) {
        size_t n = strlen(body);
        if (n > sizeof r->scratch) n = sizeof r->scratch;
        memcpy(r->scratch, body, n);
        r->status = status;
        r->content_type = type;
        r->body[0] = (struct iovec){ r->scratch, n };
        r->n_body = 1;
}

/* Fills r with /metrics: the latest page, sent from the page's own buffer (zero copy, the page
 * referenced until sent), plus the ages computed now in scratch. Returns nothing. */
static void reply_metrics(struct exporter *e, const struct http_request *req, struct http_response *r) {
        struct exp_page *p = exporter_page(e);
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        struct buf tb = { 0 };
        exp_render_ages(&tb, p->have_sample ? exp_seconds_between(&p->sample_time, &now) : -1,
                        p->have_check ? exp_seconds_between(&p->check_time, &now) : -1);
        /* The ages are a few hundred bytes; the gzip ending adds 13 (exp_gzip_close). */
        size_t tl = tb.len < sizeof r->scratch - 16 ? tb.len : sizeof r->scratch - 16;
        bool gz = p->gz && req->accept_gzip;
        r->status = 200;
        r->content_type = CONTENT_TYPE_METRICS;
        r->vary_accept_encoding = true;
        if (gz) {
                int n = exp_gzip_close(tb.data, tl, p->gz_crc, p->len, (unsigned char *)r->scratch);
                r->content_encoding = "gzip";
                r->body[0] = (struct iovec){ p->gz, p->gz_len };
                r->body[1] = (struct iovec){ r->scratch, n > 0 ? (size_t)n : 0 };
        } else {
                memcpy(r->scratch, tb.data, tl);
                r->body[0] = (struct iovec){ p->text, p->len };
                r->body[1] = (struct iovec){ r->scratch, tl };
        }
        buf_free(&tb);
        r->n_body = 2;
        r->release = release_page;
        r->release_arg = p;
}

static const char index_page[] =
        "<html><head><title>gpunode exporter</title></head><body>\n"
        "<h1>gpunode exporter</h1>\n"
        "<p>DCGM-exporter-compatible GPU metrics from NVML, and the node's layer diagnosis.</p>\n"
        "<ul><li><a href=\"/metrics\">/metrics</a></li><li><a href=\"/health\">/health</a></li></ul>\n"
        "</body></html>\n";

/* Returns true when the request path is p. */
static bool path_is(const struct http_request *req, const char *p) {
        return req->path_len == strlen(p) && memcmp(req->path, p, req->path_len) == 0;
}

bool exporter_http_route(void *userdata, const struct http_request *req, struct http_response *r) {
        struct exporter *e = userdata;
        if (path_is(req, "/metrics")) {
                reply_metrics(e, req, r);
        } else if (path_is(req, "/health") || path_is(req, "/healthz")) {
                char reason[512], body[600];
                bool ok = exporter_health(e, reason, sizeof reason);
                snprintf(body, sizeof body, "%s\n", reason);
                reply_text(r, ok ? 200 : 503, CONTENT_TYPE_TEXT, body);
        } else if (path_is(req, "/")) {
                reply_text(r, 200, "text/html; charset=utf-8", index_page);
        } else {
                return false;
        }
        return true;
}
