/* api_child.h: the agent's Kubernetes API requests, each made by a `gpunode kube-call` child so that libcurl and its
 * chain stay out of the agent. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Makes one request by running `/proc/self/exe kube-call` (method "GET", "PATCH" or "POST"; path as
 * kube_get() takes it, query included and escaped; patch_type "strategic", "merge" or "json" for
 * PATCH, else NULL; body the request text for PATCH and POST, else NULL; kubeconfig NULL: as kubectl
 * finds it, in-cluster included; the request bounded by timeout_ms, the answer by max_body bytes).
 * The child is waited for at most timeout_ms + 2 s, then killed with its process group. Returns the
 * child's outcome as the in-process client (kube_client.h) returns it: 0 with *ret (the answer, owned
 * by the caller; ret may be NULL), or its negative errno (-ENOENT, -EACCES, -EPERM, -EBUSY, -EEXIST,
 * -EINVAL, -EFBIG, -EBADMSG, -ETIMEDOUT, -ECONNREFUSED, ...) with a malloc'd sentence in *ret_error;
 * and -ETIMEDOUT when the child ran past its bound, -EIO when it crashed, exited other than 0 or
 * printed something that is not its outcome, -errno when it cannot be started (all with a sentence). */
int api_child_call(const char *method, const char *path, const char *patch_type, const char *body,
                   const char *kubeconfig, unsigned timeout_ms, size_t max_body, json_t **ret, char **ret_error);

/* As api_child_call(); *ret_setup (when not NULL) is set true when the call failed before the request
 * (no configuration, or no client could be made from it: *ret_error is then the whole sentence, "no
 * Kubernetes configuration: ..." or "cannot create the API client: ..."), else false. */
int api_child_call_setup(const char *method, const char *path, const char *patch_type, const char *body,
                         const char *kubeconfig, unsigned timeout_ms, size_t max_body, json_t **ret, char **ret_error,
                         bool *ret_setup);

/* As api_child_call_setup() for a GET whose answer the child cuts to fields (comma-separated dotted
 * paths, e.g. "metadata.name,spec.taints"; of a list, of each item, the list's metadata kept): a Node
 * of megabytes, or a page of whole Nodes, is parsed in the child and only what the agent reads
 * crosses into it. max_body bounds the answer the child reads. Returns as api_child_call_setup(). */
int api_child_get_fields(const char *path, const char *fields, const char *kubeconfig, unsigned timeout_ms,
                         size_t max_body, json_t **ret, char **ret_error, bool *ret_setup);
