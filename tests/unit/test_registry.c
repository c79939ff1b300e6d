/* test_registry.c: the check registry and the symptom table are consistent, so explain cannot drift. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <ctype.h>

#include "engine/check.h"
#include "diagnose/registry.h"
#include "diagnose/symptoms.h"
#include "facts/node.h"
#include "facts/layer3_kubernetes.h"
#include "kube/net_replay.h"
#include "nvml/nvml_facts.h"

static const char *const components[] = {
        "driver", "fabric-manager", "nvswitch", "rdma", "sriov", "container-toolkit", "rdma-device-plugin", "device-plugin", "gfd",
        "mig-manager", "csi", "dcgm-exporter", "node-exporter", "logging-agent", "otel-agent", "gpu-operator",
        "network-operator", "kubelet", "gpu", "nvlink",
};

static bool known_component(const char *c) {
        for (size_t i = 0; i < ELEMENTSOF(components); i++)
                if (streq(components[i], c)) return true;
        return false;
}

/* Every check has a well-formed unique id, a layer, a component from DESIGN.md's table, the
 * texts explain prints, and rests only on checks that run before it. */
static void test_checks_well_formed(void **state) {
        size_t n;
        const struct check_def *const *all = check_registry(&n);
        assert_true(n >= 20);
        int last_layer = 1;
        for (size_t i = 0; i < n; i++) {
                const struct check_def *d = all[i];
                assert_non_null(d->id);
                for (const char *p = d->id; *p; p++) assert_true(islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-' || *p == '.');
                assert_non_null(strchr(d->id, '.'));
                assert_true(d->layer >= LAYER_MIN && d->layer <= LAYER_MAX);
                assert_true(d->layer >= last_layer); /* bottom-up order */
                last_layer = d->layer;
                if (!known_component(d->component)) fail_msg("check %s: unknown component %s", d->id, d->component);
                assert_true(d->title && *d->title && d->reads && *d->reads && d->outcomes && *d->outcomes);
                if (!d->remedy || !*d->remedy) fail_msg("check %s has no .remedy (what to do when it fails, for explain)", d->id);
                assert_non_null(d->run);
                assert_ptr_equal(check_find(d->id), d);
                for (size_t j = 0; j < i; j++)
                        if (streq(all[j]->id, d->id)) fail_msg("duplicate check id %s", d->id);
                for (size_t k = 0; k < CHECK_MAX_DEPS && d->depends[k]; k++) {
                        const struct check_def *dep = check_find(d->depends[k]);
                        if (!dep) fail_msg("check %s rests on unknown %s", d->id, d->depends[k]);
                        bool earlier = false;
                        for (size_t j = 0; j < i; j++) earlier |= all[j] == dep;
                        if (!earlier) fail_msg("check %s rests on %s, which runs after it", d->id, d->depends[k]);
                }
        }
}

/* Every check id the symptom table names exists, and every layer has at least one symptom
 * row when it has checks. */
static void test_symptoms_name_real_checks(void **state) {
        size_t n;
        const struct symptom *s = symptom_table(&n);
        assert_true(n > 0);
        for (size_t i = 0; i < n; i++) {
                assert_true(s[i].layer >= LAYER_MIN && s[i].layer <= LAYER_MAX);
                assert_true(s[i].symptom && *s[i].symptom && s[i].look_first && *s[i].look_first);
                assert_non_null(s[i].checks[0]);
                for (size_t c = 0; c < SYMPTOM_MAX_CHECKS && s[i].checks[c]; c++)
                        if (!check_find(s[i].checks[c])) fail_msg("symptom \"%s\" names unknown check %s", s[i].symptom, s[i].checks[c]);
        }
        size_t nc;
        const struct check_def *const *all = check_registry(&nc);
        for (int layer = LAYER_MIN; layer <= LAYER_MAX; layer++) {
                bool has_checks = false, has_symptom = false;
                for (size_t i = 0; i < nc; i++) has_checks |= all[i]->layer == layer;
                for (size_t i = 0; i < n; i++) has_symptom |= s[i].layer == layer;
                if (has_checks && !has_symptom) fail_msg("layer %d has checks but no symptom row", layer);
        }
}

/* Runs the check with this id on the facts; returns the finding (the caller frees its strings). */
static struct finding run_one(const char *id, const struct node_facts *facts) {
        const struct check_def *d = check_find(id);
        assert_non_null(d);
        struct finding f = {.def = d};
        d->run(facts, &f);
        return f;
}

/* Frees the strings of a finding that run_one returned. */
static void finding_done(struct finding *f) {
        free(f->summary);
        free(f->remedy);
        for (size_t i = 0; i < f->n_evidence; i++) free(f->evidence[i]);
        free(f->evidence);
}

/* An unreadable /proc/modules is "cannot tell", never "modules missing". */
static void test_rdma_modules_unreadable(void **state) {
        struct ib_device dev = {.name = (char *)"mlx5_0"};
        struct pci_function gpu = {0};
        struct node_facts facts = {
                .rdma = {.devices = &dev, .n_devices = 1, .have_uverbs = true},
                .modules = {.rc = -EACCES, .error = (char *)"cannot read /proc/modules: Permission denied"},
                .pci = {.gpus = &gpu, .n_gpus = 1},
        };
        struct finding f = run_one("rdma.devices", &facts);
        assert_int_equal(f.status, CHECK_WARN);
        assert_non_null(strstr(f.summary, "cannot tell"));
        assert_null(strstr(f.summary, "missing"));
        assert_null(strstr(f.remedy, "modprobe"));
        finding_done(&f);
        f = run_one("rdma.peermem", &facts);
        assert_int_equal(f.status, CHECK_WARN);
        assert_non_null(strstr(f.summary, "cannot tell"));
        finding_done(&f);
}

/* TLS verification, an oversized answer and a failing exec plugin each get their own summary and a
 * remedy that is not about credentials; each has its own class in a snapshot's index. */
static void test_api_failure_classes(void **state) {
        static const int rcs[] = {-EKEYREJECTED, -EPROTO, -EFBIG, -ENOEXEC};
        char *seen[ELEMENTSOF(rcs)];
        for (size_t i = 0; i < ELEMENTSOF(rcs); i++) {
                struct kube_facts kf = {.api = {.rc = rcs[i], .error = (char *)"GET https://k:6443/api/v1/nodes/n: boom",
                                                .server = (char *)"https://k:6443", .source = (char *)"/etc/kubeconfig"}};
                struct node_facts facts = {.kube = &kf};
                struct finding f = run_one("kubelet.api-access", &facts);
                assert_int_equal(f.status, CHECK_WARN);
                if (strstr(f.summary, "refused gpunode")) fail_msg("rc %d: %s", rcs[i], f.summary);
                assert_null(strstr(f.remedy, "ClusterRole"));
                for (size_t k = 0; k < i; k++) assert_string_not_equal(seen[k], f.summary);
                seen[i] = xstrdup(f.summary);
                assert_string_not_equal(net_error_class(rcs[i]), "other");
                finding_done(&f);
        }
        for (size_t i = 0; i < ELEMENTSOF(rcs); i++) free(seen[i]);
        /* 401 and 403 keep the credentials remedy */
        struct kube_facts kf = {.api = {.rc = -EACCES, .error = (char *)"401"}};
        struct node_facts facts = {.kube = &kf};
        struct finding f = run_one("kubelet.api-access", &facts);
        assert_non_null(strstr(f.remedy, "credentials"));
        finding_done(&f);
}

/* The device plugin's and GFD's checks rest on mig-manager.state where MIG is enabled (now or after the
 * next reset) and not on a node without MIG; on their other dependencies always. */
static void test_mig_manager_rests_only_with_mig(void **state) {
        static const char *const ids[] = {"device-plugin.pod", "device-plugin.registered", "device-plugin.allocatable", "gfd.labels"};
        struct nvml_gpu_facts gpus[2] = {{.mig_rc = NVML_SUCCESS}, {.mig_rc = NVML_ERROR_NOT_SUPPORTED}};
        struct nvml_facts nf = {.init_rc = NVML_SUCCESS, .n_gpus = 2, .gpus = gpus};
        struct node_facts facts = {.nvml = {.facts = &nf}};
        struct node_facts no_nvml = {0};
        for (size_t i = 0; i < ELEMENTSOF(ids); i++) {
                const struct check_def *d = check_find(ids[i]);
                assert_non_null(d);
                bool listed = false;
                for (size_t k = 0; k < CHECK_MAX_DEPS && d->depends[k]; k++) listed |= streq(d->depends[k], "mig-manager.state");
                if (!listed) fail_msg("%s does not list mig-manager.state", d->id);
                assert_non_null(d->rests_on);
                gpus[0].mig_current = gpus[0].mig_pending = 0;
                assert_false(d->rests_on(&facts, "mig-manager.state"));
                assert_false(d->rests_on(&no_nvml, "mig-manager.state"));
                assert_true(d->rests_on(&facts, "driver.nvml-init"));
                gpus[0].mig_current = gpus[0].mig_pending = 1;
                assert_true(d->rests_on(&facts, "mig-manager.state"));
                gpus[0].mig_current = 0; /* enabled after the next reset */
                assert_true(d->rests_on(&facts, "mig-manager.state"));
        }
        /* mig-manager.state runs before them, so that it is the root cause */
        size_t n, mig = 0, dp = 0;
        const struct check_def *const *all = check_registry(&n);
        for (size_t i = 0; i < n; i++) {
                if (streq(all[i]->id, "mig-manager.state")) mig = i;
                if (streq(all[i]->id, "device-plugin.pod")) dp = i;
        }
        assert_true(mig > 0 && mig < dp);
}

/* Four made-up checks, one per layer; statuses[] says what each finds. */
static enum check_status verdict_statuses[4];
static void verdict_run(void *userdata, size_t i, struct finding *f) {
        (void)userdata;
        finding_set(f, verdict_statuses[i], "layer %zu says %s", i + 1, check_status_name(verdict_statuses[i]));
}

/* A failure in layer 4 alone degrades the node (GPU work still runs without its metrics); one in
 * layers 1-3 fails it; the root cause is the first failure either way. */
static void test_verdict_layer4_degrades(void **state) {
        (void)state;
        static const struct check_def defs[4] = {
                { .id = "a.one", .layer = 1, .component = "a" },
                { .id = "b.two", .layer = 2, .component = "b" },
                { .id = "c.three", .layer = 3, .component = "c" },
                { .id = "d.four", .layer = 4, .component = "d" },
        };
        const struct check_def *const list[4] = { &defs[0], &defs[1], &defs[2], &defs[3] };
        static const struct {
                enum check_status s[4];
                int failing_layers_max;
                enum verdict want;
                int root_cause_layer; /* 0: none */
        } t[] = {
                { { CHECK_PASS, CHECK_PASS, CHECK_PASS, CHECK_FAIL }, 3, VERDICT_DEGRADED, 4 },
                { { CHECK_PASS, CHECK_WARN, CHECK_PASS, CHECK_FAIL }, 3, VERDICT_DEGRADED, 4 },
                { { CHECK_PASS, CHECK_FAIL, CHECK_PASS, CHECK_FAIL }, 3, VERDICT_FAILED, 2 },
                { { CHECK_PASS, CHECK_PASS, CHECK_FAIL, CHECK_PASS }, 3, VERDICT_FAILED, 3 },
                { { CHECK_PASS, CHECK_PASS, CHECK_PASS, CHECK_FAIL }, 0, VERDICT_FAILED, 4 },
                { { CHECK_PASS, CHECK_PASS, CHECK_PASS, CHECK_WARN }, 3, VERDICT_DEGRADED, 4 },
                { { CHECK_PASS, CHECK_PASS, CHECK_PASS, CHECK_PASS }, 3, VERDICT_HEALTHY, 0 },
        };
        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                memcpy(verdict_statuses, t[i].s, sizeof verdict_statuses);
                const struct check_runner runner = { .run = verdict_run, .failing_layers_max = t[i].failing_layers_max };
                struct report r;
                assert_int_equal(report_run(list, 4, &runner, "n", "/", &r), 0);
                if (r.verdict != t[i].want) fail_msg("case %zu: verdict %s", i, verdict_name(r.verdict));
                assert_int_equal(r.root_cause ? r.root_cause->def->layer : 0, t[i].root_cause_layer);
                report_free(&r);
        }
}

/* gpu-operator.validations: a validation whose init container keeps failing, without its file, fails; a
 * component nothing validates here (MOFED, vGPU, ...) is not judged; without operator pods it skips. */
static void test_operator_validations(void **state) {
        struct kube_kv labels[] = {{(char *)"app", (char *)"nvidia-operator-validator"}};
        struct kube_container cs[] = {
                {.name = (char *)"driver-validation", .init = true, .state = KUBE_STATE_TERMINATED, .exit_code = 0,
                 .reason = (char *)"Completed"},
                {.name = (char *)"toolkit-validation", .init = true, .state = KUBE_STATE_WAITING, .restarts = 3,
                 .reason = (char *)"CrashLoopBackOff", .has_last = true, .last_exit_code = 1,
                 .last_message = (char *)"nvidia-smi: failed to run: no such file"},
                {.name = (char *)"nvidia-operator-validator", .state = KUBE_STATE_WAITING, .reason = (char *)"PodInitializing"},
        };
        struct kube_pod_info pod = {.namespace = (char *)"gpu-operator", .name = (char *)"nvidia-operator-validator-x",
                                    .phase = (char *)"Pending", .labels = labels, .n_labels = 1, .containers = cs,
                                    .n_containers = ELEMENTSOF(cs), .n_init_spec = 2};
        enum kube_pod_role role = POD_OPERATOR;
        char *names[] = {(char *)"driver-ready", (char *)"mofed-ready"};
        char *texts[] = {(char *)"IS_HOST_DRIVER=true\n", (char *)""};
        struct kube_facts kf = {
                .kubelet = {.validations = names, .validation_texts = texts, .n_validations = 2},
                .api = {.node_name = (char *)"n", .pods = &pod, .roles = &role, .n_pods = 1,
                        .operator_namespace = (char *)"gpu-operator"},
        };
        struct node_facts facts = {.kube = &kf};
        struct finding f = run_one("gpu-operator.validations", &facts);
        assert_int_equal(f.status, CHECK_FAIL);
        assert_non_null(strstr(f.summary, "container toolkit"));
        assert_non_null(strstr(f.remedy, "toolkit-validation"));
        for (size_t i = 0; i < f.n_evidence; i++)
                if (strncmp(f.evidence[i], "mofed:", 6) == 0) fail_msg("MOFED judged though nothing validates it: %s", f.evidence[i]);
        finding_done(&f);
        /* the toolkit validated: all files there but mofed's, which is not expected */
        cs[1] = (struct kube_container){.name = (char *)"toolkit-validation", .init = true, .state = KUBE_STATE_TERMINATED};
        char *names2[] = {(char *)"driver-ready", (char *)"toolkit-ready"};
        kf.kubelet.validations = names2;
        f = run_one("gpu-operator.validations", &facts);
        assert_int_equal(f.status, CHECK_PASS);
        finding_done(&f);
        /* no operator pod */
        pod.labels = NULL;
        pod.n_labels = 0;
        f = run_one("gpu-operator.validations", &facts);
        assert_int_equal(f.status, CHECK_SKIP);
        finding_done(&f);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_checks_well_formed),
                cmocka_unit_test(test_symptoms_name_real_checks),
                cmocka_unit_test(test_rdma_modules_unreadable),
                cmocka_unit_test(test_api_failure_classes),
                cmocka_unit_test(test_mig_manager_rests_only_with_mig),
                cmocka_unit_test(test_operator_validations),
                cmocka_unit_test(test_verdict_layer4_degrades),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
