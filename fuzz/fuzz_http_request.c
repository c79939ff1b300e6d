/* fuzz_http_request.c: libFuzzer target for the exporter's HTTP request parser: every request in the input, pipelined. */
#include "basic/http_server.h"
#include "basic/util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* libFuzzer entry: parses the requests one after the other as the server does; aborts when an invariant
 * breaks (a length out of range, a pointer outside the input, a result a prefix contradicts). Returns 0. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *copy = xmalloc(size ? size : 1); /* an exact-size heap copy so over-reads are caught */
        memcpy(copy, data, size);
        size_t off = 0;
        while (off < size) {
                struct http_request req;
                int r = http_parse_request(copy + off, size - off, &req);
                if (r == 0) {
                        if (size - off >= HTTP_MAX_HEAD) abort(); /* incomplete only under the cap */
                        break;
                }
                if (r < 0) {
                        if (r != -EBADMSG && r != -E2BIG && r != -EPROTONOSUPPORT) abort();
                        break;
                }
                if ((size_t)r > size - off || (size_t)r > HTTP_MAX_HEAD || req.head_len != (size_t)r) abort();
                const char *lo = copy + off, *hi = copy + off + (size_t)r;
                bool inside = req.path >= lo && req.path + req.path_len <= hi;
                if (req.path_len == 0 || (!inside && !(req.path_len == 1 && req.path[0] == '/'))) abort();
                if (req.method_str != lo && (req.method_str < lo || req.method_str + req.method_len > hi)) abort();
                if (req.version_minor > 1) abort();
                if (req.path[0] != '/' && req.path[0] != '*') abort();
                /* A complete head stays complete, with the same length, whatever follows it. */
                struct http_request again;
                if (http_parse_request(copy + off, (size_t)r, &again) != r) abort();
                off += (size_t)r;
        }
        free(copy);
        return 0;
}
