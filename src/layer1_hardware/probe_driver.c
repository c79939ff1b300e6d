/* probe_driver.c: the NVIDIA kernel driver's own view: /proc/driver/nvidia, /sys/module/nvidia and its /dev nodes. */
#include "facts/node.h"
#include "basic/hostfs.h"

#include "basic/kfmt.h"

#define DRIVER_VERSION_FILE "/proc/driver/nvidia/version"
#define DRIVER_GPUS_DIR     "/proc/driver/nvidia/gpus"

const char *const driver_common_nodes[_DRIVER_NODE_MAX] = {
        [DRIVER_NODE_CTL] = "/dev/nvidiactl",
        [DRIVER_NODE_UVM] = "/dev/nvidia-uvm",
        [DRIVER_NODE_UVM_TOOLS] = "/dev/nvidia-uvm-tools",
};

void probe_driver(struct driver_facts *ret) {
        *ret = (struct driver_facts){ 0 };
        char *line = NULL;
        size_t len = 0;
        int r = hostfs_read(DRIVER_VERSION_FILE, 64 * 1024, &line, &len);
        if (r == 0) {
                /* Keep the first line, printable: a garbled file is shown as it is, not cut at a NUL. */
                size_t end = 0;
                while (end < len && line[end] != '\n') {
                        if ((unsigned char)line[end] < 0x20 && line[end] != '\t') line[end] = '?';
                        end++;
                }
                line[end] = 0;
                strstrip_right(line);
        }
        if (r < 0) {
                ret->version_rc = r;
                ret->version_error = read_error(DRIVER_VERSION_FILE, r);
        } else {
                ret->version_line = line;
                ret->version = kfmt_driver_version(line, &ret->open_module);
                if (!ret->version) {
                        ret->version_rc = -EINVAL;
                        ret->version_error =
                                xasprintf("%s: not an \"NVRM version:\" line with a version number: \"%.120s\"",
                                          DRIVER_VERSION_FILE, line);
                }
        }

        _cleanup_strv_free_ char **names = NULL;
        int n = hostfs_list(DRIVER_GPUS_DIR, false, &names);
        for (int i = 0; i < n; i++) {
                _cleanup_free_ char *p = xasprintf(DRIVER_GPUS_DIR "/%s/information", names[i]);
                _cleanup_free_ char *text = NULL;
                struct driver_gpu_info g = { .minor = -1 };
                snprintf(g.address, sizeof g.address, "%s", names[i]);
                if (hostfs_read(p, 64 * 1024, &text, NULL) == 0) {
                        g.model = kfmt_info_value(text, "Model");
                        g.uuid = kfmt_info_value(text, "GPU UUID");
                        _cleanup_free_ char *minor = kfmt_info_value(text, "Device Minor");
                        int64_t m;
                        if (minor && parse_i64(minor, &m) == 0 && m >= 0 && m < 4096) g.minor = (int)m;
                }
                if (g.minor >= 0) {
                        _cleanup_free_ char *node = xasprintf("/dev/nvidia%d", g.minor);
                        g.dev_node = hostfs_exists(node);
                }
                ret->gpus = xrealloc(ret->gpus, (ret->n_gpus + 1) * sizeof *ret->gpus);
                ret->gpus[ret->n_gpus++] = g;
        }
        (void)hostfs_read_line("/sys/module/nvidia/taint", &ret->taint);
        for (size_t i = 0; i < _DRIVER_NODE_MAX; i++) ret->common_node[i] = hostfs_exists(driver_common_nodes[i]);
}

void driver_facts_free(struct driver_facts *f) {
        free(f->version_error);
        free(f->version_line);
        free(f->version);
        for (size_t i = 0; i < f->n_gpus; i++) {
                free(f->gpus[i].model);
                free(f->gpus[i].uuid);
        }
        free(f->gpus);
        free(f->taint);
        *f = (struct driver_facts){ 0 };
}
