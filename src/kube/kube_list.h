/* kube_list.h: paginated Kubernetes lists (limit/continue), filtered on the server, one page in memory at a time. */
#pragma once

#include <jansson.h>
#include <stddef.h>

#include "kube/kube_client.h"

#define KUBE_LIST_LIMIT_DEFAULT 500u /* kubectl's chunk size */

/* Called with each item of each page (borrowed: valid only during the call). Returns 0 to go on, or a
 * negative errno that stops the list and is returned by kube_list_all(). */
typedef int (*kube_list_item_fn)(const json_t *item, void *userdata);

/* What one list cost. */
struct kube_list_stats {
        size_t pages, items;
};

/* What to list: path is the collection ("/api/v1/nodes", "/apis/storage.k8s.io/v1/storageclasses");
 * selectors may be NULL (not URL-encoded: done here); limit 0 means KUBE_LIST_LIMIT_DEFAULT. */
struct kube_list_request {
        const char *path;
        const char *label_selector;
        const char *field_selector;
        unsigned limit;
};

/* Gets one page: path (query included, escaped) parsed as JSON into *ret. Returns 0, or a negative errno
 * with *ret_error as kube_get() does. */
typedef int (*kube_list_get_fn)(void *userdata, const char *path, json_t **ret, char **ret_error);

/* GETs every page of req (limit, then continue with the token each page returns) and calls fn on every
 * item, freeing each page before the next is asked. Returns 0 with *ret_stats (may be NULL) when the
 * last page came, or a negative errno with *ret_error naming the list and the page: as kube_get()
 * (-EPERM for 403 with the Status message, -ENOENT 404: the resource is not served, -ETIMEDOUT ...),
 * -ESTALE when the server refused a continue token (410 Expired: the list must start again), -EBADMSG
 * for a page that is not a list (no items array) or a continue token answered twice (the token it
 * was sent, or any earlier one: A -> B -> A, caught on the page that repeats it), -E2BIG past 100000
 * pages, or fn's error. Items
 * already handed to fn stay handed: on an error the caller must treat what it gathered as partial. */
int kube_list_all(struct kube_client *c, const struct kube_list_request *req, kube_list_item_fn fn, void *userdata,
                  struct kube_list_stats *ret_stats, char **ret_error);

/* As kube_list_all(), each page got by get (with get_userdata) instead of kube_get() on a client: the
 * agent's pages come from kube-call children. Returns as kube_list_all(). */
int kube_list_all_with(kube_list_get_fn get, void *get_userdata, const struct kube_list_request *req,
                       kube_list_item_fn fn, void *userdata, struct kube_list_stats *ret_stats, char **ret_error);
