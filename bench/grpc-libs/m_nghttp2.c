/* m_nghttp2.c: dlopen libnghttp2, one client session that frames a gRPC request. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <nghttp2/nghttp2.h>
#define S(n) __typeof__(n) *p_##n = dlsym(h, #n)
static ssize_t rd(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *flags, nghttp2_data_source *src, void *ud) {
        memset(buf, 0, 5); *flags = NGHTTP2_DATA_FLAG_EOF; return 5;
}
int main(void) {
        void *h = dlopen("libnghttp2.so.14", RTLD_NOW);
        if (!h) return 1;
        S(nghttp2_session_callbacks_new); S(nghttp2_session_client_new); S(nghttp2_submit_settings);
        S(nghttp2_submit_request); S(nghttp2_session_mem_send); S(nghttp2_session_del); S(nghttp2_session_callbacks_del);
        nghttp2_session_callbacks *cb; p_nghttp2_session_callbacks_new(&cb);
        nghttp2_session *s; p_nghttp2_session_client_new(&s, cb, NULL);
        p_nghttp2_submit_settings(s, 0, NULL, 0);
#define NV(a, b) {(uint8_t *)a, (uint8_t *)b, sizeof a - 1, sizeof b - 1, 0}
        nghttp2_nv nv[] = {NV(":method", "POST"), NV(":scheme", "http"), NV(":path", "/v1.PodResourcesLister/List"),
                           NV(":authority", "localhost"), NV("content-type", "application/grpc"), NV("te", "trailers")};
        nghttp2_data_provider dp = {.read_callback = rd};
        p_nghttp2_submit_request(s, NULL, nv, 6, &dp, NULL);
        size_t total = 0; const uint8_t *d; ssize_t n;
        while ((n = p_nghttp2_session_mem_send(s, &d)) > 0) total += (size_t)n;
        printf("%zu bytes framed\n", total);
        p_nghttp2_session_del(s); p_nghttp2_session_callbacks_del(cb);
        return 0;
}
