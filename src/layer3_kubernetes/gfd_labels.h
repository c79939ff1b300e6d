/* gfd_labels.h: GPU feature discovery (GFD) compatible node labels from NVML and PCI facts. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "facts/node.h"

enum mig_strategy { MIG_STRATEGY_NONE, MIG_STRATEGY_SINGLE, MIG_STRATEGY_MIXED };
enum sharing_strategy { SHARING_NONE, SHARING_TIME_SLICING, SHARING_MPS };

/* vGPU devices as GFD finds them (internal/vgpu): every NVIDIA PCI function's full config space (256
 * bytes at least: GFD runs privileged), a vendor-specific capability with the "VF" signature marks a
 * vGPU, whose records carry the host driver's version and branch. */
struct gfd_vgpu_facts {
        int rc;           /* 0 read; -errno: GFD writes no vgpu labels then (its labeler logs and skips) */
        char *error;      /* why not, naming the path */
        unsigned n_vgpus; /* NVIDIA functions with the vGPU capability */
        int info_rc;      /* 0, or -EBADMSG: a vGPU without a host driver version record (GFD fails) */
        char host_driver_version[16], host_driver_branch[16]; /* the last vGPU's, as GFD keeps them */
};

/* What one NVIDIA PCI function's config space says: whether it is a vGPU and, if so, its host driver
 * record. Returns 0 (not a vGPU: *ret_vgpu false), 1 (a vGPU: version and branch filled, NUL-trimmed,
 * or -EBADMSG in *ret_info_rc when the record is missing), or -EINVAL when the config space is shorter
 * than 256 bytes (not read with privileges). Pure; reads nothing outside cfg[0, len). */
int gfd_vgpu_parse_config(const uint8_t *cfg, size_t len, bool *ret_vgpu, int *ret_info_rc, char version[static 16],
                          char branch[static 16]);

/* Reads every NVIDIA function's config space under /sys/bus/pci/devices through hostfs, as GFD does.
 * Never fails: ret->rc and ret->error say why there is no answer. */
void gfd_probe_vgpu(struct gfd_vgpu_facts *ret);
void gfd_vgpu_facts_free(struct gfd_vgpu_facts *v);

/* Returns GFD's nvidia.com/gpu.mode for these facts: "compute" (PCI class 0x030200) or "graphics"
 * (0x030000) when every NVML GPU's PCI function has that class; "unknown" when a class cannot be read
 * (no PCI function at NVML's bus id, or NVML gave no bus id), the classes differ, or another class.
 * Never fails. */
const char *gfd_gpu_mode(const struct node_facts *facts);

/* Writes GFD's nvidia.com/gpu.clique value ("<cluster uuid>.<clique id>") into buf when every GPU
 * attached to an NVLink fabric (state completed, status success, a cluster UUID that is not all zero:
 * go-nvlib IsFabricAttached) shares one cluster UUID and one clique. Returns 0, or -ENOENT (buf "")
 * when GFD writes no clique label. */
struct nvml_facts;
int gfd_clique(const struct nvml_facts *n, char *buf, size_t size);

struct label_options {
        enum mig_strategy mig_strategy;
        enum sharing_strategy sharing; /* from --sharing or the config file */
        unsigned replicas;             /* for nvidia.com/gpu; 0 or 1: not shared */
        bool renamed;                  /* the shared resource is renamed: no -SHARED suffix */
        bool timestamp;                /* add nvidia.com/gfd.timestamp */
        time_t now;
        char *machine_type;                /* the machine type file's content, NULL when unreadable */
        const struct gfd_vgpu_facts *vgpu; /* NULL: not probed, no vgpu labels */
};

struct label {
        char *key, *value;
};

struct label_set {
        struct label *v; /* sorted by key */
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
 * need failed (MIG devices and their profiles included, with a MIG strategy), or a vGPU has no host
 * driver record, -EINVAL an unparsable driver version, -EOPNOTSUPP MPS sharing with MIG enabled.
 * A node without GPUs gets only the timestamp and the vgpu labels, as with GFD.
 */
int gfd_labels(const struct node_facts *facts, const struct label_options *o, struct label_set *ret, char **ret_error);

struct nvml_mig_facts;

/* Adds GFD's vgpu labels (nvidia.com/vgpu.present; host-driver-version and -branch on a vGPU) to s
 * when o->vgpu was read. Returns 0, or -EIO with *ret_error when a vGPU has no host driver record
 * (GFD fails then). The labels without GPUs (--fail-on-init-error=false) use it too. */
int gfd_vgpu_labels(const struct label_options *o, struct label_set *s, char **ret_error);

/* Writes GFD's name of a MIG device into buf: go-nvlib's profile name with '+' turned into '.'
 * ("1g.10gb", "1g.10gb.me"), the <profile> of nvidia.com/mig-<profile>. Returns 0, or -EINVAL (buf
 * "") when the profile is unknown (its lookup failed or go-nvlib cannot name it). */
int gfd_mig_name(const struct nvml_mig_facts *m, char *buf, size_t size);

/* Returns 1 when GFD's single MIG strategy labels these GPUs <model>-MIG-INVALID (MIG enabled on some
 * GPU, and a GPU without MIG mode, a MIG-enabled GPU without MIG devices, or more than one profile), 0
 * when not (no MIG, or one profile everywhere), -EIO when the MIG devices or their profiles are not
 * known. Never fails otherwise. */
int gfd_mig_single_invalid(const struct nvml_facts *n);

/* Returns the labels as "key=value\n" lines in key order (malloc'd). Never fails. */
char *label_set_format(const struct label_set *s);
void label_set_free(struct label_set *s);
