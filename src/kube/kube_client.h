/* kube_client.h: a small Kubernetes API client (libcurl + jansson): GET a path, get the node, list its pods. */
#pragma once

#include <jansson.h>
#include <stddef.h>

#include "kube/kubeconfig.h"

#define KUBE_MAX_BODY_DEFAULT ((size_t)64 << 20) /* 64 MiB: a response larger than this is refused */
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
static inline void kube_client_freep(struct kube_client **c) { kube_client_free(*c); }
#define _cleanup_kube_client_ __attribute__((cleanup(kube_client_freep)))

/* Sets the largest response body accepted (default KUBE_MAX_BODY_DEFAULT). */
void kube_client_set_max_body(struct kube_client *c, size_t max_body);

/* Returns the server URL the client talks to (owned by c). */
const char *kube_client_server(const struct kube_client *c);

/* GETs path (starting with "/", query included, already escaped) and parses the body as JSON.
 * Returns 0 with *ret (a JSON object or array, owned by the caller), or a negative errno with
 * *ret_error naming the URL (never the credentials): -ENOENT for 404, -EACCES for 401, -EPERM
 * for 403 (both with the API's Status message), -EIO for other HTTP errors and transport
 * failures, -ETIMEDOUT when the server does not answer within the timeout, -ECONNREFUSED when
 * it cannot be reached, -EKEYREJECTED when the server's certificate does not verify (untrusted CA,
 * mismatched name), -EPROTO for other TLS failures (handshake, client certificate), -EFBIG
 * when the body exceeds the limit, -EBADMSG when it is not JSON. With a recorder installed
 * (net_replay.h) every exchange is recorded; with a replayer, or on an offline client, the recorded
 * answer is given instead (NET_NOT_RECORDED for a path the snapshot does not hold). */
int kube_get(struct kube_client *c, const char *path, json_t **ret, char **ret_error);

/* GETs /api/v1/nodes/<name>. Returns as kube_get(); -ENOENT when the node does not exist. */
int kube_get_node(struct kube_client *c, const char *name, json_t **ret, char **ret_error);

/* Lists the pods on node (fieldSelector=spec.nodeName=<node>), in namespace when not NULL (else
 * in all namespaces), matching label_selector when not NULL (e.g. "app=nvidia-device-plugin-daemonset").
 * Returns as kube_get() with the PodList. */
int kube_list_pods(struct kube_client *c, const char *node, const char *namespace, const char *label_selector,
                   json_t **ret, char **ret_error);

/* Lists the namespaces (GET /api/v1/namespaces). Returns as kube_get() with the NamespaceList. */
int kube_list_namespaces(struct kube_client *c, json_t **ret, char **ret_error);

