/* taint.h: the agent's optional taint gpunode.io/unhealthy=<layer>:NoSchedule and its circuit breaker. */
#pragma once

#include <jansson.h>
#include <stdbool.h>

#include "agent/conditions.h"

#define AGENT_TAINT_KEY "gpunode.io/unhealthy"
/* The nodes that count as GPU nodes for the circuit breaker. */
#define AGENT_GPU_NODE_SELECTORS                                                                                       \
        { "nvidia.com/gpu.present=true", "feature.node.kubernetes.io/pci-10de.present=true" }

/* Returns the taint value due for conditions c: "hardware" while layer 1 is True, else
 * "container-runtime" while layer 2 is True, else NULL (no taint). */
const char *agent_taint_wanted(const struct agent_condition c[AGENT_N_LAYERS]);

/* Returns the value of the node's gpunode.io/unhealthy taint (owned by node), or NULL when it has none. */
const char *agent_taint_current(const json_t *node);

/* Returns how many nodes may carry the taint at once: floor(max_share x gpu_nodes), at least 1 (a
 * single broken node of a small cluster is still fenced). */
unsigned agent_taint_allowed(unsigned gpu_nodes, double max_share);

/* Counts GPU nodes page by page: distinct names (self included) and those other than self with the taint. */
struct agent_taint_counter {
        json_t *seen; /* name -> true */
        const char *self;
        unsigned tainted;
};

/* Starts counting for the node self (borrowed). Returns nothing. */
void agent_taint_counter_init(struct agent_taint_counter *c, const char *self);

/* Counts one Node (a name holding a NUL, or none, is not counted). Returns nothing. */
void agent_taint_counter_add(struct agent_taint_counter *c, const json_t *node);

/* Gives the counts (*ret_gpu_nodes with self, *ret_tainted_others) and frees what c holds. Returns nothing. */
void agent_taint_counter_done(struct agent_taint_counter *c, unsigned *ret_gpu_nodes, unsigned *ret_tainted_others);

/* Counts, in a NodeList or array of Nodes, the distinct node names (*ret_gpu_nodes, self included) and
 * those other than self that carry the taint (*ret_tainted_others). Returns nothing. */
void agent_taint_count(const json_t *lists[], unsigned n_lists, const char *self, unsigned *ret_gpu_nodes,
                       unsigned *ret_tainted_others);

enum agent_taint_action {
        AGENT_TAINT_NONE,   /* as it should be */
        AGENT_TAINT_ADD,    /* add it (or change its value) */
        AGENT_TAINT_REMOVE, /* healed: remove it */
        AGENT_TAINT_REFUSE, /* due, but the circuit breaker refuses: too many GPU nodes carry it */
};

/* Decides what to do given the value due (want, NULL: none), the node's (has, NULL: none), and the
 * cluster's counts. Adding is refused when tainted_others + 1 would pass agent_taint_allowed; changing
 * the value of a taint already there is not. Returns the action; never fails. */
enum agent_taint_action agent_taint_decide(const char *want, const char *has, unsigned gpu_nodes,
                                           unsigned tainted_others, double max_share);

/* Builds the merge patch for nodes/<name> that sets the node's taints to its current ones without
 * gpunode.io/unhealthy, plus it with value want when want is not NULL; metadata.resourceVersion from
 * node, so that a concurrent change answers 409. Returns a new reference. */
json_t *agent_taint_patch(const json_t *node, const char *want);
