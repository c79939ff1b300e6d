/* kube_list.c: paginated lists: limit/continue pages through kube_get(), each page freed before the next. */
#include "kube/kube_list.h"
#include "basic/util.h"

#include <ctype.h>

#define KUBE_LIST_MAX_PAGES 100000u

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

/* The continue tokens a list was answered, as 64-bit FNV-1a hashes (open addressing, grown at half
 * full): a token seen before means the server leads the list round in a cycle. */
struct token_set {
        uint64_t *h; /* 0: a free slot (a hash of 0 is stored as 1) */
        size_t cap, n;
};

/* Returns the FNV-1a hash of s, never 0. */
static uint64_t token_hash(const char *s) {
        uint64_t h = 1469598103934665603ull;
        for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
        return h ? h : 1;
}

/* Adds token to t. Returns true when it was there already; aborts on out-of-memory. */
static bool token_seen(struct token_set *t, const char *token) {
        if ((t->n + 1) * 2 > t->cap) {
                struct token_set g = { .cap = t->cap ? t->cap * 2 : 64 };
                g.h = xcalloc(g.cap, sizeof *g.h);
                for (size_t i = 0; i < t->cap; i++) {
                        if (!t->h[i]) continue;
                        size_t j = t->h[i] & (g.cap - 1);
                        while (g.h[j]) j = (j + 1) & (g.cap - 1);
                        g.h[j] = t->h[i];
                        g.n++;
                }
                free(t->h);
                *t = g;
        }
        uint64_t h = token_hash(token);
        size_t j = h & (t->cap - 1);
        while (t->h[j]) {
                if (t->h[j] == h) return true;
                j = (j + 1) & (t->cap - 1);
        }
        t->h[j] = h;
        t->n++;
        return false;
}

/* kube_list_all's page getter: kube_get() on the client. */
static int client_get(void *userdata, const char *path, json_t **ret, char **ret_error) {
        return kube_get(userdata, path, ret, ret_error);
}

int kube_list_all(struct kube_client *c, const struct kube_list_request *req, kube_list_item_fn fn, void *userdata,
                  struct kube_list_stats *ret_stats, char **ret_error) {
        return kube_list_all_with(client_get, c, req, fn, userdata, ret_stats, ret_error);
}

int kube_list_all_with(kube_list_get_fn get, void *get_userdata, const struct kube_list_request *req,
                       kube_list_item_fn fn, void *userdata, struct kube_list_stats *ret_stats, char **ret_error) {
        struct kube_list_stats st = { 0 };
        struct token_set seen = { 0 };
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
                r = get(get_userdata, path, &page, &err);
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
                /* any token answered before (A -> B -> A): the list goes round for ever, the items counted again */
                bool cycle = !stuck && next && *next && token_seen(&seen, next);
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
                if (r >= 0 && cycle) {
                        r = errorf(ret_error, -EBADMSG,
                                   "list %s: page %zu answered a continue token already answered on an earlier page: "
                                   "the list goes round in a cycle (%zu items so far, counted again)",
                                   req->path, st.pages, st.items);
                        break;
                }
                if (r < 0) {
                        errorf(ret_error, r, "list %s: %s", req->path, strerror(-r));
                        break;
                }
                if (!cont) break;
        }
        free(seen.h);
        if (ret_stats) *ret_stats = st;
        return r;
}
