/* kubeconfig.h: finds Kubernetes API credentials as kubectl does (in-cluster service account, kubeconfig files, exec
 * plugins). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Where the service account of a pod is mounted. */
#define KUBE_SERVICE_ACCOUNT_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* The credentials and server that one resolved context (or the pod's service account) names. */
struct kube_config {
        char *server;  /* https://host:port[/prefix], never NULL */
        char *ca_file; /* where the CA came from (a path), NULL for -data or none */
        void *ca_pem;  /* CA bundle (PEM), NULL: the system's trust store */
        size_t ca_pem_len;
        bool insecure;             /* insecure-skip-tls-verify */
        char *tls_server_name;     /* name to verify the server certificate against, or NULL */
        char *proxy_url;           /* the cluster's proxy-url, or NULL */
        char *token;               /* bearer token, or NULL */
        char *username, *password; /* basic auth, or NULL */
        void *cert_pem;            /* client certificate (PEM), or NULL */
        size_t cert_pem_len;
        void *key_pem; /* client key (PEM), or NULL */
        size_t key_pem_len;
        char *namespace; /* the context's namespace, "default" when unset */
        char *context;   /* the context's name; NULL in-cluster */
        char *source;    /* "in-cluster" or the kubeconfig file (shown with ~/ for $HOME) */
};

/* Flags for kube_config_from_yaml(). */
enum {
        KUBE_CONFIG_NO_EXEC = 1 << 0,  /* refuse exec credential plugins (-EPERM) */
        KUBE_CONFIG_NO_FILES = 1 << 1, /* refuse to read files the kubeconfig names (-EPERM) */
};

/* Frees c and everything it holds (wiping secrets first); NULL is fine. */
void kube_config_free(struct kube_config *c);
static inline void kube_config_freep(struct kube_config **c) {
        kube_config_free(*c);
}
#define _cleanup_kube_config_ __attribute__((cleanup(kube_config_freep)))

/* Loads credentials as kubectl does: kubeconfig_path (--kubeconfig) when not NULL, which must
 * exist; else the files in $KUBECONFIG (colon-separated, merged: the first file to define a key
 * wins; missing files are skipped); else ~/.kube/config; and when none of these exist, the pod's
 * service account (KUBERNETES_SERVICE_HOST/PORT and KUBE_SERVICE_ACCOUNT_DIR). Exec plugins run
 * at most timeout_ms. Returns 0 and *ret; -ENOENT (with *ret_error) when no configuration exists
 * at all (the caller skips API checks); another negative errno with *ret_error naming the file
 * and key on any other failure, also when kubeconfig_path or a file a kubeconfig names is missing
 * (-EINVAL): see kube_config_from_yaml(). */
int kube_config_load(const char *kubeconfig_path, unsigned timeout_ms, struct kube_config **ret, char **ret_error);

/* As kube_config_load(), using context (like kubectl --context) instead of current-context when
 * not NULL. */
int kube_config_load_context(const char *kubeconfig_path, const char *context, unsigned timeout_ms,
                             struct kube_config **ret, char **ret_error);

/* Builds the in-cluster configuration from $KUBERNETES_SERVICE_HOST/PORT and the token, ca.crt
 * and namespace files in sa_dir (KUBE_SERVICE_ACCOUNT_DIR when NULL). Returns 0; -ENOENT when the
 * variables or the token are absent; another negative errno with *ret_error. */
int kube_config_in_cluster(const char *sa_dir, struct kube_config **ret, char **ret_error);

/* Resolves a kubeconfig held in memory: source names it in errors, dir (NULL: ".") is the folder
 * that relative paths in it are resolved against, context (NULL: current-context) picks the
 * context, flags are KUBE_CONFIG_*. Returns 0 and *ret, or a negative errno and *ret_error:
 * -ENOENT only when the YAML holds no configuration at all (empty), -EINVAL for bad YAML or
 * values and for a missing context, cluster or user, -EPERM for what flags refuse, and from exec
 * plugins -ETIMEDOUT (killed after timeout_ms), -EIO (failed), -EBADMSG (bad ExecCredential). */
int kube_config_from_yaml(const char *data, size_t len, const char *source, const char *dir, const char *context,
                          unsigned flags, unsigned timeout_ms, struct kube_config **ret, char **ret_error);

/* Decodes standard base64 (padding required, whitespace ignored) into a malloc'd NUL-terminated
 * buffer. Returns 0 with *ret and *ret_len, or -EINVAL for bad input. */
int kube_base64_decode(const char *s, size_t len, void **ret, size_t *ret_len);
