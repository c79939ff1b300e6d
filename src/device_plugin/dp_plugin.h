/* dp_plugin.h: the device plugin service: sockets, the kubelet's calls, (re-)registration, health on the stream. */
#pragma once

#include <stdbool.h>

struct xid_watch;

/* What runs the plugin; zero fields take the defaults in brackets. */
struct dp_options {
        const char *config_file;      /* NVIDIA's config file (read as is, not below the root); NULL: none */
        const char *nvml_library;     /* NULL: libnvidia-ml.so.1 */
        unsigned nvml_timeout_ms;     /* the enumeration's NVML bound [10000] */
        unsigned health_interval_ms;  /* health polling [250] */
        unsigned register_attempts;   /* Register tries per (re)registration [5] */
        unsigned register_timeout_ms; /* each try [5000] */
        unsigned register_backoff_ms; /* wait before the second try, doubled up to 30 s [1000] */
        /* overrides of the config file (flags, NVIDIA's variables); NULL: the file's */
        const char *mig_strategy;       /* none, single, mixed */
        const char *list_strategy;      /* envvar, volume-mounts, cdi-annotations, cdi-cri (comma list) */
        const char *id_strategy;        /* uuid, index */
        const char *fail_on_init_error; /* a Go boolean */
        const char *pass_device_specs;  /* a Go boolean */
        const char *kubelet_dir; /* the kubelet's device plugin folder, a host path [/var/lib/kubelet/device-plugins] */
        int stop_fd;             /* readable: stop (a signal pipe) */
        struct xid_watch *xid;   /* the daemon's Xid watch, for the GPUs' health; NULL: no Xid health */
        /* one log line (no newline); NULL: stderr. Called from the plugin's threads too. */
        void (*log)(void *userdata, const char *line);
        /* a GPU's health changed (for an Event); NULL: none */
        void (*health_event)(void *userdata, const char *uuid, bool healthy, const char *reason);
        void *userdata;
};

/* Runs the plugin until stop_fd is readable: enumerates the GPUs (NVML, then the config), listens
 * on a socket per resource in the kubelet's folder, registers each with the kubelet (bounded
 * retries, then again whenever kubelet.sock is re-created or a socket of its own is removed),
 * serves ListAndWatch, Allocate, GetPreferredAllocation, GetDevicePluginOptions and
 * PreStartContainer, and sends every health change on the open ListAndWatch streams. When NVML
 * does not answer, the devices the kubelet last knew are advertised Unhealthy until it does.
 * Removes its sockets before returning. Returns 0 after a stop, or a negative errno with a
 * sentence when it cannot start (a config refused, a MIG layout its strategy cannot serve, the
 * folder missing, libnghttp2 or libprotobuf-c missing). */
int dp_run(const struct dp_options *o, char **ret_error);

struct dp_config;
/* Applies the overrides in o to cfg. Returns 0, or -EINVAL with a sentence naming the value. */
int dp_apply_overrides(const struct dp_options *o, struct dp_config *cfg, char **ret_error);
