/* check_container_toolkit_cdi.c: layer 2, container-toolkit: CDI specs against the GPUs NVML found and the driver
 * version loaded. */
#include <ctype.h>

/* Evidence lines one spec may add about devices NVML does not see: a hostile or stale spec can list
 * 100000; the count says the rest. */
#define CDI_EVIDENCE_MAX 20

#include "engine/check.h"
#include "facts/node.h"
#include "facts/layer2_container.h"
#include "nvml/nvml_facts.h"

#define EVIDENCE_MAX 6

/* Returns the malloc'd driver version a library or firmware path carries ("libcuda.so.535.129.03",
 * "/lib/firmware/nvidia/535.129.03/gsp_ga10x.bin"), or NULL when it carries none. */
char *cdi_path_driver_version(const char *path);
char *cdi_path_driver_version(const char *path) {
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        const char *v = NULL;
        const char *so = strstr(base, ".so.");
        if (so && (strstr(base, "nvidia") || strstr(base, "cuda") || strstr(base, "nvcuvid"))) v = so + 4;
        const char *fw = startswith(path, "/lib/firmware/nvidia/");
        if (!fw) fw = startswith(path, "/usr/lib/firmware/nvidia/");
        if (!v && fw) v = fw;
        if (!v) return NULL;
        /* a driver version: digits '.' digits ['.' digits], e.g. 550.54.15 or 535.104 */
        size_t n = 0, dots = 0;
        while (isdigit((unsigned char)v[n]) || (v[n] == '.' && n > 0 && isdigit((unsigned char)v[n + 1])))
                dots += v[n++] == '.';
        if (dots < 1 || dots > 2 || (v[n] && v[n] != '/')) return NULL;
        /* libcuda.so.1 or libnvidia-ml.so.1 carry no driver version; a driver major is >= 100 */
        if (strtoul(v, NULL, 10) < 100) return NULL;
        return xstrndup(v, n);
}

/* Returns true when the CDI spec lists a device of this name ("0", "GPU-<uuid>", "all"). */
static bool spec_has_device(const struct cdi_spec *s, const char *name) {
        for (size_t i = 0; i < s->n_devices; i++)
                if (streq(s->devices[i], name)) return true;
        return false;
}

/* Compares one nvidia.com/gpu spec with NVML's GPUs and the driver. Returns the number of problems. */
static size_t judge_spec(const struct cdi_spec *s, const struct nvml_facts *n, const char *driver, struct finding *f,
                         char **ret_stale) {
        size_t problems = 0;
        /* stale: library/firmware versions other than the loaded driver */
        size_t stale = 0;
        for (size_t i = 0; i < s->n_mounts; i++) {
                _cleanup_free_ char *v = cdi_path_driver_version(s->mounts[i]);
                if (!v || !driver || streq(v, driver)) continue;
                if (stale++ < EVIDENCE_MAX) finding_evidence(f, "%s: mounts %s (driver %s)", s->path, s->mounts[i], v);
                if (!*ret_stale) *ret_stale = TAKE_PTR(v);
        }
        if (stale > EVIDENCE_MAX)
                finding_evidence(f, "%s: %zu more mounts of another driver version", s->path, stale - EVIDENCE_MAX);
        problems += stale;
        /* host paths missing (missing old-version libraries are counted as stale above) */
        size_t missing = 0;
        for (size_t i = 0; i < s->n_missing; i++) {
                _cleanup_free_ char *v = cdi_path_driver_version(s->missing[i]);
                if (v && driver && !streq(v, driver)) continue;
                if (missing++ < EVIDENCE_MAX)
                        finding_evidence(f, "%s: host path %s does not exist", s->path, s->missing[i]);
        }
        if (missing > EVIDENCE_MAX)
                finding_evidence(f, "%s: %zu more host paths missing", s->path, missing - EVIDENCE_MAX);
        problems += missing;
        /* devices against NVML */
        bool all_uuids = true;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                char idx[16];
                snprintf(idx, sizeof idx, "%u", g->index);
                bool by_index = spec_has_device(s, idx);
                bool by_uuid = g->uuid_rc != NVML_SUCCESS || spec_has_device(s, g->uuid);
                if (g->uuid_rc != NVML_SUCCESS) all_uuids = false;
                if (!by_index || !by_uuid) {
                        problems++;
                        finding_evidence(f, "%s: GPU %u (%s) is not listed%s", s->path, g->index,
                                         g->uuid_rc == NVML_SUCCESS ? g->uuid : "uuid unknown",
                                         by_index  ? " by UUID"
                                         : by_uuid ? " by index"
                                                   : "");
                }
        }
        size_t unknown = 0; /* devices listed that NVML does not see */
        for (size_t i = 0; i < s->n_devices; i++) {
                const char *d = s->devices[i];
                uint64_t idx;
                if (parse_u64(d, 10, &idx) == 0 && idx >= n->device_count) {
                        problems++;
                        if (unknown++ < CDI_EVIDENCE_MAX)
                                finding_evidence(f, "%s: lists GPU %s but NVML found %u GPU(s)", s->path, d,
                                                 n->device_count);
                } else if (startswith(d, "GPU-") && all_uuids) {
                        bool known = false;
                        for (unsigned k = 0; k < n->n_gpus; k++) known |= streq(n->gpus[k].uuid, d);
                        if (!known) {
                                problems++;
                                if (unknown++ < CDI_EVIDENCE_MAX)
                                        finding_evidence(f, "%s: lists %s, which NVML does not see", s->path, d);
                        }
                }
        }
        if (unknown > CDI_EVIDENCE_MAX)
                finding_evidence(f, "%s: %zu more devices NVML does not see, not shown", s->path,
                                 unknown - CDI_EVIDENCE_MAX);
        return problems;
}

/* Returns a malloc'd sentence when the device plugin hands out CDI devices (its own spec, kind
 * k8s.device-plugin.nvidia.com/gpu, which it writes only with a CDI device-list strategy) but containerd's CRI
 * plugin does not inject CDI devices (enable_cdi false, or unset before containerd 2.x); NULL otherwise. The key to
 * set is in *ret_remedy. Never fails. */
static char *enable_cdi_problem(const struct runtime_facts *r, char **ret_remedy) {
        const struct containerd_facts *c = &r->containerd;
        *ret_remedy = NULL;
        if (!c->present || c->cri_disabled || c->rc < 0) return NULL;
        bool on = c->enable_cdi == 1 || (c->enable_cdi < 0 && containerd_is_2x(c));
        if (on) return NULL;
        const char *dp = NULL;
        for (size_t i = 0; i < r->cdi.n_specs && !dp; i++)
                if (r->cdi.specs[i].rc == 0 && streq(r->cdi.specs[i].kind, "k8s.device-plugin.nvidia.com/gpu"))
                        dp = r->cdi.specs[i].path;
        if (!dp) return NULL;
        const char *p = c->cri_plugin ? c->cri_plugin : "io.containerd.grpc.v1.cri";
        _cleanup_free_ char *key =
                streq(p, "cri") ? xstrdup("plugins.cri.enable_cdi") : xasprintf("plugins.\"%s\".enable_cdi", p);
        const char *file = c->enable_cdi == 0 ? c->enable_cdi_file : c->config_path;
        *ret_remedy = xasprintf(
                "set %s = true in %s (`nvidia-ctk runtime configure --runtime=containerd --cdi.enabled`), then "
                "`systemctl restart containerd`",
                key, file);
        return xasprintf(
                "the device plugin hands out CDI devices (%s) but containerd does not inject them: %s is %s in %s; GPU "
                "pods get no GPU unless the nvidia runtime injects them",
                dp, key, c->enable_cdi == 0 ? "false" : "unset (containerd 1.x: false)", file);
}

/* Judges container-toolkit.cdi-specs (the nvidia.com/gpu CDI specs match the GPUs NVML found and the
 * driver loaded) from the facts into f; never fails: what it cannot read, it says. */
static void run_cdi_specs(const struct node_facts *facts, struct finding *f) {
        const struct runtime_facts *r = facts->runtime;
        if (!r || !(r->containerd.present || r->crio.present || r->docker.present)) {
                finding_skip(f, "no container runtime on this host: no containerd, CRI-O or Docker (config, binary or "
                                "process)");
                return;
        }
        const struct cdi_facts *c = &r->cdi;
        const struct nvml_facts *n = facts->nvml.facts;
        const char *driver = facts->driver.version;
        if (!n) {
                finding_skip(f, "NVML not loaded: no GPU list to compare CDI specs with");
                return;
        }
        bool cdi_mode = (r->toolkit.mode && streq(r->toolkit.mode, "cdi")) ||
                        (r->containerd.default_runtime && streq(r->containerd.default_runtime, "nvidia-cdi"));
        if (r->containerd.present && r->containerd.enable_cdi >= 0)
                finding_evidence(f, "containerd enable_cdi = %s (%s)", r->containerd.enable_cdi ? "true" : "false",
                                 r->containerd.enable_cdi_file);
        _cleanup_free_ char *cdi_remedy = NULL;
        _cleanup_free_ char *cdi_problem = enable_cdi_problem(r, &cdi_remedy);
        size_t nvidia = 0, broken = 0;
        for (size_t i = 0; i < c->n_specs; i++) {
                const struct cdi_spec *s = &c->specs[i];
                if (s->rc < 0) {
                        broken++;
                        finding_evidence(f, "%s", s->error);
                        continue;
                }
                finding_evidence(f, "%s: kind %s, cdiVersion %s, %zu device(s), %zu mount(s)", s->path, s->kind,
                                 s->cdi_version ? s->cdi_version : "?", s->n_devices, s->n_mounts);
                if (streq(s->kind, "nvidia.com/gpu")) nvidia++;
        }
        if (broken) {
                finding_fail(f, "%zu CDI spec(s) cannot be parsed: the runtime refuses CDI devices from them", broken);
                finding_remedy(
                        f,
                        "regenerate the spec: `nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml` (or `systemctl "
                        "restart nvidia-cdi-refresh` for /var/run/cdi/nvidia.yaml); remove files that are not specs");
                return;
        }
        if (nvidia == 0) {
                if (cdi_mode) {
                        finding_fail(f,
                                     "the runtime injects GPUs through CDI (%s) but there is no nvidia.com/gpu spec in "
                                     "/etc/cdi "
                                     "or /var/run/cdi",
                                     r->toolkit.mode && streq(r->toolkit.mode, "cdi")
                                             ? "nvidia-container-runtime.mode = \"cdi\""
                                             : "default runtime nvidia-cdi");
                        finding_remedy(f, "`nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml` (or enable "
                                          "nvidia-cdi-refresh: "
                                          "`systemctl enable --now nvidia-cdi-refresh.path`)");
                } else if (cdi_problem) {
                        finding_warn(f, "%s", cdi_problem);
                        finding_remedy(f, "%s", cdi_remedy);
                } else {
                        finding_skip(f, "no nvidia.com/gpu CDI spec: containers get GPUs through the runtime's legacy "
                                        "injection");
                }
                return;
        }
        size_t problems = 0;
        _cleanup_free_ char *stale = NULL;
        const char *stale_spec = NULL;
        for (size_t i = 0; i < c->n_specs; i++) {
                const struct cdi_spec *s = &c->specs[i];
                if (!streq(s->kind, "nvidia.com/gpu")) continue;
                bool was = stale != NULL;
                problems += judge_spec(s, n, driver, f, &stale);
                if (!was && stale) stale_spec = s->path;
        }
        if (stale) {
                bool run = stale_spec && startswith(stale_spec, "/var/run/cdi/");
                finding_fail(
                        f,
                        "stale CDI spec %s: generated for driver %s, the loaded driver is %s; containers requesting "
                        "GPUs through it fail to start",
                        stale_spec, stale, driver);
                if (run)
                        finding_remedy(f,
                                       "regenerate it for the new driver: `systemctl restart nvidia-cdi-refresh` (or "
                                       "`nvidia-ctk cdi generate --output=%s`)",
                                       stale_spec);
                else
                        finding_remedy(
                                f,
                                "regenerate it for the new driver: `nvidia-ctk cdi generate --output=%s`; the GPU "
                                "Operator's toolkit pod does this when restarted",
                                stale_spec);
                return;
        }
        if (problems) {
                finding_fail(f,
                             "the nvidia.com/gpu CDI spec does not match this node: %zu problem(s) (GPUs not listed, "
                             "or host "
                             "paths missing)",
                             problems);
                finding_remedy(
                        f,
                        "regenerate it: `nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml` (or `systemctl restart "
                        "nvidia-cdi-refresh` for /var/run/cdi), after the driver and every GPU are up");
                return;
        }
        if (cdi_problem) {
                finding_warn(f, "%s", cdi_problem);
                finding_remedy(f, "%s", cdi_remedy);
                return;
        }
        finding_pass(f, "%zu nvidia.com/gpu CDI spec(s) list all %u GPU(s) by index and UUID; every host path exists",
                     nvidia, n->device_count);
}

const struct check_def check_container_toolkit_cdi_specs = {
        .id = "container-toolkit.cdi-specs",
        .action = ACTION_RECONFIGURE,
        .layer = 2,
        .component = "container-toolkit",
        .title = "the nvidia.com/gpu CDI specs match the GPUs NVML found and the driver loaded",
        .reads = "/etc/cdi/*.{yaml,yml,json}, /var/run/cdi/*: kind, devices[].name, deviceNodes, mounts hostPath, "
                 "hooks; NVML "
                 "GPU indices and UUIDs; /proc/driver/nvidia/version; nvidia-container-runtime.mode",
        .outcomes =
                "pass: every GPU listed by index and UUID, every host path present; warn: the device plugin's own CDI "
                "spec "
                "(k8s.device-plugin.nvidia.com/gpu) exists but containerd's enable_cdi is off; fail: a spec that does "
                "not parse, a "
                "stale spec (libraries of another driver version), GPUs missing or extra, host paths missing, CDI mode "
                "without a spec; skip: no spec and the runtime injects GPUs the legacy way",
        .depends = { "container-toolkit.runtime-config", "driver.version", "driver.nvml-init", "driver.gpu-count" },
        .remedy = "regenerate the spec for the loaded driver: `nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml` "
                  "or `systemctl restart nvidia-cdi-refresh`",
        .run = run_cdi_specs,
};
