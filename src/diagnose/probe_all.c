/* probe_all.c: runs every probe into one node_facts and frees it. */
#include "facts/node.h"
#include "facts/layer2_container.h"
#include "facts/layer3_kubernetes.h"
#include "facts/layer4_observability.h"

void probe_all(const struct probe_options *opts, struct node_facts *ret) {
        *ret = (struct node_facts){0};
        ret->hostname = probe_hostname();
        dpkg_status_read(&ret->dpkg); /* read once: the fabric manager and containerd probes ask it */
        probe_pci(&ret->pci);
        probe_modules(&ret->modules);
        probe_driver(&ret->driver);
        probe_secureboot(&ret->secureboot);
        probe_kmsg(opts->kmsg_file, &ret->kmsg);
        if (opts->kmsg_label) {
                /* A replayed log reads as the node's own source (/dev/kmsg or the file named there). */
                free(ret->kmsg.source);
                ret->kmsg.source = xstrdup(opts->kmsg_label);
                if (ret->kmsg.error) {
                        free(ret->kmsg.error);
                        ret->kmsg.error = read_error(opts->kmsg_label, ret->kmsg.rc);
                }
        }
        probe_processes(&ret->processes);
        probe_fabric_manager(&ret->dpkg, &ret->fabric_manager);
        /* NVML only when the kernel module is there: dlopen of a half-installed driver can hang
         * or abort, and without the module it can only fail. */
        if (module_loaded(&ret->modules, "nvidia") && opts->nvml_replay)
                probe_nvml_replay(opts->nvml_library, opts->nvml_facts, opts->nvml_load_rc, opts->nvml_load_error,
                                  &ret->nvml);
        else if (module_loaded(&ret->modules, "nvidia"))
                probe_nvml(opts->nvml_library, opts->nvml_timeout_ms, &ret->nvml);
        else
                ret->nvml = (struct nvml_state){.load_rc = -ENODEV,
                                                .load_error = xstrdup("not loaded: the nvidia kernel module is not loaded")};
        probe_gpu_processes(&ret->nvml, &ret->gpu_processes);
        probe_rdma(&ret->rdma);
        probe_sriov(&ret->sriov);
        ret->runtime = probe_runtime(&ret->dpkg);
        if (opts->kube) {
                ret->kube = probe_kube(opts->kube, ret->hostname);
                ret->metrics = probe_metrics(opts->kube, ret->kube);
        }
}

void node_facts_free(struct node_facts *f) {
        free(f->hostname);
        pci_facts_free(&f->pci);
        module_facts_free(&f->modules);
        driver_facts_free(&f->driver);
        secureboot_facts_free(&f->secureboot);
        kmsg_facts_free(&f->kmsg);
        nvml_state_free(&f->nvml);
        gpu_process_facts_free(&f->gpu_processes);
        rdma_facts_free(&f->rdma);
        sriov_facts_free(&f->sriov);
        fabric_manager_facts_free(&f->fabric_manager);
        dpkg_status_free(&f->dpkg);
        runtime_facts_free(f->runtime);
        kube_facts_free(f->kube);
        metrics_facts_free(f->metrics);
        *f = (struct node_facts){0};
}
