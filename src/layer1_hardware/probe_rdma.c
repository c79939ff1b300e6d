/* probe_rdma.c: RDMA HCAs and their ports from /sys/class/infiniband, verbs device nodes. */
#include "facts/node.h"
#include "basic/hostfs.h"
#include "basic/kfmt.h"

#define IB_CLASS "/sys/class/infiniband"

/* Returns the number of a "4: ACTIVE" file and its text, or -1 when unreadable or garbled. */
static int read_numbered_state(const char *path, char **ret_text) {
        _cleanup_free_ char *s = NULL;
        *ret_text = NULL;
        if (hostfs_read_line(path, &s) < 0) return -1;
        int v = kfmt_numbered_state(s, ret_text);
        return v < 0 ? -1 : v;
}

/* Returns the first line of /sys/class/infiniband/<dev>/<attr>, or NULL when unreadable. */
static char *read_attr(const char *dev, const char *attr) {
        _cleanup_free_ char *p = xasprintf(IB_CLASS "/%s/%s", dev, attr);
        char *s = NULL;
        return hostfs_read_line(p, &s) == 0 ? s : NULL;
}

void probe_rdma(struct rdma_facts *ret) {
        *ret = (struct rdma_facts){ 0 };
        _cleanup_strv_free_ char **devs = NULL;
        int n = hostfs_list(IB_CLASS, false, &devs);
        if (n < 0) {
                ret->rc = n;
                if (n != -ENOENT) ret->error = read_error(IB_CLASS, n);
                return;
        }
        for (int i = 0; i < n; i++) {
                struct ib_device d = {
                        .name = xstrdup(devs[i]),
                        .hca_type = read_attr(devs[i], "hca_type"),
                        .fw_ver = read_attr(devs[i], "fw_ver"),
                        .board_id = read_attr(devs[i], "board_id"),
                };
                ret->devices = xrealloc(ret->devices, (ret->n_devices + 1) * sizeof *ret->devices);
                ret->devices[ret->n_devices++] = d;

                _cleanup_free_ char *ports_dir = xasprintf(IB_CLASS "/%s/ports", devs[i]);
                _cleanup_strv_free_ char **ports = NULL;
                int np = hostfs_list(ports_dir, false, &ports);
                for (int j = 0; j < np; j++) {
                        uint64_t num;
                        if (parse_u64(ports[j], 10, &num) < 0 || num > 255) continue;
                        _cleanup_free_ char *base = xasprintf("%s/%s", ports_dir, ports[j]);
                        _cleanup_free_ char *state = xasprintf("%s/state", base);
                        _cleanup_free_ char *phys = xasprintf("%s/phys_state", base);
                        _cleanup_free_ char *rate = xasprintf("%s/rate", base);
                        _cleanup_free_ char *ll = xasprintf("%s/link_layer", base);
                        _cleanup_free_ char *downed = xasprintf("%s/counters/link_downed", base);
                        struct ib_port p = { .device = xstrdup(devs[i]),
                                             .port = (unsigned)num,
                                             .link_downed = UINT64_MAX };
                        p.state = read_numbered_state(state, &p.state_text);
                        p.phys_state = read_numbered_state(phys, &p.phys_state_text);
                        (void)hostfs_read_line(rate, &p.rate);
                        (void)hostfs_read_line(ll, &p.link_layer);
                        if (hostfs_read_u64(downed, &p.link_downed) < 0) p.link_downed = UINT64_MAX;
                        ret->ports = xrealloc(ret->ports, (ret->n_ports + 1) * sizeof *ret->ports);
                        ret->ports[ret->n_ports++] = p;
                }
        }
        _cleanup_strv_free_ char **nodes = NULL;
        int nn = hostfs_list("/dev/infiniband", false, &nodes);
        for (int i = 0; i < nn; i++) {
                if (startswith(nodes[i], "uverbs")) ret->have_uverbs = true;
                if (streq(nodes[i], "rdma_cm")) ret->have_rdma_cm = true;
        }
}

void rdma_facts_free(struct rdma_facts *f) {
        for (size_t i = 0; i < f->n_devices; i++) {
                free(f->devices[i].name);
                free(f->devices[i].hca_type);
                free(f->devices[i].fw_ver);
                free(f->devices[i].board_id);
        }
        for (size_t i = 0; i < f->n_ports; i++) {
                struct ib_port *p = &f->ports[i];
                free(p->device);
                free(p->state_text);
                free(p->phys_state_text);
                free(p->rate);
                free(p->link_layer);
        }
        free(f->devices);
        free(f->ports);
        free(f->error);
        *f = (struct rdma_facts){ 0 };
}
