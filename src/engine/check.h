/* check.h: the check engine: check definitions, findings, bottom-up attribution. */
#pragma once

#include <stdint.h>

#include "basic/util.h"

struct node_facts;

enum check_status {
        CHECK_PASS,
        CHECK_SKIP,
        CHECK_WARN,
        CHECK_BLOCKED,
        CHECK_FAIL,
};

enum verdict {
        VERDICT_HEALTHY,
        VERDICT_DEGRADED,
        VERDICT_FAILED,
};

#define LAYER_MIN      1
#define LAYER_MAX      4
#define CHECK_MAX_DEPS 6

struct finding;

/* What a finding asks to be done, from a fixed set automation acts on (the report's "action"; the
 * remedy says it in prose). Most serious last. */
enum finding_action {
        ACTION_NONE,            /* nothing to do, or nothing a machine should do: read the remedy */
        ACTION_RESTART_POD,     /* a pod (the workload's or a component's) is to be restarted */
        ACTION_RECONFIGURE,     /* a configuration on the node or in the cluster is wrong or missing */
        ACTION_DRAIN,           /* move the work off the GPU(s) or node (a reset or reboot follows) */
        ACTION_RESET_GPU,       /* drain the GPU and reset it */
        ACTION_REBOOT,          /* drain the node and reboot it */
        ACTION_RMA,             /* the hardware is to be replaced */
        ACTION_CONTACT_SUPPORT, /* NVIDIA or the vendor has to look */
        _ACTION_MAX,
};

/* Returns the action's name in the report ("none", "restart-pod", "reconfigure", "drain", "reset-gpu",
 * "reboot", "rma", "contact-support"), "none" out of the enum. */
const char *finding_action_name(enum finding_action a);

/* Returns the action named s (finding_action_name's words), or -1 when s names none. */
int finding_action_from_name(const char *s);

/* One GPU a finding is about, as facts automation reads (the report's checks[].gpus[]). */
struct finding_gpu {
        int index;                     /* NVML's index, -1 when not known */
        char *uuid, *pci_bus_id;       /* NULL when not known */
        int xid;                       /* the Xid the finding is about, 0 none */
        uint64_t count;                /* how many times (Xid lines, remaps, ...), 0 when not counted */
        int64_t first_seen, last_seen; /* seconds since the epoch, 0 when not known */
};

/* One check, defined once: the engine, `gpunode explain` and the docs all read this table. */
struct check_def {
        const char *id;                      /* stable, e.g. "driver.module-loaded" */
        int layer;                           /* 1..4 */
        const char *component;               /* "driver", "fabric-manager", ... */
        const char *title;                   /* what it verifies, one line */
        const char *reads;                   /* what it reads, for explain */
        const char *outcomes;                /* what pass/warn/fail mean, for explain */
        const char *remedy;                  /* what to do when it fails, in general, for explain */
        enum finding_action action;          /* what its failure or warning asks, unless run() says */
        const char *depends[CHECK_MAX_DEPS]; /* ids it rests on; NULL-terminated if shorter */
        /* NULL: it rests on every depends[] entry. Else returns whether it rests on the entry `dep` on
         * the node these facts describe (a check resting on another only in some setups, e.g. on the
         * MIG manager only where MIG is enabled); a pure function of the facts, never fails. */
        bool (*rests_on)(const struct node_facts *facts, const char *dep);
        /* Fills the finding from the facts; never prints, never fails itself. */
        void (*run)(const struct node_facts *facts, struct finding *f);
};

struct finding {
        const struct check_def *def;
        enum check_status status;
        char *summary;
        char **evidence;
        size_t n_evidence;
        char *remedy;
        const char *blocked_by;     /* id of the failed check this one rests on */
        size_t n_evidence_more;     /* evidence lines a reader of the JSON left out (report_read.c's bound) */
        enum finding_action action; /* none for pass, skip and blocked; else run()'s or the def's */
        bool action_set;            /* run() chose the action (finding_action) */
        struct finding_gpu *gpus;   /* the GPUs it is about (finding_gpu), owned */
        size_t n_gpus;
};

/* Setters a check's run() uses. The status setters replace the summary. */
void finding_set(struct finding *f, enum check_status status, const char *fmt, ...) _printf_(3, 4);
void finding_evidence(struct finding *f, const char *fmt, ...) _printf_(2, 3);
void finding_remedy(struct finding *f, const char *fmt, ...) _printf_(2, 3);
/* Sets what the finding asks to be done, over its def's action. */
void finding_action(struct finding *f, enum finding_action a);
/* Adds a GPU the finding is about; uuid and pci_bus_id are copied (NULL: not known). Returns the entry,
 * whose other members the caller may fill. */
struct finding_gpu *finding_gpu(struct finding *f, int index, const char *uuid, const char *pci_bus_id);
/* Frees what a finding owns (summary, evidence, remedy, GPUs) and leaves it empty. Never fails. */
void finding_free_contents(struct finding *f);
#define finding_pass(f, ...) finding_set(f, CHECK_PASS, __VA_ARGS__)
#define finding_warn(f, ...) finding_set(f, CHECK_WARN, __VA_ARGS__)
#define finding_fail(f, ...) finding_set(f, CHECK_FAIL, __VA_ARGS__)
#define finding_skip(f, ...) finding_set(f, CHECK_SKIP, __VA_ARGS__)

/* Ranks a status for "worst of": fail 4 > blocked 3 > warn 2 > pass 1 > skip 0. */
int check_status_rank(enum check_status s);
/* Lowercase name of a status ("pass", "fail", ...). */
const char *check_status_name(enum check_status s);
const char *verdict_name(enum verdict v);
/* Word of a layer's or component's worst status in the JSON report and on the status page ("failed",
 * "blocked", "degraded", "healthy", "skipped"), "unknown" out of the enum. */
const char *layer_status_name(enum check_status s);
/* Human name of a layer ("hardware enablement"), NULL outside 1..4. */
const char *layer_name(int layer);

/* A container holding a GPU (the JSON report's gpus[].pods[]). */
struct report_pod {
        char *namespace, *pod, *container;
};

/* A GPU of the node as the report shows it: what NVML named it, and who holds it. The engine only
 * keeps these for the outputs (src/diagnose/gpus.c fills them from the facts). */
struct report_gpu {
        unsigned index;
        char *uuid, *pci_bus_id, *name; /* NULL when NVML did not say */
        struct report_pod *pods;
        size_t n_pods;
};

struct report {
        char *node;
        char *root;
        int64_t time;     /* when the facts were read (seconds since the epoch; 0: unknown), set by the caller */
        char version[32]; /* the gpunode that judged ("0.1.0"); report_build() writes its own */
        struct finding *findings;
        size_t n_findings;
        enum verdict verdict;
        const struct finding *root_cause; /* NULL when healthy */
        struct report_gpu *gpus;          /* NULL and 0 until filled */
        size_t n_gpus;
};

/* The caller's side of a run over facts the engine does not know (a node's, a cluster's). */
struct check_runner {
        /* Fills f with what check i of the list found; a check that leaves no summary fails as an
         * internal error. */
        void (*run)(void *userdata, size_t i, struct finding *f);
        /* Returns whether check i rests on its depends[] entry dep here; NULL: on every entry. */
        bool (*rests_on)(void *userdata, size_t i, const char *dep);
        void *userdata;
        const char *blocked_suffix; /* after a blocked check's "not checked: rests on <id>"; NULL: ", which failed" */
        /* A failure above this layer degrades the verdict instead of failing it (the node's layer 4:
         * without metrics GPU work still runs); 0: a failure in any layer fails it. */
        int failing_layers_max;
};

/*
 * Runs checks[0..n_checks) in their order (bottom-up, foundations first) through runner, marks each
 * check resting on a failed or blocked one as blocked by that failure instead of running it, and
 * attributes: the verdict is failed with a failure (in a layer up to runner->failing_layers_max when
 * that is set), degraded with a failure above it, a warning or a check blocked without a failure (one
 * a check judged blocked itself), healthy otherwise; the root cause is the first failure, else the
 * first warning or blocked check, else none. A check whose run leaves no
 * summary fails ("internal error: check ID gave no answer"). Returns 0; the report owns its
 * findings, whose defs are checks[] (which must outlive it).
 */
int report_run(const struct check_def *const *checks, size_t n_checks, const struct check_runner *runner,
               const char *node, const char *root, struct report *ret);

/* Runs the node checks checks[0..n_checks) (the registry, src/diagnose/registry.c, in its order)
 * over the facts with report_run(), each through its run() and rests_on(). Returns 0. */
int report_build(const struct node_facts *facts, const struct check_def *const *checks, size_t n_checks,
                 const char *node, const char *root, struct report *ret);
void report_free(struct report *r);

/* Returns the status of a layer or of one component in it: the worst finding status,
 * or CHECK_SKIP when it has no findings that ran. */
enum check_status report_layer_status(const struct report *r, int layer);
enum check_status report_component_status(const struct report *r, int layer, const char *component);
/* Returns the finding for a check id, or NULL. */
const struct finding *report_find(const struct report *r, const char *id);
/* Returns the process exit code for a verdict: 0 healthy, 1 degraded, 2 failed. */
int verdict_exit_code(enum verdict v);
