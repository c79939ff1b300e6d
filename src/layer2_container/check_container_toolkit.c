/* check_container_toolkit.c: layer 2, container-toolkit: runtime configs (containerd, CRI-O, Docker), the toolkit, the
 * nvidia runtime, restarts. */
#include <time.h>

#include "facts/layer2_container.h"
#include "layer2_container/runtime_evidence.h"
#include "layer2_container/runtime_common.h"

/* An outcome of one runtime's part of a check; the worst part becomes the finding. */
struct part {
        enum check_status status;
        char *summary, *remedy;
};

/* Keeps the worse of *acc and (status, summary, remedy); takes ownership of the strings. */
static void part_add(struct part *acc, enum check_status status, char *summary, char *remedy) {
        if (!acc->summary || check_status_rank(status) > check_status_rank(acc->status)) {
                free(acc->summary);
                free(acc->remedy);
                *acc = (struct part){ status, summary, remedy };
                return;
        }
        free(summary);
        free(remedy);
}

/* Writes the kept part into the finding and frees it. */
static void part_finish(struct part *acc, struct finding *f) {
        finding_set(f, acc->status, "%s", acc->summary);
        if (acc->remedy) finding_remedy(f, "%s", acc->remedy);
        free(acc->summary);
        free(acc->remedy);
}

/* Returns true when containerd serves CRI here (Docker's own containerd with CRI disabled does not). */
static bool containerd_active(const struct runtime_facts *r) {
        return r->containerd.present && (!r->containerd.cri_disabled || !r->docker.present);
}

/* Returns a malloc'd TOML table path for a key of the CRI plugin of this containerd config. */
static char *cri_key(const struct containerd_facts *c, const char *rest) {
        const char *p = c->cri_plugin ? c->cri_plugin : "io.containerd.grpc.v1.cri";
        return streq(p, "cri") ? xasprintf("plugins.cri.%s", rest) : xasprintf("plugins.\"%s\".%s", p, rest);
}

/* Where `nvidia-ctk runtime configure --runtime=crio` writes the nvidia runtime. */
#define CRIO_NVIDIA_DROPIN "/etc/crio/crio.conf.d/99-nvidia.conf"

/* Returns the command that restarts a runtime so it reads its configuration again. */
static const char *restart_cmd(const char *runtime) {
        if (streq(runtime, "containerd")) return "systemctl restart containerd";
        if (streq(runtime, "CRI-O")) return "systemctl restart crio";
        return "systemctl restart docker";
}

/* Returns a malloc'd summary for a runtime config file over gpunode's own read cap (the first of files
 * whose rc is -EFBIG, else fallback): the runtime may well load it, so gpunode cannot tell. Never fails. */
static char *too_large_summary(const char *runtime, const struct runtime_config_file *files, size_t n,
                               const char *fallback) {
        const char *path = fallback;
        for (size_t i = 0; i < n; i++)
                if (files[i].rc == -EFBIG) {
                        path = files[i].path;
                        break;
                }
        return xasprintf(
                "cannot tell whether %s loads its config: %s is larger than gpunode reads (%u MiB, gpunode's limit, "
                "not %s's)",
                runtime, path, RUNTIME_CONFIG_READ_MAX >> 20, runtime);
}

/* Returns a malloc'd remedy for a config over gpunode's read cap; dump is the runtime's own command that
 * prints the config it loads. Never fails. */
static char *too_large_remedy(const char *dump) {
        return xasprintf(
                "a runtime config this large is unusual (a generated or pasted file?): look at it, and judge the "
                "runtime's own view with `%s | grep -n nvidia`",
                dump);
}

/* Judges container-toolkit.runtime-config (the container runtime's configuration loads as the runtime
 * itself loads it) from the facts into f; never fails: what it cannot read, it says. */
static void run_runtime_config(const struct node_facts *facts, struct finding *f) {
        if (runtime_skip_if_absent(facts, f)) return;
        const struct runtime_facts *r = facts->runtime;
        struct part acc = { 0 };
        const struct containerd_facts *c = &r->containerd;
        if (c->present) {
                finding_evidence(f, "containerd: binary %s; process %s", c->binary ? c->binary : "not found",
                                 c->process.pid ? "running" : "not seen in /proc");
                if (c->process.pid) finding_evidence(f, "containerd pid %d", c->process.pid);
                if (c->major)
                        finding_evidence(f, "containerd %d.%d (%s)", c->major, c->minor, c->version_from);
                else
                        finding_evidence(f, "containerd version: %s",
                                         c->version_from ? c->version_from : "cannot tell");
                finding_evidence(f, "containerd config %s (%s): version %d, CRI plugin %s, imports merged %s%s",
                                 c->config_path, c->config_path_from, c->version, c->cri_plugin,
                                 c->deep_merge ? "key by key (containerd 2.x)" : "plugin by plugin (containerd 1.x)",
                                 c->merge_assumed ? ", assumed from the config version" : "");
                if (c->merge_other)
                        finding_evidence(f, "the imports merge differently by containerd version: %s", c->merge_other);
                for (size_t i = 0; i < c->n_files; i++) {
                        const struct runtime_config_file *fl = &c->files[i];
                        if (fl->rc < 0)
                                finding_evidence(f, "could not load %s", fl->path);
                        else if (fl->imported_by)
                                finding_evidence(f, "loaded %s (imported by %s)%s", fl->path, fl->imported_by,
                                                 fl->mentions_nvidia ? ": defines nvidia runtime(s)" : "");
                        else
                                finding_evidence(f, "loaded %s%s", fl->path,
                                                 fl->mentions_nvidia ? ": defines nvidia runtime(s)" : "");
                }
                for (size_t i = 0; i < c->n_stray; i++)
                        finding_evidence(f, "not loaded (no import matches it): %s%s", c->stray[i].path,
                                         c->stray[i].mentions_nvidia ? ": defines nvidia runtime(s)" : "");
                if (c->misplaced_imports)
                        finding_evidence(
                                f, "an `imports` key sits inside [%s], not at the top level: containerd ignores it",
                                c->misplaced_imports);
                if (c->imports_cut) finding_evidence(f, "%s", c->imports_cut);
                if (c->cri_disabled)
                        finding_evidence(f, "disabled_plugins turns off the CRI plugin: containerd serves Docker only");
                if (!c->deep_merge && c->cri_owner && c->n_files > 1)
                        finding_evidence(
                                f,
                                "the CRI plugin table of %s replaces those of earlier files (containerd 1.x merges "
                                "plugin tables whole)",
                                c->cri_owner);
                if (c->rc == -ENOENT && c->n_files == 0)
                        part_add(&acc, CHECK_PASS,
                                 xasprintf("containerd has no config file (%s): it runs on built-in defaults",
                                           c->config_path),
                                 NULL);
                else if (c->rc == -EFBIG)
                        part_add(&acc, CHECK_WARN,
                                 too_large_summary("containerd", c->files, c->n_files, c->config_path),
                                 too_large_remedy("containerd config dump"));
                else if (c->rc == -ELOOP)
                        part_add(&acc, CHECK_FAIL, xasprintf("containerd cannot load its config: %s", c->error),
                                 xasprintf("a symlink on that path points back at itself (`namei -l %s`); make it "
                                           "point at a real "
                                           "file, then `systemctl restart containerd`",
                                           c->config_path));
                else if (c->rc < 0)
                        part_add(&acc, CHECK_FAIL, xasprintf("containerd cannot load its config: %s", c->error),
                                 xasprintf("fix that file (containerd refuses to start with it, or keeps running on "
                                           "the old "
                                           "config until restarted); check with `containerd config dump`"));
                else if (c->imports_cut)
                        part_add(&acc, CHECK_WARN,
                                 xasprintf("containerd's imports were followed only in part: %s", c->imports_cut),
                                 xasprintf("write the imports as containerd's own drop-in folder does (`imports = "
                                           "[\"/etc/containerd/conf.d/*.toml\"]`): a glob with wildcards in folder "
                                           "names walks "
                                           "the whole host, /proc included"));
                else
                        part_add(&acc, CHECK_PASS,
                                 xasprintf("containerd config v%d (%s) read: %zu file(s), CRI plugin %s", c->version,
                                           c->config_path, c->n_files, c->cri_plugin),
                                 NULL);
        }
        if (r->crio.present) {
                const struct crio_facts *o = &r->crio;
                finding_evidence(f, "CRI-O: binary %s; process %s; %zu config file(s)",
                                 o->binary ? o->binary : "not found", o->process.pid ? "running" : "not seen in /proc",
                                 o->n_files);
                for (size_t i = 0; i < o->n_files; i++) finding_evidence(f, "loaded %s", o->files[i].path);
                if (o->rc == -EFBIG)
                        part_add(&acc, CHECK_WARN,
                                 too_large_summary("CRI-O", o->files, o->n_files, "a CRI-O config file"),
                                 too_large_remedy("crio config"));
                else if (o->rc < 0)
                        part_add(&acc, CHECK_FAIL, xasprintf("CRI-O cannot load its config: %s", o->error),
                                 xasprintf("fix that file; check with `crio config`"));
                else
                        part_add(&acc, CHECK_PASS, xasprintf("CRI-O config read: %zu file(s)", o->n_files), NULL);
        }
        if (r->docker.present) {
                const struct docker_facts *d = &r->docker;
                finding_evidence(f, "Docker: binary %s; process %s; %s %s", d->binary ? d->binary : "not found",
                                 d->process.pid ? "running" : "not seen in /proc", d->file.path,
                                 d->file.rc == -ENOENT ? "absent"
                                 : d->file.rc < 0      ? "unreadable"
                                                       : "read");
                if (d->file.rc == -EFBIG)
                        part_add(&acc, CHECK_WARN, too_large_summary("Docker", &d->file, 1, d->file.path),
                                 too_large_remedy("dockerd --validate"));
                else if (d->file.rc < 0 && d->file.rc != -ENOENT)
                        part_add(&acc, CHECK_FAIL, xasprintf("Docker cannot load %s", d->file.error),
                                 xasprintf("fix the JSON in %s (dockerd refuses to start with it); check with `dockerd "
                                           "--validate`",
                                           d->file.path));
                else
                        part_add(&acc, CHECK_PASS,
                                 xasprintf("Docker config %s", d->file.rc == 0 ? "read" : "absent (defaults)"), NULL);
        }
        if (acc.status == CHECK_PASS) {
                free(acc.summary);
                acc.summary =
                        xasprintf("runtime config read: %s%s%s%s%s", c->present ? "containerd" : "",
                                  c->present && (r->crio.present || r->docker.present) ? ", " : "",
                                  r->crio.present ? "CRI-O" : "", r->crio.present && r->docker.present ? ", " : "",
                                  r->docker.present ? "Docker" : "");
                if (c->present && c->rc == 0 && !c->cri_disabled) {
                        free(acc.summary);
                        acc.summary = xasprintf("containerd config v%d read (%zu file(s), CRI plugin %s)%s%s",
                                                c->version, c->n_files, c->cri_plugin, r->crio.present ? ", CRI-O" : "",
                                                r->docker.present ? ", Docker" : "");
                }
        }
        part_finish(&acc, f);
}

/* Judges container-toolkit.toolkit-installed (the NVIDIA Container Toolkit is installed and its config
 * parses) from the facts into f; never fails: what it cannot read, it says. */
static void run_toolkit_installed(const struct node_facts *facts, struct finding *f) {
        if (runtime_skip_if_absent(facts, f)) return;
        const struct toolkit_facts *t = &facts->runtime->toolkit;
        for (size_t i = 0; i < TOOLKIT_N_BINARIES; i++)
                finding_evidence(f, "%s: %s", t->names[i], t->paths[i] ? t->paths[i] : "not found");
        if (t->config.path)
                finding_evidence(f, "%s: %s%s%s", t->config.path, t->config.rc < 0 ? "unreadable" : "parsed",
                                 t->mode ? ", mode " : "", t->mode ? t->mode : "");
        else
                finding_evidence(f, "no /etc/nvidia-container-runtime/config.toml: the toolkit uses its defaults");
        if (t->n_validations) {
                struct buf b = { 0 };
                for (size_t i = 0; i < t->n_validations; i++) buf_printf(&b, "%s%s", i ? ", " : "", t->validations[i]);
                finding_evidence(f, "GPU Operator validations in /run/nvidia/validations: %s", b.data);
                buf_free(&b);
        }
        if (!t->paths[TOOLKIT_RUNTIME]) {
                finding_fail(f,
                             "the NVIDIA Container Toolkit is not installed: no nvidia-container-runtime in /usr/bin, "
                             "/usr/local/bin or /usr/local/nvidia/toolkit");
                finding_remedy(f, "install it (`apt-get install nvidia-container-toolkit` or `dnf install "
                                  "nvidia-container-toolkit`); "
                                  "with the GPU Operator read the toolkit pod's log (kubectl logs -n gpu-operator -l "
                                  "app=nvidia-container-toolkit-daemonset)");
                return;
        }
        if (t->config.rc < 0 && t->config.rc != -ENOENT) {
                finding_fail(f, "the toolkit's config cannot be read: %s", t->config.error);
                finding_remedy(
                        f,
                        "fix that file (nvidia-container-runtime reads it at every container start), or regenerate it "
                        "with `nvidia-ctk config --config-file %s --in-place`",
                        t->config.path);
                return;
        }
        bool cdi_mode = t->mode && streq(t->mode, "cdi");
        if (!cdi_mode && !t->paths[TOOLKIT_CLI]) {
                finding_warn(f, "nvidia-container-cli is missing: the runtime's legacy mode cannot inject GPUs");
                finding_remedy(f,
                               "reinstall the toolkit (libnvidia-container-tools), or switch the runtime to CDI mode "
                               "(`nvidia-ctk config --set nvidia-container-runtime.mode=cdi --in-place`)");
                return;
        }
        _cleanup_free_ char *dir = xstrndup(t->paths[TOOLKIT_RUNTIME],
                                            strrchr(t->paths[TOOLKIT_RUNTIME], '/') - t->paths[TOOLKIT_RUNTIME]);
        finding_pass(f, "NVIDIA Container Toolkit installed in %s%s", dir, cdi_mode ? " (CDI mode)" : "");
}

/* Returns the path of the first CDI spec that parsed and injects NVIDIA GPUs (nvidia-ctk's nvidia.com/gpu, or the
 * device plugin's own k8s.device-plugin.nvidia.com/gpu), or NULL when there is none. */
static const char *nvidia_cdi_spec(const struct runtime_facts *r) {
        for (size_t i = 0; i < r->cdi.n_specs; i++) {
                const struct cdi_spec *s = &r->cdi.specs[i];
                if (s->rc == 0 && s->kind &&
                    (streq(s->kind, "nvidia.com/gpu") || streq(s->kind, "k8s.device-plugin.nvidia.com/gpu")))
                        return s->path;
        }
        return NULL;
}

/* What the cluster's answers show about pods selecting the nvidia runtime by RuntimeClass. */
enum runtime_class_use {
        RC_UNKNOWN,  /* no cluster answers: cannot be told */
        RC_SELECTED, /* a pod on this node sets runtimeClassName nvidia*, and no GPU pod goes without it */
        RC_NOT_SELECTED,
};

#define RC_EVIDENCE_MAX 4

/* Reads the pods on this node (from the API) for runtimeClassName. Returns RC_UNKNOWN with a malloc'd reason in
 * *ret_why when the cluster's answers are not available; RC_NOT_SELECTED with a malloc'd sentence in *ret_why when a
 * pod requesting an nvidia.com/ resource sets no nvidia RuntimeClass, or no pod sets one; else RC_SELECTED. Adds the
 * pods it saw as evidence; never fails. */
static enum runtime_class_use runtime_class_use(const struct node_facts *facts, struct finding *f, char **ret_why) {
        const struct node_pods *a = &facts->pods;
        *ret_why = NULL;
        if (a->api_rc < 0 || a->list_rc < 0) {
                *ret_why = xstrdup(a->api_rc == -ENOENT ? "no cluster access"
                                   : a->api_rc < 0      ? "the Kubernetes API did not answer"
                                                        : "the pods on this node could not be listed");
                return RC_UNKNOWN;
        }
        size_t selected = 0, gpu_without = 0;
        const struct node_pod *first_without = NULL;
        for (size_t i = 0; i < a->n_pods; i++) {
                const struct node_pod *p = &a->pods[i];
                bool nv = p->runtime_class && startswith(p->runtime_class, "nvidia");
                if (nv && selected++ < RC_EVIDENCE_MAX)
                        finding_evidence(f, "pod %s/%s: runtimeClassName %s", p->namespace, p->name, p->runtime_class);
                if (p->requests_gpu && !nv) {
                        if (gpu_without++ < RC_EVIDENCE_MAX)
                                finding_evidence(f,
                                                 "pod %s/%s requests an nvidia.com/ resource with runtimeClassName %s",
                                                 p->namespace, p->name, p->runtime_class ? p->runtime_class : "unset");
                        if (!first_without) first_without = p;
                }
        }
        if (selected > RC_EVIDENCE_MAX)
                finding_evidence(f, "%zu more pods with an nvidia runtimeClassName", selected - RC_EVIDENCE_MAX);
        if (gpu_without) {
                *ret_why =
                        xasprintf("%zu GPU pod(s) on this node (%s/%s%s) set no nvidia runtimeClassName", gpu_without,
                                  first_without->namespace, first_without->name, gpu_without > 1 ? ", ..." : "");
                return RC_NOT_SELECTED;
        }
        if (selected) return RC_SELECTED;
        finding_evidence(f, "none of the %zu pods on this node sets an nvidia runtimeClassName", a->n_pods);
        *ret_why = xasprintf("none of the %zu pods on this node sets runtimeClassName: nvidia", a->n_pods);
        return RC_NOT_SELECTED;
}

/* One runtime's default-runtime setting, for default_runtime_judge. */
struct default_setting {
        const char *runtime;   /* "containerd", "CRI-O", "Docker" */
        const char *value;     /* the default runtime's name as configured; NULL when unset */
        const char *builtin;   /* what the runtime uses when unset */
        const char *key;       /* the key to set, spelled as in its file */
        const char *file;      /* the file that sets it, or the one to set it in */
        const char *configure; /* the nvidia-ctk command that sets it */
        bool cdi_on;           /* the runtime injects CDI devices itself */
        const char *cdi_how;   /* why cdi_on, for evidence */
};

/* Judges whether the setup needs nvidia as this runtime's default runtime and adds the outcome to acc: pass when
 * it is the default, when CDI injects GPUs without it (CDI on and a spec present), when pods select nvidia by
 * RuntimeClass, or when that cannot be told (no cluster answers: said in the summary); warn when nothing shows GPU
 * pods select nvidia. `have` opens the summary ("containerd has the nvidia runtime (...)"). Never fails. */
static void default_runtime_judge(const struct node_facts *facts, const struct default_setting *d, const char *have,
                                  struct finding *f, struct part *acc) {
        const char *def = d->value ? d->value : d->builtin;
        if (d->value && startswith(d->value, "nvidia")) {
                part_add(acc, CHECK_PASS, xasprintf("%s, the default runtime", have), NULL);
                return;
        }
        finding_evidence(f, "%s's default runtime: %s = \"%s\"%s%s", d->runtime, d->key, def,
                         d->value ? " in " : " (unset: the built-in default)", d->value ? d->file : "");
        if (streq(d->runtime, "containerd") && facts->runtime->toolkit.operator_dir)
                finding_evidence(
                        f, "the GPU Operator's toolkit (/usr/local/nvidia/toolkit) sets nvidia as the default runtime "
                           "unless told otherwise (CDI enabled, or set-as-default turned off): here it was");
        const char *spec = nvidia_cdi_spec(facts->runtime);
        if (d->cdi_on && spec) {
                finding_evidence(f, "%s injects CDI devices (%s) and %s exists", d->runtime, d->cdi_how, spec);
                part_add(acc, CHECK_PASS,
                         xasprintf("%s; not the default (%s), and it need not be: CDI devices from %s are "
                                   "injected by %s itself",
                                   have, def, spec, d->runtime),
                         NULL);
                return;
        }
        if (d->cdi_on)
                finding_evidence(
                        f, "%s injects CDI devices (%s) but no NVIDIA CDI spec exists in /etc/cdi or /var/run/cdi",
                        d->runtime, d->cdi_how);
        else if (spec)
                finding_evidence(f, "%s exists, but %s does not inject CDI devices itself (%s)", spec, d->runtime,
                                 d->cdi_how);
        _cleanup_free_ char *why = NULL;
        switch (runtime_class_use(facts, f, &why)) {
        case RC_SELECTED:
                part_add(acc, CHECK_PASS,
                         xasprintf("%s; not the default (%s): pods select it by runtimeClassName: nvidia", have, def),
                         NULL);
                return;
        case RC_UNKNOWN:
                finding_evidence(f, "whether GPU pods select nvidia by RuntimeClass cannot be told: %s", why);
                part_add(acc, CHECK_PASS,
                         xasprintf("%s; not the default (%s): GPU pods need runtimeClassName: nvidia (whether "
                                   "they set it cannot be told without the cluster's answers)",
                                   have, def),
                         NULL);
                return;
        case RC_NOT_SELECTED: break;
        }
        part_add(acc, CHECK_WARN,
                 xasprintf("%s's default runtime is %s (%s%s%s), not nvidia, and nothing shows GPU pods select nvidia: "
                           "%s, and "
                           "CDI is not in use; such pods start without GPUs",
                           d->runtime, def, d->key, d->value ? " in " : " unset in ", d->file, why),
                 xasprintf("set %s = \"nvidia\" in %s (`%s`), then `%s`; or give GPU pods runtimeClassName: nvidia (a "
                           "RuntimeClass "
                           "with handler nvidia)",
                           d->key, d->file, d->configure, restart_cmd(d->runtime)));
}

/* Judges containerd's nvidia runtime, and whether it is the default where the setup needs it, into acc. */
static void nvidia_runtime_containerd(const struct node_facts *facts, const struct containerd_facts *c,
                                      struct finding *f, struct part *acc) {
        if (c->rc == -EFBIG) {
                part_add(acc, CHECK_SKIP,
                         xasprintf("cannot tell whether containerd has the nvidia runtime: its config is over "
                                   "gpunode's read limit (see container-toolkit.runtime-config)"),
                         NULL);
                return;
        }
        if (c->rc < 0 && c->rc != -ENOENT) {
                part_add(acc, CHECK_SKIP,
                         xasprintf("containerd's config could not be loaded (see container-toolkit.runtime-config)"),
                         NULL);
                return;
        }
        _cleanup_free_ char *table = cri_key(c, "containerd.runtimes.nvidia");
        const struct ctd_runtime *nv = NULL;
        for (size_t i = 0; i < c->n_runtimes; i++) {
                const struct ctd_runtime *rt = &c->runtimes[i];
                if (!startswith(rt->name, "nvidia")) continue;
                finding_evidence(f, "containerd runtime %s: runtime_type %s (%s), %s %s (%s)", rt->name,
                                 rt->runtime_type ? rt->runtime_type : "unset",
                                 rt->runtime_type_file ? rt->runtime_type_file : "-",
                                 rt->binary_key ? rt->binary_key : "BinaryName",
                                 rt->binary_name ? rt->binary_name : "unset", rt->binary_file ? rt->binary_file : "-");
                if (streq(rt->name, "nvidia")) nv = rt;
        }
        if (c->default_runtime)
                finding_evidence(f, "default_runtime_name = \"%s\" (%s)", c->default_runtime, c->default_runtime_file);
        if (c->enable_cdi >= 0)
                finding_evidence(f, "enable_cdi = %s (%s)", c->enable_cdi ? "true" : "false", c->enable_cdi_file);
        if (c->merge_other) {
                part_add(acc, CHECK_WARN,
                         xasprintf("cannot tell whether containerd has the nvidia runtime: its imports merge "
                                   "differently in "
                                   "containerd 1.x and 2.x (%s), and containerd's version is unknown (%s)",
                                   c->merge_other, c->version_from ? c->version_from : "cannot tell"),
                         xasprintf("`containerd --version` says which; `containerd config dump | grep -n -A3 "
                                   "'runtimes.nvidia'` shows what it loaded. Putting every CRI setting in one file "
                                   "makes both "
                                   "versions agree"));
                return;
        }
        if (!nv) {
                const struct runtime_config_file *stray = NULL, *shadowed = NULL;
                for (size_t i = 0; i < c->n_stray && !stray; i++)
                        if (c->stray[i].mentions_nvidia) stray = &c->stray[i];
                for (size_t i = 0; i < c->n_files && !shadowed; i++)
                        if (c->files[i].mentions_nvidia) shadowed = &c->files[i];
                const char *main = c->config_path;
                if (stray) {
                        char *why =
                                c->misplaced_imports
                                        ? xasprintf(
                                                  "the `imports` line in %s sits inside [%s], so containerd ignores it",
                                                  main, c->misplaced_imports)
                                        : xasprintf("%s imports no file that matches it", main);
                        _cleanup_free_ char *dir = xstrndup(stray->path, strrchr(stray->path, '/') - stray->path);
                        part_add(acc, CHECK_FAIL,
                                 xasprintf("containerd was patched in a file it does not read: %s defines the nvidia "
                                           "runtime but %s",
                                           stray->path, why),
                                 xasprintf("add `imports = [\"%s/*.toml\"]` to %s as a top-level key, above the first "
                                           "[table] "
                                           "(keep version = %d), then `systemctl restart containerd`",
                                           dir, main, c->version));
                        free(why);
                } else if (shadowed && c->cri_owner) {
                        part_add(acc, CHECK_FAIL,
                                 c->major ? xasprintf("containerd was patched in %s, but the CRI plugin table of %s, "
                                                      "loaded later, "
                                                      "replaces it whole (containerd %d.%d merges imports plugin by "
                                                      "plugin)",
                                                      shadowed->path, c->cri_owner, c->major, c->minor)
                                          : xasprintf("containerd was patched in %s, but the CRI plugin table of %s, "
                                                      "loaded later, "
                                                      "replaces it whole (containerd 1.x imports)",
                                                      shadowed->path, c->cri_owner),
                                 xasprintf("put the nvidia runtime in %s too (or all CRI settings in one file): "
                                           "`nvidia-ctk runtime "
                                           "configure --runtime=containerd --config=%s`, then `systemctl restart "
                                           "containerd`",
                                           c->cri_owner, c->cri_owner));
                } else {
                        part_add(acc, CHECK_FAIL,
                                 xasprintf("containerd was never patched: no nvidia runtime ([%s]) in %s%s", table,
                                           main, c->n_files > 1 ? " or its imports" : ""),
                                 xasprintf(
                                         "run `nvidia-ctk runtime configure --runtime=containerd` (add "
                                         "--set-as-default where "
                                         "pods do not use runtimeClassName: nvidia), then `systemctl restart "
                                         "containerd`; with "
                                         "the GPU Operator read the toolkit pod's log (kubectl logs -n gpu-operator -l "
                                         "app=nvidia-container-toolkit-daemonset)"));
                }
                return;
        }
        if (c->default_runtime) {
                bool defined = false;
                for (size_t i = 0; i < c->n_runtimes; i++) defined |= streq(c->runtimes[i].name, c->default_runtime);
                if (!defined) {
                        _cleanup_free_ char *key = cri_key(c, "containerd.default_runtime_name");
                        part_add(acc, CHECK_FAIL,
                                 xasprintf("default_runtime_name \"%s\" (%s) names no runtime: the CRI plugin does not "
                                           "start",
                                           c->default_runtime, c->default_runtime_file),
                                 xasprintf("set %s in %s to a runtime that is defined (\"nvidia\" or \"runc\"), then "
                                           "`systemctl "
                                           "restart containerd`",
                                           key, c->default_runtime_file));
                        return;
                }
        }
        bool linux_v1 = streq_ptr(nv->runtime_type, "io.containerd.runtime.v1.linux");
        if (linux_v1 && containerd_is_2x(c)) {
                _cleanup_free_ char *key = cri_key(c, "containerd.runtimes.nvidia.runtime_type");
                part_add(acc, CHECK_FAIL,
                         xasprintf("the nvidia runtime's runtime_type is io.containerd.runtime.v1.linux, which "
                                   "containerd 2.0 "
                                   "removed: pods using it do not start"),
                         xasprintf("set %s = \"io.containerd.runc.v2\" and options.BinaryName = "
                                   "\"/usr/bin/nvidia-container-runtime\" "
                                   "in %s (`nvidia-ctk runtime configure --runtime=containerd` writes both), then "
                                   "`systemctl restart "
                                   "containerd`",
                                   key, nv->runtime_type_file));
                return;
        }
        if (!nv->binary_name) {
                _cleanup_free_ char *key = cri_key(c, "containerd.runtimes.nvidia.options");
                part_add(
                        acc, CHECK_FAIL,
                        xasprintf("the nvidia runtime has no options.%s: containerd runs plain runc and injects no GPU",
                                  linux_v1 ? "Runtime (what runtime_type io.containerd.runtime.v1.linux runs)"
                                           : "BinaryName"),
                        xasprintf("set %s = \"/usr/bin/nvidia-container-runtime\" in [%s] of %s (or rerun `nvidia-ctk "
                                  "runtime configure --runtime=containerd`), then `systemctl restart containerd`",
                                  linux_v1 ? "Runtime" : "BinaryName", key,
                                  nv->runtime_type_file ? nv->runtime_type_file : c->config_path));
                return;
        }
        /* runc.v2 and runc.v1 run options.BinaryName; the v1 linux shim (containerd 1.x) options.Runtime */
        if (nv->runtime_type && !streq(nv->runtime_type, "io.containerd.runc.v2") &&
            !streq(nv->runtime_type, "io.containerd.runc.v1") && !linux_v1) {
                _cleanup_free_ char *key = cri_key(c, "containerd.runtimes.nvidia.runtime_type");
                part_add(acc, CHECK_FAIL,
                         xasprintf("the nvidia runtime's runtime_type is \"%s\", not io.containerd.runc.v2: BinaryName "
                                   "is not used",
                                   nv->runtime_type),
                         xasprintf("set %s = \"io.containerd.runc.v2\" in %s, then `systemctl restart containerd`", key,
                                   nv->runtime_type_file));
                return;
        }
        _cleanup_free_ char *key = cri_key(c, "containerd.default_runtime_name");
        _cleanup_free_ char *cdi_key = cri_key(c, "enable_cdi");
        _cleanup_free_ char *cdi_how =
                c->enable_cdi >= 0
                        ? xasprintf("%s = %s in %s", cdi_key, c->enable_cdi ? "true" : "false", c->enable_cdi_file)
                        : xasprintf("%s unset: containerd %s", cdi_key,
                                    containerd_is_2x(c) ? "2.x turns it on" : "1.x leaves it off");
        _cleanup_free_ char *have = xasprintf("containerd has the nvidia runtime (%s)", nv->binary_file);
        struct default_setting d = {
                .runtime = "containerd",
                .value = c->default_runtime,
                .builtin = "runc",
                .key = key,
                .file = c->default_runtime ? c->default_runtime_file
                        : nv->binary_file  ? nv->binary_file
                                           : c->config_path,
                .configure = "nvidia-ctk runtime configure --runtime=containerd --set-as-default",
                .cdi_on = c->enable_cdi == 1 || (c->enable_cdi < 0 && containerd_is_2x(c)),
                .cdi_how = cdi_how,
        };
        default_runtime_judge(facts, &d, have, f, acc);
}

/* Judges container-toolkit.nvidia-runtime (the runtime in use defines the nvidia runtime (containerd
 * CRI table, CRI-O drop-in, Docker daemon.json)) from the facts into f; never fails: what it cannot
 * read, it says. */
static void run_nvidia_runtime(const struct node_facts *facts, struct finding *f) {
        if (runtime_skip_if_absent(facts, f)) return;
        const struct runtime_facts *r = facts->runtime;
        struct part acc = { 0 };
        if (containerd_active(r)) nvidia_runtime_containerd(facts, &r->containerd, f, &acc);
        if (r->crio.present) {
                const struct crio_facts *o = &r->crio;
                if (o->default_runtime)
                        finding_evidence(f, "CRI-O [crio.runtime] default_runtime = \"%s\" (%s)", o->default_runtime,
                                         o->default_runtime_file);
                if (o->rc < 0)
                        part_add(&acc, CHECK_SKIP, xasprintf("CRI-O's config could not be loaded"), NULL);
                else if (!o->has_nvidia)
                        part_add(&acc, CHECK_FAIL,
                                 xasprintf("CRI-O was never patched: no [crio.runtime.runtimes.nvidia] in "
                                           "/etc/crio/crio.conf or /etc/crio/crio.conf.d/ (no %s)",
                                           CRIO_NVIDIA_DROPIN),
                                 xasprintf("add %s with [crio.runtime.runtimes.nvidia] runtime_path = \"%s\" and "
                                           "runtime_type = "
                                           "\"oci\" (what `nvidia-ctk runtime configure --runtime=crio` writes), then "
                                           "`systemctl "
                                           "restart crio`",
                                           CRIO_NVIDIA_DROPIN,
                                           r->toolkit.paths[TOOLKIT_RUNTIME] ? r->toolkit.paths[TOOLKIT_RUNTIME]
                                                                             : "/usr/bin/nvidia-container-runtime"));
                else if (!o->nvidia_path)
                        part_add(&acc, CHECK_FAIL,
                                 xasprintf("CRI-O's [crio.runtime.runtimes.nvidia] (%s) has no runtime_path: CRI-O "
                                           "cannot run it",
                                           o->nvidia_file),
                                 xasprintf("set runtime_path = \"/usr/bin/nvidia-container-runtime\" in "
                                           "[crio.runtime.runtimes.nvidia] "
                                           "of %s, then `systemctl restart crio`",
                                           o->nvidia_file));
                else {
                        finding_evidence(f, "CRI-O runtime nvidia: runtime_path %s (%s)", o->nvidia_path,
                                         o->nvidia_file);
                        _cleanup_free_ char *have = xasprintf("CRI-O has the nvidia runtime (%s)", o->nvidia_file);
                        struct default_setting d = {
                                .runtime = "CRI-O",
                                .value = o->default_runtime,
                                .builtin = "crun or runc",
                                .key = "[crio.runtime] default_runtime",
                                .file = o->default_runtime ? o->default_runtime_file : o->nvidia_file,
                                .configure = "nvidia-ctk runtime configure --runtime=crio --set-as-default",
                                .cdi_on = true,
                                .cdi_how = "CRI-O always does",
                        };
                        default_runtime_judge(facts, &d, have, f, &acc);
                }
        }
        if (r->docker.present) {
                const struct docker_facts *d = &r->docker;
                if (d->default_runtime)
                        finding_evidence(f, "Docker \"default-runtime\": \"%s\" in %s", d->default_runtime,
                                         d->file.path);
                if (d->file.rc < 0 && d->file.rc != -ENOENT)
                        part_add(&acc, CHECK_SKIP, xasprintf("daemon.json could not be loaded"), NULL);
                else if (!d->has_nvidia) {
                        if (d->cdi_feature)
                                part_add(&acc, CHECK_PASS,
                                         xasprintf("Docker has no nvidia runtime but CDI is on: "
                                                   "`--device nvidia.com/gpu=all` works"),
                                         NULL);
                        else
                                part_add(&acc, CHECK_WARN,
                                         xasprintf("Docker has no nvidia runtime in %s: `--runtime=nvidia` fails (only "
                                                   "`--gpus` "
                                                   "works, through the toolkit's hook)",
                                                   d->file.path),
                                         xasprintf("run `nvidia-ctk runtime configure --runtime=docker`, then "
                                                   "`systemctl restart "
                                                   "docker`"));
                } else {
                        finding_evidence(f, "Docker runtimes.nvidia.path = \"%s\" (%s)",
                                         d->nvidia_path ? d->nvidia_path : "", d->file.path);
                        _cleanup_free_ char *have = xasprintf("Docker has the nvidia runtime (%s)", d->file.path);
                        if (facts->pods.kubernetes && !containerd_active(r) && !r->crio.present) {
                                /* the kubelet runs pods through Docker (cri-dockerd): the same question as for
                                 * containerd */
                                struct default_setting ds = {
                                        .runtime = "Docker",
                                        .value = d->default_runtime,
                                        .builtin = "runc",
                                        .key = "\"default-runtime\"",
                                        .file = d->file.path,
                                        .configure = "nvidia-ctk runtime configure --runtime=docker --set-as-default",
                                        .cdi_on = d->cdi_feature,
                                        .cdi_how = d->cdi_feature ? "\"features\": {\"cdi\": true} in daemon.json"
                                                                  : "no \"features\": {\"cdi\": true} in daemon.json",
                                };
                                default_runtime_judge(facts, &ds, have, f, &acc);
                        } else {
                                bool is_default = d->default_runtime && streq(d->default_runtime, "nvidia");
                                if (!is_default)
                                        finding_evidence(
                                                f, "not a Kubernetes node through Docker: containers choose the nvidia "
                                                   "runtime themselves (--runtime=nvidia, --gpus)");
                                part_add(&acc, CHECK_PASS,
                                         xasprintf("%s%s", have, is_default ? ", the default runtime" : ""), NULL);
                        }
                }
        }
        if (!acc.summary)
                part_add(&acc, CHECK_SKIP, xasprintf("containerd serves Docker only (CRI plugin disabled)"), NULL);
        part_finish(&acc, f);
}

/* Returns a sentence for a binary_rc. */
static const char *binary_problem(int rc) {
        switch (rc) {
        case -ENOENT: return "does not exist";
        case -EACCES: return "is not executable";
        case -EISDIR: return "is a directory";
        default: return "is not a regular file";
        }
}

/* Judges container-toolkit.runtime-binary (the binary each nvidia runtime names exists under the root
 * and is executable) from the facts into f; never fails: what it cannot read, it says. */
static void run_runtime_binary(const struct node_facts *facts, struct finding *f) {
        if (runtime_skip_if_absent(facts, f)) return;
        const struct runtime_facts *r = facts->runtime;
        const struct toolkit_facts *t = &r->toolkit;
        const char *installed = t->paths[TOOLKIT_RUNTIME];
        struct part acc = { 0 };
        if (containerd_active(r)) {
                const struct containerd_facts *c = &r->containerd;
                for (size_t i = 0; i < c->n_runtimes; i++) {
                        const struct ctd_runtime *rt = &c->runtimes[i];
                        if (!startswith(rt->name, "nvidia") || !rt->binary_name) continue;
                        const char *bk = rt->binary_key ? rt->binary_key : "BinaryName";
                        finding_evidence(f, "containerd runtime %s: %s %s%s%s", rt->name, rt->binary_name,
                                         rt->binary_rc == 0 ? "is executable" : binary_problem(rt->binary_rc),
                                         streq(bk, "BinaryName") ? "" : " (options.",
                                         streq(bk, "BinaryName") ? "" : "Runtime)");
                        if (rt->binary_rc == 0) {
                                part_add(&acc, CHECK_PASS,
                                         streq(bk, "BinaryName")
                                                 ? xasprintf("every nvidia runtime's BinaryName is an executable file")
                                                 : xasprintf("every nvidia runtime's binary (options.%s) is an "
                                                             "executable file",
                                                             bk),
                                         NULL);
                                continue;
                        }
                        _cleanup_free_ char *key = cri_key(c, "containerd.runtimes.");
                        char *remedy;
                        if (rt->binary_rc == -EACCES)
                                remedy = xasprintf("`chmod 755 %s`, or reinstall the toolkit", rt->binary_name);
                        else if (installed)
                                remedy = xasprintf("set %s%s.options.%s in %s to a binary that exists (the toolkit is "
                                                   "installed as %s%s), then `systemctl restart containerd`",
                                                   key, rt->name, bk, rt->binary_file, installed,
                                                   streq(rt->name, "nvidia") ? "" : " and its .cdi/.legacy variants");
                        else
                                remedy = xasprintf("install the NVIDIA Container Toolkit so that %s exists, or point "
                                                   "%s%s.options.%s in %s at it; then `systemctl restart containerd`",
                                                   rt->binary_name, key, rt->name, bk, rt->binary_file);
                        part_add(&acc, CHECK_FAIL,
                                 xasprintf("containerd runtime %s's %s %s (set in %s) %s: containers using it fail to "
                                           "start",
                                           rt->name, bk, rt->binary_name, rt->binary_file,
                                           binary_problem(rt->binary_rc)),
                                 remedy);
                }
        }
        if (r->crio.present && r->crio.has_nvidia && r->crio.nvidia_path) {
                const struct crio_facts *o = &r->crio;
                finding_evidence(f, "CRI-O runtime nvidia: %s %s", o->nvidia_path,
                                 o->nvidia_path_rc == 0 ? "is executable" : binary_problem(o->nvidia_path_rc));
                if (o->nvidia_path_rc == 0)
                        part_add(&acc, CHECK_PASS, xasprintf("CRI-O's nvidia runtime_path is an executable file"),
                                 NULL);
                else
                        part_add(&acc, CHECK_FAIL,
                                 xasprintf("CRI-O runtime nvidia's runtime_path %s (set in %s) %s", o->nvidia_path,
                                           o->nvidia_file, binary_problem(o->nvidia_path_rc)),
                                 xasprintf("set runtime_path in [crio.runtime.runtimes.nvidia] of %s to %s, then "
                                           "`systemctl restart crio`",
                                           o->nvidia_file,
                                           installed ? installed : "the installed nvidia-container-runtime"));
        }
        if (r->docker.present && r->docker.has_nvidia) {
                const struct docker_facts *d = &r->docker;
                const char *p = d->nvidia_path ? d->nvidia_path : "(no path)";
                finding_evidence(f, "Docker runtime nvidia: %s %s%s%s", p,
                                 d->nvidia_path_rc == 0 ? "found" : binary_problem(d->nvidia_path_rc),
                                 d->nvidia_resolved && !streq(d->nvidia_resolved, p) ? " as " : "",
                                 d->nvidia_resolved && !streq(d->nvidia_resolved, p) ? d->nvidia_resolved : "");
                if (d->nvidia_path_rc == 0)
                        part_add(&acc, CHECK_PASS,
                                 xasprintf("Docker's nvidia runtime path resolves to an executable file"), NULL);
                else
                        part_add(&acc, CHECK_FAIL,
                                 xasprintf("Docker runtime nvidia's path %s (%s) %s", p, d->file.path,
                                           binary_problem(d->nvidia_path_rc)),
                                 xasprintf("set runtimes.nvidia.path in %s to %s, then `systemctl restart docker`",
                                           d->file.path,
                                           installed ? installed : "the installed nvidia-container-runtime"));
        }
        if (!acc.summary) {
                finding_skip(f, "no nvidia runtime names a binary");
                return;
        }
        part_finish(&acc, f);
}

/* Formats a unix time as "2024-03-05 22:23:56 UTC" into buf. */
static const char *format_time(int64_t t, char *buf, size_t size) {
        time_t tt = (time_t)t;
        struct tm tm;
        if (!gmtime_r(&tt, &tm) || strftime(buf, size, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
                snprintf(buf, size, "%lld", (long long)t);
        return buf;
}

/* Judges one daemon's start time against its config files. */
static void applied_one(const char *name, const struct runtime_process *p, const struct runtime_config_file *files,
                        size_t n, bool proc_visible, struct finding *f, struct part *acc) {
        if (!p->pid) {
                if (proc_visible)
                        part_add(acc, CHECK_WARN, xasprintf("%s is installed but not running", name),
                                 xasprintf("`systemctl status %s` and its journal (`journalctl -u %s`)",
                                           streq(name, "CRI-O")    ? "crio"
                                           : streq(name, "Docker") ? "docker"
                                                                   : "containerd",
                                           streq(name, "CRI-O")    ? "crio"
                                           : streq(name, "Docker") ? "docker"
                                                                   : "containerd"));
                else
                        part_add(acc, CHECK_SKIP,
                                 xasprintf("no processes visible under the root: cannot tell when %s started", name),
                                 NULL);
                return;
        }
        if (p->started < 0) {
                part_add(acc, CHECK_SKIP, xasprintf("cannot tell when %s (pid %d) started", name, p->pid), NULL);
                return;
        }
        char when[64];
        size_t newer = 0, known = 0;
        const char *first = NULL;
        for (size_t i = 0; i < n; i++) {
                if (files[i].mtime < 0) continue;
                known++;
                /* one second of slack: btime has second resolution */
                if (files[i].mtime > p->started + 1) {
                        newer++;
                        if (!first) first = files[i].path;
                        finding_evidence(f, "%s changed after %s (pid %d) started", files[i].path, name, p->pid);
                }
        }
        if (newer) {
                finding_evidence(f, "%s (pid %d) started %s (%s)", name, p->pid,
                                 format_time(p->started, when, sizeof when), p->started_from);
                part_add(acc, CHECK_FAIL,
                         xasprintf("%s was patched but not restarted: %s changed after it started, so the running %s "
                                   "does not "
                                   "have the change",
                                   name, first, name),
                         xasprintf("`%s` (running containers keep running), then rerun gpunode", restart_cmd(name)));
                return;
        }
        if (known == 0) {
                part_add(acc, CHECK_SKIP, xasprintf("%s has no config file to compare", name), NULL);
                return;
        }
        finding_evidence(f, "%s (pid %d) started after the last change to its %zu config file(s)", name, p->pid, known);
        part_add(acc, CHECK_PASS, xasprintf("the running %s started after its config was last changed", name), NULL);
}

/* Judges container-toolkit.config-applied (the running runtime daemon started after its config files
 * were last changed) from the facts into f; never fails: what it cannot read, it says. */
static void run_config_applied(const struct node_facts *facts, struct finding *f) {
        if (runtime_skip_if_absent(facts, f)) return;
        const struct runtime_facts *r = facts->runtime;
        struct part acc = { 0 };
        if (containerd_active(r) && r->containerd.n_files)
                applied_one("containerd", &r->containerd.process, r->containerd.files, r->containerd.n_files,
                            r->proc_visible, f, &acc);
        if (r->crio.present)
                applied_one("CRI-O", &r->crio.process, r->crio.files, r->crio.n_files, r->proc_visible, f, &acc);
        if (r->docker.present && r->docker.file.rc == 0)
                applied_one("Docker", &r->docker.process, &r->docker.file, 1, r->proc_visible, f, &acc);
        if (!acc.summary) {
                finding_skip(f, "no runtime config file to compare with a running daemon");
                return;
        }
        part_finish(&acc, f);
}

const struct check_def check_container_toolkit_runtime_config = {
        .id = "container-toolkit.runtime-config",
        .action = ACTION_RECONFIGURE,
        .layer = 2,
        .component = "container-toolkit",
        .title = "the container runtime's configuration loads as the runtime itself loads it",
        .reads = "/etc/containerd/config.toml (or containerd's --config) and its imports (globs, relative paths, in "
                 "containerd's "
                 "order), /etc/containerd/conf.d/*.toml, /etc/crio/crio.conf and crio.conf.d/*, "
                 "/etc/docker/daemon.json, "
                 "containerd/crio/dockerd in /proc and on PATH; containerd's version from the dpkg package owning its "
                 "binary "
                 "(/var/lib/dpkg/status, /var/lib/dpkg/info/<package>.list), which sets the import merge rule (1.x: "
                 "plugin "
                 "tables whole, 2.x: key by key)",
        .outcomes =
                "pass: every file parses (TOML, JSON), versions agree; fail: a syntax error (file, line, column), an "
                "import that cannot be read, a drop-in with a higher version; skip: no container runtime on the host",
        .remedy = "fix the file, line and column named (containerd/crio/dockerd refuse a config they cannot parse); "
                  "check with `containerd config dump`",
        .run = run_runtime_config,
};

const struct check_def check_container_toolkit_toolkit_installed = {
        .id = "container-toolkit.toolkit-installed",
        .action = ACTION_RECONFIGURE,
        .layer = 2,
        .component = "container-toolkit",
        .title = "the NVIDIA Container Toolkit is installed and its config parses",
        .reads = "nvidia-container-runtime, nvidia-container-cli, nvidia-ctk, nvidia-cdi-hook in /usr/bin, "
                 "/usr/local/bin, "
                 "/usr/local/nvidia/toolkit; /etc/nvidia-container-runtime/config.toml; /run/nvidia/validations/*",
        .outcomes = "pass: installed; warn: nvidia-container-cli missing outside CDI mode; fail: no "
                    "nvidia-container-runtime, or "
                    "its config.toml does not parse; skip: no container runtime",
        .remedy = "install nvidia-container-toolkit (or read the GPU Operator's toolkit pod log); fix or regenerate "
                  "/etc/nvidia-container-runtime/config.toml",
        .run = run_toolkit_installed,
};

const struct check_def check_container_toolkit_nvidia_runtime = {
        .id = "container-toolkit.nvidia-runtime",
        .action = ACTION_RECONFIGURE,
        .layer = 2,
        .component = "container-toolkit",
        .title = "the runtime in use defines the nvidia runtime (containerd CRI table, CRI-O drop-in, Docker "
                 "daemon.json)",
        .reads = "the merged containerd config: <CRI plugin>.containerd.runtimes.nvidia* (runtime_type, "
                 "options.BinaryName), "
                 "default_runtime_name, enable_cdi; [crio.runtime.runtimes.nvidia], [crio.runtime] default_runtime; "
                 "daemon.json "
                 "runtimes.nvidia, \"default-runtime\"; CDI specs; the pods on this node (runtimeClassName, "
                 "nvidia.com/ requests) "
                 "from the API",
        .outcomes =
                "pass: defined; fail: never patched, patched in a drop-in containerd does not import, patched in a "
                "file "
                "whose CRI table a later import replaces (containerd 1.x), no BinaryName, a runtime_type other than "
                "io.containerd.runc.v2, a default_runtime_name naming no runtime; warn: Docker without the runtime, or "
                "nvidia "
                "not the default runtime while nothing shows GPU pods select it (no pod on the node sets "
                "runtimeClassName: "
                "nvidia, or a GPU pod does not, and CDI is off or has no spec); without the cluster's answers that "
                "cannot "
                "be told and it passes, saying so",
        .depends = { "container-toolkit.runtime-config" },
        .remedy = "`nvidia-ctk runtime configure --runtime=containerd|crio|docker`; make sure the main config imports "
                  "the drop-in it wrote; restart the runtime",
        .run = run_nvidia_runtime,
};

const struct check_def check_container_toolkit_runtime_binary = {
        .id = "container-toolkit.runtime-binary",
        .action = ACTION_RECONFIGURE,
        .layer = 2,
        .component = "container-toolkit",
        .title = "the binary each nvidia runtime names exists under the root and is executable",
        .reads = "options.BinaryName of containerd's nvidia* runtimes, CRI-O runtime_path, Docker runtimes.nvidia.path "
                 "(bare names "
                 "looked up on PATH)",
        .outcomes = "pass: executable; fail: missing or not executable (names the file and key to fix and where the "
                    "toolkit is "
                    "installed); skip: no binary named",
        .depends = { "container-toolkit.nvidia-runtime" },
        .remedy = "point BinaryName/runtime_path/path at the installed nvidia-container-runtime (/usr/bin or "
                  "/usr/local/nvidia/toolkit), then restart the runtime",
        .run = run_runtime_binary,
};

const struct check_def check_container_toolkit_config_applied = {
        .id = "container-toolkit.config-applied",
        .action = ACTION_RECONFIGURE,
        .layer = 2,
        .component = "container-toolkit",
        .title = "the running runtime daemon started after its config files were last changed",
        .reads = "/proc/<pid>/comm, /proc/<pid>/stat starttime with /proc/stat btime (or the time of /proc/<pid>), the "
                 "mtime of "
                 "every config file the runtime loads",
        .outcomes = "pass: started after the last change; fail: a config file changed after the daemon started "
                    "(patched, not "
                    "restarted); warn: installed but not running; skip: no processes visible",
        .depends = { "container-toolkit.runtime-config" },
        .remedy = "`systemctl restart containerd` (or crio, docker) so the running daemon reads the patched config",
        .run = run_config_applied,
};
