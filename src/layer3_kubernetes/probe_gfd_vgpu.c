/* probe_gfd_vgpu.c: vGPU devices as GPU feature discovery finds them: NVIDIA PCI config spaces and their vGPU
 * capability. */
#include "layer3_kubernetes/gfd_labels.h"
#include "basic/hostfs.h"

/*
 * GFD (k8s-device-plugin internal/vgpu: pciutil.go, vgpu.go) lists /sys/bus/pci/devices, keeps the
 * functions whose vendor is 0x10de, reads each one's config file and walks its capability list
 * (status bit 0x10 at 0x06, first pointer at 0x34; entries: id, next, length) for the vendor-specific
 * capability (id 0x09); one whose bytes 3 and 4 are 'V' 'F' is a vGPU. Its records start at byte 5
 * (id, length, data); record 0 holds the host driver's version (10 bytes) and branch (10 bytes), NUL
 * padded. Any unreadable vendor, class or config file, or a config shorter than 256 bytes, makes GFD's
 * vGPU labeler write nothing; a vGPU without record 0 makes GFD fail.
 */

#define PCI_DEVICES         "/sys/bus/pci/devices"
#define CFG_STATUS          0x06
#define CFG_STATUS_CAP_LIST 0x10
#define CFG_CAP_POINTER     0x34
#define CAP_VENDOR_SPECIFIC 0x09
#define VGPU_RECORDS        5
#define VGPU_FIELD_LEN      10

/* Copies n bytes of a NUL-padded field into out (size 16), dropping leading and trailing NULs as Go's
 * strings.Trim(s, "\x00") does; other bytes outside printable ASCII become '?'. */
static void trimmed_field(const uint8_t *p, size_t n, char out[static 16]) {
        size_t a = 0, b = n;
        while (a < b && p[a] == 0) a++;
        while (b > a && p[b - 1] == 0) b--;
        size_t k = 0;
        for (size_t i = a; i < b && k < 15; i++) out[k++] = p[i] >= 0x20 && p[i] < 0x7f ? (char)p[i] : '?';
        out[k] = 0;
}

int gfd_vgpu_parse_config(const uint8_t *cfg, size_t len, bool *ret_vgpu, int *ret_info_rc, char version[static 16],
                          char branch[static 16]) {
        *ret_vgpu = false;
        *ret_info_rc = 0;
        version[0] = branch[0] = 0;
        if (len < 256) return -EINVAL;
        if (!(cfg[CFG_STATUS] & CFG_STATUS_CAP_LIST)) return 0;
        bool visited[256] = { false };
        const uint8_t *cap = NULL;
        size_t cap_len = 0;
        for (uint8_t pos = cfg[CFG_CAP_POINTER]; pos != 0;) {
                /* positions are bytes, as in GFD; a capability running past the config is not one */
                uint8_t id = cfg[pos], next = cfg[(uint8_t)(pos + 1)], length = cfg[(uint8_t)(pos + 2)];
                if (visited[pos] || id == 0xff) break; /* a looped or broken chain */
                if (id == CAP_VENDOR_SPECIFIC) {
                        if ((size_t)pos + length <= len) {
                                cap = cfg + pos;
                                cap_len = length;
                        }
                        break;
                }
                visited[pos] = true;
                pos = next;
        }
        if (!cap || cap_len < 5 || cap[3] != 'V' || cap[4] != 'F') return 0;
        *ret_vgpu = true;
        /* the records: walk to record 0 */
        size_t pos = VGPU_RECORDS;
        uint8_t record = pos < cap_len ? cap[pos] : 0xff;
        while (record != 0 && pos < cap_len) {
                uint8_t rlen = pos + 1 < cap_len ? cap[pos + 1] : 0;
                if (rlen == 0) break; /* a record that does not advance: GFD would loop on it */
                pos += rlen;
                record = pos < cap_len ? cap[pos] : 0xff;
        }
        if (record != 0 || pos + 2 + 2 * VGPU_FIELD_LEN > cap_len) {
                *ret_info_rc = -EBADMSG;
                return 1;
        }
        trimmed_field(cap + pos + 2, VGPU_FIELD_LEN, version);
        trimmed_field(cap + pos + 2 + VGPU_FIELD_LEN, VGPU_FIELD_LEN, branch);
        return 1;
}

/* Records why the probe has no answer (takes msg) and returns. */
static void fail(struct gfd_vgpu_facts *v, int rc, char *msg) {
        v->rc = rc;
        v->error = msg;
}

void gfd_probe_vgpu(struct gfd_vgpu_facts *ret) {
        *ret = (struct gfd_vgpu_facts){ 0 };
        _cleanup_strv_free_ char **names = NULL;
        int n = hostfs_list(PCI_DEVICES, false, &names);
        if (n < 0) return fail(ret, n, xasprintf("unable to read PCI bus devices: %s: %s", PCI_DEVICES, strerror(-n)));
        for (int i = 0; i < n; i++) {
                _cleanup_free_ char *vp = xasprintf(PCI_DEVICES "/%s/vendor", names[i]);
                _cleanup_free_ char *vendor = NULL;
                int r = hostfs_read_line(vp, &vendor);
                if (r < 0)
                        return fail(
                                ret, r,
                                xasprintf("unable to read PCI device vendor id for %s: %s", names[i], strerror(-r)));
                if (!streq(vendor, "0x10de")) continue;
                _cleanup_free_ char *cp = xasprintf(PCI_DEVICES "/%s/class", names[i]), *cls = NULL;
                r = hostfs_read_line(cp, &cls);
                if (r < 0)
                        return fail(ret, r,
                                    xasprintf("unable to read PCI device class for %s: %s", names[i], strerror(-r)));
                _cleanup_free_ char *gp = xasprintf(PCI_DEVICES "/%s/config", names[i]);
                _cleanup_free_ char *cfg = NULL;
                size_t len = 0;
                r = hostfs_read(gp, 4096, &cfg, &len);
                if (r < 0)
                        return fail(
                                ret, r,
                                xasprintf("unable to read PCI configuration space for %s: %s", names[i], strerror(-r)));
                bool vgpu;
                int info_rc;
                char version[16], branch[16];
                r = gfd_vgpu_parse_config((const uint8_t *)cfg, len, &vgpu, &info_rc, version, branch);
                if (r < 0)
                        return fail(
                                ret, r,
                                xasprintf("entire PCI configuration is not read for device %s (%zu bytes): GFD needs "
                                          "privileges to read it",
                                          names[i], len));
                if (!vgpu) continue;
                ret->n_vgpus++;
                if (info_rc < 0) {
                        ret->info_rc = info_rc;
                        continue;
                }
                snprintf(ret->host_driver_version, sizeof ret->host_driver_version, "%s", version);
                snprintf(ret->host_driver_branch, sizeof ret->host_driver_branch, "%s", branch);
        }
}

void gfd_vgpu_facts_free(struct gfd_vgpu_facts *v) {
        free(v->error);
        *v = (struct gfd_vgpu_facts){ 0 };
}
