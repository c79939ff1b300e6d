/* kube_client.h: a small Kubernetes API client (libcurl + jansson): GET a path, get the node, list its pods and nodes,
 * PATCH and POST (an agent's writes). */
#pragma once

#include <jansson.h>
#include <stddef.h>

#include "kube/kubeconfig.h"

#define KUBE_MAX_BODY_DEFAULT       ((size_t)64 << 20) /* 64 MiB: a response larger than this is refused */
#define KUBE_CONNECT_TIMEOUT_MAX_MS 10000u

/* One connection to one API server; not thread-safe (use one client per thread). */
struct kube_client;

/* Creates a client for cfg (which it copies what it needs from; cfg may be freed afterwards):
 * every request is bounded by timeout_ms in total (connecting by the smaller of that and
 * KUBE_CONNECT_TIMEOUT_MAX_MS). Initialises libcurl with the first client and cleans it up
 * with the last. Returns 0 and *ret, or a negative errno with *ret_error (-EINVAL for a server
 * URL curl refuses or a token with control characters, -ENOTSUP for a libcurl lacking a needed
 * feature, -ENOMEM). */
int kube_client_new(const struct kube_config *cfg, unsigned timeout_ms, struct kube_client **ret, char **ret_error);

/* Creates a client for check --snapshot: no libcurl, no credentials; kube_get() answers what the
 * snapshot recorded (net_replay.h) for server (shown in sentences). Returns 0 and *ret, or -EINVAL
 * without a server. */
int kube_client_new_offline(const char *server, unsigned timeout_ms, struct kube_client **ret);

/* Frees c (NULL is fine), wiping the credentials it held. */
void kube_client_free(struct kube_client *c);
static inline void kube_client_freep(struct kube_client **c) {
        kube_client_free(*c);
}
#define _cleanup_kube_client_ __attribute__((cleanup(kube_client_freep)))

/* Sets the largest response body accepted (default KUBE_MAX_BODY_DEFAULT). */
void kube_client_set_max_body(struct kube_client *c, size_t max_body);

/* Returns the server URL the client talks to (owned by c). */
const char *kube_client_server(const struct kube_client *c);

/* GETs path (starting with "/", query included, already escaped) and parses the body as JSON.
 * Returns 0 with *ret (a JSON object or array, owned by the caller), or a negative errno with
 * *ret_error naming the URL (never the credentials): -ENOENT for 404, -EACCES for 401, -EPERM
 * for 403 (both with the API's Status message), -ESTALE for 410 (an expired continue token), -EIO for other HTTP errors
 * and transport failures, -ETIMEDOUT when the server does not answer within the timeout, -ECONNREFUSED when it cannot
 * be reached, -EKEYREJECTED when the server's certificate does not verify (untrusted CA, mismatched name), -EPROTO for
 * other TLS failures (handshake, client certificate), -EFBIG when the body exceeds the limit, -EBADMSG when it is not
 * JSON. With a recorder installed (net_replay.h) every exchange is recorded; with a replayer, or on an offline client,
 * the recorded answer is given instead (NET_NOT_RECORDED for a path the snapshot does not hold). ret may be NULL when
 * only the outcome matters. */
int kube_get(struct kube_client *c, const char *path, json_t **ret, char **ret_error);

/* Returns s escaped for a URL path segment or query value (malloc'd): every byte but ALPHA, DIGIT and
 * "-._~" as %XX, as curl_easy_escape() does (written here so that a snapshot replays without libcurl):
 * the one escape for every name put into an API path (a node's, an Event's) and every query value.
 * Never fails (aborts on out-of-memory). */
char *kube_query_escape(const char *s);

/* GETs /api/v1/nodes/<name>. Returns as kube_get(); -ENOENT when the node does not exist. */
int kube_get_node(struct kube_client *c, const char *name, json_t **ret, char **ret_error);

/* Lists the pods on node (fieldSelector=spec.nodeName=<node>), in namespace when not NULL (else
 * in all namespaces), matching label_selector when not NULL (e.g. "app=nvidia-device-plugin-daemonset").
 * Returns as kube_get() with the PodList. */
int kube_list_pods(struct kube_client *c, const char *node, const char *namespace, const char *label_selector,
                   json_t **ret, char **ret_error);

/* Lists the namespaces (GET /api/v1/namespaces). Returns as kube_get() with the NamespaceList. */
int kube_list_namespaces(struct kube_client *c, json_t **ret, char **ret_error);

/* Lists the nodes (GET /api/v1/nodes), those matching label_selector when not NULL or empty (e.g.
 * "nvidia.com/gpu.present=true,node-role.kubernetes.io/worker"; URL-encoded here). Returns as
 * kube_get() with the NodeList. */
int kube_list_nodes(struct kube_client *c, const char *label_selector, json_t **ret, char **ret_error);

/* The patch formats the API server takes (the request's Content-Type). */
enum kube_patch_type {
        KUBE_PATCH_STRATEGIC, /* application/strategic-merge-patch+json: lists with a merge key (node
                               * conditions by "type") merge item by item; others are replaced */
        KUBE_PATCH_MERGE,     /* application/merge-patch+json (RFC 7386): lists are replaced */
        KUBE_PATCH_JSON,      /* application/json-patch+json (RFC 6902): a list of operations */
};

/* PATCHes path (as kube_get() takes it, e.g. "/api/v1/nodes/gpu-1/status") with body (the patch text,
 * in type's format) and parses the answer (the object as now stored). Returns 0 with *ret (owned by
 * the caller; ret may be NULL when the object is not wanted), or a negative errno with *ret_error
 * naming the method and URL (never the credentials or the body): as kube_get() (-ENOENT 404, -EACCES
 * 401, -EPERM 403 with the Status message, -ETIMEDOUT within the client's timeout, -ECONNREFUSED,
 * -EKEYREJECTED, -EPROTO, -EFBIG, -EBADMSG, -EIO for other HTTP errors), and -EBUSY for 409 Conflict
 * (a stale metadata.resourceVersion: read again and retry), -EEXIST for 409 AlreadyExists, -EINVAL
 * for 422 and 400 (with the Status message: the patch is invalid or a "test" failed) or a missing body
 * or bad path, -EROFS on an offline client or while a snapshot is replayed (nothing is written).
 * Writes are not recorded into snapshots. */
int kube_patch(struct kube_client *c, const char *path, enum kube_patch_type type, const char *body, json_t **ret,
               char **ret_error);

/* POSTs body (a JSON object, application/json) to path (a collection, e.g.
 * "/api/v1/namespaces/default/events") and parses the answer (the created object). Returns as
 * kube_patch(); -EEXIST when an object of that name exists. */
int kube_post(struct kube_client *c, const char *path, const char *body, json_t **ret, char **ret_error);
