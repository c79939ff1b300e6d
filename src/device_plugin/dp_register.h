/* dp_register.h: Register with the kubelet (v1beta1.Registration on kubelet.sock), one call, bounded by a timeout. */
#pragma once

#include <stdbool.h>

/* The API version the plugin speaks. */
#define DP_API_VERSION "v1beta1"

/* Calls Register on the kubelet's socket (kubelet_socket, a host path) for resource_name, served
 * on endpoint (the socket's file name in the kubelet's folder), announcing
 * GetPreferredAllocation; timeout_ms in all. Returns 0, or the negative errno of grpc_unary with
 * its sentence (-ENOENT no kubelet socket, -ECONNREFUSED nobody listens, -ETIMEDOUT no answer,
 * a status the kubelet answered, e.g. a version it refuses). */
int dp_register(const char *kubelet_socket, const char *resource_name, const char *endpoint, unsigned timeout_ms,
                char **ret_error);
