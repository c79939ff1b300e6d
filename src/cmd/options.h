/* options.h: the options that several commands share (host, NVML, Kubernetes, metrics), one parser
 * for each, one duration syntax, and the one rule that names the node. */
#pragma once

#include <getopt.h>
#include <stdbool.h>

#include "facts/layer3_kubernetes.h"
#include "facts/node.h"

/* getopt_long codes of the shared options; a command lists the OPT_* entries it accepts and hands
 * every code its own switch does not know to shared_option(). */
enum {
        OPT_ROOT = 0x100,
        OPT_KMSG,
        OPT_NVML_LIBRARY,
        OPT_NVML_TIMEOUT,
        OPT_NODE,
        OPT_KUBECONFIG,
        OPT_TIMEOUT,
        OPT_OPERATOR_NAMESPACE,
        OPT_DCGM_URL,
        OPT_NODE_EXPORTER_URL,
        OPT_EXPECT_GPUS,
};
#define OPTION_ROOT                                                                                                    \
        { "root", required_argument, NULL, OPT_ROOT }
#define OPTION_KMSG                                                                                                    \
        { "kmsg", required_argument, NULL, OPT_KMSG }
#define OPTION_NVML_LIBRARY                                                                                            \
        { "nvml-library", required_argument, NULL, OPT_NVML_LIBRARY }
#define OPTION_NVML_TIMEOUT                                                                                            \
        { "nvml-timeout", required_argument, NULL, OPT_NVML_TIMEOUT }
#define OPTION_NODE                                                                                                    \
        { "node", required_argument, NULL, OPT_NODE }
#define OPTION_EXPECT_GPUS                                                                                             \
        { "expect-gpus", required_argument, NULL, OPT_EXPECT_GPUS }
#define OPTION_KUBECONFIG                                                                                              \
        { "kubeconfig", required_argument, NULL, OPT_KUBECONFIG }
/* --kubeconfig, --timeout, --operator-namespace, --dcgm-url, --node-exporter-url */
#define OPTIONS_KUBE                                                                                                   \
        OPTION_KUBECONFIG, { "timeout", required_argument, NULL, OPT_TIMEOUT },                                        \
                { "operator-namespace", required_argument, NULL, OPT_OPERATOR_NAMESPACE },                             \
                { "dcgm-url", required_argument, NULL, OPT_DCGM_URL }, {                                               \
                "node-exporter-url", required_argument, NULL, OPT_NODE_EXPORTER_URL                                    \
        }

/* The shared options as `gpunode CMD --help` lists them: a command's entry names those it takes (struct
 * command's .shared), main.c appends their lines, written once in options.c, in this order. */
enum {
        SHARED_OPT_ROOT = 1u << 0,
        SHARED_OPT_KMSG = 1u << 1,
        SHARED_OPT_NVML_LIBRARY = 1u << 2,
        SHARED_OPT_NVML_TIMEOUT = 1u << 3,
        SHARED_OPT_NODE = 1u << 4,
        SHARED_OPT_KUBECONFIG = 1u << 5,
        SHARED_OPT_TIMEOUT = 1u << 6,
        SHARED_OPT_OPERATOR_NAMESPACE = 1u << 7,
        SHARED_OPT_DCGM_URL = 1u << 8,
        SHARED_OPT_NODE_EXPORTER_URL = 1u << 9,
        SHARED_OPT_EXPECT_GPUS = 1u << 10,
};
/* --nvml-library, --nvml-timeout */
#define SHARED_OPTS_NVML (SHARED_OPT_NVML_LIBRARY | SHARED_OPT_NVML_TIMEOUT)
/* what OPTIONS_KUBE accepts */
#define SHARED_OPTS_KUBE                                                                                               \
        (SHARED_OPT_KUBECONFIG | SHARED_OPT_TIMEOUT | SHARED_OPT_OPERATOR_NAMESPACE | SHARED_OPT_DCGM_URL |            \
         SHARED_OPT_NODE_EXPORTER_URL)

/* Returns the help lines (each ending in a newline, the text at column 25) of the one shared option
 * whose SHARED_OPT_* bit is given, or NULL when bit is not exactly one of them. Never fails. */
const char *shared_option_help(unsigned bit);

#define NVML_DEFAULT_TIMEOUT_MS 10000u

/* What the shared options set. Zero-initialise, then shared_options_init(). */
struct shared_options {
        const char *root;               /* --root, else $GPUNODE_ROOT, else "/" */
        bool root_given;                /* --root was on the command line */
        const char *node;               /* --node; NULL: node_name_resolve()'s rule */
        struct probe_options probe;     /* --kmsg, --nvml-library, --nvml-timeout, --expect-gpus */
        struct kube_probe_options kube; /* OPTIONS_KUBE */
        bool timeout_given;             /* --timeout was on the command line */
};

/* Sets the defaults: the root from $GPUNODE_ROOT, NVML and API timeouts. Returns nothing. */
void shared_options_init(struct shared_options *o);

/* Applies one shared option (getopt code c, its argument arg). Returns 1 when applied; 0 when c is
 * not a shared option (o untouched); -EINVAL with a malloc'd sentence in *ret_error ("--timeout must
 * be ...", without the command's name) when the argument is not valid. */
int shared_option(int c, const char *arg, struct shared_options *o, char **ret_error);

/* Parses a duration: plain seconds ("10", "1.5"), one number with a unit ("500ms", "10s", "5m", "2h"),
 * or a Go duration (parse_go_duration_ms: "1m30s"). Returns 0 with milliseconds in *ret when the
 * value lies in min_ms..max_ms, else -EINVAL (garbage, a negative or non-finite number, an unknown
 * unit, out of range). */
int parse_duration_ms(const char *s, uint64_t min_ms, uint64_t max_ms, uint64_t *ret);

/* Parses a Go duration (time.ParseDuration): "0", or one or more decimal numbers each with a unit
 * ("60s", "1m30s", "1.5h", "300ms", "2h45m"; units ns, us, µs, μs, ms, s, m, h), an optional leading
 * "+". Returns 0 with milliseconds (rounded) in *ret when the value lies in min_ms..max_ms, else -EINVAL
 * (garbage, a negative sign, a number without a unit, an unknown unit, a non-zero value below a
 * millisecond, out of range). */
int parse_go_duration_ms(const char *s, uint64_t min_ms, uint64_t max_ms, uint64_t *ret);

/* Parses a Go boolean (strconv.ParseBool, as the Go tools' flags and environment take them): 1 t T
 * TRUE true True, 0 f F FALSE false False. Returns 0 with the value in *ret, else -EINVAL. */
int parse_go_bool(const char *s, bool *ret);

/* Returns the value of the first of the NULL-terminated names that is set and not empty in the
 * environment, with its name in *ret_name (when not NULL), or NULL when none is. Never fails. */
const char *env_first(const char *const *names, const char **ret_name);

/* Checks that name is a node name as the API server takes one: a DNS-1123 subdomain (lowercase
 * letters, digits, '-' and '.', each dot-separated part starting and ending with a letter or digit,
 * at most 253 characters). Returns 0, or -EINVAL with a malloc'd sentence in *ret_error naming what
 * (e.g. "--node") and the value (control characters shown as '?'). */
int node_name_check(const char *name, const char *what, char **ret_error);

/* The node's name, by the one rule every command follows: flag (--node, checked by shared_option())
 * when not NULL or empty, else $NODE_NAME, else the host name under the root
 * (/proc/sys/kernel/hostname, through hostfs, so hostfs_init() must have run) lowercased as the
 * kubelet does, else "unknown". Returns it malloc'd (aborts on OOM). A $NODE_NAME that is not a node
 * name (node_name_check()) is a usage error: the sentence on stderr, then exit 64. */
char *node_name_resolve(const char *flag);
