/* events.h: the agent's Kubernetes Events: which condition transition gets an Event, deduplicated. */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/conditions.h"

#define AGENT_EVENT_RECENT      4    /* Events remembered per layer for aggregation */
#define AGENT_EVENT_AGGREGATE_S 3600 /* an Event of the same reason this recent is PATCHed (count) */

/* An Event the agent wrote, kept to aggregate repeats into its count. */
struct agent_event_record {
        bool used;
        char reason[AGENT_REASON_MAX];
        char type[8];   /* "Warning" or "Normal" */
        char name[256]; /* metadata.name */
        unsigned count;
        int64_t first_time, last_time;
};

/* Per layer: what the last Event said, and the Events to aggregate into. */
struct agent_event_layer {
        bool have;                /* a state was seen (the first one is the baseline) */
        enum agent_status status; /* what the last Event (or the baseline) said */
        char reason[AGENT_REASON_MAX];
        int64_t time;                  /* when that Event was written (0: baseline, none written) */
        unsigned suppressed;           /* transitions not written since, because of the hold-down */
        enum agent_status seen_status; /* what the last decision saw: a transition is a change from it */
        char seen_reason[AGENT_REASON_MAX];
        int64_t held_until; /* > 0 right after a decision began holding a transition back: when the
                             * hold-down ends (for the caller's log line); 0 otherwise */
        struct agent_event_record recent[AGENT_EVENT_RECENT];
};

/* One Event to write. */
struct agent_event {
        bool patch;       /* PATCH the existing Event name (count, lastTimestamp, message); else POST it */
        const char *type; /* "Warning" (the problem is present) or "Normal" */
        char reason[AGENT_REASON_MAX];
        char message[AGENT_MESSAGE_MAX + 1];
        char name[256];
        unsigned count;
        int64_t first_time, last_time;
};

/*
 * Decides the Event for layer (1..4) whose condition is now cur. The first state seen is the
 * baseline: an Event only when the problem is present (True). After that, an Event when the status,
 * or a True condition's reason, differs from what the last Event said, but not within hold_down_s of
 * the last Event (hold-down: a flapping check writes at most one Event per hold-down per layer; the
 * transitions held back, changes from the state the previous decision saw, not decisions, are counted
 * in the next Event's message, and a state that returns to what the last Event said writes nothing; a
 * decision that begins holding one back sets st->held_until to when the hold-down ends). An Event whose (reason, type)
 * was written within AGENT_EVENT_AGGREGATE_S is PATCHed (count + 1) instead of created. Updates st. Returns true with
 * *ret filled in when an Event is due; never fails.
 */
bool agent_event_decide(struct agent_event_layer *st, unsigned layer, const struct agent_condition *cur, int64_t now,
                        int64_t hold_down_s, const char *node, struct agent_event *ret);

/* Builds the Event object to POST to /api/v1/namespaces/default/events: involvedObject the Node
 * (kind Node, name node, uid, namespace ""), source gpunode-agent on node. Returns a new reference. */
json_t *agent_event_object(const struct agent_event *ev, const char *node, const char *uid);

/* Builds the merge patch that aggregates a repeat into an existing Event (count, lastTimestamp,
 * message). Returns a new reference. */
json_t *agent_event_patch(const struct agent_event *ev);
