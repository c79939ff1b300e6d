/* probe_kubelet.c: the kubelet's device-plugin folder and checkpoint, plugins_registry, the GPU Operator's validation
 * files. */
#include "facts/node.h"
#include "facts/layer3_kubernetes.h"
#include "basic/hostfs.h"

/* Copies the entries of a strv into an array and count. */
static void take_names(char **names, int n, char ***ret, size_t *ret_n) {
        *ret = NULL;
        *ret_n = 0;
        for (int i = 0; i < n; i++) {
                *ret = xrealloc(*ret, (*ret_n + 1) * sizeof **ret);
                (*ret)[(*ret_n)++] = xstrdup(names[i]);
        }
}

void probe_kubelet(struct kubelet_facts *ret) {
        *ret = (struct kubelet_facts){ 0 };
        _cleanup_strv_free_ char **names = NULL;
        int n = hostfs_list(KUBELET_DEVICE_PLUGINS_DIR, false, &names);
        ret->dp_rc = n < 0 ? n : 0;
        if (n < 0) {
                ret->dp_error = read_error(KUBELET_DEVICE_PLUGINS_DIR, n);
                ret->checkpoint_rc = n;
        } else {
                for (int i = 0; i < n; i++) {
                        size_t l = strlen(names[i]);
                        if (streq(names[i], "kubelet.sock")) {
                                ret->kubelet_sock = true;
                                continue;
                        }
                        if (l > 5 && streq(names[i] + l - 5, ".sock")) {
                                ret->plugin_sockets =
                                        xrealloc(ret->plugin_sockets, (ret->n_plugin_sockets + 1) * sizeof(char *));
                                ret->plugin_sockets[ret->n_plugin_sockets++] = xstrdup(names[i]);
                        }
                }
                _cleanup_free_ char *data = NULL;
                size_t len = 0;
                int r = hostfs_read(KUBELET_CHECKPOINT_FILE, KUBE_CHECKPOINT_MAX_SIZE, &data, &len);
                if (r < 0) {
                        ret->checkpoint_rc = r;
                        if (r != -ENOENT) ret->checkpoint_error = read_error(KUBELET_CHECKPOINT_FILE, r);
                } else {
                        _cleanup_free_ char *err = NULL;
                        r = kube_checkpoint_parse(data, len, &ret->checkpoint, &err);
                        ret->checkpoint_rc = r;
                        if (r < 0) ret->checkpoint_error = xasprintf("%s: %s", KUBELET_CHECKPOINT_FILE, err);
                }
        }
        strv_free(names);
        names = NULL;
        n = hostfs_list(KUBELET_PLUGINS_REGISTRY_DIR, false, &names);
        ret->registry_rc = n < 0 ? n : 0;
        if (n >= 0) take_names(names, n, &ret->registry, &ret->n_registry);
        strv_free(names);
        names = NULL;
        n = hostfs_list(NVIDIA_VALIDATIONS_DIR, true, &names);
        ret->validations_rc = n < 0 ? n : 0;
        if (n >= 0) take_names(names, n, &ret->validations, &ret->n_validations);
        /* their content: most are empty; driver-ready holds the driver root, .driver-ctr-ready the driver
         * container's features (GDS_ENABLED: true, ...), workload-type the node's workload */
        ret->validation_texts = ret->n_validations ? xcalloc(ret->n_validations, sizeof(char *)) : NULL;
        for (size_t i = 0; i < ret->n_validations; i++) {
                _cleanup_free_ char *p = xasprintf("%s/%s", NVIDIA_VALIDATIONS_DIR, ret->validations[i]);
                _cleanup_free_ char *text = NULL;
                if (hostfs_read(p, 64 * 1024, &text, NULL) < 0) continue;
                /* line by line: the lines stay, each made valid UTF-8 without control characters */
                struct buf b = { 0 };
                for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                        _cleanup_free_ char *clean = utf8_sanitize(line);
                        buf_printf(&b, "%s\n", clean);
                }
                if (!b.data) buf_append(&b, "", 0);
                ret->validation_texts[i] = b.data;
        }
}

/* Frees n names and the array. */
static void names_free(char **v, size_t n) {
        for (size_t i = 0; i < n; i++) free(v[i]);
        free(v);
}

/* Frees what probe_kubelet filled. */
static void kubelet_facts_free(struct kubelet_facts *k) {
        free(k->dp_error);
        names_free(k->plugin_sockets, k->n_plugin_sockets);
        free(k->checkpoint_error);
        kube_checkpoint_free(k->checkpoint);
        names_free(k->registry, k->n_registry);
        names_free(k->validation_texts, k->n_validations);
        names_free(k->validations, k->n_validations);
        *k = (struct kubelet_facts){ 0 };
}

void kube_facts_free(struct kube_facts *k) {
        if (!k) return;
        kubelet_facts_free(&k->kubelet);
        podres_facts_free(&k->podres);
        struct kube_api_facts *a = &k->api;
        free(a->error);
        free(a->server);
        free(a->source);
        free(a->node_name);
        free(a->node_error);
        kube_node_info_free(&a->node);
        free(a->pods_error);
        kube_pod_info_free(a->pods, a->n_pods);
        free(a->roles);
        free(a->operator_namespace);
        names_free(a->csi_drivers, a->n_csi_drivers);
        free(k);
}
