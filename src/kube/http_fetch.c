/* http_fetch.c: GETs a metrics page with libcurl, bounded in time and size (no TLS setup: see kube_client.c for that).
 */
#include "kube/http_fetch.h"
#include "kube/net_replay.h"
#include "basic/util.h"

#include "basic/dl_curl.h"

struct sink {
        struct buf b;
        size_t max;
        bool too_big;
};

/* curl write callback: appends; returns 0 (abort) past the limit. */
static size_t sink_write(char *ptr, size_t size, size_t nmemb, void *userdata) {
        struct sink *s = userdata;
        size_t n = size * nmemb;
        if (s->b.len + n > s->max) {
                s->too_big = true;
                return 0;
        }
        buf_append(&s->b, ptr, n);
        return n;
}

/* Maps a libcurl error to a negative errno. */
static int curl_to_errno(CURLcode e) {
        switch (e) {
        case CURLE_OPERATION_TIMEDOUT: return -ETIMEDOUT;
        case CURLE_COULDNT_CONNECT: return -ECONNREFUSED;
        case CURLE_COULDNT_RESOLVE_HOST: return -EHOSTUNREACH;
        case CURLE_FILESIZE_EXCEEDED: return -EFBIG;
        case CURLE_URL_MALFORMAT:
        case CURLE_UNSUPPORTED_PROTOCOL: return -EINVAL;
        default: return -EIO;
        }
}

int http_fetch(const char *url, unsigned timeout_ms, size_t max_body, char **ret, size_t *ret_len, long *ret_code,
               char **ret_error) {
        *ret_code = 0;
        if (net_replaying()) {
                /* check --snapshot: the page (or the failure) the node got */
                const char *data = NULL;
                size_t len = 0;
                int rr = net_replay(NET_METRICS, url, url, &data, &len, ret_code, ret_error);
                if (rr < 0) return rr;
                if (len > max_body) {
                        *ret_error = xasprintf("GET %s: the response is larger than %zu bytes", url, max_body);
                        return -EFBIG;
                }
                *ret = xmalloc(len + 1);
                memcpy(*ret, data, len);
                (*ret)[len] = 0;
                *ret_len = len;
                return 0;
        }
        int r = dl_curl_open(ret_error);
        if (r < 0) {
                net_record(NET_METRICS, url, r, 0, NULL, 0, *ret_error);
                return r;
        }
        /* curl_global_init counts its callers, so this pairs with kube_client's own init. */
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
                *ret_error = xstrdup("cannot initialise libcurl");
                return -EIO;
        }
        CURL *h = curl_easy_init();
        if (!h) {
                curl_global_cleanup();
                *ret_error = xstrdup("cannot create a libcurl handle");
                return -ENOMEM;
        }
        char errbuf[CURL_ERROR_SIZE] = "";
        struct sink s = { .max = max_body };
        if (timeout_ms == 0) timeout_ms = 1;
        CURLcode e = CURLE_OK;
#define SET(opt, val)                                                                                                  \
        do {                                                                                                           \
                if (e == CURLE_OK) e = curl_easy_setopt(h, opt, val);                                                  \
        } while (0)
        SET(CURLOPT_NOSIGNAL, 1L);
        SET(CURLOPT_ERRORBUFFER, errbuf);
#if LIBCURL_VERSION_NUM >= 0x075500
        SET(CURLOPT_PROTOCOLS_STR, "http,https");
#else
        SET(CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTPS | CURLPROTO_HTTP));
#endif
        SET(CURLOPT_URL, url);
        SET(CURLOPT_FOLLOWLOCATION, 0L);
        SET(CURLOPT_USERAGENT, "gpunode");
        SET(CURLOPT_TIMEOUT_MS, (long)timeout_ms);
        SET(CURLOPT_CONNECTTIMEOUT_MS, (long)timeout_ms);
        SET(CURLOPT_ACCEPT_ENCODING, "");
        SET(CURLOPT_SSL_VERIFYPEER, 0L);
        SET(CURLOPT_SSL_VERIFYHOST, 0L);
        SET(CURLOPT_PROXY, ""); /* node-local: never through $http_proxy */
        SET(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)max_body);
        SET(CURLOPT_WRITEFUNCTION, sink_write);
        SET(CURLOPT_WRITEDATA, &s);
#undef SET
        r = 0;
        if (e != CURLE_OK) {
                r = curl_to_errno(e);
                *ret_error = xasprintf("GET %s: %s", url, curl_easy_strerror(e));
                goto out;
        }
        e = curl_easy_perform(h);
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, ret_code);
        if (e != CURLE_OK) {
                if (s.too_big || e == CURLE_FILESIZE_EXCEEDED) {
                        r = -EFBIG;
                        *ret_error = xasprintf("GET %s: the response is larger than %zu bytes", url, max_body);
                } else if (e == CURLE_OPERATION_TIMEDOUT) {
                        r = -ETIMEDOUT;
                        *ret_error = xasprintf("GET %s: no answer within %u ms", url, timeout_ms);
                } else if (e == CURLE_COULDNT_CONNECT) {
                        r = -ECONNREFUSED;
                        *ret_error = xasprintf("GET %s: connection refused (nothing listens there)", url);
                } else {
                        r = curl_to_errno(e);
                        *ret_error = xasprintf("GET %s: %s", url, errbuf[0] ? errbuf : curl_easy_strerror(e));
                }
                goto out;
        }
        if (*ret_code < 200 || *ret_code > 299) {
                r = -EIO;
                *ret_error = xasprintf("GET %s: HTTP %ld", url, *ret_code);
                goto out;
        }
        if (!s.b.data) buf_puts(&s.b, "");
        net_record(NET_METRICS, url, 0, *ret_code, s.b.data, s.b.len, NULL);
        *ret = TAKE_PTR(s.b.data);
        *ret_len = s.b.len;
out:
        if (r < 0) net_record(NET_METRICS, url, r, *ret_code, s.too_big ? NULL : s.b.data, s.b.len, *ret_error);
        buf_free(&s.b);
        curl_easy_cleanup(h);
        curl_global_cleanup();
        return r;
}
