/* dp_health.h: the GPUs' health, watched in a thread: Xid events, lost GPUs, layer-1 faults, the driver gone. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device_plugin/dp_devices.h"
#include "nvml/nvml_lib.h"

/* Xids NVIDIA's plugin treats as the application's fault, not the GPU's: they leave it Healthy. */
#define DP_APPLICATION_XIDS                                                                                            \
        { 13, 31, 43, 45, 68, 109 }
#define DP_MAX_XID 1024

/* Which Xids mark a GPU Unhealthy: NVIDIA's rule and its two variables. */
struct dp_xid_policy {
        bool all_disabled;     /* DP_DISABLE_HEALTHCHECKS=all (or "xids"): no Xid marks a GPU */
        bool skip[DP_MAX_XID]; /* Xids that leave a GPU healthy */
};

/* Fills p from NVIDIA's variables: disable (DP_DISABLE_HEALTHCHECKS: "all", "xids", or Xids to
 * ignore, comma-separated, beside the application Xids) and enable (DP_ENABLE_HEALTHCHECKS: Xids
 * that count even so, "all" to count the application Xids too); NULL for unset. Returns 0, or
 * -EINVAL naming the entry that is not a number. */
int dp_xid_policy_parse(const char *disable, const char *enable, struct dp_xid_policy *p, char **ret_error);

/* Returns true when Xid x marks a GPU Unhealthy under p. */
bool dp_xid_counts(const struct dp_xid_policy *p, unsigned long long x);

/* NVML's gpuInstanceId of an Xid that is not MIG-specific: the whole GPU. */
#define DP_NO_INSTANCE 0xFFFFFFFFu
/* MIG GPU instance ids tracked one by one (NVML's are 0..14 on A100/H100); an Xid naming a larger one
 * marks the whole GPU. */
#define DP_MAX_INSTANCE_ID 63u

struct dp_gpu_health {
        bool healthy;     /* the whole GPU (and so every device of it) */
        char reason[200]; /* why not ("GPU is lost (NVML_ERROR_GPU_IS_LOST)", "Xid 79 ..."); "" when healthy */
        uint64_t unhealthy_instances; /* bit g: an Xid hit MIG GPU instance g (only its MIG devices are Unhealthy) */
        char instance_reason[200];    /* the last such Xid; "" when none */
};

/* Returns true when device d, of the GPU whose health is gh, is Healthy: the GPU is, and no Xid hit
 * d's MIG GPU instance (a whole GPU, or a MIG device whose instance is unknown, counts as hit by any).
 * Never fails. */
bool dp_device_healthy(const struct dp_gpu_health *gh, const struct dp_device *d);

struct dp_health;

/* Starts watching gpus (copied) with lib, waking every interval_ms.
 * Returns 0 with *ret, or -errno when the thread cannot start. */
int dp_health_start(struct nvml_lib *lib, const struct dp_gpu *gpus, size_t n_gpus, unsigned interval_ms,
                    const struct dp_xid_policy *policy, bool unproven, struct dp_health **ret);

/* An Xid event on the GPU with this UUID (from the daemon's Xid watch), on its MIG GPU instance
 * gpu_instance_id (NVML's event data; DP_NO_INSTANCE: not MIG-specific): under the policy, that
 * instance's MIG devices (the whole GPU for DP_NO_INSTANCE or an id past DP_MAX_INSTANCE_ID) are
 * Unhealthy until the GPU is reset or the driver comes back. Returns nothing; an unknown UUID is
 * ignored. */
void dp_health_xid(struct dp_health *h, const char *uuid, unsigned long long xid, unsigned gpu_instance_id);

/* Stops the thread and drops the caller's hold on h, which must not be used again: waits up to 2 s
 * (and one interval) for an NVML call to return; a thread still inside NVML then is detached and
 * frees h itself when the call returns. Returns nothing; never fails. */
void dp_health_stop(struct dp_health *h);

/* Returns how many monitors are not freed yet, stopped ones whose thread is still inside NVML
 * included (for tests and leak checks). Never fails. */
size_t dp_health_live(void);

/* Returns an fd that is readable when a GPU's health changed, or when NVML answered again after
 * it did not (dp_health_take_nvml_back). */
int dp_health_fd(const struct dp_health *h);

/* Empties the fd. */
void dp_health_drain(struct dp_health *h);

/* Copies the health of every GPU (in the order given to dp_health_start) into out. */
void dp_health_get(struct dp_health *h, struct dp_gpu_health *out);

/* Returns true once after NVML started answering with GPUs again when it had not (the driver
 * came back): the inventory is to be built anew. */
bool dp_health_take_nvml_back(struct dp_health *h);

/* Returns how well GPUs a and b (positions in the list) are connected, higher is better: 100 and
 * more for NVLink (P2P over NVLink), 40 same PCIe switch, 30 several switches, 20 one host bridge,
 * 10 one NUMA node's CPU, 0 across sockets; -1 while unknown. */
int dp_health_link(struct dp_health *h, size_t a, size_t b);
