/* cluster.h: the cluster's facts as `gpunode cluster` keeps them (compact, per GPU node), its checks and report. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/check.h"

#define CLUSTER_LAYERS         4
#define CLUSTER_EVIDENCE_NODES 20 /* nodes named per check; the rest counted */

/* A node condition written by the agent (True = the problem is present). */
enum cl_cond { CL_COND_ABSENT, CL_COND_FALSE, CL_COND_TRUE, CL_COND_UNKNOWN };

struct cl_condition {
        enum cl_cond status;
        char *reason, *message;
        int64_t heartbeat; /* lastHeartbeatTime, seconds since the epoch; 0 when absent or unreadable */
};

struct cl_taint {
        char *key, *value, *effect;
};

/* One GPU node: what the checks need from its Node, its pods and its CSINode. */
struct cl_node {
        char *name;
        const char *gpu_because; /* why it is a GPU node (static text) */
        int ready;               /* Ready: 1 True, 0 False, -1 Unknown or absent */
        char *ready_reason;
        bool unschedulable;
        struct cl_taint *taints;
        size_t n_taints;
        char *kubelet_version, *runtime_version; /* status.nodeInfo */
        /* GFD / NFD / GPU Operator labels, NULL when absent */
        char *product, *driver_version, *cuda_version, *instance_type;
        char *mig_strategy, *mig_config_state, *sharing_strategy, *replicas;
        bool rdma_nic;                         /* an RDMA NIC (Mellanox PCI vendor 15b3, or NFD's rdma.capable) */
        bool operator_toolkit;                 /* nvidia.com/gpu.deploy.container-toolkit=true */
        int64_t gpu_capacity, gpu_allocatable; /* nvidia.com/gpu plus the nvidia.com/mig- resources */
        int64_t gpu_expected;     /* what it should have: the larger of its capacity and GFD's nvidia.com/gpu.count
                                   * (capacity drops with a GPU lost; the label keeps the count GFD saw) */
        int64_t rdma_allocatable; /* the rdma/ resources */
        struct cl_condition layers[CLUSTER_LAYERS];
        /* from the pods on the node */
        char *agent_namespace, *agent_pod; /* the gpunode agent pod, NULL when none */
        int agent_port;
        bool agent_ready;
        bool dcgm_exporter, node_exporter, network_operator;
        int64_t gpu_requested; /* by running and pending pods bound here */
        /* from the CSINode */
        char **csi_drivers;
        size_t n_csi_drivers;
        bool has_csinode;
};

/* A pod that asks for GPUs and is not scheduled. */
struct cl_pending {
        char *namespace, *name;
        int64_t gpus;
        char *message; /* the latest FailedScheduling event's message, NULL when none */
        int64_t since; /* creationTimestamp */
};

/* "key=value" strings. */
/* The most GPUs (or RDMA devices) one resource quantity counts: a larger one is an API's garbage, and clamping it
 * keeps every sum over nodes, pods and containers far from int64 overflow. */
#define CL_QUANTITY_MAX ((int64_t)1 << 20)

struct cl_strv {
        char **v;
        size_t n;
};

struct cl_service {
        char *namespace, *name;
        bool scrape_annotation; /* prometheus.io/scrape: "true" */
        struct cl_strv labels, selector;
        bool selects_agent, selects_dcgm, selects_node_exporter;
};

struct cl_monitor {
        char *namespace, *name;
        struct cl_strv match_labels;
        /* selector.matchExpressions, each "OPERATOR KEY V1,V2" (label keys hold no space, values no comma);
         * "Invalid" for one gpunode cannot read, which selects nothing */
        struct cl_strv match_expressions;
        char **namespaces; /* namespaceSelector.matchNames */
        size_t n_namespaces;
        bool any_namespace;
};

/* A list that could not be read (optional lists: the checks resting on it say so). */
struct cl_list_state {
        int rc; /* 0 read, negative errno */
        char *error;
};

enum cl_list {
        CL_LIST_NODES,
        CL_LIST_CSINODES,
        CL_LIST_PODS,
        CL_LIST_EVENTS,
        CL_LIST_STORAGECLASSES,
        CL_LIST_CSIDRIVERS,
        CL_LIST_RUNTIMECLASSES,
        CL_LIST_SERVICES,
        CL_LIST_SERVICEMONITORS,
        CL_LIST_COUNT,
};

struct cluster_facts {
        char *server;
        int64_t now;           /* when it was read, seconds since the epoch */
        int64_t stale_after_s; /* a heartbeat older than this is stale */
        size_t n_nodes_total;  /* every node, GPU or not */
        struct cl_node *nodes; /* the GPU nodes, sorted by name */
        size_t n_nodes;
        void *index;   /* name -> node (private to fetch.c) */
        bool finished; /* nodes sorted, index rebuilt (cluster_facts_finish) */
        struct cl_pending *pending;
        size_t n_pending;
        size_t n_pods;   /* pods read */
        size_t n_events; /* FailedScheduling events read */
        char **storageclasses, **default_storageclasses;
        size_t n_storageclasses, n_default_storageclasses;
        char **csidrivers;
        size_t n_csidrivers;
        char **runtimeclasses; /* "name=handler" */
        size_t n_runtimeclasses;
        char **pod_runtimeclasses; /* runtimeClassName values pods use (distinct) */
        size_t n_pod_runtimeclasses;
        struct cl_service *services;
        size_t n_services;
        struct cl_monitor *monitors;
        size_t n_monitors;
        bool network_operator_seen; /* a Network Operator pod anywhere */
        /* the labels of one pod of each metrics kind (what a Service must select), and annotations */
        struct cl_strv agent_labels, dcgm_labels, node_exporter_labels;
        char *agent_namespace, *dcgm_namespace, *node_exporter_namespace;
        bool metrics_pods_annotated; /* prometheus.io/scrape on the agent or exporter pods */
        void *pending_index;         /* "ns/name" -> pending pod (private to fetch.c) */
        struct cl_list_state lists[CL_LIST_COUNT];
        size_t pages; /* API pages read in all */
};

/* objects.c: from API objects to the facts (the parsers; fuzzed). Each returns 0, 1 when the object
 * is not of interest (not a GPU node, a pod of no concern), or -EBADMSG when it lacks metadata.name. */
const char *cl_gpu_node_reason(const json_t *node); /* gpu_nodes.c: why a Node is a GPU node, or NULL */
int cl_node_parse(const json_t *node, struct cl_node *ret);
void cl_node_free(struct cl_node *n);
/* Parses an RFC 3339 time ("2026-12-01T12:00:00Z", fractions and offsets too). Returns seconds since
 * the epoch, or 0 when s is NULL or not such a time. */
int64_t cl_parse_time(const char *s);

/* fetch.c: reads the cluster, its nodes those matching node_selector when not NULL (a label selector,
 * "node.kubernetes.io/instance-type=p5.48xlarge": the API server filters them). Returns 0 with *ret
 * filled, or a negative errno with *ret_error: a list that failed part-way (never a partial set of
 * facts), or the nodes or pods that cannot be listed. */
struct kube_client;
int cluster_fetch(struct kube_client *c, unsigned limit, int64_t stale_after_s, const char *node_selector,
                  struct cluster_facts *ret, char **ret_error);
void cluster_facts_free(struct cluster_facts *f);
/* Feeds one item of list l to the facts (what cluster_fetch does per item; the fuzz target's entry).
 * Returns 0, or a negative errno on an item that cannot be read (-EBADMSG). */
int cluster_facts_add(struct cluster_facts *f, enum cl_list l, const json_t *item);
/* Sorts the nodes and joins what later lists said (done by cluster_fetch after each list). */
void cluster_facts_finish(struct cluster_facts *f);
/* Returns the GPU node called name, or NULL. */
struct cl_node *cluster_node_find(const struct cluster_facts *f, const char *name);

/* The six categories. */
enum cl_category { CL_INFRA, CL_GPU_HEALTH, CL_NETWORK, CL_STORAGE, CL_SCHEDULING, CL_OBSERVABILITY, CL_CATEGORIES };
const char *cl_category_id(enum cl_category c);   /* "infrastructure", "gpu-health", ... */
const char *cl_category_name(enum cl_category c); /* "infrastructure", "GPU health", ... */

struct cluster_report;
struct cl_finding;

/* One cluster check. */
struct cl_check_def {
        const char *id; /* "<category>.<name>" */
        enum cl_category category;
        const char *title;
        const char *depends[CHECK_MAX_DEPS]; /* checks it rests on (any category) */
        void (*run)(const struct cluster_facts *facts, struct cl_finding *f);
        /* A failure here hides GPUs' health (no agent, stale conditions) but takes no GPU away: a failure
         * elsewhere that does (8 dead GPUs) is the root cause before it. */
        bool hides_only;
};

struct cl_finding {
        const struct cl_check_def *def;
        struct finding f;     /* status, summary, evidence, remedy, blocked_by (f.def unused) */
        const char *rests_on; /* a check of another category that explains this one */
};

/* Per node, what the table shows. */
struct cl_row {
        const struct cl_node *node;
        enum check_status layer[CLUSTER_LAYERS]; /* from the conditions: pass/fail/blocked/skip, warn when stale */
        bool known;                              /* conditions present */
        bool stale;
        enum check_status status; /* the node's worst */
        int root_layer;           /* 0: none */
        char *root_cause;         /* one line, NULL when healthy */
        bool ready_for_work;      /* healthy, or warning only while schedulable and fresh */
};

struct cluster_report {
        const struct cluster_facts *facts;
        struct cl_finding *findings;
        size_t n_findings;
        struct cl_row *rows;
        size_t n_rows;
        enum verdict verdict;
        const struct cl_finding *root_cause;
        size_t nodes_ready; /* GPU nodes that can take work: Ready, schedulable, no layer failing */
        int64_t gpus_allocatable, gpus_capacity;
        int64_t gpus_expected; /* the nodes' gpu_expected: more than gpus_capacity when GPUs were lost */
};

/* registry.c: every cluster check, bottom-up (category order). */
const struct cl_check_def *const *cluster_checks(size_t *ret_n);
/* attribution.c: runs the checks of cluster_checks() through the engine (report_run: blocking and root cause
 * are the node report's rules), then builds the rows. Returns 0. */
int cluster_report_build(const struct cluster_facts *facts, struct cluster_report *ret);
/* The same over the cluster checks defs[0..n) (in their order; they must outlive the report). Returns 0. */
int cluster_report_build_with(const struct cluster_facts *facts, const struct cl_check_def *const *defs, size_t n,
                              struct cluster_report *ret);
void cluster_report_free(struct cluster_report *r);
const struct cl_finding *cluster_report_find(const struct cluster_report *r, const char *id);
/* Fills the row of node n (used by attribution and the checks). */
void cl_row_fill(const struct cluster_facts *facts, const struct cl_node *n, struct cl_row *ret);
void cl_row_free(struct cl_row *r);
/* Returns the lowest failing layer of n by its conditions (1..4), or 0. */
int cl_node_failing_layer(const struct cl_node *n);
#define CLUSTER_CLOCK_SKEW_S 60 /* a heartbeat further in the future is a clock that ran ahead */
/* Returns the newest lastHeartbeatTime of the node's agent conditions (Unix seconds), 0 when none. */
int64_t cl_node_heartbeat(const struct cl_node *n);
/* Returns true when the node carries agent conditions whose newest heartbeat is missing, older than
 * facts->stale_after_s, or more than CLUSTER_CLOCK_SKEW_S in the future (the node's clock ran ahead:
 * what it says cannot be dated, and its agent would stop heartbeating); false without agent
 * conditions. */
bool cl_node_stale(const struct cluster_facts *facts, const struct cl_node *n);
/* Adds evidence naming a node, the first CLUSTER_EVIDENCE_NODES times; *count counts all. */
void cl_evidence_node(struct cl_finding *f, size_t *count, const char *fmt, ...) _printf_(3, 4);
/* When list l could not be read (403, or 404 for a resource not served), sets f to "cannot tell" (warn
 * for 403, naming the permission; skip for 404 when not_served_skips) and returns true; else false. */
bool cl_list_unreadable(const struct cluster_facts *facts, enum cl_list l, struct cl_finding *f, bool not_served_skips);
/* Adds "... and N more" when count passed the bound. */
void cl_evidence_more(struct cl_finding *f, size_t count);

/* tally.c: distinct values of a per-node string (versions, products) with their counts. */
struct cl_tally {
        const char *value[16];
        size_t count[16], n, other; /* other: values past the 16th */
};
/* Counts v (NULL counts as "unknown"; borrowed: must outlive t). Returns nothing. */
void cl_tally_add(struct cl_tally *t, const char *v);
/* Returns "v1 (n1), v2 (n2)" malloc'd. */
char *cl_tally_text(const struct cl_tally *t);
/* Returns the most common value, NULL when empty. */
const char *cl_tally_majority(const struct cl_tally *t);

/* render_text.c, render_json.c: each returns 0 or -EIO. */
struct cl_text_options {
        bool color;             /* ANSI colours */
        bool all_nodes;         /* one line per GPU node even past CLUSTER_TABLE_ALL rows, none grouped */
        bool verbose;           /* evidence of passing checks too */
        enum check_status only; /* CHECK_FAIL: only failing nodes; CHECK_WARN: failing or warning; else all */
};
#define CLUSTER_TABLE_ALL 50 /* up to this many GPU nodes, every one has its line; past it only troubled ones */
#define CLUSTER_GROUP_MIN 4  /* this many troubled nodes with the same root cause share one line */
int cluster_render_text(FILE *out, const struct cluster_report *r, const struct cl_text_options *o);
json_t *cluster_report_to_json(const struct cluster_report *r);
int cluster_render_json(FILE *out, const struct cluster_report *r);
