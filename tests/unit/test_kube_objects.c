/* test_kube_objects.c: the kubelet checkpoint parser (both DeviceIDs formats), Node and PodList extraction, pod
 * judgement and roles. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "facts/layer3_kubernetes.h"
#include "facts/layer4_observability.h"
#include "kube/kube_checkpoint.h"
#include "kube/kube_objects.h"
#include "basic/util.h"

/* The real pre-1.20 checkpoint from kubernetes#75880 (reference/layer3-kubernetes.md). */
static const char pre120[] =
        "{\"Checksum\":3364951114,\"Data\":{\"PodDeviceEntries\":[{\"AllocResp\":"
        "\"CkIKFk5WSURJQV9WSVNJQkxFX0RFVklDRVMSKEdQVS1hZDYzYzY4NC01NTkzLTExMWEtY2JiMS1jMTQ1MWViY2QwYWE=\","
        "\"ContainerName\":\"notebook\",\"DeviceIDs\":[\"GPU-ad63c684-5593-111a-cbb1-c1451ebcd0aa\"],\"PodUID\":"
        "\"9a422c32-4fc2-11e9-bb64-505dac4c3a38\","
        "\"ResourceName\":\"nvidia.com/gpu\"}],\"RegisteredDevices\":{\"nvidia.com/"
        "gpu\":[\"GPU-ad63c684-5593-111a-cbb1-c1451ebcd0aa\"]}}}";

/* A kubelet >= 1.20 checkpoint: DeviceIDs keyed by NUMA node, time-slicing replicas, a MIG resource, BootID. */
static const char post120[] =
        "{\"Data\":{\"PodDeviceEntries\":[{\"PodUID\":\"u1\",\"ContainerName\":\"trainer\",\"ResourceName\":\"nvidia."
        "com/gpu\","
        "\"DeviceIDs\":{\"0\":[\"GPU-a::0\",\"GPU-a::1\"],\"1\":[\"GPU-b::0\"]},\"AllocResp\":\"\"},"
        "{\"PodUID\":\"u2\",\"ContainerName\":\"c\",\"ResourceName\":\"nvidia.com/"
        "mig-1g.10gb\",\"DeviceIDs\":{\"-1\":[\"MIG-x\"]}},"
        "{\"PodUID\":\"u3\",\"ContainerName\":\"bad\"},"
        "{\"PodUID\":\"u4\",\"ContainerName\":\"empty\",\"ResourceName\":\"nvidia.com/gpu\",\"DeviceIDs\":null}],"
        "\"RegisteredDevices\":{\"nvidia.com/gpu\":[\"GPU-a::0\",\"GPU-a::1\",\"GPU-b::0\",\"GPU-b::1\",7],"
        "\"nvidia.com/mig-1g.10gb\":[\"MIG-x\"],\"example.com/none\":null}},\"Checksum\":1863257745,\"BootID\":\"b\"}";

static void test_checkpoint_pre120(void **state) {
        struct kube_checkpoint *c = NULL;
        char *err = NULL;
        assert_int_equal(kube_checkpoint_parse(pre120, strlen(pre120), &c, &err), 0);
        assert_true(c->flat);
        assert_false(c->numa_keyed);
        const struct kube_checkpoint_resource *r = kube_checkpoint_find(c, "nvidia.com/gpu");
        assert_non_null(r);
        assert_int_equal(r->n_devices, 1);
        assert_string_equal(r->devices[0], "GPU-ad63c684-5593-111a-cbb1-c1451ebcd0aa");
        assert_int_equal(c->n_entries, 1);
        assert_string_equal(c->entries[0].container, "notebook");
        assert_string_equal(c->entries[0].pod_uid, "9a422c32-4fc2-11e9-bb64-505dac4c3a38");
        assert_int_equal(c->entries[0].n_devices, 1);
        assert_int_equal(c->n_skipped, 0);
        kube_checkpoint_free(c);
}

static void test_checkpoint_post120(void **state) {
        struct kube_checkpoint *c = NULL;
        char *err = NULL;
        assert_int_equal(kube_checkpoint_parse(post120, strlen(post120), &c, &err), 0);
        assert_true(c->numa_keyed);
        assert_false(c->flat);
        const struct kube_checkpoint_resource *r = kube_checkpoint_find(c, "nvidia.com/gpu");
        assert_non_null(r);
        assert_int_equal(r->n_devices, 4); /* the number 7 is skipped */
        assert_int_equal(kube_device_id_base_len(r->devices[3]), 5);
        assert_non_null(kube_checkpoint_find(c, "nvidia.com/mig-1g.10gb"));
        assert_non_null(kube_checkpoint_find(c, "example.com/none"));
        assert_null(kube_checkpoint_find(c, "nvidia.com/other"));
        assert_int_equal(c->n_entries, 3); /* the entry without ResourceName is skipped */
        assert_int_equal(c->entries[0].n_devices, 3);
        assert_string_equal(c->entries[0].devices[2], "GPU-b::0");
        assert_int_equal(c->entries[2].n_devices, 0);
        assert_int_equal(c->n_skipped, 2);
        kube_checkpoint_free(c);
}

static void test_checkpoint_bad(void **state) {
        static const char *const bad[] = { "",
                                           "{",
                                           "[]",
                                           "{\"Data\":1}",
                                           "{\"Data\":{\"RegisteredDevices\":[]}}",
                                           "{\"Data\":{\"PodDeviceEntries\":{}}}",
                                           "{\"Data\":{},\"Data\":{}}" };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                struct kube_checkpoint *c = NULL;
                char *err = NULL;
                assert_int_equal(kube_checkpoint_parse(bad[i], strlen(bad[i]), &c, &err), -EBADMSG);
                assert_null(c);
                assert_non_null(err);
                free(err);
        }
        struct kube_checkpoint *c = NULL;
        char *err = NULL;
        assert_int_equal(kube_checkpoint_parse("{\"Data\":{}}", 11, &c, &err), 0);
        assert_int_equal(c->n_resources + c->n_entries, 0);
        kube_checkpoint_free(c);
        assert_int_equal(kube_device_id_base_len("GPU-x"), 5);
}

static const char node_json[] =
        "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"gpu-1\",\"labels\":{\"nvidia.com/"
        "gpu.count\":\"8\","
        "\"nvidia.com/mig.config.state\":\"success\"}},\"spec\":{\"unschedulable\":true},"
        "\"status\":{\"capacity\":{\"cpu\":\"224\",\"nvidia.com/gpu\":\"8\",\"memory\":\"2113389760Ki\"},"
        "\"allocatable\":{\"nvidia.com/gpu\":\"7\",\"nvidia.com/mig-1g.10gb\":\"14\",\"cpu\":\"223500m\"},"
        "\"conditions\":[{\"type\":\"MemoryPressure\",\"status\":\"False\"},{\"type\":\"Ready\",\"status\":\"False\","
        "\"reason\":\"KubeletNotReady\",\"message\":\"PLEG is not "
        "healthy\"}],\"nodeInfo\":{\"kubeletVersion\":\"v1.29.4\"}}}";

static void test_node(void **state) {
        json_t *j = json_loads(node_json, 0, NULL);
        assert_non_null(j);
        struct kube_node_info n;
        assert_int_equal(kube_node_info_parse(j, &n), 0);
        assert_string_equal(n.name, "gpu-1");
        assert_int_equal(n.ready, 0);
        assert_string_equal(n.ready_reason, "KubeletNotReady");
        assert_string_equal(n.ready_message, "PLEG is not healthy");
        assert_true(n.unschedulable);
        assert_string_equal(n.kubelet_version, "v1.29.4");
        assert_string_equal(kube_kv_get(n.labels, n.n_labels, "nvidia.com/gpu.count"), "8");
        assert_string_equal(kube_kv_get(n.capacity, n.n_capacity, "nvidia.com/gpu"), "8");
        assert_string_equal(kube_kv_get(n.allocatable, n.n_allocatable, "nvidia.com/mig-1g.10gb"), "14");
        assert_null(kube_kv_get(n.allocatable, n.n_allocatable, "memory"));
        kube_node_info_free(&n);
        json_decref(j);

        j = json_loads("{\"metadata\":{}}", 0, NULL);
        assert_int_equal(kube_node_info_parse(j, &n), -EBADMSG);
        kube_node_info_free(&n);
        json_decref(j);

        int64_t v;
        assert_int_equal(kube_quantity_int("8", &v), 0);
        assert_int_equal(v, 8);
        assert_int_equal(kube_quantity_int("2k", &v), 0);
        assert_int_equal(v, 2000);
        assert_int_equal(kube_quantity_int("223500m", &v), -EINVAL);
        assert_int_equal(kube_quantity_int("-1", &v), -EINVAL);
        assert_int_equal(kube_quantity_int("", &v), -EINVAL);
        assert_int_equal(kube_quantity_int("99999999999999999999", &v), -EINVAL);
}

/* A PodList with a crash-looping device plugin, an operator pod stuck in Init, a running exporter
 * with restarts, a Succeeded validator, a Pending pod and agents. */
static const char pods_json[] =
        "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":["
        "{\"metadata\":{\"name\":\"nvidia-device-plugin-daemonset-x7k2p\",\"namespace\":\"gpu-operator\",\"labels\":{"
        "\"app\":\"nvidia-device-plugin-daemonset\"}},"
        "\"status\":{\"phase\":\"Running\",\"podIP\":\"10.244.3.12\",\"conditions\":[{\"type\":\"Ready\",\"status\":"
        "\"False\"}],"
        "\"initContainerStatuses\":[{\"name\":\"toolkit-validation\",\"ready\":true,\"restartCount\":0,\"state\":{"
        "\"terminated\":{\"exitCode\":0,\"reason\":\"Completed\"}}}],"
        "\"containerStatuses\":[{\"name\":\"nvidia-device-plugin\",\"ready\":false,\"restartCount\":14,"
        "\"state\":{\"waiting\":{\"reason\":\"CrashLoopBackOff\",\"message\":\"back-off 5m0s restarting failed "
        "container\"}},"
        "\"lastState\":{\"terminated\":{\"exitCode\":1,\"reason\":\"Error\",\"message\":\"could not load NVML "
        "library\"}}}]}},"
        "{\"metadata\":{\"name\":\"gpu-feature-discovery-k5w8z\",\"namespace\":\"gpu-operator\",\"labels\":{\"app\":"
        "\"gpu-feature-discovery\"}},"
        "\"spec\":{\"initContainers\":[{\"name\":\"toolkit-validation\"}]},"
        "\"status\":{\"phase\":\"Pending\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"False\"}],"
        "\"initContainerStatuses\":[{\"name\":\"toolkit-validation\",\"ready\":false,\"restartCount\":0,\"state\":{"
        "\"running\":{}}}],"
        "\"containerStatuses\":[{\"name\":\"gpu-feature-discovery\",\"ready\":false,\"restartCount\":0,\"state\":{"
        "\"waiting\":{\"reason\":\"PodInitializing\"}}}]}},"
        "{\"metadata\":{\"name\":\"nvidia-dcgm-exporter-q9t4m\",\"namespace\":\"gpu-operator\",\"labels\":{\"app\":"
        "\"nvidia-dcgm-exporter\"}},"
        "\"status\":{\"phase\":\"Running\",\"podIP\":\"fd00::5\",\"conditions\":[{\"type\":\"Ready\",\"status\":"
        "\"True\"}],"
        "\"containerStatuses\":[{\"name\":\"nvidia-dcgm-exporter\",\"ready\":true,\"restartCount\":6,\"state\":{"
        "\"running\":{}}}]}},"
        "{\"metadata\":{\"name\":\"nvidia-cuda-validator-7wq2l\",\"namespace\":\"gpu-operator\",\"labels\":{\"app\":"
        "\"nvidia-cuda-validator\"}},"
        "\"status\":{\"phase\":\"Succeeded\"}},"
        "{\"metadata\":{\"name\":\"fluent-bit-5jm9r\",\"namespace\":\"logging\",\"labels\":{\"app.kubernetes.io/"
        "name\":\"fluent-bit\"}},"
        "\"status\":{\"phase\":\"Pending\",\"reason\":\"Unschedulable\"}},"
        "{\"metadata\":{\"name\":\"mofed-ubuntu22.04-ds-fx2kq\",\"namespace\":\"nvidia-network-operator\",\"labels\":{"
        "\"app\":\"mofed-ubuntu22.04\"}}},"
        "{\"metadata\":{\"name\":\"prometheus-node-exporter-t8d3w\",\"labels\":{\"app.kubernetes.io/"
        "name\":\"prometheus-node-exporter\"}}},"
        "{\"metadata\":{\"name\":\"otel-agent-collector-zq4pd\",\"labels\":{\"app.kubernetes.io/"
        "component\":\"opentelemetry-collector\"}}},"
        "{\"metadata\":{\"namespace\":\"x\"}},"
        "{\"metadata\":{\"name\":\"kube-proxy-6vb2x\",\"namespace\":\"kube-system\",\"labels\":{\"k8s-app\":\"kube-"
        "proxy\"}},"
        "\"status\":{\"phase\":\"Running\",\"conditions\":[{\"type\":\"Ready\",\"status\":\"True\"}],"
        "\"containerStatuses\":[{\"name\":\"kube-proxy\",\"ready\":true,\"restartCount\":0,\"state\":{\"running\":{}}}]"
        "}}]}";

static void test_pods(void **state) {
        json_t *j = json_loads(pods_json, 0, NULL);
        assert_non_null(j);
        struct kube_pod_info *p = NULL;
        size_t n = 0;
        assert_int_equal(kube_pod_list_parse(j, &p, &n), 0);
        json_decref(j);
        assert_int_equal(n, 9); /* the item without a name is skipped */

        char *text = NULL;
        assert_int_equal(kube_pod_judge(&p[0], &text), KUBE_POD_FAIL);
        assert_string_equal(text, "CrashLoopBackOff: container nvidia-device-plugin: 14 restarts, last exit 1 (Error): "
                                  "could not load NVML library");
        free(text);
        assert_int_equal(kube_pod_role_of(&p[0]), POD_DEVICE_PLUGIN);
        assert_string_equal(p[0].pod_ip, "10.244.3.12");
        assert_int_equal(p[0].n_containers, 2);
        assert_true(p[0].containers[0].init);

        assert_int_equal(kube_pod_judge(&p[1], &text), KUBE_POD_FAIL);
        assert_string_equal(text, "Init:0/1: init container toolkit-validation has not finished");
        free(text);
        assert_int_equal(kube_pod_role_of(&p[1]), POD_GFD);

        assert_int_equal(kube_pod_judge(&p[2], &text), KUBE_POD_WARN);
        assert_string_equal(text, "Running, Ready, 6 restarts");
        free(text);
        assert_int_equal(kube_pod_role_of(&p[2]), POD_DCGM_EXPORTER);
        text = metrics_url_for_pod(&p[2], 9400);
        assert_string_equal(text, "http://[fd00::5]:9400/metrics");
        free(text);
        assert_null(metrics_url_for_pod(&p[3], 9400));

        assert_int_equal(kube_pod_judge(&p[3], &text), KUBE_POD_OK);
        assert_string_equal(text, "Completed");
        free(text);
        assert_int_equal(kube_pod_role_of(&p[3]), POD_OPERATOR);
        assert_string_equal(gpu_operator_app(&p[3]), "nvidia-cuda-validator");

        assert_int_equal(kube_pod_judge(&p[4], &text), KUBE_POD_FAIL);
        assert_string_equal(text, "Unschedulable");
        free(text);
        assert_int_equal(kube_pod_role_of(&p[4]), POD_LOGGING_AGENT);
        assert_int_equal(kube_pod_role_of(&p[5]), POD_NETWORK_OPERATOR);
        assert_int_equal(kube_pod_role_of(&p[6]), POD_NODE_EXPORTER);
        assert_string_equal(p[6].namespace, "default");
        assert_int_equal(kube_pod_role_of(&p[7]), POD_OTEL_AGENT);
        assert_int_equal(kube_pod_role_of(&p[8]), POD_OTHER);
        assert_int_equal(kube_pod_judge(&p[8], &text), KUBE_POD_OK);
        assert_string_equal(text, "Running, Ready");
        free(text);
        kube_pod_info_free(p, n);

        /* spec.runtimeClassName and nvidia.com/ requests (a GPU pod selecting the nvidia runtime) */
        j = json_loads("{\"items\":[{\"metadata\":{\"name\":\"trainer-0\",\"namespace\":\"ml\"},\"spec\":{"
                       "\"runtimeClassName\":\"nvidia\",\"containers\":[{\"name\":\"t\",\"resources\":{\"limits\":"
                       "{\"cpu\":\"4\",\"nvidia.com/gpu\":\"8\"}}}]}},{\"metadata\":{\"name\":\"web\"},\"spec\":{"
                       "\"containers\":[{\"name\":\"w\",\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]}}]}",
                       0, NULL);
        assert_non_null(j);
        assert_int_equal(kube_pod_list_parse(j, &p, &n), 0);
        json_decref(j);
        assert_int_equal(n, 2);
        assert_string_equal(p[0].runtime_class, "nvidia");
        assert_true(p[0].requests_gpu);
        assert_null(p[1].runtime_class);
        assert_false(p[1].requests_gpu);
        kube_pod_info_free(p, n);

        j = json_loads("{\"kind\":\"Status\"}", 0, NULL);
        assert_int_equal(kube_pod_list_parse(j, &p, &n), -EBADMSG);
        json_decref(j);
}

/* The metrics checks fetch an exporter on the port its pod declares: the containerPort named "metrics" (or
 * "http-metrics"), else the first TCP one; 9400/9100 only when none is declared. */
static void test_metrics_ports(void **state) {
        (void)state;
        json_t *j = json_loads(
                "{\"items\":["
                "{\"metadata\":{\"name\":\"nvidia-dcgm-exporter-a\",\"namespace\":\"gpu-operator\",\"labels\":{\"app\":"
                "\"nvidia-dcgm-exporter\"}},\"spec\":{\"containers\":[{\"name\":\"sidecar\",\"ports\":[{\"name\":"
                "\"grpc\","
                "\"containerPort\":8080}]},{\"name\":\"nvidia-dcgm-exporter\",\"ports\":[{\"name\":\"metrics\","
                "\"containerPort\":9500,\"protocol\":\"TCP\"}]}]},\"status\":{\"phase\":\"Running\",\"podIP\":\"127.0."
                "0.1\"}},"
                "{\"metadata\":{\"name\":\"node-exporter-b\",\"namespace\":\"monitoring\",\"labels\":{"
                "\"app.kubernetes.io/name\":\"node-exporter\"}},\"spec\":{\"containers\":[{\"name\":\"node-exporter\","
                "\"ports\":[{\"name\":\"dns\",\"containerPort\":53,\"protocol\":\"UDP\"},{\"containerPort\":\"9101\"},"
                "{\"containerPort\":70000},{\"name\":\"http\",\"containerPort\":9110}]}]},\"status\":{\"phase\":"
                "\"Running\","
                "\"podIP\":\"127.0.0.1\"}},"
                "{\"metadata\":{\"name\":\"plain\"},\"spec\":{\"containers\":[{\"name\":\"c\"}]},\"status\":{}}]}",
                0, NULL);
        assert_non_null(j);
        struct kube_facts k = { 0 };
        assert_int_equal(kube_pod_list_parse(j, &k.api.pods, &k.api.n_pods), 0);
        json_decref(j);
        assert_int_equal(k.api.n_pods, 3);
        assert_int_equal(k.api.pods[0].metrics_port, 9500); /* named "metrics", though not the first */
        assert_int_equal(k.api.pods[1].metrics_port, 9110); /* UDP, a string and 70000 passed over */
        assert_int_equal(k.api.pods[2].metrics_port, 0);
        enum kube_pod_role roles[3] = { POD_DCGM_EXPORTER, POD_NODE_EXPORTER, POD_OTHER };
        for (size_t i = 0; i < 3; i++) assert_int_equal(kube_pod_role_of(&k.api.pods[i]), roles[i]);
        k.api.roles = roles;
        struct kube_probe_options o = { .timeout_ms = 500 };
        struct metrics_facts *m = probe_metrics(&o, &k);
        assert_string_equal(m->dcgm.url, "http://127.0.0.1:9500/metrics");
        assert_string_equal(m->node_exporter.url, "http://127.0.0.1:9110/metrics");
        metrics_facts_free(m);
        /* no port declared: the exporter's default */
        k.api.pods[0].metrics_port = 0;
        m = probe_metrics(&o, &k);
        assert_string_equal(m->dcgm.url, "http://127.0.0.1:9400/metrics");
        metrics_facts_free(m);
        kube_pod_info_free(k.api.pods, k.api.n_pods);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_checkpoint_pre120),
                cmocka_unit_test(test_checkpoint_post120),
                cmocka_unit_test(test_checkpoint_bad),
                cmocka_unit_test(test_node),
                cmocka_unit_test(test_pods),
                cmocka_unit_test(test_metrics_ports),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
