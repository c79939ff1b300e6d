/* node.h: the probe -> check contract: every fact the probes read about one node, layer by layer,
 * and the options that steer probing. Checks are pure functions of these. */
#pragma once

#include "facts/layer1_hardware.h"

struct runtime_facts;
struct kube_facts;
struct kube_probe_options;
struct metrics_facts;

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
        struct dpkg_status dpkg;       /* /var/lib/dpkg/status, read once (basic/dpkg.h) */
        struct fabric_manager_facts fabric_manager;
        struct runtime_facts *runtime; /* layer 2 (layer2_container.h) */
        struct kube_facts *kube;       /* layer 3 (layer3_kubernetes.h); NULL when not probed */
        struct metrics_facts *metrics; /* layer 4 (layer4_observability.h); NULL when not probed */
};

/* Options that steer probing. */
struct probe_options {
        const char *kmsg_file;         /* --kmsg: a saved log outside the root */
        const char *nvml_library;      /* --nvml-library */
        unsigned nvml_timeout_ms;
        /* check --snapshot: NVML's answers as recorded on the node instead of loading NVML. When
         * nvml_replay is set, probe_all copies nvml_facts (NULL: NVML did not load there, then
         * nvml_load_rc and nvml_load_error say why) and reports nvml_library as the library. */
        bool nvml_replay;
        const struct nvml_facts *nvml_facts;
        int nvml_load_rc;
        const char *nvml_load_error;
        const char *kmsg_label;        /* shown as the kernel log's source instead of kmsg_file */
        const struct kube_probe_options *kube; /* layers 3 and 4 (layer3_kubernetes.h); NULL: not probed */
};

/* Runs every probe. Never fails: each probe records its own errors in its facts. */
void probe_all(const struct probe_options *opts, struct node_facts *ret);
void node_facts_free(struct node_facts *f);

