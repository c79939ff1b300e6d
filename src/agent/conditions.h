/* conditions.h: the agent's node conditions: the report -> one condition per layer, and when to patch them. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

struct report;

#define AGENT_N_LAYERS    4
#define AGENT_MESSAGE_MAX 1024 /* bytes of a condition's or event's message, cut on a UTF-8 boundary */
#define AGENT_REASON_MAX  128

/* node-problem-detector's convention: True = the problem is present. */
enum agent_status { AGENT_FALSE, AGENT_TRUE, AGENT_UNKNOWN };

struct agent_condition {
        enum agent_status status;
        char reason[AGENT_REASON_MAX];       /* CamelCase: "DriverXidErrors", "GPUHardwareHealthy" */
        char message[AGENT_MESSAGE_MAX + 1]; /* NUL-terminated, at most AGENT_MESSAGE_MAX bytes */
        char check[AGENT_REASON_MAX];        /* the check the reason names ("driver.xid-errors"), "" none */
};

/* What was last written for one condition type (or read back from the Node). */
struct agent_cond_state {
        bool known; /* written (or read) at least once */
        struct agent_condition c;
        int64_t transition_time; /* Unix seconds: lastTransitionTime */
        int64_t heartbeat_time;  /* Unix seconds: lastHeartbeatTime */
};

/* Returns the condition type of layer (1..4: "GPUHardwareProblem" ...), NULL otherwise. */
const char *agent_condition_type(unsigned layer);

/* Returns "True", "False" or "Unknown". */
const char *agent_status_name(enum agent_status s);

/* Writes the CamelCase of a check id into ret ("driver.xid-errors" -> "DriverXidErrors": dots, dashes
 * and underscores split words, other characters that are not letters or digits are dropped).
 * Returns ret; never fails (truncates to size). */
char *agent_camel_case(const char *id, char *ret, size_t size);

/* Copies s into ret (size > 3) bounded to size - 1 bytes, cut on a UTF-8 character boundary and
 * ending in "..." when cut. Returns ret; never fails. */
char *agent_bound_utf8(const char *s, char *ret, size_t size);

/*
 * Computes the four conditions from a report (a diagnosis read back by report_from_json()): per layer,
 * by the engine's status of the layer (report_layer_status: the worst of its checks), True when one of
 * its checks failed (reason: the layer's root cause, the report's root_cause when it lies in the layer,
 * else its first failing check; message: summary and remedy), Unknown when a check is blocked by a
 * lower failure ("BlockedBy<Check>") or every check was skipped ("<Type>NotChecked", e.g. no cluster
 * access), else False ("GPUHardwareHealthy", or a warning's check named as the reason). Returns 0
 * with ret[0..3] for layers 1..4, or -EINVAL when report is NULL.
 */
int agent_conditions_from_report(const struct report *report, struct agent_condition ret[AGENT_N_LAYERS]);

/* What agent_conditions_decide asks for. */
enum agent_patch { AGENT_PATCH_NONE, AGENT_PATCH_HEARTBEAT, AGENT_PATCH_CHANGE };

#define AGENT_CLOCK_SKEW_S         60 /* a stored time further in the future is a clock that ran ahead */
#define AGENT_COND_HOLD_DOWN_MAX_S 60 /* the conditions' hold-down: a fifth of the heartbeat, at most this */

/* Returns the conditions' hold-down for a heartbeat of heartbeat_s: heartbeat_s / 5, at most
 * AGENT_COND_HOLD_DOWN_MAX_S (60 s at the default 5 m, 6 s at 30 s). Never fails. */
int64_t agent_conditions_hold_down(int64_t heartbeat_s);

/*
 * Decides whether to patch the Node's conditions, per layer against what was written (prev):
 *  - a worsening (False -> Unknown -> True) or a layer never written is taken at once;
 *  - an improvement is held back while the layer's last transition is less than the hold-down
 *    (agent_conditions_hold_down(heartbeat_s)) old, then taken: a layer flapping every check writes
 *    at most one improvement and one worsening per hold-down;
 *  - the same status in other words (reason, message) is taken with any patch, else once the last
 *    write is a hold-down old.
 * CHANGE when a layer is taken; else HEARTBEAT when the last heartbeat is heartbeat_s old or more, or
 * lies more than AGENT_CLOCK_SKEW_S in the future (a clock that ran ahead and was corrected), or a layer
 * was never written; else NONE. Fills next with the state after the patch (lastTransitionTime moves only
 * on a status change written, and is brought back to now when it lay in the future; lastHeartbeatTime
 * moves with any patch; a held layer keeps its written words; with NONE, next = prev) and transition[i]
 * true where the written status changed or a True condition's written reason changed (what an Event is
 * due for). Returns the decision; never fails.
 */
enum agent_patch agent_conditions_decide(const struct agent_cond_state prev[AGENT_N_LAYERS],
                                         const struct agent_condition cur[AGENT_N_LAYERS], int64_t now,
                                         int64_t heartbeat_s, struct agent_cond_state next[AGENT_N_LAYERS],
                                         bool transition[AGENT_N_LAYERS]);

/* Builds the strategic merge patch body for nodes/<name>/status that sets the four conditions of
 * state (and no other): {"status":{"conditions":[...]}}. Returns it (new reference); never fails. */
json_t *agent_conditions_patch(const struct agent_cond_state state[AGENT_N_LAYERS]);

/* Reads the four condition types from a Node object (status.conditions) into ret, so that a
 * restarted agent keeps lastTransitionTime; types absent, or without a readable lastTransitionTime,
 * stay !known; a missing or unreadable lastHeartbeatTime reads as 0 (due). Times in the future are kept
 * as they are: agent_conditions_decide() heartbeats over them. Returns the number found. */
unsigned agent_conditions_from_node(const json_t *node, struct agent_cond_state ret[AGENT_N_LAYERS]);

/* Formats t (Unix seconds) as RFC 3339 UTC ("2024-05-01T10:00:00Z") into ret (at least 21 bytes).
 * Returns ret. */
char *agent_time_format(int64_t t, char *ret, size_t size);

/* Parses an RFC 3339 UTC time ("...Z", fractions ignored). Returns 0 and *ret, or -EINVAL. */
int agent_time_parse(const char *s, int64_t *ret);
