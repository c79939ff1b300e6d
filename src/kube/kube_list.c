/* kube_list.c: paginated lists: limit/continue pages through kube_get(), each page freed before the next. */
#include "kube/kube_list.h"
#include "basic/util.h"

#include <ctype.h>

#define KUBE_LIST_MAX_PAGES 100000u

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

/* Returns the path of one page (malloc'd): req's selectors and limit, and the continue token when not NULL. */
static char *page_path(const struct kube_list_request *req, const char *cont) {
        struct buf b = { 0 };
        buf_printf(&b, "%s?limit=%u", req->path, req->limit ? req->limit : KUBE_LIST_LIMIT_DEFAULT);
        if (req->label_selector && *req->label_selector) {
                _cleanup_free_ char *e = kube_query_escape(req->label_selector);
                buf_printf(&b, "&labelSelector=%s", e);
        }
        if (req->field_selector && *req->field_selector) {
                _cleanup_free_ char *e = kube_query_escape(req->field_selector);
                buf_printf(&b, "&fieldSelector=%s", e);
        }
        if (cont) {
                _cleanup_free_ char *e = kube_query_escape(cont);
                buf_printf(&b, "&continue=%s", e);
        }
        return b.data;
}

int kube_list_all(struct kube_client *c, const struct kube_list_request *req, kube_list_item_fn fn, void *userdata,
                  struct kube_list_stats *ret_stats, char **ret_error) {
        struct kube_list_stats st = { 0 };
        _cleanup_free_ char *cont = NULL;
        int r = 0;
        if (!req || !req->path || req->path[0] != '/') return errorf(ret_error, -EINVAL, "no list path");
        for (;;) {
                if (st.pages >= KUBE_LIST_MAX_PAGES) {
                        r = errorf(ret_error, -E2BIG, "list %s: more than %u pages", req->path, KUBE_LIST_MAX_PAGES);
                        break;
                }
                _cleanup_free_ char *path = page_path(req, cont);
                json_t *page = NULL;
                _cleanup_free_ char *err = NULL;
                r = kube_get(c, path, &page, &err);
                if (r < 0) {
                        if (st.pages == 0)
                                r = errorf(ret_error, r, "%s", err ? err : strerror(-r));
                        else if (r == -ESTALE)
                                r = errorf(ret_error, r,
                                           "list %s: the continue token expired after %zu page(s), %zu items "
                                           "(410 Expired): %s",
                                           req->path, st.pages, st.items, err ? err : "");
                        else
                                r = errorf(ret_error, r, "list %s: page %zu failed after %zu items: %s", req->path,
                                           st.pages + 1, st.items, err ? err : strerror(-r));
                        break;
                }
                const json_t *items = json_object_get(page, "items");
                if (!json_is_array(items) && !json_is_null(items)) {
                        json_decref(page);
                        r = errorf(ret_error, -EBADMSG, "list %s: page %zu is not a list (no items array)", req->path,
                                   st.pages + 1);
                        break;
                }
                st.pages++;
                size_t i;
                const json_t *it;
                json_array_foreach(items, i, it) {
                        st.items++;
                        if ((r = fn(it, userdata)) < 0) break;
                }
                const char *next = json_string_value(json_object_get(json_object_get(page, "metadata"), "continue"));
                bool stuck = next && cont && streq(next, cont);
                free(cont);
                cont = next && *next ? xstrdup(next) : NULL;
                json_decref(page);
                if (r >= 0 && stuck) {
                        /* A server answering the token it was sent would be followed for ever, the items counted twice.
                         */
                        r = errorf(ret_error, -EBADMSG,
                                   "list %s: the server answered the continue token it was sent: the "
                                   "list does not advance",
                                   req->path);
                        break;
                }
                if (r < 0) {
                        errorf(ret_error, r, "list %s: %s", req->path, strerror(-r));
                        break;
                }
                if (!cont) break;
        }
        if (ret_stats) *ret_stats = st;
        return r;
}
