/* pci_address.h: a GPU's or an NVSwitch's PCI address as the NVIDIA driver writes it in the kernel log, normalised. */
#pragma once

#include <stddef.h>

#define PCI_ADDRESS_MAX 16 /* "0000:07:00" plus room for a long domain */

/* Parses a PCI address at the start of s (n bytes): "PCI:0000:07:00", "0000:b3:00.0", "07:00"
 * (domain 0 assumed), hex in any case; writes "dddd:bb:dd" (lower case, function dropped) to
 * ret. Returns the number of bytes consumed, or -EINVAL when s does not start with an address. */
int pci_address_normalize(const char *s, size_t n, char ret[PCI_ADDRESS_MAX]);

/* As pci_address_normalize(), for an address the driver framed (the parentheses of "NVRM: Xid
 * (PCI:...)"), where nothing else could be mistaken for one: the device number may be any two hex
 * digits ("0001:ab:cd", as test data and some virtual buses write it), so the line's Xid is not
 * lost over an address that matches no GPU. Returns bytes consumed or -EINVAL. */
int pci_address_normalize_delimited(const char *s, size_t n, char ret[PCI_ADDRESS_MAX]);
