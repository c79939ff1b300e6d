/* dp_config.h: NVIDIA's device plugin config file (version v1: flags, sharing.timeSlicing/mps): one parser for the
 * device plugin and for GFD's labels. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

enum dp_mig_strategy { DP_MIG_NONE, DP_MIG_SINGLE, DP_MIG_MIXED };
enum dp_sharing { DP_SHARING_NONE, DP_SHARING_TIME_SLICING, DP_SHARING_MPS };

/* dp_config_parse()'s flags. */
enum {
        DP_CONFIG_MPS = 1 << 0, /* read sharing.mps (GFD labels it); without it refused (the plugin cannot serve it) */
};

/* How Allocate tells the runtime which devices a container gets (flags.plugin.deviceListStrategy,
 * NVIDIA's DEVICE_LIST_STRATEGY); a set of them. */
enum {
        DP_LIST_ENVVAR = 1 << 0,          /* NVIDIA_VISIBLE_DEVICES=<id,...> */
        DP_LIST_VOLUME_MOUNTS = 1 << 1,   /* /dev/null at /var/run/nvidia-container-devices/<id> */
        DP_LIST_CDI_ANNOTATIONS = 1 << 2, /* cdi.k8s.io/... annotations naming nvidia.com/gpu=<id> */
        DP_LIST_CDI_CRI = 1 << 3,         /* ContainerAllocateResponse.cdi_devices */
};

/* The most replicas one GPU may be shared into, and resources in a config (NVIDIA sets none; these
 * only stop a hostile file from making millions of devices). */
#define DP_MAX_REPLICAS         1024u
#define DP_MAX_CONFIG_RESOURCES 64u
#define DP_CONFIG_MAX_BYTES     ((size_t)1 << 20)

/* sharing.timeSlicing.resources[] (or sharing.mps.resources[]): one resource shared into replicas. */
struct dp_replicated {
        char *name;        /* "nvidia.com/gpu", "nvidia.com/mig-1g.10gb" */
        char *rename;      /* the advertised name (renameByDefault: "<name>.shared"); NULL: name */
        unsigned replicas; /* >= 2 */
        bool all;          /* devices: "all" (the default) */
        unsigned count;    /* devices: N (the first N) */
        char **devices;    /* devices: [index, "uuid", "0:1"], as strings */
        size_t n_devices;
};

struct dp_config {
        enum dp_mig_strategy mig_strategy;   /* flags.migStrategy, default none */
        bool fail_on_init_error;             /* flags.failOnInitError, default true */
        unsigned list_strategies;            /* flags.plugin.deviceListStrategy; 0: not set (auto) */
        bool id_index;                       /* flags.plugin.deviceIDStrategy: index (else uuid) */
        bool pass_device_specs;              /* flags.plugin.passDeviceSpecs: Allocate names the device nodes too */
        char *dev_root;                      /* flags.nvidiaDevRoot: where the host's /dev/nvidia* are; NULL: "/" */
        char *cdi_annotation_prefix;         /* flags.plugin.cdiAnnotationPrefix, default "cdi.k8s.io/" */
        enum dp_sharing sharing;             /* which of sharing.* the resources come from; NONE: no resources */
        bool rename_by_default;              /* sharing.<kind>.renameByDefault */
        bool fail_requests_greater_than_one; /* sharing.<kind>.failRequestsGreaterThanOne */
        struct dp_replicated *resources;
        size_t n_resources;
};

/* Sets the defaults (as NVIDIA's plugin has them without a config file). */
void dp_config_init(struct dp_config *c);
/* Frees what c holds; it is then as after dp_config_init. */
void dp_config_done(struct dp_config *c);

/* Parses a deviceListStrategy value: one name or a comma-separated list (envvar, volume-mounts,
 * cdi-annotations, cdi-cri). Returns the set (> 0), or -EINVAL. */
int dp_list_strategy_parse(const char *s);

/* Parses a migStrategy value (none, single, mixed). Returns 0 with *ret, or -EINVAL. */
int dp_mig_strategy_parse(const char *s, enum dp_mig_strategy *ret);

/* Fills c (after dp_config_init) from a config's JSON tree. Returns 0, or -EINVAL with a sentence
 * in *ret_error naming the field: version other than v1, a wrong type, an unknown strategy,
 * replicas below 2 or past DP_MAX_REPLICAS, a resource without a name, sharing.mps without
 * DP_CONFIG_MPS in parse_flags (with it, sharing.mps is read with timeSlicing's rules and wins over
 * timeSlicing, as with GFD). Unknown keys are ignored, as NVIDIA's plugin ignores them. */
int dp_config_from_json(json_t *root, unsigned parse_flags, struct dp_config *c, char **ret_error);

/* Parses a config file's text (YAML or JSON, len bytes; at most DP_CONFIG_MAX_BYTES) into c (after
 * dp_config_init), flags as dp_config_from_json's parse_flags. Returns 0, or -EINVAL / -EFBIG / yaml_to_json's
 * errors with a sentence. */
int dp_config_parse(const char *text, size_t len, unsigned flags, struct dp_config *c, char **ret_error);

/* Returns the name a resource is advertised under: its rename, else "<name>.shared" with
 * renameByDefault, else its name. */
const char *dp_replicated_advertised(const struct dp_replicated *r);

/* Returns the time-slicing entry for resource name, or NULL. */
const struct dp_replicated *dp_config_replicated(const struct dp_config *c, const char *name);
