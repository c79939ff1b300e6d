/* dp_devices.h: the devices advertised: GPUs by UUID with their NUMA node, MIG devices, time-slicing replicas. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "dpconfig/dp_config.h"
#include "nvml/nvml_facts.h"

/* The kubelet's device plugin folder (a host path) and the plugins' socket names. */
#define DP_KUBELET_DIR    "/var/lib/kubelet/device-plugins"
#define DP_KUBELET_SOCKET DP_KUBELET_DIR "/kubelet.sock"
/* gpunode's sockets: "gpunode-" before NVIDIA's name for the resource (nvidia-gpu.sock), so that
 * both can be told apart in the folder. */
#define DP_SOCKET_PREFIX "gpunode-nvidia-"

/* One physical GPU, the unit of health. */
struct dp_gpu {
        unsigned index;
        char uuid[96];
        char pci_bus_id[32]; /* "0000:18:00.0", lowercase as sysfs names it */
        int numa;            /* -1: none (sysfs says -1 or nothing) */
        int minor;           /* /dev/nvidia<minor>; -1: NVML did not say */
};

#define DP_GI_NONE    (-1)
#define DP_GI_UNKNOWN (-2)

/* One device advertised to the kubelet. */
struct dp_device {
        char *id;      /* the ID: "GPU-...", "MIG-...", "GPU-...::3" */
        char *visible; /* what the container runtime is told: the UUID, or the index ("0", "0:1") with deviceIDStrategy
                          index */
        char *uuid;    /* the GPU's or MIG device's UUID (CDI names nvidia.com/gpu=<uuid>) */
        size_t gpu;    /* its physical GPU: index into dp_inventory.gpus */
        int gi;        /* a MIG device's GPU instance id; DP_GI_NONE for a whole GPU, DP_GI_UNKNOWN when NVML did
                          not give it */
        unsigned replica; /* 0.. with time-slicing */
        bool replicated;
        char **nodes; /* its device nodes (passDeviceSpecs): /dev/nvidia<minor>, MIG's /dev/nvidia-caps/nvidia-cap<n>;
                         NULL-terminated */
};

/* One resource: its own socket, registration and device list. */
struct dp_resource {
        char *name;     /* "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/gpu.shared" */
        char *socket;   /* host path of its socket */
        char *endpoint; /* the socket's file name, as registered */
        struct dp_device *devices;
        size_t n_devices;
        bool replicated; /* some devices are replicas */
};

struct dp_inventory {
        struct dp_gpu *gpus;
        size_t n_gpus;
        struct dp_resource *resources;
        size_t n_resources;
        bool from_checkpoint; /* NVML did not answer: the devices are the kubelet's last known ones */
        char **control_nodes; /* /dev/nvidiactl, -uvm, -uvm-tools, -modeset that exist under the root; NULL-terminated
                               */
};

/* One line of /proc/driver/nvidia-caps/mig-minors: "gpu<minor>/gi<gi>/access <n>" (ci -1) or
 * "gpu<minor>/gi<gi>/ci<ci>/access <n>": the capability device /dev/nvidia-caps/nvidia-cap<n>. */
struct dp_mig_minor {
        unsigned gpu, gi;
        int ci;
        unsigned minor;
};
#define DP_MIG_MINORS_FILE "/proc/driver/nvidia-caps/mig-minors"

/* Parses mig-minors (text, len bytes) into a malloc'd array (*ret, *ret_n entries), skipping
 * "config" and "monitor" and any line that is not one of the two forms (counted in *ret_skipped).
 * Returns 0; never fails otherwise. */
int dp_mig_minors_parse(const char *text, size_t len, struct dp_mig_minor **ret, size_t *ret_n, size_t *ret_skipped);

/* Builds the inventory from NVML's facts and the config: GPUs with a UUID, their NUMA node from
 * /sys/bus/pci/devices/<bus id>/numa_node (through hostfs), MIG devices by cfg's strategy (single:
 * every GPU in MIG mode with one profile, advertised as nvidia.com/gpu; mixed: nvidia.com/mig-<profile>
 * beside nvidia.com/gpu for the GPUs without MIG), then time-slicing. Returns 0 with *ret (free with
 * dp_inventory_free), or -EINVAL with a sentence (a MIG layout the single strategy cannot serve,
 * a replicated resource naming no device there), -ENODEV when NVML answered no GPU. */
int dp_inventory_build(const struct nvml_facts *f, const struct dp_config *cfg, struct dp_inventory **ret,
                       char **ret_error);

/* Builds an inventory for when NVML does not answer: the devices the kubelet's checkpoint
 * (kubelet_internal_checkpoint) lists for nvidia.com resources, each on a GPU of its own UUID
 * (replica suffixes folded), so that they can be advertised Unhealthy instead of vanishing.
 * Returns 0 with *ret (possibly without devices); never fails otherwise. */
int dp_inventory_from_checkpoint(struct dp_inventory **ret);

/* Frees inv (NULL is fine). */
void dp_inventory_free(struct dp_inventory *inv);

/* Returns the device of resource r with ID id, or NULL. */
const struct dp_device *dp_resource_find(const struct dp_resource *r, const char *id);

/* Returns true when a and b hold the same resources with the same device IDs (a new enumeration
 * that changes nothing the kubelet sees). */
bool dp_inventory_same(const struct dp_inventory *a, const struct dp_inventory *b);
