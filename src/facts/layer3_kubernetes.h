/* layer3_kubernetes.h: layer 3 facts: the kubelet's files, and the node and its pods from the API. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "kube/kube_checkpoint.h"
#include "kube/kube_objects.h"

struct probe_options;

#define KUBELET_PLUGINS_REGISTRY_DIR "/var/lib/kubelet/plugins_registry"
#define NVIDIA_VALIDATIONS_DIR       "/run/nvidia/validations"
#define KUBE_DEFAULT_TIMEOUT_MS      5000u

/* What the kubelet keeps on the node (read through hostfs). */
struct kubelet_facts {
        int dp_rc; /* device-plugins folder: 0, -ENOENT not a kubelet node, -errno */
        char *dp_error;
        bool kubelet_sock;     /* kubelet.sock: the registration socket */
        char **plugin_sockets; /* other *.sock names in the folder ("nvidia-gpu.sock") */
        size_t n_plugin_sockets;
        int checkpoint_rc; /* 0 parsed; -ENOENT (no allocation yet); -EBADMSG; -errno */
        char *checkpoint_error;
        struct kube_checkpoint *checkpoint;
        int registry_rc; /* plugins_registry folder */
        char **registry; /* socket names there ("csi.tigera.io-reg.sock") */
        size_t n_registry;
        int validations_rc;      /* /run/nvidia/validations: 0 or -errno (-ENOENT: no GPU Operator) */
        char **validations;      /* file names there ("driver-ready", ...) */
        char **validation_texts; /* parallel: each file's content (NULL when unreadable), at most 64 KiB */
        size_t n_validations;
};

/* Why a pod on the node matters to gpunode. */
enum kube_pod_role {
        POD_OTHER,
        POD_OPERATOR, /* a GPU Operator component without a check of its own */
        POD_DEVICE_PLUGIN,
        POD_GFD,
        POD_MIG_MANAGER,
        POD_DCGM_EXPORTER,
        POD_NETWORK_OPERATOR,
        POD_NODE_EXPORTER,
        POD_LOGGING_AGENT,
        POD_OTEL_AGENT,
};

/* The Kubernetes API's view of this node. */
struct kube_api_facts {
        int rc;         /* 0 answered; -ENOENT no configuration; else why it did not */
        char *error;    /* the sentence for rc, naming the server */
        bool timed_out; /* a request ran into --timeout; later ones were not made */
        unsigned timeout_ms;
        char *server, *source; /* API server URL, where the configuration came from */
        char *node_name;
        int node_rc; /* GET nodes/<name>: 0, -ENOENT not registered, ... */
        char *node_error;
        struct kube_node_info node; /* valid when node_rc == 0 */
        int pods_rc;                /* pods on this node */
        char *pods_error;
        struct kube_pod_info *pods;
        enum kube_pod_role *roles; /* parallel to pods */
        size_t n_pods;
        char *operator_namespace; /* --operator-namespace, or where operator pods were found; NULL */
        bool operator_namespace_given;
        int csinode_rc;     /* GET csinodes/<name>: 0, -ENOENT none, ... */
        char **csi_drivers; /* spec.drivers[].name */
        size_t n_csi_drivers;
};

/* One device a container holds, from the kubelet's pod-resources List. */
struct podres_holder {
        char *namespace, *pod, *container;
        char *resource_name; /* "nvidia.com/gpu", "nvidia.com/mig-1g.10gb", ... */
        char *device_id;     /* as the device plugin named it: "GPU-<uuid>", "GPU-<uuid>::2", "MIG-<uuid>", "3" */
};

/* Which pod, namespace and container holds which device: the kubelet's pod-resources List on
 * PODRES_SOCKET (kube/podresources.h), or its answer recorded in a snapshot. */
struct podres_facts {
        int rc;                        /* 0 answered; -ENOENT no socket (not a kubelet node, or not mounted); -errno */
        char *error;                   /* the sentence for rc, naming the socket */
        struct podres_holder *holders; /* every (container, device id) pair, in the kubelet's order */
        size_t n_holders;
};

struct kube_facts {
        struct kubelet_facts kubelet;
        struct kube_api_facts api;
        struct podres_facts podres;
};

/* What steers the Kubernetes and metrics probes (cmd/options.h parses them). */
struct kube_probe_options {
        const char *kubeconfig; /* --kubeconfig; NULL: as kubectl finds it */
        const char *node_name;  /* the node to ask about (the command resolves it); NULL: the host name */
        unsigned timeout_ms;    /* --timeout, per API request and per metrics GET */
        const char *operator_namespace;
        const char *dcgm_url, *node_exporter_url;
        bool no_api; /* do not talk to the API server (offline analysis) */
};

/* Runs the kubelet and API probes; hostname is the node's host name (from the root). Never fails:
 * each part records its own errors. Returns the facts (free with kube_facts_free). */
struct kube_facts *probe_kube(const struct kube_probe_options *opts, const char *hostname);
/* Reads the kubelet's folders and the GPU Operator's validation files. Never fails. */
void probe_kubelet(struct kubelet_facts *ret);
void kube_facts_free(struct kube_facts *k);
/* Asks the kubelet's pod-resources List, bounded by opts->timeout_ms (0: 5 s), or, in check
 * --snapshot, its recorded answer (kube/net_replay.h); records the call while collecting. Never
 * fails: ret->rc and ret->error say why there is no answer (-ENOENT: no socket). */
void probe_podresources(const struct kube_probe_options *opts, struct podres_facts *ret);
void podres_facts_free(struct podres_facts *p);

/* Returns the role of a pod from its labels and name. */
enum kube_pod_role kube_pod_role_of(const struct kube_pod_info *p);
/* Returns the GPU Operator component name of a pod (its app label) or NULL. */
const char *gpu_operator_app(const struct kube_pod_info *p);
