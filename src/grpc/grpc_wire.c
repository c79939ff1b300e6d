/* grpc_wire.c: gRPC's length-prefixed messages, status codes, grpc-timeout and grpc-message texts. */
#include "grpc/grpc_wire.h"

#include <inttypes.h>

static const char *const code_names[] = {
        [GRPC_OK] = "OK",
        [GRPC_CANCELLED] = "CANCELLED",
        [GRPC_UNKNOWN] = "UNKNOWN",
        [GRPC_INVALID_ARGUMENT] = "INVALID_ARGUMENT",
        [GRPC_DEADLINE_EXCEEDED] = "DEADLINE_EXCEEDED",
        [GRPC_NOT_FOUND] = "NOT_FOUND",
        [GRPC_ALREADY_EXISTS] = "ALREADY_EXISTS",
        [GRPC_PERMISSION_DENIED] = "PERMISSION_DENIED",
        [GRPC_RESOURCE_EXHAUSTED] = "RESOURCE_EXHAUSTED",
        [GRPC_FAILED_PRECONDITION] = "FAILED_PRECONDITION",
        [GRPC_ABORTED] = "ABORTED",
        [GRPC_OUT_OF_RANGE] = "OUT_OF_RANGE",
        [GRPC_UNIMPLEMENTED] = "UNIMPLEMENTED",
        [GRPC_INTERNAL] = "INTERNAL",
        [GRPC_UNAVAILABLE] = "UNAVAILABLE",
        [GRPC_DATA_LOSS] = "DATA_LOSS",
        [GRPC_UNAUTHENTICATED] = "UNAUTHENTICATED",
};

const char *grpc_code_name(int code) {
        if (code < 0 || (size_t)code >= ELEMENTSOF(code_names)) return "UNKNOWN";
        return code_names[code];
}

int grpc_code_to_errno(int code) {
        switch (code) {
        case GRPC_OK: return 0;
        case GRPC_CANCELLED: return -ECANCELED;
        case GRPC_DEADLINE_EXCEEDED: return -ETIMEDOUT;
        case GRPC_NOT_FOUND: return -ENOENT;
        case GRPC_PERMISSION_DENIED:
        case GRPC_UNAUTHENTICATED: return -EACCES;
        case GRPC_RESOURCE_EXHAUSTED: return -EBUSY;
        case GRPC_UNIMPLEMENTED: return -EOPNOTSUPP;
        case GRPC_UNAVAILABLE: return -EAGAIN;
        default: return -EREMOTEIO;
        }
}

int grpc_code_from_http(int http_status) {
        switch (http_status) {
        case 400: return GRPC_INTERNAL;
        case 401: return GRPC_UNAUTHENTICATED;
        case 403: return GRPC_PERMISSION_DENIED;
        case 404: return GRPC_UNIMPLEMENTED;
        case 429:
        case 502:
        case 503:
        case 504: return GRPC_UNAVAILABLE;
        default: return GRPC_UNKNOWN;
        }
}

int grpc_parse_status(const char *value, size_t len, int *ret) {
        if (len == 0 || len > 9) return -EINVAL;
        int v = 0;
        for (size_t i = 0; i < len; i++) {
                if (value[i] < '0' || value[i] > '9') return -EINVAL;
                v = v * 10 + (value[i] - '0');
        }
        *ret = v;
        return 0;
}

/* Returns the value of hex digit c, or -1. */
static int hexval(char c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
}

char *grpc_message_decode(const char *value, size_t len) {
        _cleanup_free_ char *raw = xmalloc(len + 1);
        size_t o = 0;
        for (size_t i = 0; i < len; i++) {
                int hi, lo;
                if (value[i] == '%' && i + 2 < len && (hi = hexval(value[i + 1])) >= 0 &&
                    (lo = hexval(value[i + 2])) >= 0) {
                        raw[o++] = (char)(hi << 4 | lo);
                        i += 2;
                } else
                        raw[o++] = value[i];
        }
        /* A decoded NUL ends the text: what follows it could not be shown anyway. */
        raw[o] = 0;
        return utf8_sanitize(raw);
}

char *grpc_message_encode(const char *text) {
        struct buf b = { 0 };
        buf_puts(&b, "");
        for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
                if (*p >= 0x20 && *p <= 0x7e && *p != '%')
                        buf_append(&b, (const char *)p, 1);
                else
                        buf_printf(&b, "%%%02X", *p);
        }
        return b.data;
}

char *grpc_timeout_format(uint64_t ms, char buf[static 16]) {
        if (ms <= 99999999)
                snprintf(buf, 16, "%" PRIu64 "m", ms);
        else if (ms / 1000 <= 99999999)
                snprintf(buf, 16, "%" PRIu64 "S", (ms + 999) / 1000);
        else
                snprintf(buf, 16, "%" PRIu64 "H", ms / 3600000 + 1 > 99999999 ? 99999999 : ms / 3600000 + 1);
        return buf;
}

int grpc_timeout_parse(const char *value, size_t len, uint64_t *ret_ms) {
        if (len < 2 || len > 9) return -EINVAL;
        uint64_t v = 0;
        for (size_t i = 0; i + 1 < len; i++) {
                if (value[i] < '0' || value[i] > '9') return -EINVAL;
                v = v * 10 + (uint64_t)(value[i] - '0');
        }
        /* v has at most 8 digits (< 1e8), so none of the products below overflows. */
        uint64_t ms;
        switch (value[len - 1]) {
        case 'H': ms = v * 3600000; break;
        case 'M': ms = v * 60000; break;
        case 'S': ms = v * 1000; break;
        case 'm': ms = v; break;
        case 'u': ms = (v + 999) / 1000; break;
        case 'n': ms = (v + 999999) / 1000000; break;
        default: return -EINVAL;
        }
        *ret_ms = ms;
        return 0;
}

int grpc_prefix_write(size_t len, uint8_t prefix[static GRPC_PREFIX_LEN]) {
        if (len > UINT32_MAX) return -EMSGSIZE;
        prefix[0] = 0;
        prefix[1] = (uint8_t)(len >> 24);
        prefix[2] = (uint8_t)(len >> 16);
        prefix[3] = (uint8_t)(len >> 8);
        prefix[4] = (uint8_t)len;
        return 0;
}

void grpc_reader_init(struct grpc_reader *r, size_t max) {
        *r = (struct grpc_reader){ .max = max };
}

void grpc_reader_done(struct grpc_reader *r) {
        free(r->msg);
        *r = (struct grpc_reader){ .max = r->max };
}

bool grpc_reader_partial(const struct grpc_reader *r) {
        return r->prefix_len > 0;
}

/* The first allocation for a message, and the step it grows by at least: a prefix that lies
 * about the length costs no more than what was sent. */
#define READER_CHUNK (64u << 10)

int grpc_reader_feed(struct grpc_reader *r, const uint8_t *data, size_t len, grpc_message_fn fn, void *userdata,
                     char **ret_error) {
        while (len > 0) {
                if (r->prefix_len < GRPC_PREFIX_LEN) {
                        size_t k = GRPC_PREFIX_LEN - r->prefix_len;
                        if (k > len) k = len;
                        memcpy(r->prefix + r->prefix_len, data, k);
                        r->prefix_len += k;
                        data += k;
                        len -= k;
                        if (r->prefix_len < GRPC_PREFIX_LEN) break;
                        if (r->prefix[0] == 1)
                                return errorf(ret_error, -EPROTO,
                                              "sent a compressed message, though no compression was offered");
                        if (r->prefix[0] != 0)
                                return errorf(ret_error, -EPROTO, "sent a message flag 0x%02x (not gRPC framing)",
                                              r->prefix[0]);
                        r->want = (size_t)r->prefix[1] << 24 | (size_t)r->prefix[2] << 16 | (size_t)r->prefix[3] << 8 |
                                  (size_t)r->prefix[4];
                        if (r->want > r->max)
                                return errorf(ret_error, -EMSGSIZE,
                                              "announced a message of %zu bytes, past the limit of %zu", r->want,
                                              r->max);
                        r->len = 0;
                }
                size_t k = r->want - r->len;
                if (k > len) k = len;
                if (r->len + k > r->cap || !r->msg) {
                        size_t cap = r->cap ? r->cap : READER_CHUNK;
                        while (cap < r->len + k) cap *= 2;
                        if (cap > r->want) cap = r->want;
                        r->msg = xrealloc(r->msg, cap ? cap : 1);
                        r->cap = cap;
                }
                if (k) memcpy(r->msg + r->len, data, k);
                r->len += k;
                data += k;
                len -= k;
                if (r->len < r->want) break;
                uint8_t *msg = r->msg;
                size_t mlen = r->len;
                r->msg = NULL;
                r->cap = r->len = r->want = r->prefix_len = 0;
                r->messages++;
                int q = fn(msg, mlen, userdata);
                if (q < 0) return q;
        }
        return 0;
}
