/* dp_allocate.h: the answers to Allocate and GetPreferredAllocation, request bytes to answer bytes (no I/O). */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "dpconfig/dp_config.h"
#include "device_plugin/dp_devices.h"

/* What protobuf-c may allocate to decode one request: a request that expands past it is refused. */
#define DP_DECODE_BUDGET ((size_t)32 << 20)
/* The most device IDs one request may name (a node has at most a few thousand replicas). */
#define DP_MAX_REQUEST_IDS 65536u

/* How an answer is built. */
struct dp_alloc_context {
        const struct dp_resource *resource;
        unsigned list_strategies;          /* DP_LIST_*, never 0 here */
        const char *cdi_annotation_prefix; /* "cdi.k8s.io/" */
        bool fail_requests_greater_than_one;
        bool pass_device_specs;     /* DeviceSpecs: the control nodes and the devices' nodes, "rw" */
        const char *dev_root;       /* the host's prefix of the nodes; NULL: none */
        char *const *control_nodes; /* NULL-terminated; NULL: none */
        /* GPU connectivity (dp_health_link's scale), for GetPreferredAllocation; NULL: NUMA only */
        int (*link)(void *userdata, size_t gpu_a, size_t gpu_b);
        void *link_data;
        const struct dp_gpu *gpus; /* the inventory's GPUs (NUMA nodes) */
        size_t n_gpus;
};

/* Answers an AllocateRequest (req, len bytes). Returns 0 with the packed AllocateResponse in
 * *ret (malloc'd, *ret_len bytes); or a gRPC status code > 0 with a sentence in *ret_error:
 * GRPC_INVALID_ARGUMENT for a request that does not decode, names a device this resource does
 * not have or an ID holding a NUL byte (named escaped: never read as the ID before the NUL), or
 * asks more than one shared device with failRequestsGreaterThanOne; or -errno
 * (libprotobuf-c missing). */
int dp_allocate(const struct dp_alloc_context *ctx, const uint8_t *req, size_t len, uint8_t **ret, size_t *ret_len,
                char **ret_error);

/* Answers a PreferredAllocationRequest: for each container, must_include first, then the
 * available devices best connected to them (NVLink, then PCIe switch, then NUMA node), or for
 * shared devices replicas spread over the GPUs with the most replicas free. Returns like
 * dp_allocate (GRPC_INVALID_ARGUMENT: does not decode, an unknown device, an ID holding a NUL
 * byte, a must_include ID that is not among the available ones (the kubelet's contract: a subset),
 * a size that cannot be met from the available devices). */
int dp_preferred(const struct dp_alloc_context *ctx, const uint8_t *req, size_t len, uint8_t **ret, size_t *ret_len,
                 char **ret_error);
