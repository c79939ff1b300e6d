/* pci_address.c: a GPU's or an NVSwitch's PCI address as the NVIDIA driver writes it in the kernel log, normalised. */
#include "nvidia/pci_address.h"

#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <strings.h>

/* Return true for the ASCII character classes named (no locale). */
static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}
static bool is_hex(char c) {
        return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Returns the value of a hex digit (the caller checked is_hex). */
static unsigned hexval(char c) {
        if (is_digit(c)) return (unsigned)(c - '0');
        return (unsigned)((c | 0x20) - 'a' + 10);
}

/* Returns bytes consumed or -EINVAL (see pci_address.h); reads at most n bytes, no NUL needed. A
 * device number above max_device is no address. */
static int normalize(const char *s, size_t n, uint32_t max_device, char ret[PCI_ADDRESS_MAX]) {
        size_t i = 0;
        uint32_t f[3];
        int nd[3], k = 0;

        if (n >= 4 && strncasecmp(s, "PCI:", 4) == 0) i = 4;
        for (;;) {
                uint32_t v = 0;
                int d = 0;
                while (i < n && is_hex(s[i]) && d < 9) {
                        v = v * 16 + hexval(s[i]);
                        i++;
                        d++;
                }
                if (d == 0 || d > 8) return -EINVAL;
                f[k] = v;
                nd[k] = d;
                if (++k == 3) break;
                if (i + 1 < n && s[i] == ':' && is_hex(s[i + 1])) {
                        i++;
                        continue;
                }
                break;
        }
        if (k < 2) return -EINVAL;
        uint32_t dom = 0, bus = f[k - 2], dev = f[k - 1];
        if (k == 3)
                dom = f[0];
        else if (nd[0] > 2)
                return -EINVAL;
        if (nd[k - 2] > 2 || nd[k - 1] > 2 || dev > max_device) return -EINVAL;
        /* An optional function number: "0000:b3:00.0". */
        if (i + 1 < n && s[i] == '.' && s[i + 1] >= '0' && s[i + 1] <= '7' && (i + 2 >= n || !is_hex(s[i + 2]))) i += 2;
        snprintf(ret, PCI_ADDRESS_MAX, "%04" PRIx32 ":%02" PRIx32 ":%02" PRIx32, dom, bus, dev);
        return (int)i;
}

/* Returns bytes consumed or -EINVAL (see pci_address.h). */
int pci_address_normalize(const char *s, size_t n, char ret[PCI_ADDRESS_MAX]) {
        return normalize(s, n, 0x1f, ret);
}

/* Returns bytes consumed or -EINVAL (see pci_address.h). */
int pci_address_normalize_delimited(const char *s, size_t n, char ret[PCI_ADDRESS_MAX]) {
        return normalize(s, n, 0xff, ret);
}
