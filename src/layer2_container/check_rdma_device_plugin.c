/* check_rdma_device_plugin.c: layer 2, rdma-device-plugin: the RDMA devices that pods are given. */
#include "facts/layer2_container.h"
#include "layer2_container/runtime_evidence.h"

/* Judges rdma-device-plugin.devices (RDMA device nodes exist for the RDMA device plugin to expose to
 * pods) from the facts into f; never fails: what it cannot read, it says. */
static void run_rdma_exposure(const struct node_facts *facts, struct finding *f) {
        if (runtime_skip_if_absent(facts, f)) return;
        const struct runtime_facts *r = facts->runtime;
        size_t n = facts->rdma.n_devices;
        if (n == 0) {
                finding_skip(f, "no RDMA NIC: nothing to expose to pods");
                return;
        }
        finding_evidence(f, "%zu RDMA device(s); /dev/infiniband: %zu uverbs node(s), rdma_cm %s", n, r->n_uverbs,
                         r->have_rdma_cm ? "present" : "missing");
        if (r->n_uverbs == 0) {
                finding_fail(f, "no /dev/infiniband/uverbs* node: the RDMA device plugin has nothing to hand to pods");
                finding_remedy(
                        f,
                        "`modprobe ib_uverbs` (and rdma_ucm); with the Network Operator check the mofed pod, then the "
                        "RDMA shared device plugin's log");
                return;
        }
        if (r->n_uverbs < n || !r->have_rdma_cm) {
                finding_warn(
                        f, "%s",
                        r->n_uverbs < n
                                ? "fewer uverbs nodes than RDMA devices: some HCAs cannot be used from pods"
                                : "/dev/infiniband/rdma_cm is missing: RDMA CM connections (RoCE, UCX) fail in pods");
                finding_remedy(f, "`modprobe rdma_ucm ib_uverbs`; check udev rules for /dev/infiniband");
                return;
        }
        finding_pass(f, "%zu uverbs node(s) and rdma_cm present for %zu RDMA device(s)", r->n_uverbs, n);
}

const struct check_def check_rdma_device_plugin_devices = {
        .id = "rdma-device-plugin.devices",
        .action = ACTION_RECONFIGURE,
        .layer = 2,
        .component = "rdma-device-plugin",
        .title = "RDMA device nodes exist for the RDMA device plugin to expose to pods",
        .reads = "/dev/infiniband/uverbs*, /dev/infiniband/rdma_cm, RDMA devices in /sys/class/infiniband",
        .outcomes = "pass: a uverbs node per device and rdma_cm; warn: fewer uverbs nodes or no rdma_cm; fail: no "
                    "uverbs node; "
                    "skip: no RDMA NIC or no container runtime",
        .depends = { "rdma.devices" },
        .remedy = "`modprobe ib_uverbs rdma_ucm`; check udev rules for /dev/infiniband and the Network Operator's "
                  "mofed pod",
        .run = run_rdma_exposure,
};
