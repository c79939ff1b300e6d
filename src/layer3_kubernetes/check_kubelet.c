/* check_kubelet.c: layer 3, kubelet: its folder is writable, the API server answers about this node, and
 * the node is Ready. */
#include "facts/layer2_container.h"
#include "layer2_container/runtime_evidence.h"
#include "layer3_kubernetes/kube_evidence.h"

#include <inttypes.h>

/* --- kubelet.api-access --- */

static void run_api_access(const struct node_facts *facts, struct finding *f) {
        const struct kube_api_facts *a = facts->kube ? &facts->kube->api : NULL;
        if (!a) {
                finding_skip(f, "the Kubernetes probes did not run");
                return;
        }
        if (a->source) finding_evidence(f, "configuration: %s; server: %s", a->source, a->server ? a->server : "?");
        if (a->rc == -ENOENT) {
                finding_skip(f, "no cluster access: %s", a->error);
                return;
        }
        if (a->rc == -ECONNREFUSED || a->rc == -EHOSTUNREACH) {
                finding_evidence(f, "%s", a->error);
                finding_skip(f, "the API server %s cannot be reached: Kubernetes checks are skipped",
                             a->server ? a->server : "?");
                return;
        }
        if (a->rc < 0) {
                finding_evidence(f, "%s", a->error);
                if (a->timed_out) {
                        finding_warn(f, "the API server did not answer within %u ms: Kubernetes checks are skipped",
                                     a->timeout_ms);
                        finding_remedy(f, "check the API server's health and the network path from this node (`kubectl "
                                          "get --raw /readyz`); "
                                          "raise --timeout for a slow control plane");
                } else if (a->rc == -EKEYREJECTED) {
                        finding_warn(f, "the API server's TLS certificate does not verify against the configured CA: "
                                        "Kubernetes checks are skipped");
                        finding_remedy(
                                f,
                                "check certificate-authority(-data) in %s against the API server's certificate "
                                "(`openssl s_client -connect <server> -showcerts`) and that the server name matches "
                                "it (tls-server-name); a rotated cluster CA needs a new kubeconfig or service-account "
                                "ca.crt",
                                a->source ? a->source : "the kubeconfig");
                } else if (a->rc == -EPROTO) {
                        finding_warn(f, "the TLS connection to the API server failed: Kubernetes checks are skipped");
                        finding_remedy(
                                f,
                                "check the client certificate and key in %s and that the server speaks TLS on that "
                                "port",
                                a->source ? a->source : "the kubeconfig");
                } else if (a->rc == -EFBIG) {
                        finding_warn(f, "the API server's answer was larger than gpunode accepts: Kubernetes checks "
                                        "are skipped");
                        finding_remedy(
                                f,
                                "the answer named in the evidence exceeds gpunode's response limit; check that the "
                                "server is the API server (not a proxy or login page), and report an unusually large "
                                "Node object");
                } else if (a->rc == -ENOEXEC) {
                        finding_warn(f,
                                     "the kubeconfig's exec credential plugin failed: Kubernetes checks are skipped");
                        finding_remedy(
                                f,
                                "run the plugin named in the evidence by hand (as kubectl would, e.g. `kubectl get "
                                "--raw /version` with the same kubeconfig) and fix what it reports: a missing binary, "
                                "an expired cloud login, a timeout");
                } else {
                        finding_warn(f, "the Kubernetes API refused gpunode: Kubernetes checks are skipped");
                        finding_remedy(
                                f,
                                "check the credentials (the service account's token, the kubeconfig's user) and that "
                                "gpunode's ClusterRole allows get on nodes and list on pods");
                }
                return;
        }
        if (a->node_rc == -ENOENT) {
                finding_warn(f, "node %s is not registered with the API server", a->node_name);
                finding_remedy(f, "pass the node's Kubernetes name with --node (or $NODE_NAME from the downward API); "
                                  "if the name is "
                                  "right, the kubelet never registered: `journalctl -u kubelet`");
                return;
        }
        if (a->node_rc < 0 || a->pods_rc < 0) {
                if (a->node_error) finding_evidence(f, "%s", a->node_error);
                if (a->pods_error) finding_evidence(f, "%s", a->pods_error);
                if (a->timed_out) {
                        finding_warn(
                                f, "the API server stopped answering within %u ms: some Kubernetes checks are skipped",
                                a->timeout_ms);
                } else if (a->node_rc == -EFBIG || a->pods_rc == -EFBIG) {
                        finding_warn(
                                f,
                                "the API server's answer for the %s was larger than gpunode accepts: some Kubernetes "
                                "checks are skipped",
                                a->node_rc == -EFBIG ? "node" : "pods on this node");
                        finding_remedy(
                                f, "gpunode caps each API answer; an answer this large is unusual (very many pods on "
                                   "the node, or huge annotations): look at it with kubectl");
                        return;
                } else {
                        finding_warn(f, "the API server answered, but the node or its pods could not be read");
                }
                finding_remedy(
                        f,
                        "give gpunode's service account get on nodes and list on pods (a ClusterRole), and check the "
                        "API server's health");
                return;
        }
        finding_pass(f, "the API server answered: node %s, %zu pod(s) on it", a->node_name, a->n_pods);
}

/* --- kubelet.node-ready --- */

static void run_node_ready(const struct node_facts *facts, struct finding *f) {
        const struct kube_api_facts *a = kube_api_or_skip(facts, f, false);
        if (!a) return;
        const struct kube_node_info *n = &a->node;
        if (n->kubelet_version) finding_evidence(f, "kubelet %s", n->kubelet_version);
        if (n->unschedulable) finding_evidence(f, "the node is cordoned (spec.unschedulable)");
        if (n->ready == 1) {
                finding_pass(f, "node %s is Ready%s", n->name, n->unschedulable ? " (cordoned)" : "");
                return;
        }
        finding_evidence(f, "Ready condition: %s%s%s%s", n->ready == 0 ? "False" : "Unknown",
                         n->ready_reason ? " (" : "", n->ready_reason ? n->ready_reason : "",
                         n->ready_reason ? ")" : "");
        if (n->ready_message) finding_evidence(f, "message: %s", n->ready_message);
        if (n->ready == 0)
                finding_fail(f, "node %s is NotReady: %s", n->name,
                             n->ready_reason ? n->ready_reason : "no reason given");
        else
                finding_fail(f, "node %s has no Ready status: the kubelet stopped posting it", n->name);
        finding_remedy(f,
                       "look at the kubelet on the node: `systemctl status kubelet`, `journalctl -u kubelet -n 200`; a "
                       "container runtime or CNI failure shows there");
}

/* --- kubelet.storage --- */

/* Judges kubelet.storage (/var/lib/kubelet is on a writable mount) from the facts into f; never fails:
 * what it cannot read, it says. */
static void run_storage(const struct node_facts *facts, struct finding *f) {
        const struct host_mounts *hm = facts->runtime ? &facts->runtime->mounts : NULL;
        const struct host_mount *m = hm ? &hm->m[HOST_MOUNT_KUBELET] : NULL;
        if (!m || !m->exists) {
                finding_skip(f, "no /var/lib/kubelet on this host: not a Kubernetes node");
                return;
        }
        if (hm->rc < 0) {
                finding_skip(f, "cannot tell which mount holds /var/lib/kubelet: %s", hm->error);
                return;
        }
        if (mount_fail_if_read_only(m, "the kubelet", f)) {
                finding_action(f, ACTION_REBOOT);
                return;
        }
        finding_pass(f, "/var/lib/kubelet is on a writable mount (%s)", m->mount_point ? m->mount_point : "?");
}

const struct check_def check_kubelet_storage = {
        .id = "kubelet.storage",
        .action = ACTION_RECONFIGURE,
        .layer = 3,
        .component = "kubelet",
        .title = "the kubelet's folder is writable",
        .reads = "/proc/1/mountinfo (the host's mounts): the mount holding /var/lib/kubelet, its options and "
                 "superblock options",
        .outcomes = "pass: on a read-write mount; fail: read-only (the root mounted ro, or remounted read-only after "
                    "an error): pods fail to start with misleading volume and sandbox errors, device plugins cannot "
                    "register; skip: no /var/lib/kubelet, or mountinfo unreadable",
        .remedy = "remount read-write or fix /etc/fstab; after an I/O or filesystem error: drain, fsck or replace the "
                  "disk, reboot",
        .run = run_storage,
};

const struct check_def check_kubelet_api_access = {
        .id = "kubelet.api-access",
        .action = ACTION_RECONFIGURE,
        .layer = 3,
        .component = "kubelet",
        .title = "the Kubernetes API answers and knows this node",
        .reads = "kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config) or the pod's service account; GET "
                 "/api/v1/nodes/<node>, "
                 "GET /api/v1/pods?fieldSelector=spec.nodeName=<node>, each bounded by --timeout",
        .outcomes =
                "pass: node and pods read; skip: no configuration or the API server cannot be reached (every API check "
                "skips); warn: the API timed out, refused the credentials, or does not know the node",
        .remedy = "give gpunode credentials (the pod's service account, or --kubeconfig) allowed to get nodes and list "
                  "pods and csinodes; check the API server's health (`kubectl get --raw /readyz`); raise --timeout for "
                  "a slow control plane",
        .run = run_api_access,
};

const struct check_def check_kubelet_node_ready = {
        .id = "kubelet.node-ready",
        .layer = 3,
        .component = "kubelet",
        .title = "the node is Ready",
        .reads = "the node's Ready condition, spec.unschedulable, the kubelet version",
        .outcomes = "pass: Ready; fail: NotReady or Unknown (the kubelet stopped reporting)",
        .remedy = "`systemctl status kubelet` and `journalctl -u kubelet -n 200` on the node; a container runtime or "
                  "CNI failure shows there",
        .depends = { "kubelet.api-access" },
        .run = run_node_ready,
};
