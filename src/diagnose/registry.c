/* registry.c: the one ordered table of checks: bottom-up by layer, foundations first. */
#include "diagnose/checks.h"

static const struct check_def *const registry[] = {
        /* Layer 1: hardware enablement */
        &check_pci_devices,
        &check_pci_binding,
        &check_module_signature,
        &check_kernel_headers,
        &check_module_loaded,
        &check_driver_version,
        &check_device_nodes,
        &check_version_match,
        &check_nvml_init,
        &check_fallen_off_bus,
        &check_gpu_count,
        &check_xid_errors,
        &check_recovery_action,
        &check_memory_errors,
        &check_persistence,
        &check_fabric_state,
        &check_rdma_devices,
        &check_rdma_ports,
        &check_rdma_peermem,
        &check_sriov_vfs,
        /* Layer 2: container integration */
        &check_runtime_config,
        &check_toolkit_installed,
        &check_nvidia_runtime,
        &check_runtime_binary,
        &check_config_applied,
        &check_cdi_specs,
        &check_rdma_exposure,
        /* Layer 3: Kubernetes resource exposure */
        &check_kube_api_access,
        &check_kube_node_ready,
        &check_gpu_operator_pods,
        &check_network_operator_pods,
        &check_device_plugin_pod,
        &check_dp_registered,
        &check_dp_allocatable,
        &check_gfd_labels,
        &check_mig_manager_state,
        &check_csi_plugins,
        /* Layer 4: observability */
        &check_dcgm_metrics,
        &check_node_exporter_metrics,
        &check_logging_agent,
        &check_otel_agent,
};

const struct check_def *const *check_registry(size_t *ret_n) {
        *ret_n = ELEMENTSOF(registry);
        return registry;
}
