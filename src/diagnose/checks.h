/* checks.h: what every check file includes: the engine, the facts, and the check definitions. */
#pragma once

#include "engine/check.h"
#include "facts/node.h"

/* Layer 1: driver */
extern const struct check_def check_pci_devices, check_pci_binding, check_module_signature, check_kernel_headers,
        check_module_loaded, check_driver_version, check_device_nodes;
extern const struct check_def check_version_match, check_nvml_init, check_fallen_off_bus, check_gpu_count,
        check_xid_errors, check_persistence, check_memory_errors, check_recovery_action;
/* Layer 1: fabric manager, RDMA, SR-IOV */
extern const struct check_def check_fabric_state, check_rdma_devices, check_rdma_ports, check_rdma_peermem, check_sriov_vfs;
/* Layer 2: container-toolkit, rdma-device-plugin */
extern const struct check_def check_runtime_config, check_toolkit_installed, check_nvidia_runtime, check_runtime_binary,
        check_config_applied, check_cdi_specs, check_rdma_exposure;
/* Layer 3: kubelet, GPU/Network Operator, device-plugin, gfd, mig-manager, csi (checks_k8s.c, checks_kubelet.c) */
extern const struct check_def check_kube_api_access, check_kube_node_ready, check_gpu_operator_pods, check_network_operator_pods,
        check_device_plugin_pod, check_dp_registered, check_dp_allocatable, check_gfd_labels, check_mig_manager_state,
        check_csi_plugins;
/* Layer 4: dcgm-exporter, node-exporter, logging-agent, otel-agent (checks_metrics.c) */
extern const struct check_def check_dcgm_metrics, check_node_exporter_metrics, check_logging_agent, check_otel_agent;

/* Adds the kernel log's lines of one event kind (enum kmsg_event_kind) as evidence; returns their count. */
size_t kmsg_evidence(const struct kmsg_facts *k, int kind, struct finding *f);
/* Adds the kernel log's API mismatch lines, with the versions they name, as evidence. */
void kmsg_api_mismatch_evidence(const struct kmsg_facts *k, struct finding *f);
