/* cgroup.h: which pod and container a process belongs to, from its /proc/<pid>/cgroup; its state from
 * /proc/<pid>/stat. */
#pragma once

#include <stddef.h>

/*
 * Parses the text of /proc/<pid>/cgroup (cgroup v1 "N:controllers:/path" lines or the v2 "0::/path"
 * line) for the kubelet's pod cgroup: a path component holding "pod<UID>" under "kubepods" (the
 * systemd driver writes "kubepods-besteffort-pod<uid with _>.slice", cgroupfs "pod<uid>"), and the
 * container's id in the component below it ("cri-containerd-<id>.scope", "crio-<id>.scope",
 * "docker-<id>.scope", or the bare 64 hex digits). Returns 1 with *ret_pod_uid (dashed, lower case)
 * and *ret_container_id (NULL when the path stops at the pod) malloc'd; 0 when no line names a pod
 * (a host process); -EINVAL for text that is not a cgroup file (a line without two colons).
 */
int cgroup_pod_container(const char *text, size_t len, char **ret_pod_uid, char **ret_container_id);

/* The most bytes of a process name kept (the kernel's TASK_COMM_LEN is 16 with its NUL). */
#define PROC_COMM_MAX 64

/*
 * Parses the text of /proc/<pid>/stat: "pid (comm) S ppid ...". The name may hold spaces and
 * parentheses (it ends at the last ')' of the text). Returns the state letter (R, S, D, Z, T, t, X,
 * I, P, ...) with the name copied into comm (PROC_COMM_MAX bytes, cut, control bytes as '?'), or
 * -EINVAL when text is not a stat line (no "pid (", no ')' followed by " <letter>").
 */
int proc_stat_state(const char *text, size_t len, char comm[PROC_COMM_MAX]);
