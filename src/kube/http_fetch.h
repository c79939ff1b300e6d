/* http_fetch.h: one bounded, size-capped plain GET of a local metrics endpoint (libcurl). */
#pragma once

#include <stddef.h>

#define HTTP_FETCH_MAX_BODY ((size_t)32 << 20) /* a /metrics page larger than this is refused */

/* GETs url (http:// or https:// without client credentials; certificates are not verified: these
 * are node-local endpoints, and only their text is judged) within timeout_ms in total, reading at
 * most max_body bytes. Returns 0 with *ret (NUL-terminated, malloc'd), *ret_len and *ret_code (the
 * HTTP status, also on errors when one came) when a 2xx came, else a negative errno with
 * *ret_error: -ECONNREFUSED nothing listens, -ETIMEDOUT no answer in time, -EHOSTUNREACH name or
 * route not found, -EFBIG body too large, -EIO another HTTP status or transport error, -EINVAL
 * a URL curl refuses. With a recorder installed (net_replay.h) the exchange is recorded; with a
 * replayer the recorded answer is given instead, without libcurl (NET_NOT_RECORDED for a URL the
 * snapshot does not hold). */
int http_fetch(const char *url, unsigned timeout_ms, size_t max_body, char **ret, size_t *ret_len, long *ret_code,
               char **ret_error);
