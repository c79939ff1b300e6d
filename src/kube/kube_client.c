/* kube_client.c: GETs, PATCHes and POSTs Kubernetes API paths over TLS with libcurl and parses the answers with
 * jansson. */
#include "kube/kube_client.h"
#include "kube/net_replay.h"
#include "basic/util.h"

#include <ctype.h>
#include "basic/dl_curl.h"
#include <stdarg.h>
#include <sys/utsname.h>

struct kube_client {
        CURL *curl;
        char *server;                  /* base URL as configured, no trailing '/' */
        char *url_base;                /* base URL requests go to (tls-server-name as host when set) */
        struct curl_slist *headers;    /* Accept, Authorization (a secret), Host */
        struct curl_slist *connect_to; /* tls-server-name: connect to the real host */
        char *username, *password;
        unsigned timeout_ms;
        size_t max_body;
        bool curl_user; /* counted in curl_users (an offline client is not) */
        char errbuf[CURL_ERROR_SIZE];
};

/* The body being received, bounded by max. */
struct body {
        struct buf b;
        size_t max;
        bool too_big;
};

/* libcurl is initialised with the first client and cleaned up with the last (no threads here). */
static unsigned curl_users;

/* Wipes the strings of a curl list (they may hold the token) and frees it. */
static void slist_free_wiped(struct curl_slist *l) {
        if (!l) return; /* an offline client never loaded libcurl */
        for (struct curl_slist *p = l; p; p = p->next)
                if (p->data) explicit_bzero(p->data, strlen(p->data));
        curl_slist_free_all(l);
}

void kube_client_free(struct kube_client *c) {
        if (!c) return;
        if (c->curl) curl_easy_cleanup(c->curl);
        slist_free_wiped(c->headers);
        if (c->connect_to) curl_slist_free_all(c->connect_to);
        free(c->server);
        free(c->url_base);
        free(c->username);
        if (c->password) {
                explicit_bzero(c->password, strlen(c->password));
                free(c->password);
        }
        bool counted = c->curl_user;
        free(c);
        if (counted && curl_users > 0 && --curl_users == 0) curl_global_cleanup();
}

/* Appends s to list l; returns the new list, or NULL on out-of-memory (l then unchanged). */
static struct curl_slist *slist_add(struct curl_slist *l, const char *s) {
        struct curl_slist *n = curl_slist_append(l, s);
        if (!n) {
                fputs("gpunode: out of memory\n", stderr);
                abort();
        }
        return n;
}

/* Sets up tls-server-name: requests go to https://<name>:<port>/..., connect to the real host,
 * and carry a Host header naming it, as client-go does. Returns 0 or -EINVAL with *ret_error. */
static int setup_server_name(struct kube_client *c, const char *name, char **ret_error) {
        CURLU *u = curl_url();
        char *scheme = NULL, *host = NULL, *port = NULL, *path = NULL;
        _cleanup_free_ char *ct = NULL, *hh = NULL;
        int r = 0;
        if (!u) return errorf(ret_error, -ENOMEM, "out of memory");
        if (curl_url_set(u, CURLUPART_URL, c->server, 0) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) != CURLUE_OK ||
            curl_url_get(u, CURLUPART_PATH, &path, 0) != CURLUE_OK) {
                r = errorf(ret_error, -EINVAL, "server URL %s cannot be parsed", c->server);
                goto out;
        }
        free(c->url_base);
        c->url_base = xasprintf("%s://%s:%s%s", scheme, name, port, streq(path, "/") ? "" : path);
        while (c->url_base[strlen(c->url_base) - 1] == '/') c->url_base[strlen(c->url_base) - 1] = 0;
        ct = xasprintf("%s:%s:%s:%s", name, port, host, port);
        c->connect_to = slist_add(c->connect_to, ct);
        hh = xasprintf("Host: %s:%s", host, port);
        c->headers = slist_add(c->headers, hh);
out:
        curl_free(scheme);
        curl_free(host);
        curl_free(port);
        curl_free(path);
        curl_url_cleanup(u);
        return r;
}

int kube_client_new(const struct kube_config *cfg, unsigned timeout_ms, struct kube_client **ret, char **ret_error) {
        int r = dl_curl_open(ret_error);
        if (r < 0) return r;
        struct kube_client *c = xcalloc(1, sizeof *c);

        if (curl_users++ == 0 && curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
                curl_users = 0;
                free(c);
                return errorf(ret_error, -EIO, "cannot initialise libcurl");
        }
        c->curl_user = true;
        c->timeout_ms = timeout_ms ? timeout_ms : 1;
        c->max_body = KUBE_MAX_BODY_DEFAULT;
        c->server = xstrdup(cfg->server);
        while (strlen(c->server) > 1 && c->server[strlen(c->server) - 1] == '/') c->server[strlen(c->server) - 1] = 0;
        c->url_base = xstrdup(c->server);
        c->curl = curl_easy_init();
        if (!c->curl) {
                r = errorf(ret_error, -ENOMEM, "cannot create a libcurl handle");
                goto fail;
        }

        c->headers = slist_add(c->headers, "Accept: application/json");
        for (const char *p = cfg->token; p && *p; p++)
                if ((unsigned char)*p < ' ' || *p == 0x7f) {
                        /* it would end the header line: refuse rather than send something else */
                        r = errorf(ret_error, -EINVAL, "the bearer token from %s contains a control character",
                                   cfg->source ? cfg->source : "the configuration");
                        goto fail;
                }
        if (cfg->token) {
                _cleanup_free_ char *h = xasprintf("Authorization: Bearer %s", cfg->token);
                c->headers = slist_add(c->headers, h);
                explicit_bzero(h, strlen(h));
        }
        if (cfg->tls_server_name && (r = setup_server_name(c, cfg->tls_server_name, ret_error)) < 0) goto fail;

        CURL *h = c->curl;
        CURLcode e = CURLE_OK;
#define SET(opt, val)                                                                                                  \
        do {                                                                                                           \
                if (e == CURLE_OK) e = curl_easy_setopt(h, opt, val);                                                  \
        } while (0)
        SET(CURLOPT_NOSIGNAL, 1L);
        SET(CURLOPT_ERRORBUFFER, c->errbuf);
#if LIBCURL_VERSION_NUM >= 0x075500
        SET(CURLOPT_PROTOCOLS_STR, "https,http");
#else
        SET(CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTPS | CURLPROTO_HTTP));
#endif
        SET(CURLOPT_FOLLOWLOCATION, 0L);
        SET(CURLOPT_USERAGENT, "gpunode");
        SET(CURLOPT_HTTPHEADER, c->headers);
        SET(CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
        SET(CURLOPT_CONNECTTIMEOUT_MS,
            (long)(c->timeout_ms < KUBE_CONNECT_TIMEOUT_MAX_MS ? c->timeout_ms : KUBE_CONNECT_TIMEOUT_MAX_MS));
        SET(CURLOPT_ACCEPT_ENCODING, ""); /* whatever curl can decode: gzip from the API server */
        if (c->connect_to) SET(CURLOPT_CONNECT_TO, c->connect_to);
        if (cfg->proxy_url) SET(CURLOPT_PROXY, cfg->proxy_url);
        if (e != CURLE_OK) {
                r = errorf(ret_error, -ENOTSUP, "libcurl: %s", curl_easy_strerror(e));
                goto fail;
        }

        if (cfg->insecure) {
                SET(CURLOPT_SSL_VERIFYPEER, 0L);
                SET(CURLOPT_SSL_VERIFYHOST, 0L);
        } else {
                SET(CURLOPT_SSL_VERIFYPEER, 1L);
                SET(CURLOPT_SSL_VERIFYHOST, 2L);
                if (cfg->ca_pem) {
                        struct curl_blob blob = { .data = cfg->ca_pem,
                                                  .len = cfg->ca_pem_len,
                                                  .flags = CURL_BLOB_COPY };
                        SET(CURLOPT_CAINFO_BLOB, &blob);
                }
        }
        if (e != CURLE_OK) {
                r = errorf(ret_error, -ENOTSUP, "libcurl cannot take the cluster's certificate authority: %s",
                           curl_easy_strerror(e));
                goto fail;
        }
        if (cfg->cert_pem && cfg->key_pem) {
                struct curl_blob cert = { .data = cfg->cert_pem, .len = cfg->cert_pem_len, .flags = CURL_BLOB_COPY };
                struct curl_blob key = { .data = cfg->key_pem, .len = cfg->key_pem_len, .flags = CURL_BLOB_COPY };
                SET(CURLOPT_SSLCERTTYPE, "PEM");
                SET(CURLOPT_SSLCERT_BLOB, &cert);
                SET(CURLOPT_SSLKEYTYPE, "PEM");
                SET(CURLOPT_SSLKEY_BLOB, &key);
                if (e != CURLE_OK) {
                        r = errorf(ret_error, -ENOTSUP, "libcurl cannot take the client certificate: %s",
                                   curl_easy_strerror(e));
                        goto fail;
                }
        }
        if (cfg->username || cfg->password) {
                c->username = xstrdup(cfg->username ? cfg->username : "");
                c->password = xstrdup(cfg->password ? cfg->password : "");
                SET(CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
                SET(CURLOPT_USERNAME, c->username);
                SET(CURLOPT_PASSWORD, c->password);
        }
#undef SET
        if (e != CURLE_OK) {
                r = errorf(ret_error, -ENOTSUP, "libcurl: %s", curl_easy_strerror(e));
                goto fail;
        }
        *ret = c;
        return 0;
fail:
        kube_client_free(c);
        return r;
}

int kube_client_new_offline(const char *server, unsigned timeout_ms, struct kube_client **ret) {
        if (!server || !*server) return -EINVAL;
        struct kube_client *c = xcalloc(1, sizeof *c);
        c->timeout_ms = timeout_ms ? timeout_ms : 1;
        c->max_body = KUBE_MAX_BODY_DEFAULT;
        c->server = xstrdup(server);
        while (strlen(c->server) > 1 && c->server[strlen(c->server) - 1] == '/') c->server[strlen(c->server) - 1] = 0;
        c->url_base = xstrdup(c->server);
        *ret = c;
        return 0;
}

void kube_client_set_max_body(struct kube_client *c, size_t max_body) {
        c->max_body = max_body;
}

const char *kube_client_server(const struct kube_client *c) {
        return c->server;
}

/* curl write callback: appends to the body; returns 0 (abort) once the limit is passed. */
static size_t write_body(char *ptr, size_t size, size_t nmemb, void *userdata) {
        struct body *b = userdata;
        size_t n = size * nmemb;
        if (b->b.len + n > b->max) {
                b->too_big = true;
                return 0;
        }
        buf_append(&b->b, ptr, n);
        return n;
}

/* Returns the API's Status message in body (malloc'd, control characters replaced), or NULL. */
static char *status_message(const struct buf *body) {
        if (!body->data) return NULL;
        json_t *j = json_loadb(body->data, body->len, JSON_ALLOW_NUL, NULL);
        const char *m = json_string_value(json_object_get(j, "message"));
        char *s = m && *m ? xstrndup(m, 512) : NULL;
        json_decref(j);
        if (!s && body->len > 0 && body->len < 200) s = xstrndup(body->data, body->len);
        for (char *p = s; p && *p; p++)
                if ((unsigned char)*p < ' ') *p = ' ';
        if (s) strstrip_right(s);
        return s;
}

/* Maps a libcurl transport error to a negative errno. */
static int curl_errno(CURLcode e) {
        switch (e) {
        case CURLE_OPERATION_TIMEDOUT: return -ETIMEDOUT;
        case CURLE_COULDNT_CONNECT: return -ECONNREFUSED;
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY: return -EHOSTUNREACH;
        case CURLE_PEER_FAILED_VERIFICATION:
        case CURLE_SSL_ISSUER_ERROR: return -EKEYREJECTED; /* the server's certificate does not verify */
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_SSL_CERTPROBLEM:
        case CURLE_SSL_CIPHER:
        case CURLE_SSL_CACERT_BADFILE:
        case CURLE_SSL_CLIENTCERT:
        case CURLE_SSL_ENGINE_NOTFOUND:
        case CURLE_SSL_ENGINE_SETFAILED:
        case CURLE_USE_SSL_FAILED: return -EPROTO;
        case CURLE_FILESIZE_EXCEEDED: return -EFBIG;
        case CURLE_URL_MALFORMAT:
        case CURLE_UNSUPPORTED_PROTOCOL: return -EINVAL;
        case CURLE_OUT_OF_MEMORY: return -ENOMEM;
        default: return -EIO;
        }
}

/* Returns the API's Status reason in body (e.g. "AlreadyExists"; malloc'd), or NULL. */
static char *status_reason(const struct buf *body) {
        if (!body->data) return NULL;
        json_t *j = json_loadb(body->data, body->len, JSON_ALLOW_NUL, NULL);
        const char *m = json_string_value(json_object_get(j, "reason"));
        char *s = m && *m ? xstrndup(m, 64) : NULL;
        json_decref(j);
        return s;
}

/* Returns a copy of text[0..len) (malloc'd, NUL-terminated) in which every \u0000 escape is written
 * \ufffd, so that jansson, which refuses a NUL in an object key even with JSON_ALLOW_NUL, can parse
 * it. Only escapes are touched (a backslash is only ever in a string in JSON). Never fails. */
static char *nul_escapes_replaced(const char *text, size_t len) {
        char *out = xmalloc(len + 1);
        memcpy(out, text, len);
        out[len] = 0;
        for (size_t i = 0; i + 1 < len; i++) {
                if (out[i] != '\\') continue;
                if (out[i + 1] == 'u' && i + 5 < len && !memcmp(out + i + 2, "0000", 4)) memcpy(out + i + 2, "fffd", 4);
                i++; /* the escaped character: "\\u0000" is a backslash, then text */
        }
        return out;
}

/* Parses a 2xx answer's body (len bytes, data may be NULL) for method on shown. Strings may hold
 * U+0000 (the API server stores such values): they are kept, with their length (json_string_length);
 * an object key holding one, which jansson cannot store, is read as U+FFFD. Returns 0 with *ret (not
 * kept when ret is NULL), or -EBADMSG with *ret_error naming shown and, for a body that is not JSON,
 * jansson's line, column and words. */
static int parse_answer(const char *method, const char *data, size_t len, const char *shown, json_t **ret,
                        char **ret_error) {
        json_error_t jerr = { 0 };
        json_t *j = data ? json_loadb(data, len, JSON_ALLOW_NUL, &jerr) : NULL;
        if (!j && data && json_error_code(&jerr) == json_error_null_byte_in_key) {
                _cleanup_free_ char *fixed = nul_escapes_replaced(data, len);
                j = json_loadb(fixed, len, JSON_ALLOW_NUL, &jerr);
        }
        if (!j && !data)
                return errorf(ret_error, -EBADMSG, "%s %s: the answer is not JSON (an empty body)", method, shown);
        if (!j) {
                _cleanup_free_ char *why = utf8_sanitize(jerr.text);
                return errorf(ret_error, -EBADMSG, "%s %s: the answer is not JSON (line %d, column %d: %s)", method,
                              shown, jerr.line, jerr.column, why);
        }
        if (!json_is_object(j) && !json_is_array(j)) {
                json_decref(j);
                return errorf(ret_error, -EBADMSG, "%s %s: the answer is not a JSON object", method, shown);
        }
        if (ret)
                *ret = j;
        else
                json_decref(j);
        return 0;
}

/* Returns 0 if path is an API path kube_get() and the writes accept, else -EINVAL with *ret_error. */
static int check_path(const char *path, char **ret_error) {
        if (!path || path[0] != '/')
                return errorf(ret_error, -EINVAL, "API path \"%s\" does not start with /", path ? path : "");
        for (const char *p = path; *p; p++)
                if ((unsigned char)*p <= ' ' || *p == 0x7f)
                        return errorf(ret_error, -EINVAL, "API path contains a space or control character");
        return 0;
}

/* Sends one request: method "GET" (body NULL), or a write with content_type and body. Returns 0 with
 * *ret (may be NULL), or a negative errno with the sentence in *ret_err (always set on failure):
 * as documented at kube_get() and kube_patch(). Sets *ret_code to the HTTP status (0 without one). */
static int perform(struct kube_client *c, const char *method, const char *path, const char *shown,
                   const char *content_type, const char *body_text, json_t **ret, long *ret_code, char **ret_err) {
        bool write = body_text != NULL;
        _cleanup_free_ char *url = xasprintf("%s%s", c->url_base, path);
        struct body body = { .max = c->max_body };
        struct curl_slist *wh = NULL; /* the write's headers: the client's plus Content-Type (holds the token) */
        CURL *h = c->curl;
        c->errbuf[0] = 0;
        curl_easy_setopt(h, CURLOPT_URL, url);
        if (write) {
                for (struct curl_slist *p = c->headers; p; p = p->next) wh = slist_add(wh, p->data);
                _cleanup_free_ char *ct = xasprintf("Content-Type: %s", content_type);
                wh = slist_add(wh, ct);
                wh = slist_add(wh, "Expect:"); /* no 100-continue round trip for large bodies */
                curl_easy_setopt(h, CURLOPT_HTTPHEADER, wh);
                curl_easy_setopt(h, CURLOPT_POST, 1L);
                curl_easy_setopt(h, CURLOPT_POSTFIELDS, body_text);
                curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(body_text));
                curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, streq(method, "POST") ? NULL : method);
        } else {
                curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
        }
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, write_body);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
        curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)c->max_body);
        CURLcode e = curl_easy_perform(h);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, NULL);
        if (write) {
                /* back to the client's own headers and a plain GET for the next request */
                curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, NULL);
                curl_easy_setopt(h, CURLOPT_POSTFIELDS, NULL);
                curl_easy_setopt(h, CURLOPT_HTTPHEADER, c->headers);
                curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
                slist_free_wiped(wh);
        }

        int r = 0;
        long code = 0;
        char *err = NULL;
        if (e != CURLE_OK) {
                if (body.too_big || e == CURLE_FILESIZE_EXCEEDED)
                        r = errorf(&err, -EFBIG, "%s %s: the response is larger than %zu bytes", method, shown,
                                   c->max_body);
                else if (e == CURLE_OPERATION_TIMEDOUT)
                        r = errorf(&err, -ETIMEDOUT, "%s %s: no answer within %u ms", method, shown, c->timeout_ms);
                else
                        r = errorf(&err, curl_errno(e), "%s %s: %s", method, shown,
                                   c->errbuf[0] ? c->errbuf : curl_easy_strerror(e));
                buf_free(&body.b); /* a part, at best */
        } else {
                curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
        }
        if (r == 0 && (code < 200 || code > 299)) {
                _cleanup_free_ char *msg = status_message(&body.b);
                const char *sep = msg ? ": " : "";
                const char *m = msg ? msg : "";
                if (code == 401)
                        r = errorf(&err, -EACCES, "%s %s: 401 Unauthorized (the credentials were rejected)%s%s", method,
                                   shown, sep, m);
                else if (code == 403)
                        r = errorf(&err, -EPERM, "%s %s: 403 Forbidden%s%s", method, shown, sep, m);
                else if (code == 404)
                        r = errorf(&err, -ENOENT, "%s %s: 404 Not Found%s%s", method, shown, sep, m);
                else if (code == 410)
                        r = errorf(&err, -ESTALE, "%s %s: 410 Gone%s%s", method, shown, sep, m);
                else if (write && code == 409) {
                        _cleanup_free_ char *reason = status_reason(&body.b);
                        if (reason && streq(reason, "AlreadyExists"))
                                r = errorf(&err, -EEXIST, "%s %s: 409 AlreadyExists%s%s", method, shown, sep, m);
                        else
                                r = errorf(&err, -EBUSY, "%s %s: 409 Conflict%s%s", method, shown, sep, m);
                } else if (write && code == 422)
                        r = errorf(&err, -EINVAL, "%s %s: 422 Unprocessable Entity%s%s", method, shown, sep, m);
                else if (write && code == 400)
                        r = errorf(&err, -EINVAL, "%s %s: 400 Bad Request%s%s", method, shown, sep, m);
                else
                        r = errorf(&err, -EIO, "%s %s: HTTP %ld%s%s", method, shown, code, sep, m);
        }
        if (r == 0) r = parse_answer(method, body.b.data, body.b.len, shown, ret, &err);
        if (!write) net_record(NET_API, path, r, code, body.b.data, body.b.len, err);
        buf_free(&body.b);
        *ret_code = code;
        *ret_err = err;
        return r;
}

int kube_get(struct kube_client *c, const char *path, json_t **ret, char **ret_error) {
        int r = check_path(path, ret_error);
        if (r < 0) return r;
        _cleanup_free_ char *shown = xasprintf("%s%s", c->server, path);
        if (net_replaying() || !c->curl) {
                /* check --snapshot: the answer the node got, error class and sentence included */
                const char *data = NULL;
                size_t len = 0;
                long status;
                char *err = NULL;
                r = net_replay(NET_API, path, shown, &data, &len, &status, &err);
                if (r < 0) {
                        if (ret_error)
                                *ret_error = err;
                        else
                                free(err);
                        return r;
                }
                return parse_answer("GET", data, len, shown, ret, ret_error);
        }
        long code;
        char *err = NULL; /* the sentence, recorded before it goes to the caller */
        r = perform(c, "GET", path, shown, NULL, NULL, ret, &code, &err);
        if (ret_error)
                *ret_error = err;
        else
                free(err);
        return r;
}

/* Sends a write (method with content_type and body) to path. Returns as kube_patch(). */
static int kube_write(struct kube_client *c, const char *method, const char *path, const char *content_type,
                      const char *body, json_t **ret, char **ret_error) {
        int r = check_path(path, ret_error);
        if (r < 0) return r;
        if (!body) return errorf(ret_error, -EINVAL, "%s %s%s: no request body", method, c->server, path);
        _cleanup_free_ char *shown = xasprintf("%s%s", c->server, path);
        if (net_replaying() || !c->curl)
                return errorf(ret_error, -EROFS, "%s %s: a snapshot is replayed, nothing is written to the API", method,
                              shown);
        long code;
        char *err = NULL;
        r = perform(c, method, path, shown, content_type, body, ret, &code, &err);
        if (ret_error)
                *ret_error = err;
        else
                free(err);
        return r;
}

int kube_patch(struct kube_client *c, const char *path, enum kube_patch_type type, const char *body, json_t **ret,
               char **ret_error) {
        const char *ct;
        switch (type) {
        case KUBE_PATCH_STRATEGIC: ct = "application/strategic-merge-patch+json"; break;
        case KUBE_PATCH_MERGE: ct = "application/merge-patch+json"; break;
        case KUBE_PATCH_JSON: ct = "application/json-patch+json"; break;
        default: return errorf(ret_error, -EINVAL, "unknown patch type %d", (int)type);
        }
        return kube_write(c, "PATCH", path, ct, body, ret, ret_error);
}

int kube_post(struct kube_client *c, const char *path, const char *body, json_t **ret, char **ret_error) {
        return kube_write(c, "POST", path, "application/json", body, ret, ret_error);
}

char *kube_query_escape(const char *s) {
        static const char hex[] = "0123456789ABCDEF";
        struct buf b = { 0 };
        for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
                if (isalnum(*p) || *p == '-' || *p == '.' || *p == '_' || *p == '~') {
                        buf_append(&b, (const char *)p, 1);
                } else {
                        char e[3] = { '%', hex[*p >> 4], hex[*p & 15] };
                        buf_append(&b, e, 3);
                }
        }
        return b.data ? b.data : xstrdup("");
}

int kube_get_node(struct kube_client *c, const char *name, json_t **ret, char **ret_error) {
        if (!name || !*name) return errorf(ret_error, -EINVAL, "no node name");
        _cleanup_free_ char *n = kube_query_escape(name);
        _cleanup_free_ char *path = xasprintf("/api/v1/nodes/%s", n);
        return kube_get(c, path, ret, ret_error);
}

int kube_list_pods(struct kube_client *c, const char *node, const char *namespace, const char *label_selector,
                   json_t **ret, char **ret_error) {
        if (!node || !*node) return errorf(ret_error, -EINVAL, "no node name");
        _cleanup_free_ char *sel = xasprintf("spec.nodeName=%s", node);
        _cleanup_free_ char *fs = kube_query_escape(sel);
        struct buf p = { 0 };
        if (namespace && *namespace) {
                _cleanup_free_ char *ns = kube_query_escape(namespace);
                buf_printf(&p, "/api/v1/namespaces/%s/pods", ns);
        } else
                buf_puts(&p, "/api/v1/pods");
        buf_printf(&p, "?fieldSelector=%s", fs);
        if (label_selector && *label_selector) {
                _cleanup_free_ char *ls = kube_query_escape(label_selector);
                buf_printf(&p, "&labelSelector=%s", ls);
        }
        int r = kube_get(c, p.data, ret, ret_error);
        buf_free(&p);
        return r;
}

int kube_list_namespaces(struct kube_client *c, json_t **ret, char **ret_error) {
        return kube_get(c, "/api/v1/namespaces", ret, ret_error);
}

int kube_list_nodes(struct kube_client *c, const char *label_selector, json_t **ret, char **ret_error) {
        if (!label_selector || !*label_selector) return kube_get(c, "/api/v1/nodes", ret, ret_error);
        _cleanup_free_ char *ls = kube_query_escape(label_selector);
        _cleanup_free_ char *path = xasprintf("/api/v1/nodes?labelSelector=%s", ls);
        return kube_get(c, path, ret, ret_error);
}
