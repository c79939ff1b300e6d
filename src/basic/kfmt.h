/* kfmt.h: parsers for the small kernel file formats the probes read (/proc and sysfs). */
#pragma once

#include <stdint.h>

#include <stdbool.h>
#include <stddef.h>

/* Parses an RDMA port state line "4: ACTIVE". Returns the number (0..255) and a malloc'd copy
 * of the text in *ret_text, or -EINVAL (and *ret_text NULL) when the line is not of that shape. */
int kfmt_numbered_state(const char *s, char **ret_text);

/* Parses the first line of /proc/driver/nvidia/version ("NVRM version: NVIDIA UNIX x86_64 Kernel
 * Module  550.54.15  ..."). Returns the malloc'd version ("550.54.15") and whether the line names
 * the open kernel module, or NULL when the line does not start with "NVRM version:" or holds no
 * version number. */
char *kfmt_driver_version(const char *line, bool *ret_open);

/* Returns the malloc'd value of "Key:<tabs/spaces>value" in a /proc/driver/nvidia/gpus/<pci>/
 * information text, trailing whitespace removed, or NULL when the key is absent. */
char *kfmt_info_value(const char *text, const char *key);

/* Parses /sys/kernel/security/lockdown ("none [integrity] confidentiality"). Returns the malloc'd
 * bracketed word, or NULL when none is bracketed. */
char *kfmt_lockdown(const char *s);

/* Parses an efivar holding one boolean byte after the 4 attribute bytes (SecureBoot). Returns 1,
 * 0, or -EINVAL when the data is shorter than 5 bytes or the byte is neither 0 nor 1. */
int kfmt_efivar_bool(const char *data, size_t len);

/* Splits /proc/modules text into module names (the first field of each line). Returns the count
 * and a NULL-terminated malloc'd array (free with strv_free); lines with an empty or overlong
 * name are skipped. Never fails. */
size_t kfmt_proc_modules(const char *text, char ***ret);

/* Reads the boot time from /proc/stat text (its "btime SECONDS" line). Returns the seconds since
 * the epoch, or -EINVAL when no line says a positive number of them. */
int64_t kfmt_proc_stat_btime(const char *text);
