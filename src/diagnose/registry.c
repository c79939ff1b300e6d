/* registry.c: the one ordered list of checks: bottom-up by layer, foundations first.
 *
 * A check `C.name` is the variable check_<C>_<name> (dots and dashes to underscores), defined in
 * src/layerN_.../check_<C>....c. Adding a check is its file plus one line here; tests/layout.sh holds every
 * entry to that rule. */
#include "diagnose/registry.h"

#define GPUNODE_CHECKS(X)                                                                                              \
        /* Layer 1: hardware enablement */                                                                             \
        X(driver_pci_devices)                                                                                          \
        X(driver_pci_binding)                                                                                          \
        X(driver_module_signature)                                                                                     \
        X(driver_kernel_headers)                                                                                       \
        X(driver_module_loaded)                                                                                        \
        X(driver_version)                                                                                              \
        X(driver_device_nodes)                                                                                         \
        X(driver_version_match)                                                                                        \
        X(driver_nvml_init)                                                                                            \
        X(driver_gpu_fallen_off_bus)                                                                                   \
        X(driver_gpu_count)                                                                                            \
        X(driver_xid_errors)                                                                                           \
        X(driver_recovery_action)                                                                                      \
        X(driver_memory_errors)                                                                                        \
        X(driver_persistence)                                                                                          \
        X(driver_stuck_processes)                                                                                      \
        X(gpu_clock_slowdown)                                                                                          \
        X(gpu_temperature)                                                                                             \
        X(gpu_pcie_link)                                                                                               \
        X(gpu_ecc_mode)                                                                                                \
        X(gpu_retired_pages)                                                                                           \
        X(gpu_processes)                                                                                               \
        X(gpu_drain_state)                                                                                             \
        X(nvswitch_sxid_errors)                                                                                        \
        X(fabric_manager_version_match)                                                                                \
        X(fabric_manager_log_errors)                                                                                   \
        X(fabric_manager_fabric_state)                                                                                 \
        X(rdma_devices)                                                                                                \
        X(rdma_ports)                                                                                                  \
        X(rdma_peermem)                                                                                                \
        X(sriov_vfs)                                                                                                   \
        X(nvlink_links)                                                                                                \
        X(nvlink_errors)                                                                                               \
        /* Layer 2: container integration */                                                                           \
        X(container_toolkit_runtime_config)                                                                            \
        X(container_toolkit_toolkit_installed)                                                                         \
        X(container_toolkit_nvidia_runtime)                                                                            \
        X(container_toolkit_runtime_binary)                                                                            \
        X(container_toolkit_config_applied)                                                                            \
        X(container_toolkit_cdi_specs)                                                                                 \
        X(rdma_device_plugin_devices)                                                                                  \
        X(container_toolkit_runtime_storage)                                                                           \
        /* Layer 3: Kubernetes resource exposure */                                                                    \
        X(kubelet_storage)                                                                                             \
        X(kubelet_api_access)                                                                                          \
        X(kubelet_node_ready)                                                                                          \
        X(gpu_operator_pods)                                                                                           \
        X(gpu_operator_validations)                                                                                    \
        X(network_operator_pods)                                                                                       \
        X(mig_manager_state)                                                                                           \
        X(device_plugin_pod)                                                                                           \
        X(device_plugin_registered)                                                                                    \
        X(device_plugin_allocatable)                                                                                   \
        X(gfd_labels)                                                                                                  \
        X(csi_plugins)                                                                                                 \
        /* Layer 4: observability */                                                                                   \
        X(dcgm_exporter_metrics)                                                                                       \
        X(node_exporter_metrics)                                                                                       \
        X(logging_agent_present)                                                                                       \
        X(otel_agent_present)

#define DECLARE_CHECK(name) extern const struct check_def check_##name;
GPUNODE_CHECKS(DECLARE_CHECK)
#undef DECLARE_CHECK

static const struct check_def *const registry[] = {
#define LIST_CHECK(name) &check_##name,
        GPUNODE_CHECKS(LIST_CHECK)
#undef LIST_CHECK
};

const struct check_def *const *check_registry(size_t *ret_n) {
        *ret_n = ELEMENTSOF(registry);
        return registry;
}

const struct check_def *check_find(const char *id) {
        for (size_t i = 0; i < ELEMENTSOF(registry); i++)
                if (streq(registry[i]->id, id)) return registry[i];
        return NULL;
}
