/* probe_podresources.c: asks the kubelet's pod-resources List which pod, namespace and container holds which device. */
#include "facts/layer3_kubernetes.h"
#include "kube/net_replay.h"
#include "kube/podresources.h"

/* The method recorded in a snapshot's api/INDEX.json (kind "grpc"). */
static const char list_method[] = "/v1.PodResourcesLister/List";

/* Appends one holder to p. */
static void add_holder(struct podres_facts *p, const struct podres_pod *pod, const struct podres_container *c,
                       const struct podres_devices *d, const char *id) {
        p->holders = xrealloc(p->holders, (p->n_holders + 1) * sizeof *p->holders);
        p->holders[p->n_holders++] = (struct podres_holder){
                .namespace = xstrdup(pod->namespace ? pod->namespace : ""),
                .pod = xstrdup(pod->name ? pod->name : ""),
                .container = xstrdup(c->name ? c->name : ""),
                .resource_name = xstrdup(d->resource_name ? d->resource_name : ""),
                .device_id = xstrdup(id),
        };
}

/* Flattens a List answer into p's holders. */
static void holders_from_list(const struct podres_list *l, struct podres_facts *p) {
        for (size_t i = 0; i < l->n_pods; i++)
                for (size_t c = 0; c < l->pods[i].n_containers; c++) {
                        const struct podres_container *ct = &l->pods[i].containers[c];
                        for (size_t d = 0; d < ct->n_devices; d++)
                                for (size_t k = 0; k < ct->devices[d].n_device_ids; k++)
                                        add_holder(p, &l->pods[i], ct, &ct->devices[d], ct->devices[d].device_ids[k]);
                }
}

/* Returns the List answer from the snapshot being replayed: 0 with *ret, or the recorded error
 * (or NET_NOT_RECORDED for a snapshot collected before the call was recorded) with *ret_error. */
static int replay_list(struct podres_list **ret, char **ret_error) {
        const char *body = NULL;
        size_t len = 0;
        long status;
        int r = net_replay(NET_GRPC, list_method, PODRES_SOCKET " List", &body, &len, &status, ret_error);
        if (r < 0) return r;
        char *err = NULL;
        r = podres_list_from_json(body, len, ret, &err);
        if (r < 0) {
                *ret_error = xasprintf("the snapshot's pod-resources answer is not a List answer: %s", err);
                free(err);
        }
        return r;
}

void probe_podresources(const struct kube_probe_options *opts, struct podres_facts *ret) {
        *ret = (struct podres_facts){ 0 };
        _cleanup_podres_list_ struct podres_list *l = NULL;
        int r;
        if (net_replaying()) {
                r = replay_list(&l, &ret->error);
        } else {
                _cleanup_podres_client_ struct podres_client *c = podres_client_new(PODRES_SOCKET, opts->timeout_ms);
                r = podres_list(c, &l, &ret->error);
                _cleanup_free_ char *json = NULL;
                if (r == 0 && podres_list_to_json(l, &json) < 0) json = NULL;
                net_record(NET_GRPC, list_method, r, 0, json, json ? strlen(json) : 0, ret->error);
        }
        ret->rc = r;
        if (r == -ENOENT) {
                free(ret->error);
                ret->error = xstrdup("no " PODRES_SOCKET " under the root: not a Kubernetes node, or the kubelet's "
                                     "folder is not mounted");
        }
        if (r == 0) holders_from_list(l, ret);
}

void podres_facts_free(struct podres_facts *p) {
        free(p->error);
        for (size_t i = 0; i < p->n_holders; i++) {
                struct podres_holder *h = &p->holders[i];
                free(h->namespace);
                free(h->pod);
                free(h->container);
                free(h->resource_name);
                free(h->device_id);
        }
        free(p->holders);
        *p = (struct podres_facts){ 0 };
}
