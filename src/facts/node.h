/* node.h: the probe -> check contract: every fact the probes read about one node, layer by layer,
 * and the options that steer probing. Checks are pure functions of these. */
#pragma once

#include "facts/layer1_hardware.h"

struct runtime_facts;
struct kube_facts;
struct kube_probe_options;
struct metrics_facts;
struct nvml_gpu_facts;

/* ---- Node-level facts: joins that checks of several layers need, computed once by node_facts_join()
 * from the layers' facts, so that a layer-N check reads no fact of a layer above N. ---- */

/* A container holding a GPU, or a part of one (a MIG device, a time-sliced or MPS replica), through
 * a device plugin's nvidia.com/ resource. */
struct gpu_holder {
        char *namespace, *pod, *container;
};

/* The distinct containers holding one GPU, in the kubelet's order. */
struct gpu_pods {
        char *uuid; /* the kernel log's UUID for a GPU NVML does not list; NULL for NVML's GPUs */
        bool named; /* matched by a UUID: without one only index naming could match, so no
                     * holder then does not mean no pod */
        struct gpu_holder *holders;
        size_t n_holders;
};

/* Which pod holds which GPU: the kubelet's pod-resources List (layer 3) joined with the GPUs NVML and
 * the kernel log know (layer 1). */
struct gpu_pod_join {
        int rc;                /* 0 the kubelet answered; -ENOENT no socket, or Kubernetes not probed;
                                * -ENOMEDIUM not recorded in the snapshot; other -errno */
        char *error;           /* the sentence for rc < 0, naming the socket; may be NULL */
        struct gpu_pods *nvml; /* parallel to nvml.facts->gpus; NULL when rc < 0 */
        size_t n_nvml;
        struct gpu_pods *logged; /* one per distinct UUID the kernel log gives a GPU; NULL when rc < 0 */
        size_t n_logged;
};

/* A pod on this node as the container runtime's configuration needs it: which runtime it selects. */
struct node_pod {
        char *namespace, *name;
        char *runtime_class; /* spec.runtimeClassName; NULL unset */
        bool requests_gpu;   /* a container requests an nvidia.com/ resource */
};

/* The pods on this node from the Kubernetes API (layer 3), for the container runtime's checks (layer 2). */
struct node_pods {
        bool kubernetes;       /* a Kubernetes node: the kubelet's device-plugins folder exists, or the
                                * API answered */
        int api_rc;            /* the API: 0 answered; -ENOENT no configuration, or not probed; -errno */
        int list_rc;           /* GET of the node and of its pods: 0 both answered; else the first error */
        struct node_pod *pods; /* valid when api_rc == 0 and list_rc == 0 */
        size_t n_pods;
};

struct node_facts {
        char *hostname;
        struct pci_facts pci;
        struct module_facts modules;
        struct driver_facts driver;
        struct secureboot_facts secureboot;
        struct kmsg_facts kmsg;
        struct nvml_state nvml;
        struct gpu_process_facts gpu_processes; /* /proc of the processes NVML lists on GPUs */
        struct rdma_facts rdma;
        struct sriov_facts sriov;
        struct process_facts processes;
        struct dpkg_status dpkg; /* /var/lib/dpkg/status, read once (basic/dpkg.h) */
        struct fabric_manager_facts fabric_manager;
        struct runtime_facts *runtime; /* layer 2 (layer2_container.h) */
        struct kube_facts *kube;       /* layer 3 (layer3_kubernetes.h); NULL when not probed */
        struct metrics_facts *metrics; /* layer 4 (layer4_observability.h); NULL when not probed */
        struct gpu_pod_join gpu_pods;  /* node-level: which pod holds which GPU */
        struct node_pods pods;         /* node-level: the pods on this node and their runtime class */
        unsigned expect_gpus;          /* the GPUs the node should have (--expect-gpus); 0: not said */
};

/* Options that steer probing. */
struct probe_options {
        const char *kmsg_file;    /* --kmsg: a saved log outside the root */
        const char *nvml_library; /* --nvml-library */
        unsigned nvml_timeout_ms;
        /* check --snapshot: NVML's answers as recorded on the node instead of loading NVML. When
         * nvml_replay is set, probe_all copies nvml_facts (NULL: NVML did not load there, then
         * nvml_load_rc and nvml_load_error say why) and reports nvml_library as the library. */
        bool nvml_replay;
        const struct nvml_facts *nvml_facts;
        int nvml_load_rc;
        const char *nvml_load_error;
        const char *kmsg_label;                /* shown as the kernel log's source instead of kmsg_file */
        const struct kube_probe_options *kube; /* layers 3 and 4 (layer3_kubernetes.h); NULL: not probed */
        unsigned expect_gpus;                  /* --expect-gpus: copied to node_facts.expect_gpus; 0 unset */
};

/* Runs every probe, then node_facts_join(). Never fails: each probe records its own errors in its facts. */
void probe_all(const struct probe_options *opts, struct node_facts *ret);
/* Computes the node-level facts (gpu_pods, pods) from the layers' facts in f, replacing earlier ones. Never
 * fails (aborts on OOM). */
void node_facts_join(struct node_facts *f);
/* Frees the node-level facts alone (for facts a test assembled by hand) and zeroes them. */
void node_facts_join_free(struct node_facts *f);
void node_facts_free(struct node_facts *f);

/* Returns true when device_id, as a device plugin names what it hands out, is the GPU or a part of
 * it: its UUID (uuid, or g's when uuid is NULL), a time-sliced or MPS replica "<uuid>::<n>", its
 * index ("3", or "3:1" for a MIG device under index naming; index < 0: unknown), one of g's MIG
 * devices' UUIDs, or an old-style "MIG-<gpu uuid>/<gi>/<ci>". g may be NULL. Case-insensitive. */
bool gpu_device_id_matches(const char *device_id, int index, const char *uuid, const struct nvml_gpu_facts *g);
