/* kube_objects.c: extracts conditions, resources, labels and container states from Node and PodList JSON. */
#include "kube/kube_objects.h"
#include "basic/util.h"

#include <inttypes.h>

const char *kube_json_str(const json_t *v) {
        const char *s = json_string_value(v);
        return s && strlen(s) == json_string_length(v) ? s : NULL;
}

char *kube_json_strdup(const json_t *v) {
        const char *s = json_string_value(v);
        if (!s) return NULL;
        size_t n = json_string_length(v);
        if (strlen(s) == n) return xstrdup(s);
        struct buf b = { 0 };
        for (size_t i = 0; i < n; i++) {
                if (s[i])
                        buf_append(&b, s + i, 1);
                else
                        buf_append(&b, "\\0", 2);
        }
        return b.data;
}

/* Returns a malloc'd copy of an identifying string member (kube_json_str: NULL when it holds a NUL),
 * or NULL. */
static char *str_member(const json_t *o, const char *key) {
        const char *s = kube_json_str(json_object_get(o, key));
        return s ? xstrdup(s) : NULL;
}

/* Returns a malloc'd copy of a free-text member (a message: NULs written "\\0"), or NULL. */
static char *text_member(const json_t *o, const char *key) {
        return kube_json_strdup(json_object_get(o, key));
}

/* Copies the string values of a JSON object into *ret and *ret_n (non-strings skipped). */
static void kv_copy(const json_t *o, struct kube_kv **ret, size_t *ret_n) {
        if (!json_is_object(o)) return;
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)o, k, v) {
                const char *s = kube_json_str(v);
                if (!s) continue; /* a value cut at a NUL would be another value */
                *ret = xrealloc(*ret, (*ret_n + 1) * sizeof **ret);
                (*ret)[(*ret_n)++] = (struct kube_kv){ xstrdup(k), xstrdup(s) };
        }
}

/* Frees n key/value pairs and the array. */
static void kv_free(struct kube_kv *kv, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(kv[i].key);
                free(kv[i].value);
        }
        free(kv);
}

const char *kube_kv_get(const struct kube_kv *kv, size_t n, const char *key) {
        for (size_t i = 0; i < n; i++)
                if (streq(kv[i].key, key)) return kv[i].value;
        return NULL;
}

int kube_quantity_int(const char *q, int64_t *ret) {
        if (!q || !*q) return -EINVAL;
        static const struct {
                const char *suffix;
                int64_t mult;
        } units[] = {
                { "", 1 }, { "k", 1000 }, { "M", 1000000 }, { "Ki", 1024 }, { "Mi", 1024 * 1024 },
        };
        char *end;
        errno = 0;
        long long v = strtoll(q, &end, 10);
        if (end == q || errno || v < 0 || !(*q >= '0' && *q <= '9')) return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(units); i++)
                if (streq(end, units[i].suffix)) {
                        if (v > INT64_MAX / units[i].mult) return -EINVAL;
                        *ret = v * units[i].mult;
                        return 0;
                }
        return -EINVAL;
}

/* Returns 1, 0 or -1 for the status of the condition of type in an array of conditions, and
 * points *ret_cond at it. */
static int condition(const json_t *conds, const char *type, const json_t **ret_cond) {
        size_t i;
        const json_t *c;
        *ret_cond = NULL;
        json_array_foreach(conds, i, c) {
                if (!streq_ptr(kube_json_str(json_object_get(c, "type")), type)) continue;
                *ret_cond = c;
                const char *s = kube_json_str(json_object_get(c, "status"));
                return streq_ptr(s, "True") ? 1 : streq_ptr(s, "False") ? 0 : -1;
        }
        return -1;
}

int kube_node_info_parse(const json_t *node, struct kube_node_info *ret) {
        *ret = (struct kube_node_info){ .ready = -1 };
        const json_t *meta = json_object_get(node, "metadata");
        const char *name = kube_json_str(json_object_get(meta, "name"));
        if (!json_is_object(node) || !name) return -EBADMSG;
        ret->name = xstrdup(name);
        kv_copy(json_object_get(meta, "labels"), &ret->labels, &ret->n_labels);
        ret->unschedulable = json_is_true(json_object_get(json_object_get(node, "spec"), "unschedulable"));
        const json_t *st = json_object_get(node, "status");
        kv_copy(json_object_get(st, "capacity"), &ret->capacity, &ret->n_capacity);
        kv_copy(json_object_get(st, "allocatable"), &ret->allocatable, &ret->n_allocatable);
        ret->kubelet_version = str_member(json_object_get(st, "nodeInfo"), "kubeletVersion");
        const json_t *c;
        ret->ready = condition(json_object_get(st, "conditions"), "Ready", &c);
        if (c) {
                ret->ready_reason = str_member(c, "reason");
                ret->ready_message = text_member(c, "message");
        }
        return 0;
}

void kube_node_info_free(struct kube_node_info *n) {
        free(n->name);
        free(n->ready_reason);
        free(n->ready_message);
        free(n->kubelet_version);
        kv_free(n->labels, n->n_labels);
        kv_free(n->capacity, n->n_capacity);
        kv_free(n->allocatable, n->n_allocatable);
        *n = (struct kube_node_info){ .ready = -1 };
}

/* Appends the container statuses of one array to p. */
static void add_containers(struct kube_pod_info *p, const json_t *arr, bool init) {
        size_t i;
        const json_t *cs;
        json_array_foreach(arr, i, cs) {
                const char *name = kube_json_str(json_object_get(cs, "name"));
                if (!name) continue;
                struct kube_container c = { .name = xstrdup(name), .init = init };
                c.ready = json_is_true(json_object_get(cs, "ready"));
                c.restarts = json_integer_value(json_object_get(cs, "restartCount"));
                const json_t *state = json_object_get(cs, "state"), *s;
                if ((s = json_object_get(state, "waiting")))
                        c.state = KUBE_STATE_WAITING;
                else if ((s = json_object_get(state, "terminated")))
                        c.state = KUBE_STATE_TERMINATED;
                else if ((s = json_object_get(state, "running")))
                        c.state = KUBE_STATE_RUNNING;
                if (s && c.state != KUBE_STATE_RUNNING) {
                        c.reason = str_member(s, "reason");
                        c.message = text_member(s, "message");
                        c.exit_code = (int)json_integer_value(json_object_get(s, "exitCode"));
                }
                const json_t *last = json_object_get(json_object_get(cs, "lastState"), "terminated");
                if (json_is_object(last)) {
                        c.has_last = true;
                        c.last_reason = str_member(last, "reason");
                        c.last_message = text_member(last, "message");
                        c.last_exit_code = (int)json_integer_value(json_object_get(last, "exitCode"));
                }
                p->containers = xrealloc(p->containers, (p->n_containers + 1) * sizeof *p->containers);
                p->containers[p->n_containers++] = c;
        }
}

/* Returns true when a container of the array asks for an nvidia.com/ resource in its limits or requests. */
static bool requests_nvidia(const json_t *containers) {
        size_t i;
        const json_t *c;
        json_array_foreach(containers, i, c) {
                const json_t *res = json_object_get(c, "resources");
                const char *const parts[] = { "limits", "requests" };
                for (size_t k = 0; k < 2; k++) {
                        const char *key;
                        const json_t *v;
                        json_object_foreach((json_t *)json_object_get(res, parts[k]), key,
                                            v) if (startswith(key, "nvidia.com/")) return true;
                }
        }
        return false;
}

/* Returns the port a pod's containers declare for metrics: a TCP containerPort named "metrics" or
 * "http-metrics" (dcgm-exporter's, the prometheus-node-exporter chart's) in any container, else the first
 * TCP containerPort declared (an exporter's pod has one container, its exporter); 0 when none is declared. */
static int declared_metrics_port(const json_t *containers) {
        size_t i, j;
        const json_t *c, *port;
        int first = 0;
        json_array_foreach(containers, i, c) json_array_foreach(json_object_get(c, "ports"), j, port) {
                const char *name = kube_json_str(json_object_get(port, "name"));
                const char *proto = kube_json_str(json_object_get(port, "protocol"));
                const json_t *num = json_object_get(port, "containerPort");
                if (!json_is_integer(num) || json_integer_value(num) < 1 || json_integer_value(num) > 65535) continue;
                if (proto && !streq(proto, "TCP")) continue;
                int v = (int)json_integer_value(num);
                if (name && (streq(name, "metrics") || streq(name, "http-metrics"))) return v;
                if (!first) first = v;
        }
        return first;
}

int kube_pod_list_parse(const json_t *list, struct kube_pod_info **ret, size_t *ret_n) {
        const json_t *items = json_object_get(list, "items");
        *ret = NULL;
        *ret_n = 0;
        if (!json_is_array(items)) return -EBADMSG;
        struct kube_pod_info *pods = NULL;
        size_t n = 0, i;
        const json_t *it;
        json_array_foreach(items, i, it) {
                const json_t *meta = json_object_get(it, "metadata");
                const char *name = kube_json_str(json_object_get(meta, "name"));
                if (!name) continue;
                struct kube_pod_info p = { .name = xstrdup(name), .ready = -1 };
                p.namespace = str_member(meta, "namespace");
                if (!p.namespace) p.namespace = xstrdup("default");
                kv_copy(json_object_get(meta, "labels"), &p.labels, &p.n_labels);
                const json_t *st = json_object_get(it, "status");
                p.phase = str_member(st, "phase");
                p.pod_ip = str_member(st, "podIP");
                p.reason = str_member(st, "reason");
                p.message = text_member(st, "message");
                const json_t *c;
                p.ready = condition(json_object_get(st, "conditions"), "Ready", &c);
                const json_t *spec = json_object_get(it, "spec");
                p.n_init_spec = json_array_size(json_object_get(spec, "initContainers"));
                p.runtime_class = str_member(spec, "runtimeClassName");
                p.metrics_port = declared_metrics_port(json_object_get(spec, "containers"));
                p.requests_gpu = requests_nvidia(json_object_get(spec, "containers")) ||
                                 requests_nvidia(json_object_get(spec, "initContainers"));
                add_containers(&p, json_object_get(st, "initContainerStatuses"), true);
                add_containers(&p, json_object_get(st, "containerStatuses"), false);
                pods = xrealloc(pods, (n + 1) * sizeof *pods);
                pods[n++] = p;
        }
        *ret = pods;
        *ret_n = n;
        return 0;
}

void kube_pod_info_free(struct kube_pod_info *pods, size_t n) {
        for (size_t i = 0; i < n; i++) {
                struct kube_pod_info *p = &pods[i];
                free(p->namespace);
                free(p->name);
                free(p->phase);
                free(p->pod_ip);
                free(p->runtime_class);
                free(p->reason);
                free(p->message);
                kv_free(p->labels, p->n_labels);
                for (size_t c = 0; c < p->n_containers; c++) {
                        free(p->containers[c].name);
                        free(p->containers[c].reason);
                        free(p->containers[c].message);
                        free(p->containers[c].last_reason);
                        free(p->containers[c].last_message);
                }
                free(p->containers);
        }
        free(pods);
}

/* Appends ", last exit N (Reason)" for a container's previous run. */
static void last_exit(struct buf *b, const struct kube_container *c) {
        if (c->has_last) buf_printf(b, ", last exit %d (%s)", c->last_exit_code, c->last_reason ? c->last_reason : "?");
}

/* Appends ": message" cut to 160 bytes. */
static void short_message(struct buf *b, const char *m) {
        if (!m || !*m) return;
        size_t n = strlen(m);
        while (n > 0 && (m[n - 1] == '\n' || m[n - 1] == ' ')) n--;
        if (n > 160) {
                buf_puts(b, ": ");
                buf_append(b, m, 160);
                buf_puts(b, "...");
        } else if (n) {
                buf_puts(b, ": ");
                buf_append(b, m, n);
        }
}

enum kube_pod_health kube_pod_judge(const struct kube_pod_info *p, char **ret_text) {
        struct buf b = { 0 };
        enum kube_pod_health h = KUBE_POD_OK;
        int64_t restarts = 0;
        for (size_t i = 0; i < p->n_containers; i++) restarts += p->containers[i].restarts;

        if (streq_ptr(p->phase, "Succeeded")) {
                buf_puts(&b, "Completed");
                goto out;
        }
        /* An init container that has not finished: the pod waits in Init (e.g. for a validation file). */
        size_t n_init = 0, init_done = 0;
        for (size_t i = 0; i < p->n_containers; i++) {
                const struct kube_container *c = &p->containers[i];
                if (!c->init) continue;
                n_init++;
                if (c->state == KUBE_STATE_TERMINATED && c->exit_code == 0) {
                        init_done++;
                        continue;
                }
                h = KUBE_POD_FAIL;
                if (c->state == KUBE_STATE_WAITING && c->reason && !streq(c->reason, "PodInitializing"))
                        buf_printf(&b, "Init:%s: init container %s: %" PRId64 " restarts", c->reason, c->name,
                                   c->restarts);
                else if (c->state == KUBE_STATE_TERMINATED)
                        buf_printf(&b, "Init:Error: init container %s exited %d (%s)", c->name, c->exit_code,
                                   c->reason ? c->reason : "?");
                else
                        buf_printf(&b, "Init:%zu/%zu: init container %s has not finished", init_done,
                                   n_init > p->n_init_spec ? n_init : p->n_init_spec, c->name);
                last_exit(&b, c);
                short_message(&b, c->message);
                goto out;
        }
        for (size_t i = 0; i < p->n_containers; i++) {
                const struct kube_container *c = &p->containers[i];
                if (c->init) continue;
                if (c->state == KUBE_STATE_WAITING) {
                        h = KUBE_POD_FAIL;
                        buf_printf(&b, "%s: container %s: %" PRId64 " restarts", c->reason ? c->reason : "Waiting",
                                   c->name, c->restarts);
                        last_exit(&b, c);
                        /* CrashLoopBackOff's own message is only the back-off; the last run's says why */
                        short_message(&b, streq_ptr(c->reason, "CrashLoopBackOff") ? c->last_message : c->message);
                        goto out;
                }
                if (c->state == KUBE_STATE_TERMINATED) {
                        h = KUBE_POD_FAIL;
                        buf_printf(&b, "%s: container %s exited %d", c->reason ? c->reason : "Terminated", c->name,
                                   c->exit_code);
                        short_message(&b, c->message);
                        goto out;
                }
        }
        if (!streq_ptr(p->phase, "Running")) {
                h = KUBE_POD_FAIL;
                buf_printf(&b, "%s", p->reason ? p->reason : p->phase ? p->phase : "Unknown phase");
                short_message(&b, p->message);
                goto out;
        }
        if (p->ready == 0) {
                h = KUBE_POD_FAIL;
                buf_puts(&b, "Running but not Ready");
                for (size_t i = 0; i < p->n_containers; i++)
                        if (!p->containers[i].init && !p->containers[i].ready)
                                buf_printf(&b, " (container %s not ready)", p->containers[i].name);
                if (restarts) buf_printf(&b, ", %" PRId64 " restarts", restarts);
                goto out;
        }
        buf_puts(&b, "Running, Ready");
        if (restarts) buf_printf(&b, ", %" PRId64 " restart%s", restarts, restarts == 1 ? "" : "s");
        if (restarts >= KUBE_RESTARTS_WARN) h = KUBE_POD_WARN;
out:
        *ret_text = b.data ? b.data : xstrdup("");
        return h;
}
