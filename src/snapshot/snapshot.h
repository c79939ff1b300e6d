/* snapshot.h: gpunode collect's archive of what the probes read, and its safe extraction for check --snapshot. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "basic/util.h"

struct nvml_facts;
struct net_log;

/*
 * The archive (a gzip-compressed POSIX tar):
 *   root/<host path>   every host path the probes read, as it is: regular files with the bytes read,
 *                      symlinks as symlinks, directories (with their entries' names); device nodes,
 *                      FIFOs and sockets as empty placeholder files (their kind is in the manifest)
 *   kmsg               the kernel log as read (/dev/kmsg records as text lines, or the --kmsg file)
 *   nvml.json          NVML's answers in the fake NVML's description format (tests/fake-nvml/README.md)
 *   api/INDEX.json     every Kubernetes API and metrics exchange in order, how the API client was
 *                      set up, the options that shaped the requests (net_replay.h)
 *   api/<NNNN>-<request>.json|.txt  the bodies received, redacted (snapshot_add_api)
 *   MANIFEST.json      schema gpunode.snapshot/v1: version, time, node, root, every member with its
 *                      size and sha256, what was redacted and why, what could not be read
 */

/* Extraction limits: a member, the whole, and the member count. */
#define SNAPSHOT_MEMBER_MAX  (64ull << 20)
#define SNAPSHOT_TOTAL_MAX   (1ull << 30)
#define SNAPSHOT_MEMBERS_MAX 200000u

struct snapshot_limits {
        uint64_t member_max, total_max;
        size_t members_max;
};

/* ---- writing (gpunode collect) ---- */

struct snapshot_writer;

/* Starts an archive at path ("-": standard output); a file is written beside it and renamed into
 * place by snapshot_writer_finish. Returns 0 or -errno with a sentence in *ret_error. */
int snapshot_writer_open(const char *path, struct snapshot_writer **ret, char **ret_error);

/* Adds the host path (as given to hostfs, resolved below the hostfs root, symlinks stored as links
 * and followed) with redaction applied. Directories are noted and their entries added by
 * snapshot_writer_finish. A path that does not exist adds nothing. Returns 0, or -errno when the
 * archive cannot be written (unreadable host files are noted in the manifest, not errors). */
int snapshot_add_host_path(struct snapshot_writer *w, const char *path);

/* Adds the kernel log as read from source ("/dev/kmsg" or a file); data NULL: it could not be read,
 * error says why. Returns 0 or -errno. */
int snapshot_add_kmsg(struct snapshot_writer *w, const char *source, const char *data, size_t len, const char *error);

/* Adds NVML's answers (nvml_facts_to_json's text) and what the manifest needs to replay them:
 * the library asked for, the path loaded, the load error when NVML did not load (json NULL), the
 * timeout facts. Returns 0 or -errno. */
int snapshot_add_nvml(struct snapshot_writer *w, const char *json, const char *library, const struct nvml_facts *f,
                      int load_rc, const char *load_error);

/*
 * The hook for Kubernetes API responses: adds api/<name> holding the JSON document (len bytes),
 * with credentials replaced (redact_api_json: credential keys, Secrets' data, env values, token
 * annotations, credential arguments), or, for a name ending in ".txt" or a body that is not JSON,
 * the text with redact_text's rules applied. name: letters, digits, '.', '_', '-' and '/', no "..",
 * no leading '/', ending in ".json" or ".txt" (e.g. "0001-api-v1-nodes-gpu-node-1.json"). Returns
 * 0, -EINVAL for a bad name, -EEXIST when added twice, or -errno.
 */
int snapshot_add_api(struct snapshot_writer *w, const char *name, const char *json, size_t len);

/* Adds the exchanges of log (net_replay.h): each body through snapshot_add_api (redacted), then
 * api/INDEX.json. Returns 0 or -errno. */
int snapshot_add_net_log(struct snapshot_writer *w, const struct net_log *log);

/* Writes the manifest (node, root as given), closes and renames the archive into place. Frees w.
 * Returns 0 and the member count in *ret_members (may be NULL), or -errno with *ret_error. */
int snapshot_writer_finish(struct snapshot_writer *w, const char *node, const char *root, size_t *ret_members,
                           char **ret_error);

/* Drops a writer without finishing: removes the partial file. Frees w (NULL is fine). */
void snapshot_writer_abort(struct snapshot_writer *w);

/* Returns how many paths were redacted so far and how many could not be read. */
void snapshot_writer_counts(const struct snapshot_writer *w, size_t *ret_redacted, size_t *ret_unreadable);

/* ---- redaction rules (used by the writer; exposed for tests) ---- */

enum redact_action {
        REDACT_NONE,    /* copied as is */
        REDACT_FILTER,  /* copied with secret values and private key blocks replaced by REDACTED */
        REDACT_REPLACE, /* content replaced by "REDACTED\n" (the file's presence stays visible) */
        REDACT_OMIT,    /* never copied */
};

/* Returns what to do with the host path and, in *ret_why, a constant sentence saying why. */
enum redact_action redact_rule(const char *host_path, const char **ret_why);

/* Appends data (len bytes) to out with secret values replaced by REDACTED, by the format its content
 * shows: JSON (the rules of redact_api_json, only the changed string tokens rewritten), TOML (string
 * tokens rewritten in place, multi-line ones keeping their line count; the result parses to the
 * same shape), else line by line (YAML "k: v" with block scalars and quoted values spanning lines,
 * "k = v", "- K=V", "- name: <credential>" then "value: V", Prometheus label values of
 * credential-named labels, multi-line TOML strings of a file that does not parse, PEM private key
 * blocks). In every format the values of credential keys (token, password, secret, auth,
 * Authorization, client-key-data, ...) go, and in other values user:password@ in URLs, "Bearer T",
 * "key=V" and "--key V" with a credential key. Returns the number of replacements (0: out holds
 * data unchanged); cannot fail. */
size_t redact_text(const char *data, size_t len, struct buf *out);

/* Replaces, in place, the credentials in a Kubernetes API object or list: string values of
 * credential keys (as redact_text; annotations by their last "/" segment) and the strings of arrays
 * under them, every value of a Secret's data and stringData, env[].value, the value of
 * {"name": <credential>, "value": V} (httpHeaders), kubectl's last-applied-configuration,
 * credential arguments in command/args arrays (as redact_cmdline), and URL credentials, Bearer
 * tokens and "password=V" in every other string (annotation values, shell commands). Returns the
 * number of values replaced; cannot fail. */
size_t redact_api_json(json_t *v);

/* Appends a NUL-separated command line (len bytes) to out with the values of credential arguments
 * ("--token=V", "--basic-auth=V", "--password V", "AWS_SECRET_ACCESS_KEY=V", "Bearer T") replaced by
 * REDACTED, and redact_text's free-text rules applied inside every other argument ("Authorization:
 * Bearer T", URLs with user:password@, a shell command given to sh -c). The argument count stays.
 * Returns the number replaced; cannot fail. */
size_t redact_cmdline(const char *data, size_t len, struct buf *out);

/* ---- reading (gpunode check --snapshot) ---- */

struct snapshot {
        char *dir;          /* the private temporary folder (removed by snapshot_close) */
        char *root_dir;     /* dir/root: the host root to check */
        char *kmsg_path;    /* dir/kmsg (may not exist when the node's log was unreadable) */
        char *kmsg_label;   /* the node's kernel log source, "/dev/kmsg" by default */
        char *root_label;   /* the root as given on the node, "/" by default */
        char *node;         /* the node name, NULL when the manifest has none */
        int64_t created;    /* when it was collected (seconds since the epoch), 0 when the manifest does not say */
        bool nvml_recorded; /* the manifest says how NVML went (else: nvml.json alone) */
        char *nvml_library; /* library asked for on the node */
        int nvml_load_rc;   /* < 0 when NVML did not load there */
        char *nvml_load_error;
        struct nvml_facts *nvml_facts; /* from nvml.json, NULL when absent */
        struct net_log *net;           /* API and metrics exchanges (api/INDEX.json), empty when absent */
};

/* Returns the default limits. */
struct snapshot_limits snapshot_default_limits(void);

/*
 * Extracts the archive (len bytes at data, or the file at path) into dir, which must exist and be
 * empty, refusing hostile or broken input: absolute paths, "..", links out of the tree or anything
 * extracted through a link, hard links, device nodes, FIFOs, sockets, members outside root/, api/,
 * kmsg, nvml.json and MANIFEST.json, members larger than lim->member_max, more than lim->total_max
 * in all, more than lim->members_max members, and truncated or corrupt archives. Never writes
 * outside dir (nothing is extracted through a symlink). Changes the working directory while it
 * runs (not thread-safe). Returns 0, or -EINVAL/-EFBIG/-E2BIG/-errno with a sentence naming the
 * member in *ret_error; on failure dir may hold part of the archive: remove it.
 */
int snapshot_extract_memory(const void *data, size_t len, const char *dir, const struct snapshot_limits *lim,
                            char **ret_error);
int snapshot_extract_file(const char *path, const char *dir, const struct snapshot_limits *lim, char **ret_error);

/* Removes dir and everything below it without following symlinks. Returns 0 or -errno. */
int snapshot_remove_dir(const char *dir);

/* Extracts the archive at path into a new private temporary folder and loads its manifest and NVML
 * answers. Returns 0 and *ret (free with snapshot_close, which removes the folder), or -errno with
 * a sentence in *ret_error (the folder is already removed then). */
int snapshot_open(const char *path, struct snapshot **ret, char **ret_error);

/* Removes the temporary folder and frees s (NULL is fine). */
void snapshot_close(struct snapshot *s);
