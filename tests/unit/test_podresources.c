/* test_podresources.c: List and GetAllocatableResources against fake_kubelet.py under a temp root, honest and hostile. */
#include <fcntl.h>
#include <ftw.h>
#include <linux/openat2.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "basic/hostfs.h"
#include "grpc/grpc_h2.h"
#include "kube/podresources.h"
#include "basic/util.h"

static char *kubelet_dir;       /* tests/kubelet: the server and its answers */
static char *root;              /* the temp root, hostfs's root */
static char *sock;              /* root + PODRES_SOCKET */
static pid_t server = -1;

/* Starts fake_kubelet.py in mode (extra: one more argument pair or NULL) and waits for its
 * "ready" line (20 s at most). */
static void start(const char *mode, const char *extra1, const char *extra2) {
        int p[2];
        assert_int_equal(pipe(p), 0);
        _cleanup_free_ char *script = xasprintf("%s/fake_kubelet.py", kubelet_dir);
        _cleanup_free_ char *list = xasprintf("%s/list.json", kubelet_dir);
        _cleanup_free_ char *alloc = xasprintf("%s/allocatable.json", kubelet_dir);
        server = fork();
        assert_true(server >= 0);
        if (server == 0) {
                dup2(p[1], 1);
                close(p[0]);
                close(p[1]);
                setpgid(0, 0);
                char *argv[] = {"/usr/bin/python3", script, "--socket", sock, "--mode", (char *)mode, "--list", list,
                                "--allocatable", alloc, "--lifetime", "120", (char *)extra1, (char *)extra2, NULL};
                execv(argv[0], argv);
                _exit(127);
        }
        close(p[1]);
        char line[64] = {0};
        size_t n = 0;
        uint64_t until = grpc_now_us() + 20000000;
        while (n < sizeof line - 1 && !strchr(line, '\n')) {
                struct pollfd pfd = {.fd = p[0], .events = POLLIN};
                uint64_t now = grpc_now_us();
                assert_true(now < until);
                if (poll(&pfd, 1, (int)((until - now) / 1000)) <= 0) continue;
                ssize_t k = read(p[0], line + n, sizeof line - 1 - n);
                assert_true(k > 0);
                n += (size_t)k;
        }
        close(p[0]);
        assert_non_null(strstr(line, "ready"));
}

static void stop(void) {
        if (server > 0) {
                kill(-server, SIGKILL);
                kill(server, SIGKILL);
                waitpid(server, NULL, 0);
        }
        server = -1;
        unlink(sock);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

static int setup(void **state) {
        const char *src = getenv("GPUNODE_SOURCE_ROOT");
        kubelet_dir = xasprintf("%s/tests/kubelet", src ? src : "..");
        char tmpl[] = "/tmp/gpunode-podres-XXXXXX";
        assert_non_null(mkdtemp(tmpl));
        root = xstrdup(tmpl);
        sock = xasprintf("%s%s", root, PODRES_SOCKET);
        assert_int_equal(hostfs_init(root), 0);
        return 0;
}

static int teardown(void **state) {
        stop();
        hostfs_done();
        nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        free(root);
        free(sock);
        free(kubelet_dir);
        return 0;
}

static int after_each(void **state) {
        stop();
        return 0;
}

/* Asserts one devices entry. */
static void assert_devices(const struct podres_devices *d, const char *resource, size_t n_ids, const char *first_id,
                           size_t n_numa, int64_t first_numa) {
        assert_string_equal(d->resource_name, resource);
        assert_int_equal(d->n_device_ids, n_ids);
        if (n_ids) assert_string_equal(d->device_ids[0], first_id);
        assert_int_equal(d->n_numa_nodes, n_numa);
        if (n_numa) assert_int_equal(d->numa_nodes[0], first_numa);
}

/* List and GetAllocatableResources decoded, twice each on one connection (kept between calls). */
static void test_list_and_allocatable(void **state) {
        start("normal", NULL, NULL);
        _cleanup_podres_client_ struct podres_client *c = podres_client_new(NULL, 5000);
        for (int round = 0; round < 2; round++) {
                struct podres_list *l = NULL;
                char *err = NULL;
                assert_int_equal(podres_list(c, &l, &err), 0);
                assert_null(err);
                assert_int_equal(l->n_pods, 4);

                struct podres_pod *p = &l->pods[0];
                assert_string_equal(p->name, "train-0");
                assert_string_equal(p->namespace, "ml");
                assert_int_equal(p->n_containers, 2);
                assert_string_equal(p->containers[0].name, "trainer");
                assert_int_equal(p->containers[0].n_devices, 2);
                assert_devices(&p->containers[0].devices[0], "nvidia.com/gpu", 2, "GPU-2b7c1f0e-5a3d-4e5f-9a1b-3c4d5e6f7a8b", 1, 0);
                assert_string_equal(p->containers[0].devices[0].device_ids[1], "GPU-8d9e0f1a-2b3c-4d5e-6f7a-8b9c0d1e2f3a");
                assert_devices(&p->containers[0].devices[1], "rdma/rdma_shared_device_a", 1, "rdma0", 0, 0);
                assert_string_equal(p->containers[1].name, "log-shipper");
                assert_int_equal(p->containers[1].n_devices, 0);

                p = &l->pods[1];
                assert_string_equal(p->name, "dcgm-exporter-x7k2p");
                assert_string_equal(p->namespace, "gpu-operator");
                assert_int_equal(p->n_containers, 1);
                assert_int_equal(p->containers[0].n_devices, 0);

                p = &l->pods[2];
                assert_string_equal(p->namespace, "team-a");
                assert_devices(&p->containers[0].devices[0], "nvidia.com/mig-1g.10gb", 1, "MIG-6a4f2c1e-0b3d-5e7f-8a9b-0c1d2e3f4a5b",
                               2, 1);
                assert_int_equal(p->containers[0].devices[0].numa_nodes[1], 3);

                p = &l->pods[3];
                assert_string_equal(p->name, "inference-shared");
                assert_devices(&p->containers[0].devices[0], "nvidia.com/gpu", 1, "GPU-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0::3", 0, 0);
                podres_list_free(l);

                struct podres_allocatable *a = NULL;
                assert_int_equal(podres_allocatable(c, &a, &err), 0);
                assert_int_equal(a->n_devices, 4);
                assert_devices(&a->devices[0], "nvidia.com/gpu", 1, "GPU-2b7c1f0e-5a3d-4e5f-9a1b-3c4d5e6f7a8b", 1, 0);
                assert_devices(&a->devices[2], "nvidia.com/mig-1g.10gb", 2, "MIG-6a4f2c1e-0b3d-5e7f-8a9b-0c1d2e3f4a5b", 1, 1);
                assert_devices(&a->devices[3], "rdma/rdma_shared_device_a", 1, "rdma0", 0, 0);
                podres_allocatable_free(a);
        }
}

/* The kubelet restarted between two calls: the second connects again. */
static void test_reconnect(void **state) {
        start("normal", NULL, NULL);
        _cleanup_podres_client_ struct podres_client *c = podres_client_new(NULL, 5000);
        struct podres_list *l = NULL;
        assert_int_equal(podres_list(c, &l, NULL), 0);
        podres_list_free(l);
        stop();
        start("normal", NULL, NULL);
        assert_int_equal(podres_list(c, &l, NULL), 0);
        assert_int_equal(l->n_pods, 4);
        podres_list_free(l);
}

/* An old kubelet: List works, GetAllocatableResources is UNIMPLEMENTED, and List still works after. */
static void test_unimplemented(void **state) {
        start("unimplemented", NULL, NULL);
        _cleanup_podres_client_ struct podres_client *c = podres_client_new(NULL, 5000);
        struct podres_allocatable *a = NULL;
        char *err = NULL;
        assert_int_equal(podres_allocatable(c, &a, &err), -EOPNOTSUPP);
        assert_null(a);
        assert_non_null(strstr(err, PODRES_SOCKET));
        assert_non_null(strstr(err, "/v1.PodResourcesLister/GetAllocatableResources: answered UNIMPLEMENTED"));
        assert_non_null(strstr(err, "before 1.21"));
        free(err);
        struct podres_list *l = NULL;
        assert_int_equal(podres_list(c, &l, NULL), 0);
        assert_int_equal(l->n_pods, 4);
        podres_list_free(l);
}

/* A refusal with a status text: the text percent-decoded in the sentence. */
static void test_denied(void **state) {
        start("denied", NULL, NULL);
        _cleanup_podres_client_ struct podres_client *c = podres_client_new(NULL, 5000);
        struct podres_list *l = NULL;
        char *err = NULL;
        assert_int_equal(podres_list(c, &l, &err), -EACCES);
        assert_non_null(strstr(err, "answered PERMISSION_DENIED: no access to pod-resources: 100% denied?"));
        free(err);
}

/* A busy node: 60,000 pods (5.3 MB, past grpc-go's default 4 MiB) decode; 200,000 (17.8 MB)
 * are refused from the length prefix, with the limit in the sentence. */
static void test_many_pods(void **state) {
        start("many", "--pods", "60000");
        _cleanup_podres_client_ struct podres_client *c = podres_client_new(NULL, 20000);
        struct podres_list *l = NULL;
        char *err = NULL;
        assert_int_equal(podres_list(c, &l, &err), 0);
        assert_int_equal(l->n_pods, 60000);
        assert_string_equal(l->pods[59999].name, "job-059999");
        assert_string_equal(l->pods[59999].containers[0].devices[0].device_ids[0], "GPU-0000ea5f-1111-2222-3333-444455556666");
        podres_list_free(l);
        stop();

        start("many", "--pods", "200000");
        l = NULL;
        assert_int_equal(podres_list(c, &l, &err), -EMSGSIZE);
        assert_non_null(strstr(err, "announced a message of 17800000 bytes, past the limit of 16777216"));
        free(err);
}

/* Runs List against a hostile mode with timeout_ms; returns the errno, the sentence in *ret_err
 * and the time it took in *ret_ms. */
static int hostile_list(const char *mode, unsigned timeout_ms, char **ret_err, uint64_t *ret_ms) {
        start(mode, NULL, NULL);
        _cleanup_podres_client_ struct podres_client *c = podres_client_new(NULL, timeout_ms);
        struct podres_list *l = NULL;
        uint64_t t0 = grpc_now_us();
        int r = podres_list(c, &l, ret_err);
        *ret_ms = (grpc_now_us() - t0) / 1000;
        assert_null(l);
        assert_non_null(*ret_err);
        assert_non_null(strstr(*ret_err, "the kubelet's pod-resources socket " PODRES_SOCKET ": /v1.PodResourcesLister/List: "));
        return r;
}

/* Accepts and never answers: the deadline, and a sentence that says so. */
static void test_hang(void **state) {
        char *err = NULL;
        uint64_t ms;
        assert_int_equal(hostile_list("hang", 300, &err, &ms), -ETIMEDOUT);
        assert_non_null(strstr(err, "sent no answer within 300 ms"));
        assert_true(ms >= 290 && ms < 2000);
        free(err);
}

static void test_close(void **state) {
        char *err = NULL;
        uint64_t ms;
        assert_int_equal(hostile_list("close", 5000, &err, &ms), -ECONNRESET);
        assert_non_null(strstr(err, "closed the connection without answering"));
        assert_true(ms < 4000);
        free(err);
}

static void test_close_mid(void **state) {
        char *err = NULL;
        uint64_t ms;
        assert_int_equal(hostile_list("close-mid", 5000, &err, &ms), -ECONNRESET);
        assert_non_null(strstr(err, "closed the connection in the middle of its answer"));
        assert_true(ms < 4000);
        free(err);
}

/* A 100 MiB prefix: refused at once, not after the deadline, and nothing of it buffered. */
static void test_huge(void **state) {
        char *err = NULL;
        uint64_t ms;
        assert_int_equal(hostile_list("huge", 5000, &err, &ms), -EMSGSIZE);
        assert_non_null(strstr(err, "announced a message of 104857600 bytes, past the limit of 16777216"));
        assert_true(ms < 4000);
        free(err);
}

static void test_garbage(void **state) {
        char *err = NULL;
        uint64_t ms;
        assert_int_equal(hostile_list("garbage", 5000, &err, &ms), -EPROTO);
        assert_non_null(strstr(err, "broke HTTP/2"));
        assert_true(ms < 4000);
        free(err);
}

static void test_no_trailers(void **state) {
        char *err = NULL;
        uint64_t ms;
        assert_int_equal(hostile_list("no-trailers", 5000, &err, &ms), -EPROTO);
        assert_non_null(strstr(err, "ended the call without a grpc-status"));
        free(err);
}

/* A server that keeps sending, slowly: the deadline holds all the same. */
static void test_drip(void **state) {
        char *err = NULL;
        uint64_t ms;
        assert_int_equal(hostile_list("drip", 500, &err, &ms), -ETIMEDOUT);
        assert_non_null(strstr(err, "did not finish its answer within 500 ms"));
        assert_true(ms >= 490 && ms < 2000);
        free(err);
}

/* 80 KB of headers: the stream is reset past 64 KiB. */
static void test_big_headers(void **state) {
        char *err = NULL;
        uint64_t ms;
        assert_int_equal(hostile_list("big-headers", 5000, &err, &ms), -EMSGSIZE);
        assert_non_null(strstr(err, "sent more than 65536 bytes of headers"));
        assert_true(ms < 4000);
        free(err);
}

/* No socket, a regular file, a socket nobody listens on, a link out of the root. */
static void test_no_kubelet(void **state) {
        _cleanup_podres_client_ struct podres_client *c = podres_client_new(NULL, 1000);
        struct podres_list *l = NULL;
        char *err = NULL;
        unlink(sock);
        assert_int_equal(podres_list(c, &l, &err), -ENOENT);
        assert_non_null(strstr(err, PODRES_SOCKET ": /v1.PodResourcesLister/List: there is no such socket"));
        free(err);

        _cleanup_free_ char *dir = xasprintf("%s/var/lib/kubelet/pod-resources", root);
        _cleanup_free_ char *cmd = xasprintf("mkdir -p %s", dir);
        assert_int_equal(system(cmd), 0);
        int fd = open(sock, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        assert_true(fd >= 0);
        close(fd);
        assert_int_equal(podres_list(c, &l, &err), -ENOTSOCK);
        assert_non_null(strstr(err, "it is not a socket"));
        free(err);
        unlink(sock);

        int s = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un addr = {.sun_family = AF_UNIX};
        assert_true(strlen(sock) < sizeof addr.sun_path);
        strcpy(addr.sun_path, sock);
        assert_int_equal(bind(s, (struct sockaddr *)&addr, sizeof addr), 0);
        assert_int_equal(podres_list(c, &l, &err), -ECONNREFUSED);
        assert_non_null(strstr(err, "nothing listens on it"));
        free(err);
        close(s);
        unlink(sock);

        /* An absolute link resolves inside the root: a socket outside it is never reached
         * (where openat2 exists: valgrind, for one, answers ENOSYS, and hostfs falls back). */
        struct open_how how = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_IN_ROOT};
        int probe = (int)syscall(SYS_openat2, AT_FDCWD, "/", &how, sizeof how);
        if (probe < 0 && errno == ENOSYS) return;
        close(probe);
        char outside[] = "/tmp/gpunode-podres-out-XXXXXX";
        assert_non_null(mkdtemp(outside));
        _cleanup_free_ char *target = xasprintf("%s/kubelet.sock", outside);
        s = socket(AF_UNIX, SOCK_STREAM, 0);
        strcpy(addr.sun_path, target);
        assert_int_equal(bind(s, (struct sockaddr *)&addr, sizeof addr), 0);
        assert_int_equal(listen(s, 4), 0);
        assert_int_equal(symlink(target, sock), 0);
        assert_int_equal(podres_list(c, &l, &err), -ENOENT);
        free(err);
        close(s);
        unlink(sock);
        unlink(target);
        rmdir(outside);
        assert_null(l);
}

/* The decoders alone: garbage, a string that is not UTF-8, a message that would expand past the budget. */
static void test_decode(void **state) {
        struct podres_list *l = NULL;
        struct podres_allocatable *a = NULL;
        char *err = NULL;
        assert_int_equal(podres_decode_list((const uint8_t *)"", 0, &l, NULL), 0);
        assert_int_equal(l->n_pods, 0);
        podres_list_free(l);
        l = NULL;

        const uint8_t bad[] = {0x0a, 0x7f, 0x01};
        assert_int_equal(podres_decode_list(bad, sizeof bad, &l, &err), -EBADMSG);
        assert_non_null(strstr(err, "not a valid ListPodResourcesResponse"));
        free(err);

        /* pod_resources { name: "\xff" } */
        const uint8_t latin1[] = {0x0a, 0x03, 0x0a, 0x01, 0xff};
        assert_int_equal(podres_decode_list(latin1, sizeof latin1, &l, &err), -EBADMSG);
        assert_non_null(strstr(err, "not UTF-8"));
        free(err);

        /* devices { device_ids: "x", topology { nodes { ID: -1 } } } */
        const uint8_t neg[] = {0x0a, 0x12, 0x12, 0x01, 'x', 0x1a, 0x0d, 0x0a, 0x0b, 0x08,
                               0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
        assert_int_equal(podres_decode_allocatable(neg, sizeof neg, &a, &err), 0);
        assert_int_equal(a->n_devices, 1);
        assert_string_equal(a->devices[0].resource_name, "");
        assert_int_equal(a->devices[0].n_numa_nodes, 1);
        assert_int_equal(a->devices[0].numa_nodes[0], -1);
        podres_allocatable_free(a);

        /* 16 MiB of empty pods (two bytes each) would be 8 million structs: refused. */
        size_t n = 16u << 20;
        uint8_t *many = xmalloc(n);
        for (size_t i = 0; i < n; i += 2) {
                many[i] = 0x0a;
                many[i + 1] = 0;
        }
        assert_int_equal(podres_decode_list(many, n, &l, &err), -E2BIG);
        assert_non_null(strstr(err, "decoding limit"));
        free(err);
        free(many);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test_teardown(test_list_and_allocatable, after_each),
                cmocka_unit_test_teardown(test_reconnect, after_each),
                cmocka_unit_test_teardown(test_unimplemented, after_each),
                cmocka_unit_test_teardown(test_denied, after_each),
                cmocka_unit_test_teardown(test_many_pods, after_each),
                cmocka_unit_test_teardown(test_hang, after_each),
                cmocka_unit_test_teardown(test_close, after_each),
                cmocka_unit_test_teardown(test_close_mid, after_each),
                cmocka_unit_test_teardown(test_huge, after_each),
                cmocka_unit_test_teardown(test_garbage, after_each),
                cmocka_unit_test_teardown(test_no_trailers, after_each),
                cmocka_unit_test_teardown(test_drip, after_each),
                cmocka_unit_test_teardown(test_big_headers, after_each),
                cmocka_unit_test_teardown(test_no_kubelet, after_each),
                cmocka_unit_test(test_decode),
        };
        return cmocka_run_group_tests(tests, setup, teardown);
}
