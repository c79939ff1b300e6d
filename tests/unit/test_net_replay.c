/* test_net_replay.c: the API/metrics exchange recorder and replayer: index round trip, kube_get and http_fetch answering from a snapshot, hostile indexes, API redaction. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <sys/stat.h>

#include "basic/hostfs.h"
#include "kube/http_fetch.h"
#include "kube/kube_client.h"
#include "kube/net_replay.h"
#include "snapshot/snapshot.h"
#include "basic/util.h"

/* Records what a collect run against a cluster would: setup, node, pods (twice, second refused),
 * a hanging csinode GET, a metrics page and a refused exporter. Returns the log. */
static struct net_log *record_sample(void) {
        struct net_log *log = net_log_new();
        net_record_to(log);
        net_record_setup(0, NULL, "https://10.0.0.1:6443", "/home/u/.kube/config");
        const char *node = "{\"kind\":\"Node\",\"metadata\":{\"name\":\"gpu-1\"}}";
        net_record(NET_API, "/api/v1/nodes/gpu-1", 0, 200, node, strlen(node), NULL);
        const char *pods = "{\"kind\":\"PodList\",\"items\":[]}";
        net_record(NET_API, "/api/v1/pods?fieldSelector=spec.nodeName%3Dgpu-1", 0, 200, pods, strlen(pods), NULL);
        const char *forbidden = "{\"kind\":\"Status\",\"message\":\"pods is forbidden\",\"code\":403}";
        net_record(NET_API, "/api/v1/pods?fieldSelector=spec.nodeName%3Dgpu-1", -EPERM, 403, forbidden, strlen(forbidden),
                   "GET https://10.0.0.1:6443/api/v1/pods?fieldSelector=spec.nodeName%3Dgpu-1: 403 Forbidden: pods is forbidden");
        net_record(NET_API, "/apis/storage.k8s.io/v1/csinodes/gpu-1", -ETIMEDOUT, 0, NULL, 0,
                   "GET https://10.0.0.1:6443/apis/storage.k8s.io/v1/csinodes/gpu-1: no answer within 5000 ms");
        const char *page = "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-1\"} 5\n";
        net_record(NET_METRICS, "http://user:pw@10.1.0.5:9400/metrics", 0, 200, page, strlen(page), NULL);
        net_record(NET_METRICS, "http://localhost:9100/metrics", -ECONNREFUSED, 0, NULL, 0,
                   "GET http://localhost:9100/metrics: connection refused (nothing listens there)");
        net_record(NET_API, "/api/v1/namespaces", -EREMOTEIO, 0, NULL, 0, "odd");
        net_record_to(NULL);
        net_log_set_options(log, "gpu-1", 1500, NULL, "http://user:pw@10.1.0.5:9400/metrics", NULL);
        return log;
}

/* Writes each recorded body to dir/<member> as the snapshot would hold it. */
static void write_members(const struct net_log *log, const char *dir) {
        _cleanup_free_ char *api = xasprintf("%s/api", dir);
        assert_int_equal(mkdir(api, 0700), 0);
        for (size_t i = 0; i < log->n; i++) {
                if (!log->v[i].member) continue;
                _cleanup_free_ char *p = xasprintf("%s/%s", dir, log->v[i].member);
                FILE *f = fopen(p, "we");
                assert_non_null(f);
                fwrite(log->v[i].body, 1, log->v[i].len, f);
                fclose(f);
        }
}

static void test_record_index_replay(void **state) {
        (void)state;
        struct net_log *log = record_sample();
        assert_int_equal(log->n, 7);
        assert_string_equal(log->v[0].member, "api/0001-api-v1-nodes-gpu-1.json");
        assert_string_equal(log->v[4].request, "http://REDACTED@10.1.0.5:9400/metrics");
        assert_string_equal(log->options.dcgm_url, "http://REDACTED@10.1.0.5:9400/metrics");
        assert_null(log->v[3].member); /* a timeout has no body */
        _cleanup_free_ char *index = NULL;
        assert_int_equal(net_log_to_index(log, &index), 0);
        assert_non_null(strstr(index, "\"class\": \"timeout\""));
        assert_non_null(strstr(index, "\"class\": \"other\""));
        assert_null(strstr(index, "user:pw"));

        char dir[] = "/tmp/test_net_replay.XXXXXX";
        assert_non_null(mkdtemp(dir));
        write_members(log, dir);
        net_log_free(log);

        struct net_log *r = NULL;
        char *err = NULL;
        assert_int_equal(net_log_from_index(index, strlen(index), &r, &err), 0);
        r->dir = xstrdup(dir);
        assert_int_equal(r->options.timeout_ms, 1500);
        assert_string_equal(r->options.node, "gpu-1");
        net_replay_from(r);
        assert_true(net_replaying());

        char *server = NULL, *source = NULL;
        assert_int_equal(net_replay_setup(&server, &source, &err), 0);
        assert_string_equal(server, "https://10.0.0.1:6443");
        assert_string_equal(source, "/home/u/.kube/config");
        struct kube_client *c = NULL;
        assert_int_equal(kube_client_new_offline(server, 1500, &c), 0);
        free(server);
        free(source);

        /* kube_get answers from the snapshot, without libcurl */
        json_t *j = NULL;
        assert_int_equal(kube_get_node(c, "gpu-1", &j, &err), 0);
        assert_string_equal(json_string_value(json_object_get(j, "kind")), "Node");
        json_decref(j);
        /* the same request twice: the answers in their order, then the last one again */
        j = NULL;
        assert_int_equal(kube_list_pods(c, "gpu-1", NULL, NULL, &j, &err), 0);
        json_decref(j);
        for (int i = 0; i < 2; i++) {
                assert_int_equal(kube_list_pods(c, "gpu-1", NULL, NULL, &j, &err), -EPERM);
                assert_string_equal(err, "GET https://10.0.0.1:6443/api/v1/pods?fieldSelector=spec.nodeName%3Dgpu-1: 403 "
                                         "Forbidden: pods is forbidden");
                free(err);
                err = NULL;
        }
        /* a hanging API replays as a timeout, at once */
        assert_int_equal(kube_get(c, "/apis/storage.k8s.io/v1/csinodes/gpu-1", &j, &err), -ETIMEDOUT);
        assert_non_null(strstr(err, "no answer within 5000 ms"));
        free(err);
        assert_int_equal(kube_get(c, "/api/v1/namespaces", &j, &err), -EREMOTEIO);
        free(err);
        /* what was never asked */
        assert_int_equal(kube_get_node(c, "gpu-2", &j, &err), NET_NOT_RECORDED);
        assert_string_equal(err, "GET https://10.0.0.1:6443/api/v1/nodes/gpu-2: not in the snapshot (gpunode collect did "
                                 "not ask the API for it on the node)");
        free(err);
        kube_client_free(c);

        /* http_fetch */
        char *body = NULL;
        size_t len = 0;
        long code = 0;
        assert_int_equal(http_fetch("http://REDACTED@10.1.0.5:9400/metrics", 100, HTTP_FETCH_MAX_BODY, &body, &len, &code, &err), 0);
        assert_int_equal(code, 200);
        assert_int_equal(len, strlen(body));
        assert_non_null(strstr(body, "DCGM_FI_DEV_GPU_UTIL"));
        free(body);
        assert_int_equal(http_fetch("http://localhost:9100/metrics", 100, HTTP_FETCH_MAX_BODY, &body, &len, &code, &err),
                         -ECONNREFUSED);
        assert_string_equal(err, "GET http://localhost:9100/metrics: connection refused (nothing listens there)");
        free(err);
        assert_int_equal(http_fetch("http://localhost:9400/metrics", 100, HTTP_FETCH_MAX_BODY, &body, &len, &code, &err),
                         NET_NOT_RECORDED);
        assert_non_null(strstr(err, "not in the snapshot"));
        free(err);

        /* a member missing from the snapshot: a clear error, not a crash */
        _cleanup_free_ char *gone = xasprintf("%s/%s", dir, r->v[0].member);
        assert_int_equal(unlink(gone), 0);
        free(r->v[0].body);
        r->v[0].body = NULL;
        r->v[0].answered = false;
        c = NULL;
        assert_int_equal(kube_client_new_offline("https://10.0.0.1:6443", 1500, &c), 0);
        assert_int_equal(kube_get_node(c, "gpu-1", &j, &err), -ENOENT);
        assert_non_null(strstr(err, "not in the archive"));
        free(err);
        kube_client_free(c);

        net_replay_from(NULL);
        assert_false(net_replaying());
        net_log_free(r);
        assert_int_equal(snapshot_remove_dir(dir), 0);
}

static void test_setup_replay(void **state) {
        (void)state;
        char *server, *source, *err = NULL;
        struct net_log *empty = net_log_new();
        net_replay_from(empty);
        assert_int_equal(net_replay_setup(&server, &source, &err), NET_NOT_RECORDED);
        assert_non_null(strstr(err, "no Kubernetes API answers"));
        free(err);
        /* no configuration on the node: replayed as such */
        struct net_log *log = net_log_new();
        net_record_to(log);
        net_record_setup(-ENOENT, "no Kubernetes configuration: not in a pod", NULL, NULL);
        net_record_to(NULL);
        _cleanup_free_ char *index = NULL;
        assert_int_equal(net_log_to_index(log, &index), 0);
        net_log_free(log);
        assert_int_equal(net_log_from_index(index, strlen(index), &log, &err), 0);
        net_replay_from(log);
        assert_int_equal(net_replay_setup(&server, &source, &err), -ENOENT);
        assert_null(server);
        assert_string_equal(err, "no Kubernetes configuration: not in a pod");
        free(err);
        net_log_free(log); /* also uninstalls it */
        assert_false(net_replaying());
        net_log_free(empty);
}

static void test_strip_credentials(void **state) {
        (void)state;
        static const char *const cases[][2] = {
                {"http://a:b@host:1/x", "http://REDACTED@host:1/x"},
                {"GET https://tok@h/p: refused; see http://u:p@q@r/", "GET https://REDACTED@h/p: refused; see http://REDACTED@r/"},
                {"http://host/path@x", "http://host/path@x"},
                {"no url", "no url"},
                {"", ""},
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_free_ char *s = net_strip_url_credentials(cases[i][0]);
                assert_string_equal(s, cases[i][1]);
        }
        assert_null(net_strip_url_credentials(NULL));
        assert_string_equal(net_error_class(-ETIMEDOUT), "timeout");
        assert_string_equal(net_error_class(-EXDEV), "other");
}

/* Parses index text; expects r and an error naming needle. */
static void expect_bad_index(const char *text, size_t len, int want, const char *needle) {
        struct net_log *log = NULL;
        char *err = NULL;
        int r = net_log_from_index(text, len, &log, &err);
        if (r != want) fail_msg("index parse returned %d (%s), wanted %d: %.80s", r, err ? err : "", want, text);
        assert_null(log);
        assert_non_null(err);
        if (!strstr(err, needle)) fail_msg("error '%s' does not name '%s'", err, needle);
        assert_true(startswith(err, "api/INDEX.json: ") != NULL);
        free(err);
}

#define HEAD "{\"schema\":\"gpunode.snapshot-api/v1\","
#define BAD(s, want, needle) expect_bad_index(s, strlen(s), want, needle)

static void test_hostile_index(void **state) {
        (void)state;
        BAD("", -EINVAL, "not JSON");
        BAD("\x01\xff{garbage", -EINVAL, "not JSON");
        BAD("[]", -EINVAL, "schema");
        BAD("{\"schema\":\"gpunode.snapshot-api/v2\",\"exchanges\":[]}", -EINVAL, "schema");
        BAD(HEAD "\"exchanges\":{}}", -EINVAL, "exchanges");
        BAD(HEAD "\"schema\":\"gpunode.snapshot-api/v1\",\"exchanges\":[]}", -EINVAL, "not JSON"); /* duplicate key */
        BAD(HEAD "\"exchanges\":[1]}", -EINVAL, "exchange 1: not an object");
        BAD(HEAD "\"exchanges\":[{\"kind\":\"ftp\",\"request\":\"/x\"}]}", -EINVAL, "kind");
        /* grpc exchanges (the kubelet's pod-resources List) obey the API's rules */
        BAD(HEAD "\"exchanges\":[{\"kind\":\"grpc\",\"request\":\"v1.PodResourcesLister/List\",\"member\":\"api/a.json\"}]}", -EINVAL, "request");
        BAD(HEAD "\"exchanges\":[{\"kind\":\"grpc\",\"request\":\"/v1.X/List\",\"member\":\"api/../x.json\"}]}", -EINVAL, "member");
        BAD(HEAD "\"exchanges\":[{\"kind\":\"grpc\",\"request\":\"/v1.X/List\",\"member\":\"/etc/x.json\"}]}", -EINVAL, "member");
        BAD(HEAD "\"exchanges\":[{\"kind\":\"grpc\",\"request\":\"/v1.X/List\"}]}", -EINVAL, "without a member");
        BAD(HEAD "\"exchanges\":[{\"kind\":\"grpc\",\"request\":\"/v1.X/List\",\"error\":{\"class\":\"bogus\",\"message\":\"m\"}}]}", -EINVAL, "class");
        BAD(HEAD "\"exchanges\":[{\"kind\":\"api\",\"request\":\"x\",\"member\":\"api/a.json\"}]}", -EINVAL, "request");
        BAD(HEAD "\"exchanges\":[{\"kind\":\"api\",\"request\":\"/x\\ny\",\"member\":\"api/a.json\"}]}", -EINVAL, "request");
        BAD(HEAD "\"exchanges\":[{\"kind\":\"api\",\"request\":\"/x\",\"member\":\"api/../../etc/passwd.json\"}]}", -EINVAL, "member");
        BAD(HEAD "\"exchanges\":[{\"kind\":\"api\",\"request\":\"/x\",\"member\":\"/etc/passwd.json\"}]}", -EINVAL, "member");
        BAD(HEAD "\"exchanges\":[{\"kind\":\"api\",\"request\":\"/x\",\"member\":\"root/etc/x.json\"}]}", -EINVAL, "member");
        BAD(HEAD "\"exchanges\":[{\"kind\":\"api\",\"request\":\"/x\",\"member\":\"api/sub/x.json\"}]}", -EINVAL, "member");
        BAD(HEAD "\"exchanges\":[{\"kind\":\"api\",\"request\":\"/x\",\"member\":\"api/INDEX.json\"}]}", -EINVAL, "member");
        BAD(HEAD "\"exchanges\":[{\"kind\":\"api\",\"request\":\"/x\",\"member\":\"api/x.sh\"}]}", -EINVAL, "member");
        BAD(HEAD "\"exchanges\":[{\"kind\":\"api\",\"request\":\"/x\"}]}", -EINVAL, "without a member");
        BAD(HEAD "\"exchanges\":[{\"kind\":\"api\",\"request\":\"/x\",\"status\":-1,\"member\":\"api/a.json\"}]}", -EINVAL, "status");
        BAD(HEAD "\"exchanges\":[{\"kind\":\"api\",\"request\":\"/x\",\"error\":{\"class\":\"boom\",\"message\":\"m\"}}]}", -EINVAL, "class");
        BAD(HEAD "\"exchanges\":[{\"kind\":\"api\",\"request\":\"/x\",\"error\":{\"class\":\"other\",\"errno\":0,\"message\":\"m\"}}]}", -EINVAL, "class");
        BAD(HEAD "\"exchanges\":[{\"kind\":\"api\",\"request\":\"/x\",\"error\":{\"class\":\"other\",\"errno\":99999,\"message\":\"m\"}}]}", -EINVAL, "class");
        BAD(HEAD "\"options\":{\"timeout_ms\":-5},\"exchanges\":[]}", -EINVAL, "options");
        BAD(HEAD "\"options\":{\"node\":7},\"exchanges\":[]}", -EINVAL, "options");
        BAD(HEAD "\"setup\":{\"error\":{\"class\":\"timeout\"}},\"exchanges\":[]}", -EINVAL, "setup");
        BAD(HEAD "\"setup\":[],\"exchanges\":[]}", -EINVAL, "setup");

        /* a request longer than NET_REQUEST_MAX */
        struct buf b = {0};
        buf_puts(&b, HEAD "\"exchanges\":[{\"kind\":\"api\",\"request\":\"/");
        for (size_t i = 0; i < NET_REQUEST_MAX; i++) buf_puts(&b, "a");
        buf_puts(&b, "\",\"member\":\"api/a.json\"}]}");
        expect_bad_index(b.data, b.len, -EINVAL, "request");
        buf_free(&b);
        /* too many exchanges */
        buf_puts(&b, HEAD "\"exchanges\":[");
        for (size_t i = 0; i <= NET_EXCHANGES_MAX; i++)
                buf_printf(&b, "%s{\"kind\":\"api\",\"request\":\"/x\",\"error\":{\"class\":\"timeout\",\"message\":\"m\"}}",
                           i ? "," : "");
        buf_puts(&b, "]}");
        expect_bad_index(b.data, b.len, -E2BIG, "exchanges");
        buf_free(&b);
        /* larger than the limit: refused before parsing */
        expect_bad_index("{}", NET_INDEX_MAX_BYTES + 1, -EFBIG, "larger");
        /* deep nesting: jansson's depth limit, refused */
        for (int i = 0; i < 5000; i++) buf_puts(&b, "[");
        expect_bad_index(b.data, b.len, -EINVAL, "not JSON");
        buf_free(&b);

        /* and the smallest good one */
        struct net_log *log = NULL;
        char *err = NULL;
        const char *ok = HEAD "\"exchanges\":[]}";
        assert_int_equal(net_log_from_index(ok, strlen(ok), &log, &err), 0);
        assert_int_equal(log->n, 0);
        assert_false(log->setup.recorded);
        net_log_free(log);
}

/* The writer stores the exchanges (redacted) and check --snapshot's reader loads them back. */
static void test_snapshot_round_trip(void **state) {
        (void)state;
        char base[] = "/tmp/test_net_replay_snap.XXXXXX";
        assert_non_null(mkdtemp(base));
        _cleanup_free_ char *root = xasprintf("%s/root", base), *archive = xasprintf("%s/s.tar.gz", base);
        assert_int_equal(mkdir(root, 0700), 0);
        assert_int_equal(hostfs_init(root), 0);

        struct net_log *log = net_log_new();
        net_record_to(log);
        net_record_setup(0, NULL, "https://k:6443", "in-cluster");
        const char *pods = "{\"kind\":\"PodList\",\"items\":[{\"metadata\":{\"name\":\"p\",\"annotations\":"
                           "{\"example.com/api-token\":\"leak-1\",\"kubectl.kubernetes.io/last-applied-configuration\":\"leak-2\"}},"
                           "\"spec\":{\"containers\":[{\"name\":\"c\",\"env\":[{\"name\":\"A\",\"value\":\"leak-3\"},"
                           "{\"name\":\"B\",\"valueFrom\":{\"fieldRef\":{\"fieldPath\":\"spec.nodeName\"}}}],"
                           "\"args\":[\"--token=leak-4\",\"--password\",\"leak-5\",\"-v\"]}]}}]}";
        net_record(NET_API, "/api/v1/pods?fieldSelector=spec.nodeName%3Dn", 0, 200, pods, strlen(pods), NULL);
        const char *notjson = "password: leak-6\nfine\n";
        net_record(NET_API, "/api/v1/nodes/n", -EBADMSG, 200, notjson, strlen(notjson), "GET https://k:6443/api/v1/nodes/n: the answer is not JSON");
        net_record(NET_METRICS, "http://h:9400/metrics", 0, 200, "", 0, NULL);
        net_record_to(NULL);
        net_log_set_options(log, "n", 5000, "gpu-operator", NULL, NULL);

        struct snapshot_writer *w = NULL;
        char *err = NULL;
        assert_int_equal(snapshot_writer_open(archive, &w, &err), 0);
        _cleanup_free_ char *etc = xasprintf("%s/etc", root);
        assert_int_equal(mkdir(etc, 0700), 0);
        assert_int_equal(snapshot_add_host_path(w, "/etc"), 0);
        assert_int_equal(snapshot_add_net_log(w, log), 0);
        assert_int_equal(snapshot_writer_finish(w, "n", "/", NULL, &err), 0);
        hostfs_done();
        net_log_free(log);

        _cleanup_free_ char *grep = xasprintf("! (tar xzf %s -O | grep -q leak-)", archive);
        if (system(grep) != 0) fail_msg("a credential reached the archive");

        struct snapshot *s = NULL;
        if (snapshot_open(archive, &s, &err) < 0) fail_msg("snapshot_open: %s", err);
        assert_non_null(s->net);
        assert_int_equal(s->net->n, 3);
        assert_string_equal(s->net->options.operator_namespace, "gpu-operator");
        net_replay_from(s->net);
        struct kube_client *c = NULL;
        assert_int_equal(kube_client_new_offline("https://k:6443", 5000, &c), 0);
        json_t *j = NULL;
        assert_int_equal(kube_list_pods(c, "n", NULL, NULL, &j, &err), 0);
        json_t *ct = json_array_get(json_object_get(json_object_get(json_array_get(json_object_get(j, "items"), 0), "spec"), "containers"), 0);
        assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(ct, "env"), 0), "value")), "REDACTED");
        assert_string_equal(json_string_value(json_array_get(json_object_get(ct, "args"), 0)), "--token=REDACTED");
        assert_string_equal(json_string_value(json_array_get(json_object_get(ct, "args"), 3)), "-v");
        json_decref(j);
        assert_int_equal(kube_get_node(c, "n", &j, &err), -EBADMSG);
        assert_string_equal(err, "GET https://k:6443/api/v1/nodes/n: the answer is not JSON");
        free(err);
        char *body = NULL;
        size_t len = 1;
        long code = 0;
        assert_int_equal(http_fetch("http://h:9400/metrics", 100, HTTP_FETCH_MAX_BODY, &body, &len, &code, &err), 0);
        assert_int_equal(len, 0);
        assert_string_equal(body, "");
        free(body);
        kube_client_free(c);
        net_replay_from(NULL);
        snapshot_close(s);
        assert_int_equal(snapshot_remove_dir(base), 0);
}

static void test_redact_api_json(void **state) {
        (void)state;
        json_t *secret = json_pack("{s:s,s:{s:s,s:s},s:{s:s}}", "kind", "Secret", "data", "tls.crt", "QUJD", "ca", "REVG",
                                   "stringData", "x", "y");
        assert_int_equal(redact_api_json(secret), 3);
        assert_string_equal(json_string_value(json_object_get(json_object_get(secret, "data"), "tls.crt")), "REDACTED");
        json_decref(secret);
        json_t *list = json_pack("{s:s,s:[{s:{s:s}}]}", "kind", "SecretList", "items", "data", "k", "v");
        assert_int_equal(redact_api_json(list), 1);
        json_decref(list);
        /* a ConfigMap's data is not a Secret's; labels keep their values */
        json_t *cm = json_pack("{s:s,s:{s:s},s:{s:{s:s}}}", "kind", "ConfigMap", "data", "k", "v", "metadata", "labels",
                               "nvidia.com/gpu.product", "H100");
        assert_int_equal(redact_api_json(cm), 0);
        json_decref(cm);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_record_index_replay),
                cmocka_unit_test(test_setup_replay),
                cmocka_unit_test(test_strip_credentials),
                cmocka_unit_test(test_hostile_index),
                cmocka_unit_test(test_snapshot_round_trip),
                cmocka_unit_test(test_redact_api_json),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
