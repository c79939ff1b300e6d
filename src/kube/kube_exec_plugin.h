/* kube_exec_plugin.h: what kubeconfig.c and kube_exec_plugin.c share (private to src/kube/): the exec credential plugin
 * spec and its runner. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "basic/util.h"
#include "kube/kubeconfig.h"

/* A kubeconfig user's exec mapping, as kubeconfig.c reads it. */
struct kube_exec_spec {
        char *api_version, *command, *install_hint, *interactive_mode;
        char **args; /* NULL-terminated */
        char **env;  /* NULL-terminated "NAME=value" */
        bool provide_cluster_info;
};

/* Wipes and frees a secret buffer of n bytes (n 0: a string); NULL is fine. */
static inline void free_secret(void *p, size_t n) {
        if (!p) return;
        explicit_bzero(p, n ? n : strlen(p));
        free(p);
}

/* Returns path resolved against dir when relative (malloc'd); "" stays "". */
static inline char *resolve_path(const char *dir, const char *path) {
        if (path[0] == '/' || path[0] == 0 || !dir) return xstrdup(path);
        return xasprintf("%s/%s", dir, path);
}

/* Runs the exec credential plugin e for user (of the kubeconfig that source names, whose relative
 * paths are resolved against dir), killing it after timeout_ms, and stores the token or client
 * certificate it prints in c. Returns 0, or a negative errno with *ret_error: -EINVAL for a missing
 * executable (not -ENOENT), -ETIMEDOUT, -EFBIG for too much output, -EIO when it failed, -EBADMSG for
 * a bad ExecCredential, -errno when it cannot be started. */
int kube_exec_plugin_run(const struct kube_exec_spec *e, const char *source, const char *dir, const char *user,
                         unsigned timeout_ms, struct kube_config *c, char **ret_error);
