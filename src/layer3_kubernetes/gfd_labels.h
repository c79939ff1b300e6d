/* gfd_labels.h: GPU feature discovery (GFD) compatible node labels from NVML and PCI facts. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "facts/node.h"

enum mig_strategy { MIG_STRATEGY_NONE, MIG_STRATEGY_SINGLE, MIG_STRATEGY_MIXED };
enum sharing_strategy { SHARING_NONE, SHARING_TIME_SLICING, SHARING_MPS };

struct label_options {
        enum mig_strategy mig_strategy;
        enum sharing_strategy sharing;  /* from --sharing or the config file */
        unsigned replicas;              /* for nvidia.com/gpu; 0 or 1: not shared */
        bool renamed;                   /* the shared resource is renamed: no -SHARED suffix */
        bool timestamp;                 /* add nvidia.com/gfd.timestamp */
        time_t now;
        char *machine_type;             /* the machine type file's content, NULL when unreadable */
};

struct label {
        char *key, *value;
};

struct label_set {
        struct label *v;                /* sorted by key */
        size_t n;
};

/* Returns GFD's sanitised form of s (malloc'd): bytes outside [A-Za-z0-9-_. ] dropped (a
 * multi-byte character as a whole), then runs of spaces collapsed to one '-', leading and
 * trailing spaces dropped ("NVIDIA  H100 (80GB)/SXM" -> "NVIDIA-H100-80GBSXM"). Never fails. */
char *gfd_sanitise(const char *s);

/* Returns GFD's architecture family for a compute capability ("hopper", "ada-lovelace", ...,
 * "undefined"). Never fails. */
const char *gfd_arch_family(int major, int minor);

/*
 * Computes the labels GFD would write for these facts (facts->nvml and facts->pci are used).
 * Returns 0 and *ret (free with label_set_free), or a negative errno with a sentence in *ret_error
 * when GFD would fail too: -ENODEV NVML did not load or initialise, -EIO an NVML call the labels
 * need failed (MIG devices and their profiles included, with a MIG strategy), -EINVAL an unparsable
 * driver version, -EOPNOTSUPP MPS sharing with MIG enabled.
 * A node without GPUs gets only the timestamp, as with GFD.
 */
int gfd_labels(const struct node_facts *facts, const struct label_options *o, struct label_set *ret, char **ret_error);

struct nvml_mig_facts;

/* Writes GFD's name of a MIG device into buf: go-nvlib's profile name with '+' turned into '.'
 * ("1g.10gb", "1g.10gb.me"), the <profile> of nvidia.com/mig-<profile>. Returns 0, or -EINVAL (buf
 * "") when the profile is unknown (its lookup failed or go-nvlib cannot name it). */
int gfd_mig_name(const struct nvml_mig_facts *m, char *buf, size_t size);

/* Returns the labels as "key=value\n" lines in key order (malloc'd). Never fails. */
char *label_set_format(const struct label_set *s);
void label_set_free(struct label_set *s);
