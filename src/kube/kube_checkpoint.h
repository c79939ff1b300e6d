/* kube_checkpoint.h: parser for the kubelet device manager checkpoint (kubelet_internal_checkpoint, both DeviceIDs
 * formats). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Where the kubelet keeps it, below the host root. */
#define KUBELET_DEVICE_PLUGINS_DIR "/var/lib/kubelet/device-plugins"
#define KUBELET_CHECKPOINT_FILE    KUBELET_DEVICE_PLUGINS_DIR "/kubelet_internal_checkpoint"
#define KUBE_CHECKPOINT_MAX_SIZE   ((size_t)16 << 20)

/* Data.RegisteredDevices: the devices a plugin advertised for one resource. */
struct kube_checkpoint_resource {
        char *name;     /* "nvidia.com/gpu" */
        char **devices; /* device IDs as the plugin named them ("GPU-...", "GPU-...::3") */
        size_t n_devices;
};

/* Data.PodDeviceEntries: devices allocated to one container. */
struct kube_checkpoint_entry {
        char *pod_uid, *container, *resource;
        char **devices; /* union over NUMA nodes for the keyed format */
        size_t n_devices;
};

struct kube_checkpoint {
        struct kube_checkpoint_resource *resources;
        size_t n_resources;
        struct kube_checkpoint_entry *entries;
        size_t n_entries;
        bool numa_keyed;  /* some entry had DeviceIDs keyed by NUMA node (kubelet >= 1.20) */
        bool flat;        /* some entry had a flat DeviceIDs array (kubelet < 1.20) */
        size_t n_skipped; /* malformed entries or device IDs that were ignored */
};

/* Parses len bytes of checkpoint JSON. Returns 0 with *ret (free with kube_checkpoint_free), or
 * -EBADMSG with *ret_error (a sentence) when it is not JSON, has no "Data" object, or its
 * RegisteredDevices/PodDeviceEntries have the wrong type; -EFBIG above KUBE_CHECKPOINT_MAX_SIZE.
 * Malformed single entries are skipped and counted in n_skipped. */
int kube_checkpoint_parse(const char *data, size_t len, struct kube_checkpoint **ret, char **ret_error);

/* Frees c (NULL is fine). */
void kube_checkpoint_free(struct kube_checkpoint *c);

/* Returns the registered devices of resource, or NULL when the plugin registered none. */
const struct kube_checkpoint_resource *kube_checkpoint_find(const struct kube_checkpoint *c, const char *resource);

/* Returns the length of a device ID without a time-slicing replica suffix ("GPU-x::2" -> 5). */
size_t kube_device_id_base_len(const char *id);
