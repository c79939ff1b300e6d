/* registry.c: every cluster check, in the order they run and show: the six categories bottom-up. */
#include "cluster/cluster.h"

#define CL_CHECKS(X)                                                                                                   \
        X(infrastructure_gpu_nodes)                                                                                    \
        X(infrastructure_nodes_ready)                                                                                  \
        X(infrastructure_versions_uniform)                                                                             \
        X(infrastructure_schedulable)                                                                                  \
        X(infrastructure_agent_running)                                                                                \
        X(infrastructure_agent_heartbeat)                                                                              \
        X(gpu_health_layer_conditions)                                                                                 \
        X(gpu_health_driver_skew)                                                                                      \
        X(gpu_health_cuda_skew)                                                                                        \
        X(gpu_health_product_skew)                                                                                     \
        X(network_operator_pods)                                                                                       \
        X(network_rdma_resources)                                                                                      \
        X(network_port_state)                                                                                          \
        X(storage_csi_drivers)                                                                                         \
        X(storage_default_storageclass)                                                                                \
        X(storage_csi_node_plugins)                                                                                    \
        X(scheduling_gpu_allocatable)                                                                                  \
        X(scheduling_runtime_class)                                                                                    \
        X(scheduling_pending_gpu_pods)                                                                                 \
        X(scheduling_sharing_config)                                                                                   \
        X(observability_metrics_endpoint)                                                                              \
        X(observability_node_exporter)                                                                                 \
        X(observability_scrape_config)

#define DECLARE(name) extern const struct cl_check_def cl_check_##name;
CL_CHECKS(DECLARE)
#undef DECLARE

const struct cl_check_def *const *cluster_checks(size_t *ret_n) {
#define ENTRY(name) &cl_check_##name,
        static const struct cl_check_def *const all[] = { CL_CHECKS(ENTRY) };
#undef ENTRY
        *ret_n = sizeof all / sizeof all[0];
        return all;
}
