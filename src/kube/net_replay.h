/* net_replay.h: records the Kubernetes API and metrics exchanges of one run (collect) and answers them again from a
 * snapshot (check --snapshot). */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

/*
 * While collecting, kube_get() and http_fetch() hand every exchange to the recorder (request, HTTP
 * status, body, or the error they returned), and the pod-resources probe its List call (the answer
 * decoded, as JSON: podres_list_to_json); probe_kube hands it how the API client was set up
 * (server, where the credentials came from) and the options that shaped the requests. The writer
 * stores the bodies as api/<NNNN>-<request>.json|.txt (redacted) and api/INDEX.json:
 *
 *   {"schema": "gpunode.snapshot-api/v1",
 *    "options": {"node": N, "timeout_ms": T, "operator_namespace": S|null, "dcgm_url": U|null,
 *                "node_exporter_url": U|null},
 *    "setup": null | {"error": null|{"class": C, "message": M}, "server": U|null, "source": S|null},
 *    "exchanges": [{"kind": "api"|"metrics"|"grpc", "request": "/api/v1/nodes/n", a URL, or a gRPC
 *                   method ("/v1.PodResourcesLister/List"), "status": 200 (0 for grpc),
 *                   "error": null|{"class": C, "message": M}, "member": "api/0001-....json"|null}, ...]}
 *
 * Error classes (C): timeout, refused, unreachable, tls, unauthorized, forbidden, not-found, io,
 * too-big, not-json, invalid, no-memory, unsupported, no-data, or "other" with "errno": N.
 *
 * While replaying, the same calls answer from the index: the first unanswered exchange with the
 * same kind and request (the last one again once all were answered), with the recorded error class
 * and sentence, so a hanging API replays as a timeout at once. A request the snapshot does not hold
 * answers NET_NOT_RECORDED. Credentials in URLs (user:password@) are replaced when recorded.
 * One recorder or replayer per process (single-threaded probing, as hostfs's recorder).
 */

/* The answer to a request the snapshot does not hold. */
#define NET_NOT_RECORDED (-ENOMEDIUM)

/* Limits on api/INDEX.json (a hostile index is refused). */
#define NET_INDEX_MAX_BYTES ((size_t)16 << 20)
#define NET_EXCHANGES_MAX   10000u
#define NET_REQUEST_MAX     8192u
#define NET_MESSAGE_MAX     4096u
#define NET_BODY_MAX        ((size_t)64 << 20)

/* NET_GRPC: a unary call on a host socket (the kubelet's pod-resources List), request its method path
 * ("/v1.PodResourcesLister/List"), body the decoded answer as JSON. */
enum net_kind { NET_API, NET_METRICS, NET_GRPC };

struct net_exchange {
        enum net_kind kind;
        char *request; /* API: path with query; metrics: the URL; grpc: the method path */
        int rc;        /* what the client returned: 0 or a negative errno */
        long status;   /* HTTP status, 0 when none came */
        char *error;   /* the client's sentence when rc < 0 */
        char *member;  /* archive member holding the body ("api/0001-....json"), NULL: none */
        char *body;    /* recording: the body received; replay: loaded from member when asked */
        size_t len;
        bool answered; /* replay: handed out once already */
};

/* The options of `check` that shaped the requests (replayed with them). */
struct net_options {
        char *node;
        unsigned timeout_ms;
        char *operator_namespace, *dcgm_url, *node_exporter_url;
};

/* How the API client was set up: the facts the report shows as evidence. */
struct net_setup {
        bool recorded;
        int rc; /* 0: a client was set up; else why not (-ENOENT: no configuration) */
        char *error;
        char *server, *source; /* API server URL, "in-cluster" or the kubeconfig path */
};

struct net_log {
        struct net_options options;
        struct net_setup setup;
        struct net_exchange *v;
        size_t n;
        char *dir; /* replay: the extracted snapshot folder members are read from */
};

/* Returns a new, empty log (free with net_log_free). */
struct net_log *net_log_new(void);
/* Frees log and everything it holds (NULL is fine). */
void net_log_free(struct net_log *log);

/* Records the options into log (copied; URL credentials replaced). */
void net_log_set_options(struct net_log *log, const char *node, unsigned timeout_ms, const char *operator_namespace,
                         const char *dcgm_url, const char *node_exporter_url);

/* Makes log the recorder (NULL: none) for the calls below; log stays the caller's. */
void net_record_to(struct net_log *log);
/* Makes log the replayer (NULL: none); log stays the caller's. */
void net_replay_from(struct net_log *log);
/* Returns true while a replayer is installed: clients must answer with net_replay(). */
bool net_replaying(void);

/* Records one exchange when a recorder is installed (else does nothing): body (len bytes, may be
 * NULL) as received, error the client's sentence when rc < 0. Names the member for the body. */
void net_record(enum net_kind kind, const char *request, int rc, long status, const char *body, size_t len,
                const char *error);
/* Records how the API client was set up (rc 0, or the failure and its sentence). No recorder: nothing. */
void net_record_setup(int rc, const char *error, const char *server, const char *source);

/* Answers a request from the replayer. Returns the recorded result: 0 with *ret_body (owned by the
 * log, NUL-terminated) and *ret_len, or the recorded negative errno with *ret_error (malloc'd);
 * *ret_status is the recorded HTTP status. Returns NET_NOT_RECORDED with *ret_error when the
 * snapshot holds no such request (shown: how the request is named in the sentence), or -errno
 * with *ret_error when the body cannot be read from the snapshot. */
int net_replay(enum net_kind kind, const char *request, const char *shown, const char **ret_body, size_t *ret_len,
               long *ret_status, char **ret_error);
/* Answers how the API client was set up from the replayer: returns the recorded rc with copies of
 * the server and source (NULL when none) and *ret_error when rc < 0; NET_NOT_RECORDED with
 * *ret_error when the snapshot holds no API answers at all. */
int net_replay_setup(char **ret_server, char **ret_source, char **ret_error);

/* Formats log as api/INDEX.json. Returns 0 and *ret (malloc'd) or -ENOMEM. */
int net_log_to_index(const struct net_log *log, char **ret);
/* Parses api/INDEX.json (len bytes), refusing hostile input: more than NET_INDEX_MAX_BYTES or
 * NET_EXCHANGES_MAX exchanges, unknown schema or classes, requests with control characters or
 * longer than NET_REQUEST_MAX, members outside api/ or with "..", a success without a member.
 * Returns 0 and *ret (bodies not loaded; set ret->dir to load them), or -EINVAL/-EFBIG/-E2BIG
 * with a sentence in *ret_error. */
int net_log_from_index(const char *text, size_t len, struct net_log **ret, char **ret_error);

/* Returns the error class name for a negative errno ("timeout", ..., "other"). */
const char *net_error_class(int rc);
/* Returns a copy of s (malloc'd; NULL for NULL) with credentials in URLs ("//user:pw@") replaced by REDACTED. */
char *net_strip_url_credentials(const char *s);
