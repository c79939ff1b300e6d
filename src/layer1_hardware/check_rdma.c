/* check_rdma.c: layer 1, rdma and sriov: HCAs, their ports, GPUDirect peer memory, SR-IOV VFs. */
#include "facts/node.h"
#include "layer1_hardware/kmsg_evidence.h"
#include "layer1_hardware/kmsg.h"

/* Judges rdma.devices (RDMA NICs have their driver modules and verbs device nodes) from the facts into
 * f; never fails: what it cannot read, it says. */
static void run_rdma_devices(const struct node_facts *facts, struct finding *f) {
        const struct rdma_facts *r = &facts->rdma;
        if (r->rc == -ENOENT || (r->rc == 0 && r->n_devices == 0)) {
                finding_skip(f, "no RDMA NIC (/sys/class/infiniband is empty or absent)");
                return;
        }
        if (r->rc < 0) {
                finding_fail(f, "cannot list RDMA devices: %s", r->error);
                finding_remedy(f, "run gpunode with the host's /sys visible");
                return;
        }
        bool mlx5 = false;
        for (size_t i = 0; i < r->n_devices; i++) {
                const struct ib_device *d = &r->devices[i];
                finding_evidence(f, "%s: %s firmware %s board %s", d->name, d->hca_type ? d->hca_type : "?",
                                 d->fw_ver ? d->fw_ver : "?", d->board_id ? d->board_id : "?");
                mlx5 |= startswith(d->name, "mlx5") != NULL;
        }
        if (facts->modules.rc < 0) {
                /* An unreadable /proc/modules says nothing about which modules are loaded. */
                finding_evidence(f, "%s", facts->modules.error ? facts->modules.error : "/proc/modules cannot be read");
                finding_warn(f, "%zu RDMA device(s), but cannot tell whether their driver modules are loaded",
                             r->n_devices);
                finding_remedy(f,
                               "run gpunode with the host's /proc visible (the DaemonSet mounts the host at /host), or "
                               "check `lsmod | grep -e ib_uverbs -e mlx5` on the node");
                return;
        }
        static const char *const mods[] = { "ib_core", "ib_uverbs", "mlx5_core", "mlx5_ib" };
        size_t missing = 0;
        for (size_t i = 0; i < ELEMENTSOF(mods); i++) {
                if (!mlx5 && startswith(mods[i], "mlx5")) continue;
                if (!module_loaded(&facts->modules, mods[i]))
                        missing++, finding_evidence(f, "module %s not loaded", mods[i]);
        }
        if (!r->have_uverbs) finding_evidence(f, "/dev/infiniband/uverbs* missing: containers cannot use verbs");
        if (missing) {
                finding_fail(f, "%zu RDMA device(s) but %zu driver module(s) missing", r->n_devices, missing);
                finding_remedy(
                        f,
                        "load the OFED/inbox modules (`modprobe mlx5_ib ib_uverbs`); with the Network Operator check "
                        "the mofed pod's log");
                return;
        }
        if (!r->have_uverbs) {
                finding_warn(f, "%zu RDMA device(s) but no verbs device nodes", r->n_devices);
                finding_remedy(f, "`modprobe ib_uverbs`; check udev rules for /dev/infiniband");
                return;
        }
        finding_pass(f, "%zu RDMA device(s), driver modules loaded", r->n_devices);
}

/* Judges rdma.ports (every RDMA port is ACTIVE with its link up) from the facts into f; never fails:
 * what it cannot read, it says. */
static void run_rdma_ports(const struct node_facts *facts, struct finding *f) {
        const struct rdma_facts *r = &facts->rdma;
        if (r->n_ports == 0) {
                finding_skip(f, "no RDMA ports");
                return;
        }
        size_t ib_down = 0, eth_down = 0, flapped = 0, active = 0, unreadable = 0;
        for (size_t i = 0; i < r->n_ports; i++) {
                const struct ib_port *p = &r->ports[i];
                bool ib = p->link_layer && streq(p->link_layer, "InfiniBand");
                finding_evidence(f, "%s port %u: %s, %s, %s, %s", p->device, p->port,
                                 p->state_text ? p->state_text : "state unreadable",
                                 p->phys_state_text ? p->phys_state_text : "phys_state unreadable",
                                 p->rate ? p->rate : "rate ?", p->link_layer ? p->link_layer : "link layer ?");
                if (p->state < 0)
                        unreadable++;
                else if (p->state == 4 || p->state == 5)
                        active++;
                else if (ib)
                        ib_down++;
                else
                        eth_down++;
                if (p->link_downed != UINT64_MAX && p->link_downed > 0) {
                        flapped++;
                        finding_evidence(f, "%s port %u: link_downed counter %llu", p->device, p->port,
                                         (unsigned long long)p->link_downed);
                }
        }
        if (ib_down) {
                finding_fail(f, "%zu InfiniBand port(s) not ACTIVE: GPUDirect and NCCL traffic over them fails",
                             ib_down);
                finding_remedy(f, "check the cable and switch port (`ibstat`, `iblinkinfo`); a port stuck in "
                                  "INIT/ARMED needs the "
                                  "subnet manager (opensm or UFM) to be running");
        } else if (unreadable) {
                finding_warn(f, "the state of %zu RDMA port(s) cannot be read", unreadable);
                finding_remedy(f, "check permissions on /sys/class/infiniband");
        } else if (eth_down || flapped) {
                finding_warn(f, "%zu RoCE port(s) down, %zu port(s) with link-down events", eth_down, flapped);
                finding_remedy(
                        f,
                        "if the port should be in use, check cabling and the switch; link_downed counting up means a "
                        "flapping link");
        } else {
                finding_pass(f, "all %zu RDMA port(s) ACTIVE", active);
        }
}

/* Judges rdma.peermem (nvidia_peermem is loaded for GPUDirect RDMA) from the facts into f; never
 * fails: what it cannot read, it says. */
static void run_rdma_peermem(const struct node_facts *facts, struct finding *f) {
        if (facts->rdma.n_devices == 0) {
                finding_skip(f, "no RDMA NIC: GPUDirect RDMA does not apply");
                return;
        }
        if (facts->pci.n_gpus == 0) {
                finding_skip(f, "no GPU: GPUDirect RDMA does not apply");
                return;
        }
        size_t errors = kmsg_evidence(&facts->kmsg, KMSG_EV_PEERMEM_ERROR, f);
        if (facts->modules.rc < 0) {
                finding_evidence(f, "%s", facts->modules.error ? facts->modules.error : "/proc/modules cannot be read");
                finding_warn(f, "cannot tell whether nvidia_peermem is loaded: /proc/modules is unreadable");
                finding_remedy(f, "run gpunode with the host's /proc visible, or check `lsmod | grep nvidia_peermem` "
                                  "on the node");
                return;
        }
        if (!module_loaded(&facts->modules, "nvidia_peermem")) {
                finding_warn(
                        f,
                        "nvidia_peermem is not loaded: GPUDirect RDMA is unavailable, NCCL falls back to host memory");
                finding_remedy(
                        f,
                        "`modprobe nvidia_peermem` after ib_core; with the GPU Operator set driver.rdma.enabled=true");
                return;
        }
        if (errors) {
                finding_warn(f, "nvidia_peermem logged errors");
                finding_remedy(
                        f,
                        "check that nvidia_peermem was loaded after the OFED modules and matches the driver version");
                return;
        }
        finding_pass(f, "nvidia_peermem loaded: GPUDirect RDMA available");
}

const struct check_def check_rdma_devices = {
        .id = "rdma.devices",
        .action = ACTION_RECONFIGURE,
        .layer = 1,
        .component = "rdma",
        .title = "RDMA NICs have their driver modules and verbs device nodes",
        .reads = "/sys/class/infiniband/*, /proc/modules (ib_core, ib_uverbs, mlx5_core, mlx5_ib), /dev/infiniband",
        .outcomes =
                "pass: present and loaded; warn: no verbs nodes, or /proc/modules unreadable; fail: modules missing; "
                "skip: no RDMA NIC",
        .remedy = "load the OFED or inbox modules (mlx5_ib, ib_uverbs); check the Network Operator's mofed pod",
        .run = run_rdma_devices,
};

const struct check_def check_rdma_ports = {
        .id = "rdma.ports",
        .layer = 1,
        .component = "rdma",
        .title = "every RDMA port is ACTIVE with its link up",
        .reads = "/sys/class/infiniband/*/ports/*/{state,phys_state,rate,link_layer,counters/link_downed}",
        .outcomes = "pass: all ACTIVE; warn: RoCE port down or link flaps; fail: InfiniBand port not ACTIVE",
        .remedy = "check cables and switch ports (ibstat, iblinkinfo); a port stuck in INIT needs a running subnet "
                  "manager",
        .depends = { "rdma.devices" },
        .run = run_rdma_ports,
};

const struct check_def check_rdma_peermem = {
        .id = "rdma.peermem",
        .action = ACTION_RECONFIGURE,
        .layer = 1,
        .component = "rdma",
        .title = "nvidia_peermem is loaded for GPUDirect RDMA",
        .reads = "/proc/modules, nvidia-peermem errors in the kernel log",
        .outcomes = "pass: loaded; warn: missing or logging errors; skip: no RDMA NIC or no GPU",
        .remedy = "`modprobe nvidia_peermem` after the OFED modules; GPU Operator: driver.rdma.enabled=true",
        .depends = { "rdma.devices", "driver.module-loaded" },
        .run = run_rdma_peermem,
};
