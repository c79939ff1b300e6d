/* layer2_container.h: layer 2 facts: containerd, CRI-O, Docker, the NVIDIA Container Toolkit, CDI specs, RDMA device
 * nodes. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct dpkg_status;

/* Which binary a runtime points at, and what the host has there. */
#define BINARY_UNSET 1 /* binary_rc when the config names no binary */

/* A daemon found in /proc by its comm. */
struct runtime_process {
        int pid;            /* 0: not seen (or /proc not visible) */
        int64_t started;    /* unix seconds, -1 unknown */
        char *started_from; /* how the start time was found, for evidence */
        char *config_arg;   /* --config / -c from its cmdline, NULL when none */
};

/* One configuration file as read: a containerd import, a CRI-O drop-in, daemon.json. */
struct runtime_config_file {
        char *path;
        int rc;               /* 0 read and parsed, else -errno (-EINVAL: a syntax error) */
        char *error;          /* a sentence naming the file, and line and column for syntax errors */
        int64_t mtime;        /* unix seconds, -1 unknown */
        int version;          /* containerd: its `version` key, 0 when absent */
        bool mentions_nvidia; /* defines a runtime whose name starts with "nvidia" */
        char *imported_by;    /* containerd: the file whose imports named it; NULL for the main file */
};

/* A runtime under the CRI plugin's containerd.runtimes, after imports are merged. */
struct ctd_runtime {
        char *name;
        char *runtime_type, *runtime_type_file; /* value and the file that set it */
        char *binary_name, *binary_file;        /* the binary it runs: options.BinaryName, or options.Runtime */
        const char *binary_key; /* "BinaryName"; "Runtime" for runtime_type io.containerd.runtime.v1.linux, whose
                                 * shim runs options.Runtime (containerd 1.x runtime/linux/runctypes RuncOptions) */
        int binary_rc;          /* 0 executable; -ENOENT; -EACCES not executable; BINARY_UNSET */
};

struct containerd_facts {
        bool present; /* a config, a binary or a process */
        char *binary; /* /usr/bin/containerd, ...; NULL when none found */
        struct runtime_process process;
        char *config_path;      /* the main config read */
        char *config_path_from; /* "default", or "--config of pid 812" */
        int rc;                 /* 0, or the first error that stops containerd loading its config */
        char *error;
        struct runtime_config_file *files; /* in the order containerd loads them */
        size_t n_files;
        struct runtime_config_file *stray; /* drop-ins in conf.d directories that containerd does not load */
        size_t n_stray;
        char *misplaced_imports; /* a table holding an `imports` key that is not at the top level */
        char *imports_cut;       /* an import glob gpunode expanded only in part (bounds, symlink loops); NULL */
        int version;             /* of the main file: 1, 2 or 3 (1 when absent) */
        const char *cri_plugin;  /* CRI runtime plugin id for that version */
        int major, minor;        /* containerd's own version (1.7: 1, 7); 0, 0 when gpunode cannot tell */
        char *version_text;      /* as its source writes it ("1.7.24~ds1-1"); NULL when unknown */
        char *version_from;      /* where it was read, or why it could not be (a sentence) */
        bool deep_merge;         /* imports merged key by key (containerd 2.x), else plugin by plugin (1.x) */
        bool merge_assumed;      /* containerd's version unknown: the merge rule follows the config version */
        char *merge_other;       /* merge_assumed, and the other major's rule gives another nvidia runtime or
                                  * default runtime: what it would give (a sentence); NULL otherwise */
        char *cri_owner;         /* plugin-by-plugin merge: the file whose CRI table wins; NULL none */
        bool cri_disabled;       /* disabled_plugins names the CRI plugin (e.g. Docker's containerd) */
        struct ctd_runtime *runtimes;
        size_t n_runtimes;
        char *default_runtime, *default_runtime_file;
        int enable_cdi; /* -1 not set, 0 false, 1 true */
        char *enable_cdi_file;
};

/* Returns true when containerd is 2.x: its version says so, or, unknown, its main config is version 3
 * (containerd 1.x refuses those). CDI on by default and key-by-key imports come with 2.x. */
static inline bool containerd_is_2x(const struct containerd_facts *c) {
        return c->major >= 2 || (c->major == 0 && c->version >= 3);
}

struct crio_facts {
        bool present;
        char *binary;
        struct runtime_process process;
        int rc; /* first read or TOML error */
        char *error;
        struct runtime_config_file *files; /* crio.conf, then crio.conf.d/ in name order */
        size_t n_files;
        char *nvidia_path, *nvidia_file; /* [crio.runtime.runtimes.nvidia] runtime_path */
        bool has_nvidia;
        int nvidia_path_rc;
        char *default_runtime, *default_runtime_file;
};

struct docker_facts {
        bool present;
        char *binary;
        struct runtime_process process;
        struct runtime_config_file file; /* /etc/docker/daemon.json; rc -ENOENT when absent */
        bool has_nvidia;
        char *nvidia_path;     /* runtimes.nvidia.path as written */
        char *nvidia_resolved; /* found on the daemon's PATH, NULL when not */
        int nvidia_path_rc;
        char *default_runtime;
        bool cdi_feature; /* features.cdi */
};

enum { TOOLKIT_RUNTIME, TOOLKIT_CLI, TOOLKIT_CTK, TOOLKIT_CDI_HOOK, TOOLKIT_N_BINARIES };

struct toolkit_facts {
        const char *names[TOOLKIT_N_BINARIES];
        char *paths[TOOLKIT_N_BINARIES];   /* where found (executable), NULL when not */
        bool operator_dir;                 /* /usr/local/nvidia/toolkit exists */
        struct runtime_config_file config; /* nvidia-container-runtime config.toml; rc -ENOENT when absent */
        char *mode;                        /* nvidia-container-runtime.mode */
        char **validations;                /* /run/nvidia/validations/ entries */
        size_t n_validations;
};

struct cdi_spec {
        char *path;
        int rc;
        char *error;
        char *cdi_version, *kind;
        char **devices; /* device names: "0", "GPU-...", "all" */
        size_t n_devices;
        char **device_nodes; /* host paths (hostPath, else path) */
        size_t n_device_nodes;
        char **mounts; /* hostPath of every mount */
        size_t n_mounts;
        char **hooks; /* hook paths */
        size_t n_hooks;
        char **missing; /* device nodes, mounts and hooks absent below the root */
        size_t n_missing;
};

struct cdi_facts {
        struct cdi_spec *specs; /* every *.yaml, *.yml, *.json in /etc/cdi and /var/run/cdi */
        size_t n_specs;
};

/* The mount that holds one host path, from the host's /proc/1/mountinfo. */
struct host_mount {
        const char *path;  /* the host path asked about ("/var/lib/containerd"), a literal */
        bool exists;       /* the path exists under the root */
        char *mount_point; /* the mount holding it ("/", "/var/lib/containerd"); NULL when none does */
        char *fstype, *source;
        bool read_only;    /* mounted "ro" */
        bool sb_read_only; /* its superblock is read-only (ext4 and xfs after an error: errors=remount-ro) */
        unsigned line;     /* its line in mountinfo */
};

/* The paths the container runtimes (layer 2) and the kubelet (layer 3) write to, and their mounts. */
enum {
        HOST_MOUNT_ROOT,
        HOST_MOUNT_CONTAINERD,
        HOST_MOUNT_CRIO,
        HOST_MOUNT_DOCKER,
        HOST_MOUNT_KUBELET,
        _HOST_MOUNT_MAX
};
#define HOST_MOUNTINFO_PATH "/proc/1/mountinfo" /* init's: the host's mounts when /proc is the host's */

struct host_mounts {
        int rc;      /* 0 read and parsed; -ENOENT absent; -EINVAL a line not in the kernel's format; -errno */
        char *error; /* the sentence for rc < 0, naming the file (and the line) */
        struct host_mount m[_HOST_MOUNT_MAX];
};

struct runtime_facts {
        struct containerd_facts containerd;
        struct crio_facts crio;
        struct docker_facts docker;
        struct toolkit_facts toolkit;
        struct cdi_facts cdi;
        bool proc_visible; /* /proc below the root lists processes */
        int infiniband_rc; /* listing /dev/infiniband */
        size_t n_uverbs;
        bool have_rdma_cm;
        struct host_mounts mounts; /* the runtimes' and the kubelet's storage */
};

/* Runs the layer 2 probes below the root; dpkg is the status file probe_all read (basic/dpkg.h). Returns a new
 * runtime_facts; never fails (errors are facts). */
struct runtime_facts *probe_runtime(const struct dpkg_status *dpkg);
/* Frees f and everything in it; NULL is fine. */
void runtime_facts_free(struct runtime_facts *f);

/* Individual probes (one file each). */
void probe_containerd(const struct dpkg_status *dpkg, struct containerd_facts *ret);
void probe_crio(struct crio_facts *ret);
void probe_docker(struct docker_facts *ret);
void probe_toolkit(struct toolkit_facts *ret);
void probe_cdi(struct cdi_facts *ret);
/* Reads HOST_MOUNTINFO_PATH and finds the mount of each HOST_MOUNT_* path into ret. Never fails. */
void probe_mounts(struct host_mounts *ret);
void host_mounts_free(struct host_mounts *f);

void containerd_facts_free(struct containerd_facts *f);
void crio_facts_free(struct crio_facts *f);
void docker_facts_free(struct docker_facts *f);
void toolkit_facts_free(struct toolkit_facts *f);
void cdi_facts_free(struct cdi_facts *f);
void runtime_config_file_free(struct runtime_config_file *f);
void runtime_process_free(struct runtime_process *p);

/* Parsers of one file's text, used by the probes; pure (no host reads), unit-tested and fuzzed. */

/* Parses a containerd config file. Returns 0 and fills ret (version, imports, nvidia runtimes
 * named; free with runtime_config_file_free, path is copied) or -EINVAL with ret->error naming
 * path, line and column. The parsed document is handed back in *ret_doc when ret_doc is not NULL
 * (free with toml_free). */
struct toml_value;
int containerd_parse_file(const char *path, const char *text, size_t len, struct runtime_config_file *ret,
                          struct toml_value **ret_doc);

/* Resolves a containerd configuration from a main file: imports (globs, relative paths, cycles)
 * in containerd's load order, the per-version CRI table and merge rules, the runtimes. Reads
 * through hostfs. Fills the config part of ret (ret->config_path must be set); never fails: errors
 * land in ret->rc and ret->error. */
void containerd_resolve(struct containerd_facts *ret);

/* Parses Docker's daemon.json. Returns 0 and fills the daemon.json part of ret, or -EINVAL with a
 * malloc'd message (line and column) in *ret_error. */
int docker_parse_daemon_json(const char *text, size_t len, struct docker_facts *ret, char **ret_error);

/* Applies one CRI-O TOML file (crio.conf or a drop-in) on top of what earlier files set.
 * Returns 0, or -EINVAL with file->error set (path, line and column). */
int crio_apply_file(struct crio_facts *c, struct runtime_config_file *file, const char *text, size_t len);

/* Parses one CDI spec (YAML, or JSON when json is set) into ret (path copied), in time linear in
 * its size. Returns 0, or -EINVAL with ret->error naming the path (and line and column where the
 * text does not parse), also when the spec holds more than 4 MiB or more than 100000 devices,
 * device nodes, mounts or hooks (the sentence says which bound). */
int cdi_parse_spec(const char *path, const char *text, size_t len, bool json, struct cdi_spec *ret);
void cdi_spec_free(struct cdi_spec *s);

/* Parses containerd's major and minor version from a version string ("1.7.24", "v2.0.0", dpkg's
 * "1:1.6.20~ds1-1+deb12u1"). Returns 0, or -EINVAL (both 0) when s does not start with major.minor. */
int containerd_parse_version(const char *s, int *ret_major, int *ret_minor);
