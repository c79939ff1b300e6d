/* test_gpu_holders.c: which pods hold a GPU (by UUID, index, replica, MIG UUID), a pod-resources answer as JSON and back (hostile JSON refused), and the grpc exchange replayed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "facts/layer3_kubernetes.h"
#include "kube/net_replay.h"
#include "kube/podresources.h"
#include "layer1_hardware/kmsg.h"
#include "layer1_hardware/nvml_evidence.h"

#define U3 "GPU-5e2d1c03-a13f-61b9-c128-3d1475965103"
#define M3 "MIG-0b1c2d3e-4f50-5162-7384-95a6b7c8d9e0"

/* Returns a GPU 3 with a UUID and one MIG device (static storage). */
static struct nvml_gpu_facts *gpu3(void) {
        static struct nvml_gpu_facts g;
        memset(&g, 0, sizeof g);
        g.index = 3;
        g.uuid_rc = NVML_SUCCESS;
        strcpy(g.uuid, U3);
        g.pci_rc = NVML_SUCCESS;
        strcpy(g.pci_bus_id_legacy, "0000:5D:00.0");
        g.n_mig = 1;
        g.mig[0].uuid_rc = NVML_SUCCESS;
        strcpy(g.mig[0].uuid, M3);
        return &g;
}

static void test_matches(void **state) {
        (void)state;
        const struct nvml_gpu_facts *g = gpu3();
        assert_true(gpu_device_id_matches(U3, 3, NULL, g));
        assert_true(gpu_device_id_matches("gpu-5e2d1c03-a13f-61b9-c128-3d1475965103", 3, NULL, g)); /* case */
        assert_true(gpu_device_id_matches(U3 "::0", 3, NULL, g));   /* time-slicing replica */
        assert_true(gpu_device_id_matches(U3 "::17", 3, NULL, g));
        assert_true(gpu_device_id_matches(M3, 3, NULL, g));          /* its MIG device */
        assert_true(gpu_device_id_matches(M3 "::2", 3, NULL, g));
        assert_true(gpu_device_id_matches("MIG-" U3 "/1/0", 3, NULL, g)); /* R450 MIG naming */
        assert_true(gpu_device_id_matches("3", 3, NULL, g));         /* deviceIDStrategy=index */
        assert_true(gpu_device_id_matches("3::1", 3, NULL, g));
        assert_true(gpu_device_id_matches("3:1", 3, NULL, g));       /* MIG device 1 of GPU 3 by index */
        assert_false(gpu_device_id_matches("13", 3, NULL, g));
        assert_false(gpu_device_id_matches("31:0", 3, NULL, g));
        assert_false(gpu_device_id_matches("3:", 3, NULL, g));
        assert_false(gpu_device_id_matches("3:x", 3, NULL, g));
        assert_false(gpu_device_id_matches("", 3, NULL, g));
        assert_false(gpu_device_id_matches(NULL, 3, NULL, g));
        assert_false(gpu_device_id_matches(U3 "0", 3, NULL, g));     /* a longer UUID is another GPU */
        assert_false(gpu_device_id_matches("GPU-5e2d1c03", 3, NULL, g));
        assert_false(gpu_device_id_matches("MIG-0b1c2d3e-4f50-5162-7384-95a6b7c8d9e1", 3, NULL, g));
        assert_false(gpu_device_id_matches("3", -1, NULL, g));       /* index unknown */
        /* no NVML record: the UUID the kernel log gave */
        assert_true(gpu_device_id_matches(U3 "::4", -1, U3, NULL));
        assert_false(gpu_device_id_matches(M3, -1, U3, NULL));
        /* a GPU whose UUID NVML lost: only its index */
        struct nvml_gpu_facts lost = {.index = 3, .uuid_rc = NVML_ERROR_GPU_IS_LOST};
        assert_true(gpu_device_id_matches("3", 3, NULL, &lost));
        assert_false(gpu_device_id_matches(U3, 3, NULL, &lost));
}

static void test_holders(void **state) {
        (void)state;
        struct kube_facts k = {0};
        struct podres_holder hs[] = {
                {"ml", "train-0", "trainer", "nvidia.com/gpu", U3},
                {"ml", "train-0", "trainer", "nvidia.com/gpu", U3 "::1"}, /* the same container again */
                {"ml", "train-0", "sidecar", "nvidia.com/gpu", "3"},
                {"team-a", "nb", "jupyter", "nvidia.com/mig-1g.10gb", M3},
                {"net", "rdma", "c", "rdma/rdma_shared_device_a", "3"}, /* not a GPU resource */
                {"ml", "other", "c", "nvidia.com/gpu", "GPU-other"},
        };
        k.podres.holders = hs;
        k.podres.n_holders = ELEMENTSOF(hs);
        struct nvml_facts nf = {.init_rc = NVML_SUCCESS, .n_gpus = 1, .gpus = gpu3()};
        struct node_facts f = {.kube = &k, .nvml = {.facts = &nf}};
        node_facts_join(&f);
        const struct gpu_pods *p = gpu_pods_of(&f, &nf.gpus[0]);
        assert_non_null(p);
        assert_int_equal(p->n_holders, 3);
        assert_true(p->named);
        assert_string_equal(p->holders[0].container, "trainer");
        assert_string_equal(p->holders[1].container, "sidecar");
        assert_string_equal(p->holders[2].pod, "nb");
        /* a GPU only the kernel log names: by the UUID it logged, never by index */
        struct kmsg_scan *scan = kmsg_scan_new();
        static const char log[] = "NVRM: GPU at PCI:0000:5d:00: " U3 "\n"
                                  "NVRM: Xid (PCI:0000:5d:00): 79, GPU has fallen off the bus.\n";
        kmsg_scan_feed(scan, log, strlen(log));
        kmsg_scan_finish(scan);
        f.kmsg.scan = scan;
        f.nvml.facts = NULL;
        node_facts_join(&f);
        assert_null(gpu_pods_of(&f, &nf.gpus[0]));
        p = gpu_pods_of_uuid(&f, U3);
        assert_non_null(p);
        assert_int_equal(p->n_holders, 1);
        assert_string_equal(p->holders[0].container, "trainer");
        assert_null(gpu_pods_of_uuid(&f, "GPU-other-uuid"));
        /* no answer from the kubelet: nobody is named */
        k.podres.rc = -ECONNREFUSED;
        node_facts_join(&f);
        assert_int_equal(f.gpu_pods.rc, -ECONNREFUSED);
        assert_null(gpu_pods_of_uuid(&f, U3));
        f.nvml.facts = &nf;
        assert_null(gpu_pods_of(&f, &nf.gpus[0]));
        node_facts_join_free(&f);
        kmsg_scan_free(scan);
}

static void test_json_round_trip(void **state) {
        (void)state;
        static const char in[] =
                "{\"podResources\":[{\"name\":\"p\",\"namespace\":\"ns\",\"containers\":[{\"name\":\"c\",\"devices\":["
                "{\"resourceName\":\"nvidia.com/gpu\",\"deviceIds\":[\"" U3 "\",\"GPU-x::2\"],\"topology\":{\"nodes\":[{\"ID\":\"1\"}]}}]},"
                "{\"name\":\"idle\"}]},{\"name\":\"q\",\"namespace\":\"ns2\"}]}";
        struct podres_list *l = NULL;
        char *err = NULL;
        assert_int_equal(podres_list_from_json(in, strlen(in), &l, &err), 0);
        assert_int_equal(l->n_pods, 2);
        assert_int_equal(l->pods[0].n_containers, 2);
        assert_int_equal(l->pods[0].containers[0].devices[0].n_device_ids, 2);
        assert_int_equal(l->pods[0].containers[0].devices[0].numa_nodes[0], 1);
        char *json = NULL;
        assert_int_equal(podres_list_to_json(l, &json), 0);
        struct podres_list *l2 = NULL;
        assert_int_equal(podres_list_from_json(json, strlen(json), &l2, &err), 0);
        char *json2 = NULL;
        assert_int_equal(podres_list_to_json(l2, &json2), 0);
        assert_string_equal(json, json2);
        free(json);
        free(json2);
        podres_list_free(l);
        podres_list_free(l2);

        static const char *const bad[] = {
                "", "[]", "{\"podResources\":{}}", "{\"podResources\":[1]}", "{\"podResources\":[{\"name\":7}]}",
                "{\"podResources\":[{\"containers\":[{\"devices\":[{\"deviceIds\":[1]}]}]}]}",
                "{\"podResources\":[{\"containers\":[{\"devices\":[{\"deviceIds\":\"GPU-x\"}]}]}]}",
                "{\"podResources\":[{\"containers\":[{\"devices\":[{\"deviceIds\":[\"a\\u0000b\"]}]}]}]}",
                "{\"podResources\":[{\"containers\":[{\"devices\":[{\"topology\":{\"nodes\":[{\"ID\":\"x\"}]}}]}]}]}",
                "{\"podResources\":[],\"podResources\":[]}",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                l = NULL;
                err = NULL;
                assert_int_equal(podres_list_from_json(bad[i], strlen(bad[i]), &l, &err), -EBADMSG);
                assert_null(l);
                assert_non_null(err);
                free(err);
        }
}

/* Records a List answer and an error, writes the index, and replays both through the probe. */
static void test_record_replay(void **state) {
        (void)state;
        struct net_log *log = net_log_new();
        net_record_to(log);
        static const char body[] = "{\"podResources\":[{\"name\":\"p\",\"namespace\":\"ns\",\"containers\":[{\"name\":\"c\","
                                   "\"devices\":[{\"resourceName\":\"nvidia.com/gpu\",\"deviceIds\":[\"" U3 "\"]}]}]}]}";
        net_record(NET_GRPC, "/v1.PodResourcesLister/List", 0, 0, body, strlen(body), NULL);
        net_record_to(NULL);
        assert_string_equal(log->v[0].member, "api/0001-grpc-v1.PodResourcesLister-List.json");
        char *index = NULL;
        assert_int_equal(net_log_to_index(log, &index), 0);
        assert_non_null(strstr(index, "\"kind\": \"grpc\""));
        struct net_log *back = NULL;
        char *err = NULL;
        assert_int_equal(net_log_from_index(index, strlen(index), &back, &err), 0);
        assert_int_equal(back->v[0].kind, NET_GRPC);
        /* bodies come from the members: hand the recorded one over */
        back->v[0].body = xstrdup(body);
        back->v[0].len = strlen(body);
        net_replay_from(back);
        struct kube_probe_options o = {0};
        struct podres_facts p;
        probe_podresources(&o, &p);
        assert_int_equal(p.rc, 0);
        assert_int_equal(p.n_holders, 1);
        assert_string_equal(p.holders[0].pod, "p");
        assert_string_equal(p.holders[0].device_id, U3);
        podres_facts_free(&p);
        net_replay_from(NULL);
        net_log_free(back);
        free(index);
        net_log_free(log);

        /* a snapshot without the call: not recorded, said so */
        struct net_log *empty = net_log_new();
        net_replay_from(empty);
        probe_podresources(&o, &p);
        assert_int_equal(p.rc, NET_NOT_RECORDED);
        assert_non_null(strstr(p.error, "not in the snapshot"));
        podres_facts_free(&p);
        net_replay_from(NULL);
        net_log_free(empty);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_matches),
                cmocka_unit_test(test_holders),
                cmocka_unit_test(test_json_round_trip),
                cmocka_unit_test(test_record_replay),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
