/* symptoms.c: the troubleshooting table, bottom-up; every id here must exist in the registry (tested). */
#include "symptoms.h"

static const struct symptom table[] = {
        {1, "nvidia-smi fails on the host or in the driver pod",
         "Secure Boot and module signing, kernel headers for the running kernel, module load errors in the kernel log",
         {"driver.module-signature", "driver.kernel-headers", "driver.module-loaded", "driver.nvml-init"}},
        {1, "\"Failed to initialize NVML: Driver/library version mismatch\"",
         "the driver was upgraded without a reboot: the old kernel module is still loaded",
         {"driver.version-match", "driver.version"}},
        {1, "nvidia-smi lists fewer GPUs than the machine has, or \"GPU is lost\"",
         "the kernel log for Xid 79 / \"fallen off the bus\", PCI binding",
         {"driver.gpu-fallen-off-bus", "driver.gpu-count", "driver.pci-binding"}},
        {1, "jobs crash with CUDA errors, the device plugin marks a GPU Unhealthy",
         "Xid errors in the kernel log and what NVIDIA says to do about each",
         {"driver.xid-errors", "driver.memory-errors", "driver.recovery-action"}},
        {1, "CUDA error 802 \"system not yet initialized\" on an HGX/DGX node",
         "the fabric manager: running, same version as the driver, every GPU registered",
         {"fabric-manager.fabric-state"}},
        {1, "NCCL over InfiniBand fails or falls back to sockets",
         "port state and physical link, nvidia_peermem for GPUDirect RDMA",
         {"rdma.devices", "rdma.ports", "rdma.peermem"}},
        {1, "GPU jobs start slowly, the first CUDA call takes seconds",
         "persistence mode",
         {"driver.persistence"}},
};

const struct symptom *symptom_table(size_t *ret_n) {
        *ret_n = sizeof table / sizeof table[0];
        return table;
}
