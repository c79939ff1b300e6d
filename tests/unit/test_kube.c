/* test_kube.c: kubeconfig resolution (kind, EKS, GKE, client certs, errors) and kube_get, kube_patch and kube_post end to end over TLS against kube_server.py. */
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include <cmocka.h>

#include "kube/kube_client.h"
#include "kube/kube_list.h"
#include "kube/kube_objects.h"
#include "kube/kubeconfig.h"
#include "basic/util.h"

/* Where the server script and make-certs.sh live: $GPUNODE_SOURCE_ROOT/tests/kube-server (meson's
 * test() sets it to the source root; GPUNODE_SOURCE_DIR is accepted too), else found next to this
 * file via __FILE__ (relative to the folder the compiler ran in, which is where meson runs tests). */
static char *server_dir;
static char *tmp;       /* the test's scratch folder */
static char *certs;     /* tmp/certs, from make-certs.sh */
static bool have_certs; /* make-certs.sh worked (openssl present) */
static char *saved_path;

/* The servers this test started, killed in teardown whatever happened. */
struct server {
        pid_t pid;
        int port;
};
static struct server srv_normal = {-1, 0}, srv_hang = {-1, 0}, srv_500 = {-1, 0}, srv_401 = {-1, 0};

#define TOKEN "test-token-0123456789"

/* Writes content to path (mode), aborting the test on failure. */
static void write_file(const char *path, const char *content, mode_t mode) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
        assert_true(fd >= 0);
        size_t n = strlen(content);
        assert_int_equal(write(fd, content, n), (ssize_t)n);
        close(fd);
}

/* Returns the contents of path (malloc'd), or NULL. */
static char *read_all(const char *path) {
        FILE *f = fopen(path, "re");
        if (!f) return NULL;
        struct buf b = {0};
        buf_puts(&b, "");
        char chunk[4096];
        size_t k;
        while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) buf_append(&b, chunk, k);
        fclose(f);
        return b.data;
}

/* Returns standard base64 of data (malloc'd). */
static char *b64(const char *data) {
        static const char t[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        const unsigned char *p = (const unsigned char *)data;
        size_t n = strlen(data), o = 0;
        char *s = xmalloc((n + 2) / 3 * 4 + 1);
        for (size_t i = 0; i < n; i += 3) {
                uint32_t v = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
                s[o++] = t[v >> 18 & 63];
                s[o++] = t[v >> 12 & 63];
                s[o++] = i + 1 < n ? t[v >> 6 & 63] : '=';
                s[o++] = i + 2 < n ? t[v & 63] : '=';
        }
        s[o] = 0;
        return s;
}

/* Runs argv (no shell) and returns its exit status, or -1. */
static int run(char *const argv[]) {
        pid_t pid = fork();
        if (pid < 0) return -1;
        if (pid == 0) {
                int null = open("/dev/null", O_WRONLY);
                if (null >= 0) dup2(null, 1);
                execv(argv[0], argv);
                _exit(127);
        }
        int st;
        if (waitpid(pid, &st, 0) < 0) return -1;
        return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Starts kube_server.py in mode and waits (at most 10 s) for the port it prints. Returns 0 or -1. */
static int server_start(struct server *s, const char *mode) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) < 0) return -1;
        _cleanup_free_ char *script = xasprintf("%s/kube_server.py", server_dir);
        _cleanup_free_ char *responses = xasprintf("%s/responses", tmp);
        pid_t pid = fork();
        if (pid < 0) return -1;
        if (pid == 0) {
                dup2(p[1], 1);
                char *argv[] = {"/usr/bin/python3", script, "--certs", certs, "--responses", responses,
                                "--token", TOKEN, "--mode", (char *)mode, "--lifetime", "60", NULL};
                execv(argv[0], argv);
                _exit(127);
        }
        close(p[1]);
        s->pid = pid;
        char line[32] = {0};
        size_t n = 0;
        struct pollfd pfd = {.fd = p[0], .events = POLLIN};
        while (n < sizeof line - 1 && !memchr(line, '\n', n) && poll(&pfd, 1, 10000) > 0) {
                ssize_t k = read(p[0], line + n, sizeof line - 1 - n);
                if (k <= 0) break;
                n += (size_t)k;
        }
        close(p[0]);
        s->port = atoi(line);
        return s->port > 0 ? 0 : -1;
}

/* Kills a started server and reaps it. */
static void server_stop(struct server *s) {
        if (s->pid > 0) {
                kill(s->pid, SIGKILL);
                waitpid(s->pid, NULL, 0);
        }
        s->pid = -1;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void)st; (void)flag; (void)ftw;
        return remove(path);
}

/* Returns a path under tmp (malloc'd). */
_printf_(1, 2) static char *tpath(const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        _cleanup_free_ char *rel = NULL;
        assert_true(vasprintf(&rel, fmt, ap) >= 0);
        va_end(ap);
        return xasprintf("%s/%s", tmp, rel);
}

/* Writes content to tmp/<name> and returns the path (malloc'd). */
static char *tfile(const char *name, const char *content) {
        char *p = tpath("%s", name);
        write_file(p, content, 0644);
        return p;
}

/* The fake exec plugins: each prints an ExecCredential as the real one does. */
static const char fake_aws[] =
        "#!/bin/sh\n"
        "# fake `aws eks get-token`: checks what kubectl passes and prints an ExecCredential\n"
        "case \"$KUBERNETES_EXEC_INFO\" in *'\"kind\":\"ExecCredential\"'*) ;; *) echo 'no KUBERNETES_EXEC_INFO' >&2; exit 3;; esac\n"
        "[ \"$3 $4\" = 'eks get-token' ] || { echo \"bad args: $*\" >&2; exit 4; }\n"
        "printf '{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"spec\":{},"
        "\"status\":{\"expirationTimestamp\":\"2030-01-01T00:00:00Z\",\"token\":\"k8s-aws-v1.%s.%s\"}}\\n' \"$AWS_PROFILE\" \"$6\"\n";

static const char fake_gke[] =
        "#!/bin/sh\n"
        "# fake gke-gcloud-auth-plugin: provideClusterInfo puts the cluster into KUBERNETES_EXEC_INFO\n"
        "case \"$KUBERNETES_EXEC_INFO\" in *'\"server\":\"https://34.118.1.2\"'*) ;; *) echo \"no cluster info: $KUBERNETES_EXEC_INFO\" >&2; exit 3;; esac\n"
        "echo '{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1beta1\",\"spec\":{\"interactive\":false},"
        "\"status\":{\"expirationTimestamp\":\"2030-01-01T00:00:00Z\",\"token\":\"ya29.fake-gke-token\"}}'\n";

static const char fake_token_plugin[] =
        "#!/bin/sh\n"
        "# prints the token kube_server.py accepts, through the v1 API\n"
        "echo '{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1\",\"status\":{\"token\":\"" TOKEN "\"}}'\n";

static const char fake_slow[] = "#!/bin/sh\nexec sleep 30\n";
static const char fake_fail[] = "#!/bin/sh\necho 'error: could not get token: ExpiredToken' >&2\nexit 1\n";
static const char fake_wrong_api[] =
        "#!/bin/sh\necho '{\"kind\":\"ExecCredential\",\"apiVersion\":\"client.authentication.k8s.io/v1alpha1\",\"status\":{\"token\":\"x\"}}'\n";

static const char node_json[] =
        "{\"kind\":\"Node\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"gpu-1\",\"labels\":{\"nvidia.com/gpu.present\":\"true\","
        "\"nvidia.com/gpu.product\":\"NVIDIA-H100-80GB-HBM3\"}},\"status\":{\"capacity\":{\"nvidia.com/gpu\":\"8\"},"
        "\"allocatable\":{\"nvidia.com/gpu\":\"8\"}}}\n";

static int group_setup(void **state) {
        (void)state;
        const char *src = getenv("GPUNODE_SOURCE_ROOT");
        if (!src || !*src) src = getenv("GPUNODE_SOURCE_DIR");
        if (src && *src)
                server_dir = xasprintf("%s/tests/kube-server", src);
        else {
                /* __FILE__ is .../tests/unit/test_kube.c */
                _cleanup_free_ char *f = xstrdup(__FILE__);
                char *s = strrchr(f, '/');
                if (s) *s = 0; else strcpy(f, ".");
                server_dir = xasprintf("%s/../kube-server", f);
        }
        _cleanup_free_ char *mk = xasprintf("%s/make-certs.sh", server_dir);
        if (access(mk, R_OK) < 0) {
                /* a wrong source folder must fail, not quietly skip the end-to-end tests */
                print_error("%s not found: set GPUNODE_SOURCE_ROOT to the source root\n", mk);
                return -1;
        }
        char tmpl[] = "/tmp/test_kube.XXXXXX";
        assert_non_null(mkdtemp(tmpl));
        tmp = xstrdup(tmpl);
        certs = tpath("certs");

        char *argv[] = {"/bin/sh", mk, certs, NULL};
        have_certs = access("/usr/bin/openssl", X_OK) == 0 && run(argv) == 0;

        /* recorded API responses */
        _cleanup_free_ char *d1 = tpath("responses"), *d2 = tpath("responses/api"), *d3 = tpath("responses/api/v1"),
                            *d4 = tpath("responses/api/v1/nodes"), *d5 = tpath("responses/api/v1/namespaces"),
                            *d6 = tpath("responses/api/v1/namespaces/gpu-operator"), *bin = tpath("bin"),
                            *home = tpath("home"), *kube = tpath("home/.kube"), *sa = tpath("sa");
        const char *dirs[] = {d1, d2, d3, d4, d5, d6, bin, home, kube, sa};
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) assert_int_equal(mkdir(dirs[i], 0755), 0);
        free(tfile("responses/api/v1/nodes/gpu-1.json", node_json));
        free(tfile("responses/api/v1/nodes/secret-node.json",
                   "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\",\"message\":\"nodes \\\"secret-node\\\" is forbidden: "
                   "User \\\"system:serviceaccount:gpu-operator:gpunode\\\" cannot get resource \\\"nodes\\\"\",\"reason\":\"Forbidden\",\"code\":403}\n"));
        free(tfile("responses/api/v1/pods?fieldSelector=spec.nodeName=gpu-1.json",
                   "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":[{\"metadata\":{\"name\":\"nvidia-device-plugin-daemonset-x\"}}]}\n"));
        free(tfile("responses/api/v1/namespaces/gpu-operator/pods?fieldSelector=spec.nodeName=gpu-1&labelSelector=app=nvidia-dcgm-exporter.json",
                   "{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"items\":[{\"metadata\":{\"name\":\"nvidia-dcgm-exporter-abcde\"}}]}\n"));
        free(tfile("responses/api/v1/namespaces.json",
                   "{\"kind\":\"NamespaceList\",\"apiVersion\":\"v1\",\"items\":[{\"metadata\":{\"name\":\"default\"}},{\"metadata\":{\"name\":\"gpu-operator\"}}]}\n"));
        free(tfile("responses/api/v1/nodes/notjson.json", "this is not json"));
        /* U+0000 in an annotation's value, a label's value and an annotation's key: the API server stores such */
        free(tfile("responses/api/v1/nodes/nul-node.json",
                   "{\"kind\":\"Node\",\"metadata\":{\"name\":\"nul-node\",\"uid\":\"u-1\",\"annotations\":"
                   "{\"note\":\"a\\u0000b\",\"esc\":\"\\\\u0000\"},\"labels\":{\"nvidia.com/gpu.present\":"
                   "\"true\",\"cut\":\"gpu-1\\u0000evil\"}},\"status\":{\"conditions\":[{\"type\":\"Ready\","
                   "\"status\":\"True\",\"message\":\"ok\\u0000then\"}]}}\n"));
        free(tfile("responses/api/v1/nodes/nulkey-node.json",
                   "{\"kind\":\"Node\",\"metadata\":{\"name\":\"nulkey-node\",\"annotations\":{\"k\\u0000x\":\"v\","
                   "\"esc\":\"\\\\u0000\",\"note\":\"a\\u0000b\"}}}\n"));
        free(tfile("responses/api/v1/nodes/badjson.json", "{\"kind\":\"Node\",\n \"metadata\": {\"name\": }}"));

        /* fake exec plugins found through $PATH, as kubectl finds aws */
        const struct { const char *name, *text; } plugins[] = {
                {"bin/aws", fake_aws}, {"bin/gke-gcloud-auth-plugin", fake_gke}, {"bin/token-plugin", fake_token_plugin},
                {"bin/slow-plugin", fake_slow}, {"bin/fail-plugin", fake_fail}, {"bin/wrong-api-plugin", fake_wrong_api},
        };
        for (size_t i = 0; i < ELEMENTSOF(plugins); i++) {
                _cleanup_free_ char *p = tpath("%s", plugins[i].name);
                write_file(p, plugins[i].text, 0755);
        }
        const char *path = getenv("PATH");
        saved_path = xstrdup(path ? path : "/usr/bin:/bin");
        _cleanup_free_ char *np = xasprintf("%s:%s", bin, saved_path);
        setenv("PATH", np, 1);
        unsetenv("KUBECONFIG");
        unsetenv("KUBERNETES_SERVICE_HOST");
        unsetenv("KUBERNETES_SERVICE_PORT");
        unsetenv("NODE_NAME");
        setenv("HOME", home, 1);

        if (have_certs && access("/usr/bin/python3", X_OK) == 0) {
                if (server_start(&srv_normal, "normal") < 0 || server_start(&srv_hang, "hang") < 0 ||
                    server_start(&srv_500, "500") < 0 || server_start(&srv_401, "401") < 0) {
                        server_stop(&srv_normal);
                        server_stop(&srv_hang);
                        server_stop(&srv_500);
                        server_stop(&srv_401);
                        print_error("kube_server.py did not start\n");
                        return -1;
                }
        }
        return 0;
}

static int group_teardown(void **state) {
        (void)state;
        server_stop(&srv_normal);
        server_stop(&srv_hang);
        server_stop(&srv_500);
        server_stop(&srv_401);
        if (tmp) nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        if (saved_path) setenv("PATH", saved_path, 1);
        free(saved_path);
        free(tmp);
        free(certs);
        free(server_dir);
        return 0;
}

/* Loads the kubeconfig text written to tmp/name. Returns kube_config_load()'s result. */
static int load_text(const char *name, const char *yaml, unsigned timeout_ms, struct kube_config **ret, char **ret_error) {
        _cleanup_free_ char *p = tfile(name, yaml);
        *ret = NULL;
        *ret_error = NULL;
        return kube_config_load(p, timeout_ms, ret, ret_error);
}

/* Asserts that err contains needle, printing both when it does not. */
static void assert_contains(const char *err, const char *needle) {
        if (!err || !strstr(err, needle)) {
                print_error("error \"%s\" does not contain \"%s\"\n", err ? err : "(null)", needle);
                fail();
        }
}

/* ---- base64 ---- */

static void test_base64(void **state) {
        (void)state;
        void *p;
        size_t n;
        assert_int_equal(kube_base64_decode("aGVsbG8=", 8, &p, &n), 0);
        assert_int_equal(n, 5);
        assert_string_equal(p, "hello");
        free(p);
        assert_int_equal(kube_base64_decode("aGVs\nbG8h\n", 10, &p, &n), 0);
        assert_string_equal(p, "hello!");
        free(p);
        assert_int_equal(kube_base64_decode("aGk=", 4, &p, &n), 0);
        assert_string_equal(p, "hi");
        free(p);
        assert_int_equal(kube_base64_decode("aGVsbG8", 7, &p, &n), -EINVAL);   /* no padding */
        assert_int_equal(kube_base64_decode("aG=sbG8=", 8, &p, &n), -EINVAL);  /* padding inside */
        assert_int_equal(kube_base64_decode("aGVs*G8=", 8, &p, &n), -EINVAL);  /* bad character */
        assert_int_equal(kube_base64_decode("aGk=aGk=", 8, &p, &n), -EINVAL);  /* data after padding */
        assert_int_equal(kube_base64_decode("=", 1, &p, &n), -EINVAL);
}

/* ---- kubeconfigs ---- */

/* kind's kubeconfig: everything inline as -data fields. */
static void test_kind(void **state) {
        (void)state;
        if (!have_certs) skip();
        _cleanup_free_ char *capath = xasprintf("%s/ca.crt", certs);
        _cleanup_free_ char *crtpath = xasprintf("%s/client.crt", certs), *keypath = xasprintf("%s/client.key", certs);
        _cleanup_free_ char *cap = read_all(capath), *crt = read_all(crtpath), *key = read_all(keypath);
        _cleanup_free_ char *ca64 = b64(cap), *crt64 = b64(crt), *key64 = b64(key);
        _cleanup_free_ char *yaml = xasprintf(
                "apiVersion: v1\n"
                "clusters:\n"
                "- cluster:\n"
                "    certificate-authority-data: %s\n"
                "    server: https://127.0.0.1:39811\n"
                "  name: kind-kind\n"
                "contexts:\n"
                "- context:\n"
                "    cluster: kind-kind\n"
                "    user: kind-kind\n"
                "  name: kind-kind\n"
                "current-context: kind-kind\n"
                "kind: Config\n"
                "preferences: {}\n"
                "users:\n"
                "- name: kind-kind\n"
                "  user:\n"
                "    client-certificate-data: %s\n"
                "    client-key-data: %s\n",
                ca64, crt64, key64);
        struct kube_config *c;
        char *err;
        int r = load_text("kind.yaml", yaml, 1000, &c, &err);
        if (r < 0) print_error("%s\n", err);
        assert_int_equal(r, 0);
        assert_string_equal(c->server, "https://127.0.0.1:39811");
        assert_string_equal(c->context, "kind-kind");
        assert_string_equal(c->namespace, "default");
        assert_int_equal(c->ca_pem_len, strlen(cap));
        assert_memory_equal(c->ca_pem, cap, c->ca_pem_len);
        assert_null(c->ca_file);
        assert_int_equal(c->cert_pem_len, strlen(crt));
        assert_memory_equal(c->cert_pem, crt, c->cert_pem_len);
        assert_memory_equal(c->key_pem, key, c->key_pem_len);
        assert_null(c->token);
        assert_false(c->insecure);
        assert_non_null(strstr(c->source, "kind.yaml"));
        kube_config_free(c);
}

/* aws eks update-kubeconfig's shape: an exec plugin with args and env, found through $PATH. */
static const char eks_yaml[] =
        "apiVersion: v1\n"
        "clusters:\n"
        "- cluster:\n"
        "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUMvakNDQWVhZ0F3SUJBZ0lCQURBTkJna3Foa2lHOXcwQkFRc0ZBREFWTVJNd0VRWURWUVFERXdwcmRXSmwKLS0tLS1FTkQgQ0VSVElGSUNBVEUtLS0tLQo=\n"
        "    server: https://ABCDEF0123456789.gr7.us-west-2.eks.amazonaws.com\n"
        "  name: arn:aws:eks:us-west-2:123456789012:cluster/prod\n"
        "contexts:\n"
        "- context:\n"
        "    cluster: arn:aws:eks:us-west-2:123456789012:cluster/prod\n"
        "    user: arn:aws:eks:us-west-2:123456789012:cluster/prod\n"
        "    namespace: gpu-operator\n"
        "  name: arn:aws:eks:us-west-2:123456789012:cluster/prod\n"
        "current-context: arn:aws:eks:us-west-2:123456789012:cluster/prod\n"
        "kind: Config\n"
        "preferences: {}\n"
        "users:\n"
        "- name: arn:aws:eks:us-west-2:123456789012:cluster/prod\n"
        "  user:\n"
        "    exec:\n"
        "      apiVersion: client.authentication.k8s.io/v1beta1\n"
        "      args:\n"
        "      - --region\n"
        "      - us-west-2\n"
        "      - eks\n"
        "      - get-token\n"
        "      - --cluster-name\n"
        "      - prod\n"
        "      - --output\n"
        "      - json\n"
        "      command: aws\n"
        "      env:\n"
        "      - name: AWS_PROFILE\n"
        "        value: gpu-team\n"
        "      interactiveMode: IfAvailable\n"
        "      provideClusterInfo: false\n";

static void test_eks_exec(void **state) {
        (void)state;
        struct kube_config *c;
        char *err;
        int r = load_text("eks.yaml", eks_yaml, 5000, &c, &err);
        if (r < 0) print_error("%s\n", err);
        assert_int_equal(r, 0);
        assert_string_equal(c->server, "https://ABCDEF0123456789.gr7.us-west-2.eks.amazonaws.com");
        assert_string_equal(c->token, "k8s-aws-v1.gpu-team.prod");
        assert_string_equal(c->namespace, "gpu-operator");
        assert_non_null(c->ca_pem);
        assert_non_null(strstr(c->ca_pem, "BEGIN CERTIFICATE"));
        kube_config_free(c);
}

/* gcloud container clusters get-credentials' shape: gke-gcloud-auth-plugin with provideClusterInfo. */
static const char gke_yaml[] =
        "apiVersion: v1\n"
        "clusters:\n"
        "- cluster:\n"
        "    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUVMRENDQXBTZ0F3SUJBZ0lRCi0tLS0tRU5EIENFUlRJRklDQVRFLS0tLS0K\n"
        "    server: https://34.118.1.2\n"
        "  name: gke_my-project_us-central1_gpu-cluster\n"
        "contexts:\n"
        "- context:\n"
        "    cluster: gke_my-project_us-central1_gpu-cluster\n"
        "    user: gke_my-project_us-central1_gpu-cluster\n"
        "  name: gke_my-project_us-central1_gpu-cluster\n"
        "current-context: gke_my-project_us-central1_gpu-cluster\n"
        "kind: Config\n"
        "preferences: {}\n"
        "users:\n"
        "- name: gke_my-project_us-central1_gpu-cluster\n"
        "  user:\n"
        "    exec:\n"
        "      apiVersion: client.authentication.k8s.io/v1beta1\n"
        "      command: gke-gcloud-auth-plugin\n"
        "      installHint: Install gke-gcloud-auth-plugin for use with kubectl by following\n"
        "        https://cloud.google.com/kubernetes-engine/docs/how-to/cluster-access-for-kubectl#install_plugin\n"
        "      provideClusterInfo: true\n";

static void test_gke_exec(void **state) {
        (void)state;
        struct kube_config *c;
        char *err;
        int r = load_text("gke.yaml", gke_yaml, 5000, &c, &err);
        if (r < 0) print_error("%s\n", err);
        assert_int_equal(r, 0);
        assert_string_equal(c->server, "https://34.118.1.2");
        assert_string_equal(c->token, "ya29.fake-gke-token");
        kube_config_free(c);
}

/* A missing plugin: the message carries the plugin's installHint. */
static void test_exec_not_found(void **state) {
        (void)state;
        _cleanup_free_ char *yaml = xstrdup(gke_yaml);
        char *p = strstr(yaml, "command: gke-gcloud-auth-plugin");
        memcpy(p, "command: gke-gcloud-auth-plugiX", strlen("command: gke-gcloud-auth-plugiX"));
        struct kube_config *c;
        char *err;
        assert_int_equal(load_text("gke-missing.yaml", yaml, 5000, &c, &err), -EINVAL);
        assert_contains(err, "executable gke-gcloud-auth-plugiX not found");
        assert_contains(err, "Install gke-gcloud-auth-plugin for use with kubectl");
        free(err);
}

/* Builds a kubeconfig whose user runs command with the given exec apiVersion. */
static char *exec_yaml(const char *server, const char *ca, const char *command, const char *api) {
        return xasprintf("apiVersion: v1\nkind: Config\ncurrent-context: c\n"
                         "clusters:\n- name: k\n  cluster:\n    server: %s\n%s%s%s"
                         "contexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                         "users:\n- name: u\n  user:\n    exec:\n      apiVersion: %s\n      command: %s\n"
                         "      interactiveMode: Never\n",
                         server, ca ? "    certificate-authority: " : "", ca ? ca : "", ca ? "\n" : "", api, command);
}

static void test_exec_timeout(void **state) {
        (void)state;
        _cleanup_free_ char *yaml = exec_yaml("https://10.0.0.1:6443", NULL, "slow-plugin", "client.authentication.k8s.io/v1");
        struct kube_config *c;
        char *err;
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        assert_int_equal(load_text("slow.yaml", yaml, 300, &c, &err), -ETIMEDOUT);
        clock_gettime(CLOCK_MONOTONIC, &b);
        long ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
        assert_true(ms >= 250 && ms < 2000);
        assert_contains(err, "did not finish within 300 ms");
        assert_contains(err, "user \"u\"");
        free(err);
}

static void test_exec_failures(void **state) {
        (void)state;
        struct kube_config *c;
        char *err;
        _cleanup_free_ char *y1 = exec_yaml("https://10.0.0.1:6443", NULL, "fail-plugin", "client.authentication.k8s.io/v1");
        assert_int_equal(load_text("fail.yaml", y1, 5000, &c, &err), -EIO);
        assert_contains(err, "exec plugin fail-plugin failed with exit code 1: error: could not get token: ExpiredToken");
        free(err);

        _cleanup_free_ char *y2 = exec_yaml("https://10.0.0.1:6443", NULL, "wrong-api-plugin", "client.authentication.k8s.io/v1");
        assert_int_equal(load_text("wrongapi.yaml", y2, 5000, &c, &err), -EBADMSG);
        assert_contains(err, "answered apiVersion \"client.authentication.k8s.io/v1alpha1\"");
        free(err);

        _cleanup_free_ char *y3 = exec_yaml("https://10.0.0.1:6443", NULL, "token-plugin", "client.authentication.k8s.io/v1alpha1");
        assert_int_equal(load_text("oldapi.yaml", y3, 5000, &c, &err), -EINVAL);
        assert_contains(err, "is not supported");
        free(err);

        /* fuzzers and offline analysis refuse to run plugins */
        _cleanup_free_ char *y4 = exec_yaml("https://10.0.0.1:6443", NULL, "token-plugin", "client.authentication.k8s.io/v1");
        assert_int_equal(kube_config_from_yaml(y4, strlen(y4), "mem", NULL, NULL, KUBE_CONFIG_NO_EXEC, 1000, &c, &err), -EPERM);
        assert_contains(err, "exec plugins are disabled");
        free(err);
}

/* Relative file paths resolve against the kubeconfig's folder; tokenFile is read and trimmed. */
static void test_client_cert_files(void **state) {
        (void)state;
        if (!have_certs) skip();
        free(tfile("token.txt", "file-token\n"));
        static const char yaml[] =
                "apiVersion: v1\nkind: Config\ncurrent-context: admin@prod\n"
                "clusters:\n- name: prod\n  cluster:\n    server: https://127.0.0.1:6443/\n"
                "    certificate-authority: certs/ca.crt\n    tls-server-name: localhost\n"
                "contexts:\n- name: admin@prod\n  context:\n    cluster: prod\n    user: admin\n    namespace: kube-system\n"
                "users:\n- name: admin\n  user:\n    client-certificate: certs/client.crt\n    client-key: certs/client.key\n"
                "    tokenFile: token.txt\n";
        struct kube_config *c;
        char *err;
        int r = load_text("files.yaml", yaml, 1000, &c, &err);
        if (r < 0) print_error("%s\n", err);
        assert_int_equal(r, 0);
        assert_string_equal(c->server, "https://127.0.0.1:6443");
        assert_string_equal(c->namespace, "kube-system");
        assert_string_equal(c->tls_server_name, "localhost");
        assert_string_equal(c->token, "file-token");
        _cleanup_free_ char *cafile = xasprintf("%s/certs/ca.crt", tmp);
        assert_string_equal(c->ca_file, cafile);
        assert_non_null(strstr(c->cert_pem, "BEGIN CERTIFICATE"));
        assert_non_null(strstr(c->key_pem, "PRIVATE KEY"));
        kube_config_free(c);
}

/* $KUBECONFIG merges files: the first to define a key wins; missing files are skipped. */
static void test_kubeconfig_merge(void **state) {
        (void)state;
        _cleanup_free_ char *a = tfile("merge-a.yaml",
                "current-context: a\n"
                "contexts:\n- name: a\n  context: {cluster: shared, user: ua, namespace: from-a}\n"
                "clusters:\n- name: shared\n  cluster: {server: 'https://a.example:6443', insecure-skip-tls-verify: true}\n");
        _cleanup_free_ char *b = tfile("merge-b.yaml",
                "current-context: b\n"
                "contexts:\n- name: a\n  context: {cluster: other, user: ub}\n- name: b\n  context: {cluster: other, user: ub}\n"
                "clusters:\n- name: shared\n  cluster: {server: 'https://b.example:6443'}\n"
                "users:\n- name: ua\n  user: {token: token-a}\n- name: ub\n  user: {username: admin, password: pw}\n");
        _cleanup_free_ char *missing = tpath("does-not-exist.yaml");
        _cleanup_free_ char *env = xasprintf("%s:%s::%s", missing, a, b);
        setenv("KUBECONFIG", env, 1);
        struct kube_config *c = NULL;
        char *err = NULL;
        int r = kube_config_load(NULL, 1000, &c, &err);
        if (r < 0) print_error("%s\n", err);
        assert_int_equal(r, 0);
        assert_string_equal(c->context, "a");
        assert_string_equal(c->server, "https://a.example:6443");
        assert_true(c->insecure);
        assert_string_equal(c->token, "token-a");
        assert_string_equal(c->namespace, "from-a");
        kube_config_free(c);

        /* --context b: the second file's context, cluster "other" nowhere defined */
        assert_int_equal(kube_config_load_context(NULL, "b", 1000, &c, &err), -EINVAL);
        assert_contains(err, "merge-b.yaml: context \"b\" names cluster \"other\" that is not defined");
        free(err);
        unsetenv("KUBECONFIG");
}

/* Errors name the file and the key. */
static void test_errors(void **state) {
        (void)state;
        struct kube_config *c;
        char *err;

        assert_int_equal(load_text("e1.yaml",
                "current-context: prod\ncontexts:\n- name: prod\n  context: {cluster: k, user: x}\n"
                "clusters:\n- name: k\n  cluster: {server: https://k:6443}\n", 1000, &c, &err), -EINVAL);
        assert_contains(err, "e1.yaml: context \"prod\" names user \"x\" that is not defined");
        free(err);

        assert_int_equal(load_text("e2.yaml", "current-context: nope\ncontexts: []\n", 1000, &c, &err), -EINVAL);
        assert_contains(err, "e2.yaml: context \"nope\" is not defined");
        free(err);

        assert_int_equal(load_text("e3.yaml",
                "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n"
                "clusters:\n- name: k\n  cluster: {server: https://k:6443, certificate-authority-data: 'not*base64'}\n",
                1000, &c, &err), -EINVAL);
        assert_contains(err, "e3.yaml: cluster \"k\": \"certificate-authority-data\" is not valid base64");
        free(err);

        assert_int_equal(load_text("e4.yaml",
                "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k}\n"
                "clusters:\n- name: k\n  cluster: {server: https://k:6443, certificate-authority: no/such/ca.crt}\n",
                1000, &c, &err), -EINVAL);
        assert_contains(err, "e4.yaml: cluster \"k\": \"certificate-authority\": cannot read");
        assert_contains(err, "no/such/ca.crt: No such file or directory");
        free(err);

        assert_int_equal(load_text("e5.yaml", "current-context: c\ncontexts: [\n", 1000, &c, &err), -EINVAL);
        assert_contains(err, "e5.yaml: invalid YAML at line");
        free(err);

        assert_int_equal(load_text("e6.yaml", "clusters: {}\n", 1000, &c, &err), -EINVAL);
        assert_contains(err, "\"current-context\" is not set");
        free(err);

        assert_int_equal(load_text("e7.yaml",
                "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                "clusters:\n- name: k\n  cluster: {server: https://k:6443}\n"
                "users:\n- name: u\n  user: {client-certificate-data: aGk=}\n", 1000, &c, &err), -EINVAL);
        assert_contains(err, "user \"u\": a client certificate is set without a client key");
        free(err);

        assert_int_equal(load_text("e8.yaml",
                "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                "clusters:\n- name: k\n  cluster: {server: https://k:6443}\n"
                "users:\n- name: u\n  user: {auth-provider: {name: gcp}}\n", 1000, &c, &err), -EINVAL);
        assert_contains(err, "auth-provider \"gcp\" is not supported");
        free(err);

        /* invalid UTF-8 is refused before libfyaml sees it (it loops on some, found by fuzzing) */
        assert_int_equal(load_text("e11.yaml", "current-context: c\n%x \xe9\xe9\n", 1000, &c, &err), -EINVAL);
        assert_contains(err, "e11.yaml: invalid UTF-8 at line 2");
        free(err);

        assert_int_equal(load_text("e9.yaml", "- a\n- b\n", 1000, &c, &err), -EINVAL);
        assert_contains(err, "not a kubeconfig");
        free(err);

        /* valid UTF-8 passes */
        assert_int_equal(load_text("u8.yaml",
                "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, namespace: \"\xc3\xa9quipe\"}\n"
                "clusters:\n- name: k\n  cluster: {server: https://k:6443}\n", 1000, &c, &err), 0);
        assert_string_equal(c->namespace, "\xc3\xa9quipe");
        kube_config_free(c);

        /* an explicit --kubeconfig that does not exist is an error, not "no configuration" */
        _cleanup_free_ char *missing = tpath("missing.yaml");
        assert_int_equal(kube_config_load(missing, 1000, &c, &err), -EINVAL);
        assert_contains(err, "missing.yaml: cannot read: No such file or directory");
        free(err);

        /* the token never appears in an error */
        assert_int_equal(load_text("e10.yaml",
                "current-context: c\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\n"
                "clusters:\n- name: k\n  cluster: {server: https://k:6443}\n"
                "users:\n- name: u\n  user: {token: supersecret, password: alsosecret}\n", 1000, &c, &err), -EINVAL);
        assert_contains(err, "both a token and a username/password");
        assert_null(strstr(err, "secret"));
        free(err);
}

/* ~/.kube/config is the default and errors show it as such. */
static void test_home_config(void **state) {
        (void)state;
        _cleanup_free_ char *p = tpath("home/.kube/config");
        write_file(p, "current-context: prod\ncontexts:\n- name: prod\n  context: {cluster: k, user: x}\n"
                      "clusters:\n- name: k\n  cluster: {server: https://k:6443}\n", 0600);
        struct kube_config *c = NULL;
        char *err = NULL;
        assert_int_equal(kube_config_load(NULL, 1000, &c, &err), -EINVAL);
        assert_string_equal(err, "~/.kube/config: context \"prod\" names user \"x\" that is not defined");
        free(err);
        unlink(p);
}

/* No kubeconfig anywhere and not in a pod: -ENOENT, so the caller skips API checks. */
static void test_no_config(void **state) {
        (void)state;
        _cleanup_free_ char *env = tpath("nothing-here.yaml");
        setenv("KUBECONFIG", env, 1);
        struct kube_config *c = NULL;
        char *err = NULL;
        assert_int_equal(kube_config_load(NULL, 1000, &c, &err), -ENOENT);
        assert_contains(err, "no kubeconfig");
        free(err);
        unsetenv("KUBECONFIG");
        assert_int_equal(kube_config_load(NULL, 1000, &c, &err), -ENOENT);
        free(err);
}

/* In a pod: the service account files and KUBERNETES_SERVICE_HOST/PORT. */
static void test_in_cluster(void **state) {
        (void)state;
        _cleanup_free_ char *sa = tpath("sa");
        struct kube_config *c = NULL;
        char *err = NULL;
        /* no token yet */
        setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
        setenv("KUBERNETES_SERVICE_PORT", "443", 1);
        assert_int_equal(kube_config_in_cluster(sa, &c, &err), -ENOENT);
        assert_contains(err, "automountServiceAccountToken");
        free(err);
        unsetenv("KUBERNETES_SERVICE_HOST");
        free(tfile("sa/token", "eyJhbGciOi.sa-token\n"));
        free(tfile("sa/namespace", "gpu-operator"));
        free(tfile("sa/ca.crt", "-----BEGIN CERTIFICATE-----\n"));
        assert_int_equal(kube_config_in_cluster(sa, &c, &err), -ENOENT);
        free(err);
        setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
        setenv("KUBERNETES_SERVICE_PORT", "443", 1);
        assert_int_equal(kube_config_in_cluster(sa, &c, &err), 0);
        assert_string_equal(c->server, "https://10.96.0.1:443");
        assert_string_equal(c->token, "eyJhbGciOi.sa-token");
        assert_string_equal(c->namespace, "gpu-operator");
        assert_string_equal(c->source, "in-cluster");
        assert_non_null(c->ca_pem);
        kube_config_free(c);
        setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
        assert_int_equal(kube_config_in_cluster(sa, &c, &err), 0);
        assert_string_equal(c->server, "https://[fd00::1]:443");
        kube_config_free(c);
        setenv("KUBERNETES_SERVICE_PORT", "https", 1);
        assert_int_equal(kube_config_in_cluster(sa, &c, &err), -EINVAL);
        free(err);
        unsetenv("KUBERNETES_SERVICE_HOST");
        unsetenv("KUBERNETES_SERVICE_PORT");
}

/* ---- end to end over TLS ---- */

/* Returns a configuration for the test server on port with the test CA and token (either may be NULL). */
static struct kube_config *server_config(int port, const char *token, const char *ca_name) {
        struct kube_config *c = xcalloc(1, sizeof *c);
        c->server = xasprintf("https://127.0.0.1:%d", port);
        if (token) c->token = xstrdup(token);
        if (ca_name) {
                _cleanup_free_ char *p = xasprintf("%s/%s", certs, ca_name);
                c->ca_pem = read_all(p);
                c->ca_pem_len = strlen(c->ca_pem);
        }
        c->namespace = xstrdup("default");
        c->source = xstrdup("test");
        return c;
}

/* Creates a client for cfg, asserting success. */
static struct kube_client *client_for(struct kube_config *cfg, unsigned timeout_ms) {
        struct kube_client *k = NULL;
        char *err = NULL;
        int r = kube_client_new(cfg, timeout_ms, &k, &err);
        if (r < 0) print_error("%s\n", err);
        assert_int_equal(r, 0);
        return k;
}

#define NEED_SERVER() do { if (srv_normal.port <= 0) skip(); } while (0)

static void test_get_ok(void **state) {
        (void)state;
        NEED_SERVER();
        _cleanup_kube_config_ struct kube_config *cfg = server_config(srv_normal.port, TOKEN, "ca.crt");
        _cleanup_kube_client_ struct kube_client *k = client_for(cfg, 5000);
        json_t *j = NULL;
        char *err = NULL;
        int r = kube_get_node(k, "gpu-1", &j, &err);
        if (r < 0) print_error("%s\n", err);
        assert_int_equal(r, 0);
        assert_string_equal(json_string_value(json_object_get(json_object_get(j, "metadata"), "name")), "gpu-1");
        assert_string_equal(json_string_value(json_object_get(json_object_get(json_object_get(j, "status"), "allocatable"),
                                                              "nvidia.com/gpu")), "8");
        json_decref(j);

        assert_int_equal(kube_list_pods(k, "gpu-1", NULL, NULL, &j, &err), 0);
        assert_int_equal(json_array_size(json_object_get(j, "items")), 1);
        json_decref(j);
        assert_int_equal(kube_list_pods(k, "gpu-1", "gpu-operator", "app=nvidia-dcgm-exporter", &j, &err), 0);
        assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(json_object_get(j, "items"), 0),
                                                                              "metadata"), "name")), "nvidia-dcgm-exporter-abcde");
        json_decref(j);
        assert_int_equal(kube_list_namespaces(k, &j, &err), 0);
        assert_int_equal(json_array_size(json_object_get(j, "items")), 2);
        json_decref(j);
}

/* U+0000 in any string of an answer: the answer is still read (the API server stores such values),
 * each string with its length; what identifies something and holds a NUL counts as absent, a
 * message keeps all of it. Before: "the answer is not JSON" for the whole Node. */
static void test_get_nul(void **state) {
        (void)state;
        NEED_SERVER();
        _cleanup_kube_config_ struct kube_config *cfg = server_config(srv_normal.port, TOKEN, "ca.crt");
        _cleanup_kube_client_ struct kube_client *k = client_for(cfg, 5000);
        json_t *j = NULL;
        char *err = NULL;
        int r = kube_get_node(k, "nul-node", &j, &err);
        if (r < 0) print_error("%s\n", err);
        assert_int_equal(r, 0);
        const json_t *meta = json_object_get(j, "metadata"), *ann = json_object_get(meta, "annotations");
        const json_t *note = json_object_get(ann, "note");
        assert_int_equal(json_string_length(note), 3);
        assert_memory_equal(json_string_value(note), "a\0b", 3);
        assert_null(kube_json_str(note));
        _cleanup_free_ char *shown = kube_json_strdup(note);
        assert_string_equal(shown, "a\\0b");
        assert_string_equal(json_string_value(json_object_get(ann, "esc")), "\\u0000");
        assert_string_equal(kube_json_str(json_object_get(meta, "name")), "nul-node");
        struct kube_node_info ni;
        assert_int_equal(kube_node_info_parse(j, &ni), 0);
        assert_string_equal(ni.name, "nul-node");
        assert_string_equal(kube_kv_get(ni.labels, ni.n_labels, "nvidia.com/gpu.present"), "true");
        assert_null(kube_kv_get(ni.labels, ni.n_labels, "cut")); /* not "gpu-1" */
        assert_int_equal(ni.ready, 1);
        assert_string_equal(ni.ready_message, "ok\\0then");
        kube_node_info_free(&ni);
        json_decref(j);

        /* a key holding U+0000, which jansson cannot store: every U+0000 of that answer is read as U+FFFD
         * (never a cut string); an escaped backslash before "u0000" is text */
        r = kube_get_node(k, "nulkey-node", &j, &err);
        if (r < 0) print_error("%s\n", err);
        assert_int_equal(r, 0);
        ann = json_object_get(json_object_get(j, "metadata"), "annotations");
        assert_string_equal(json_string_value(json_object_get(ann, "k\xef\xbf\xbdx")), "v");
        assert_string_equal(json_string_value(json_object_get(ann, "esc")), "\\u0000");
        assert_string_equal(json_string_value(json_object_get(ann, "note")), "a\xef\xbf\xbd" "b");
        json_decref(j);

        /* a body that is not JSON: jansson's line, column and words in the sentence */
        r = kube_get_node(k, "badjson", &j, &err);
        assert_int_equal(r, -EBADMSG);
        assert_non_null(strstr(err, "not JSON (line 2, column"));
        assert_non_null(strstr(err, "/api/v1/nodes/badjson"));
        free(err);
}

/* Pages served by fake_pages(): the continue tokens each page answers ("" for the last). */
struct fake_list {
        const char *const *tokens;
        size_t n, calls;
};

/* A kube_list_get_fn: page i (the i-th call) with one item and tokens[i] as metadata.continue (the
 * last token repeated past the end). Returns 0. */
static int fake_pages(void *userdata, const char *path, json_t **ret, char **ret_error) {
        (void)path;
        (void)ret_error;
        struct fake_list *f = userdata;
        const char *t = f->tokens[f->calls < f->n ? f->calls : f->n - 1];
        f->calls++;
        *ret = json_pack("{s:{s:s}, s:[{s:{s:i}}]}", "metadata", "continue", t, "items", "metadata", "n", (int)f->calls);
        return 0;
}

static int count_item(const json_t *item, void *userdata) {
        (void)item;
        (*(size_t *)userdata)++;
        return 0;
}

/* A continue-token cycle A -> B -> A is caught on the page that repeats A (before: followed until
 * 100,000 pages); A -> A as before; a list that ends is read whole. */
static void test_list_cycle(void **state) {
        (void)state;
        const struct kube_list_request req = { .path = "/api/v1/nodes", .limit = 1 };
        static const char *const cycle[] = { "A", "B", "A", "B", "A" }, *const same[] = { "A", "A" },
                                 *const ok[] = { "A", "B", "C", "" }, *const long_cycle[] = { "A", "B", "C", "D", "B" };
        struct { const char *const *t; size_t n; int want; size_t pages; const char *words; } cases[] = {
                { cycle, 5, -EBADMSG, 3, "cycle" },
                { same, 2, -EBADMSG, 2, "the continue token it was sent" },
                { ok, 4, 0, 4, NULL },
                { long_cycle, 5, -EBADMSG, 5, "cycle" },
        };
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct fake_list f = { cases[i].t, cases[i].n, 0 };
                size_t items = 0;
                struct kube_list_stats st;
                char *err = NULL;
                int r = kube_list_all_with(fake_pages, &f, &req, count_item, &items, &st, &err);
                assert_int_equal(r, cases[i].want);
                assert_int_equal(f.calls, cases[i].pages);
                if (cases[i].words) {
                        assert_non_null(strstr(err, cases[i].words));
                        assert_non_null(strstr(err, "/api/v1/nodes"));
                }
                free(err);
        }
}

static void test_get_404_403(void **state) {
        (void)state;
        NEED_SERVER();
        _cleanup_kube_config_ struct kube_config *cfg = server_config(srv_normal.port, TOKEN, "ca.crt");
        _cleanup_kube_client_ struct kube_client *k = client_for(cfg, 5000);
        json_t *j = NULL;
        char *err = NULL;
        assert_int_equal(kube_get_node(k, "gpu-9", &j, &err), -ENOENT);
        assert_contains(err, "404 Not Found: nodes \"gpu-9\" not found");
        free(err);
        assert_int_equal(kube_get_node(k, "secret-node", &j, &err), -EPERM);
        assert_contains(err, "403 Forbidden: nodes \"secret-node\" is forbidden: User");
        free(err);
        assert_int_equal(kube_get_node(k, "notjson", &j, &err), -EBADMSG);
        free(err);
        assert_int_equal(kube_get(k, "no-slash", &j, &err), -EINVAL);
        free(err);
        /* the size cap, enforced while receiving */
        kube_client_set_max_body(k, 16);
        assert_int_equal(kube_get_node(k, "gpu-1", &j, &err), -EFBIG);
        assert_contains(err, "larger than 16 bytes");
        free(err);
}

static void test_get_wrong_token(void **state) {
        (void)state;
        NEED_SERVER();
        _cleanup_kube_config_ struct kube_config *cfg = server_config(srv_normal.port, "wrong-token-value", "ca.crt");
        _cleanup_kube_client_ struct kube_client *k = client_for(cfg, 5000);
        json_t *j = NULL;
        char *err = NULL;
        assert_int_equal(kube_get_node(k, "gpu-1", &j, &err), -EACCES);
        assert_contains(err, "401 Unauthorized");
        assert_contains(err, ": Unauthorized");
        assert_null(strstr(err, "wrong-token-value"));
        free(err);

        /* mode 401 rejects even the right token */
        _cleanup_kube_config_ struct kube_config *cfg2 = server_config(srv_401.port, TOKEN, "ca.crt");
        _cleanup_kube_client_ struct kube_client *k2 = client_for(cfg2, 5000);
        assert_int_equal(kube_get_node(k2, "gpu-1", &j, &err), -EACCES);
        assert_null(strstr(err, TOKEN));
        free(err);
}

static void test_get_client_cert(void **state) {
        (void)state;
        NEED_SERVER();
        _cleanup_kube_config_ struct kube_config *cfg = server_config(srv_normal.port, NULL, "ca.crt");
        _cleanup_free_ char *crt = xasprintf("%s/client.crt", certs), *key = xasprintf("%s/client.key", certs);
        cfg->cert_pem = read_all(crt);
        cfg->cert_pem_len = strlen(cfg->cert_pem);
        cfg->key_pem = read_all(key);
        cfg->key_pem_len = strlen(cfg->key_pem);
        _cleanup_kube_client_ struct kube_client *k = client_for(cfg, 5000);
        json_t *j = NULL;
        char *err = NULL;
        int r = kube_get_node(k, "gpu-1", &j, &err);
        if (r < 0) print_error("%s\n", err);
        assert_int_equal(r, 0);
        json_decref(j);
}

/* The whole path: a kubeconfig with an exec plugin, then a request with the token it printed. */
static void test_get_via_exec_kubeconfig(void **state) {
        (void)state;
        NEED_SERVER();
        _cleanup_free_ char *server = xasprintf("https://127.0.0.1:%d", srv_normal.port);
        _cleanup_free_ char *yaml = exec_yaml(server, "certs/ca.crt", "token-plugin", "client.authentication.k8s.io/v1");
        _cleanup_kube_config_ struct kube_config *cfg = NULL;
        char *err = NULL;
        int r = load_text("e2e.yaml", yaml, 5000, &cfg, &err);
        if (r < 0) print_error("%s\n", err);
        assert_int_equal(r, 0);
        _cleanup_kube_client_ struct kube_client *k = client_for(cfg, 5000);
        json_t *j = NULL;
        assert_int_equal(kube_get_node(k, "gpu-1", &j, &err), 0);
        json_decref(j);
}

static void test_get_tls(void **state) {
        (void)state;
        NEED_SERVER();
        json_t *j = NULL;
        char *err = NULL;
        /* a server certificate from another CA */
        _cleanup_kube_config_ struct kube_config *c1 = server_config(srv_normal.port, TOKEN, "other-ca.crt");
        _cleanup_kube_client_ struct kube_client *k1 = client_for(c1, 5000);
        assert_int_equal(kube_get_node(k1, "gpu-1", &j, &err), -EKEYREJECTED);
        free(err);
        /* tls-server-name: connect to 127.0.0.1, verify the certificate as "localhost" */
        _cleanup_kube_config_ struct kube_config *c2 = server_config(srv_normal.port, TOKEN, "ca.crt");
        c2->tls_server_name = xstrdup("localhost");
        _cleanup_kube_client_ struct kube_client *k2 = client_for(c2, 5000);
        int r = kube_get_node(k2, "gpu-1", &j, &err);
        if (r < 0) print_error("%s\n", err);
        assert_int_equal(r, 0);
        json_decref(j);
        _cleanup_kube_config_ struct kube_config *c3 = server_config(srv_normal.port, TOKEN, "ca.crt");
        c3->tls_server_name = xstrdup("kubernetes.default.svc");
        _cleanup_kube_client_ struct kube_client *k3 = client_for(c3, 5000);
        assert_int_equal(kube_get_node(k3, "gpu-1", &j, &err), -EKEYREJECTED);
        free(err);
        /* insecure-skip-tls-verify */
        _cleanup_kube_config_ struct kube_config *c4 = server_config(srv_normal.port, TOKEN, NULL);
        c4->insecure = true;
        _cleanup_kube_client_ struct kube_client *k4 = client_for(c4, 5000);
        assert_int_equal(kube_get_node(k4, "gpu-1", &j, &err), 0);
        json_decref(j);
}

static void test_get_hang_bounded(void **state) {
        (void)state;
        NEED_SERVER();
        _cleanup_kube_config_ struct kube_config *cfg = server_config(srv_hang.port, TOKEN, "ca.crt");
        _cleanup_kube_client_ struct kube_client *k = client_for(cfg, 500);
        json_t *j = NULL;
        char *err = NULL;
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        assert_int_equal(kube_get_node(k, "gpu-1", &j, &err), -ETIMEDOUT);
        clock_gettime(CLOCK_MONOTONIC, &b);
        long ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
        assert_true(ms >= 450 && ms < 1500);
        assert_contains(err, "no answer within 500 ms");
        free(err);
}

static void test_get_500_and_refused(void **state) {
        (void)state;
        NEED_SERVER();
        json_t *j = NULL;
        char *err = NULL;
        _cleanup_kube_config_ struct kube_config *c1 = server_config(srv_500.port, TOKEN, "ca.crt");
        _cleanup_kube_client_ struct kube_client *k1 = client_for(c1, 5000);
        assert_int_equal(kube_list_namespaces(k1, &j, &err), -EIO);
        assert_contains(err, "HTTP 500: Internal error occurred");
        free(err);
        /* a port nothing listens on: the stopped 401 server's */
        int port = srv_401.port;
        server_stop(&srv_401);
        _cleanup_kube_config_ struct kube_config *c2 = server_config(port, TOKEN, "ca.crt");
        _cleanup_kube_client_ struct kube_client *k2 = client_for(c2, 2000);
        assert_int_equal(kube_list_namespaces(k2, &j, &err), -ECONNREFUSED);
        free(err);
}

/* Sets the stand-in's write mode through its control endpoint (with the client itself). */
static void server_writes(struct kube_client *k, const char *body) {
        char *err = NULL;
        int r = kube_post(k, "/_control", body, NULL, &err);
        if (r < 0) print_error("%s\n", err);
        assert_int_equal(r, 0);
}

/* Returns the string at the path of member names in j (NULL-terminated), or NULL. */
static const char *jstr(json_t *j, ...) {
        va_list ap;
        va_start(ap, j);
        for (const char *k; j && (k = va_arg(ap, const char *));) j = json_object_get(j, k);
        va_end(ap);
        return json_string_value(j);
}

/* Returns the condition of type in node's status, or NULL. */
static json_t *condition(json_t *node, const char *type) {
        size_t i;
        json_t *c;
        json_array_foreach(json_object_get(json_object_get(node, "status"), "conditions"), i, c)
                if (streq(json_string_value(json_object_get(c, "type")), type)) return c;
        return NULL;
}

static void test_patch_node(void **state) {
        (void)state;
        NEED_SERVER();
        _cleanup_kube_config_ struct kube_config *cfg = server_config(srv_normal.port, TOKEN, "ca.crt");
        _cleanup_kube_client_ struct kube_client *k = client_for(cfg, 5000);
        json_t *j = NULL;
        char *err = NULL;
        /* strategic merge: conditions merge by type */
        int r = kube_patch(k, "/api/v1/nodes/gpu-1/status", KUBE_PATCH_STRATEGIC,
                           "{\"status\":{\"conditions\":[{\"type\":\"GpuDriverProblem\",\"status\":\"True\",\"reason\":\"Xid79\"},"
                           "{\"type\":\"GpuFabricProblem\",\"status\":\"False\"}]}}", &j, &err);
        if (r < 0) print_error("%s\n", err);
        assert_int_equal(r, 0);
        assert_string_equal(jstr(condition(j, "GpuDriverProblem"), "reason", NULL), "Xid79");
        _cleanup_free_ char *rv = xstrdup(jstr(j, "metadata", "resourceVersion", NULL));
        json_decref(j);
        assert_int_equal(kube_patch(k, "/api/v1/nodes/gpu-1/status", KUBE_PATCH_STRATEGIC,
                                    "{\"status\":{\"conditions\":[{\"type\":\"GpuDriverProblem\",\"status\":\"False\"}]}}", NULL, &err), 0);
        assert_int_equal(kube_get_node(k, "gpu-1", &j, &err), 0);
        assert_string_equal(jstr(condition(j, "GpuDriverProblem"), "status", NULL), "False");
        assert_non_null(condition(j, "GpuFabricProblem"));
        assert_string_equal(jstr(j, "status", "allocatable", "nvidia.com/gpu", NULL), "8");
        assert_string_not_equal(jstr(j, "metadata", "resourceVersion", NULL), rv);
        json_decref(j);

        /* a stale resourceVersion: 409 Conflict */
        _cleanup_free_ char *stale = xasprintf("{\"metadata\":{\"resourceVersion\":\"%s\"},\"spec\":{\"taints\":[]}}", rv);
        assert_int_equal(kube_patch(k, "/api/v1/nodes/gpu-1", KUBE_PATCH_MERGE, stale, &j, &err), -EBUSY);
        assert_contains(err, "PATCH https://127.0.0.1:");
        assert_contains(err, "409 Conflict: Operation cannot be fulfilled on nodes \"gpu-1\"");
        assert_null(strstr(err, TOKEN));
        free(err);
        /* a failed JSON patch test: 422 */
        assert_int_equal(kube_patch(k, "/api/v1/nodes/gpu-1", KUBE_PATCH_JSON,
                                    "[{\"op\":\"test\",\"path\":\"/metadata/name\",\"value\":\"other\"}]", &j, &err), -EINVAL);
        assert_contains(err, "422 Unprocessable Entity: nodes \"gpu-1\" is invalid");
        free(err);
        assert_int_equal(kube_patch(k, "/api/v1/nodes/gpu-1", KUBE_PATCH_JSON,
                                    "[{\"op\":\"add\",\"path\":\"/spec\",\"value\":{\"taints\":[{\"key\":\"gpunode.io/failed\","
                                    "\"effect\":\"NoSchedule\"}]}}]", &j, &err), 0);
        assert_string_equal(jstr(json_array_get(json_object_get(json_object_get(j, "spec"), "taints"), 0), "key", NULL),
                            "gpunode.io/failed");
        json_decref(j);
        assert_int_equal(kube_patch(k, "/api/v1/nodes/gpu-9/status", KUBE_PATCH_MERGE, "{}", NULL, &err), -ENOENT);
        free(err);
        assert_int_equal(kube_patch(k, "/api/v1/nodes/gpu-1", KUBE_PATCH_MERGE, NULL, NULL, &err), -EINVAL);
        free(err);

        /* the node list, by label selector */
        assert_int_equal(kube_list_nodes(k, "nvidia.com/gpu.present=true,nvidia.com/gpu.product", &j, &err), 0);
        assert_int_equal(json_array_size(json_object_get(j, "items")), 1);
        json_decref(j);
        assert_int_equal(kube_list_nodes(k, "nvidia.com/gpu.present=false", &j, &err), 0);
        assert_int_equal(json_array_size(json_object_get(j, "items")), 0);
        json_decref(j);
}

static void test_post_event(void **state) {
        (void)state;
        NEED_SERVER();
        _cleanup_kube_config_ struct kube_config *cfg = server_config(srv_normal.port, TOKEN, "ca.crt");
        _cleanup_kube_client_ struct kube_client *k = client_for(cfg, 5000);
        json_t *j = NULL;
        char *err = NULL;
        const char *ev = "{\"metadata\":{\"name\":\"gpu-1.xid79\",\"namespace\":\"default\"},\"reason\":\"GpuXid\",\"count\":1,"
                         "\"involvedObject\":{\"kind\":\"Node\",\"name\":\"gpu-1\"}}";
        int r = kube_post(k, "/api/v1/namespaces/default/events", ev, &j, &err);
        if (r < 0) print_error("%s\n", err);
        assert_int_equal(r, 0);
        assert_string_equal(jstr(j, "reason", NULL), "GpuXid");
        json_decref(j);
        assert_int_equal(kube_post(k, "/api/v1/namespaces/default/events", ev, NULL, &err), -EEXIST);
        assert_contains(err, "POST https://127.0.0.1:");
        assert_contains(err, "409 AlreadyExists: events \"gpu-1.xid79\" already exists");
        free(err);
        assert_int_equal(kube_patch(k, "/api/v1/namespaces/default/events/gpu-1.xid79", KUBE_PATCH_MERGE, "{\"count\":2}", &j, &err), 0);
        assert_int_equal(json_integer_value(json_object_get(j, "count")), 2);
        json_decref(j);
        assert_int_equal(kube_get(k, "/api/v1/namespaces/default/events", &j, &err), 0);
        assert_int_equal(json_array_size(json_object_get(j, "items")), 1);
        json_decref(j);
}

/* What the stand-in's controls make of a write: refused, conflict, garbage, too big, no answer, down. */
static void test_write_failures(void **state) {
        (void)state;
        NEED_SERVER();
        _cleanup_kube_config_ struct kube_config *cfg = server_config(srv_normal.port, TOKEN, "ca.crt");
        _cleanup_kube_client_ struct kube_client *k = client_for(cfg, 1000);
        json_t *j = NULL;
        char *err = NULL;
        const char *path = "/api/v1/nodes/gpu-1/status", *patch = "{\"status\":{}}";

        server_writes(k, "{\"writes\":\"403\"}");
        assert_int_equal(kube_patch(k, path, KUBE_PATCH_STRATEGIC, patch, &j, &err), -EPERM);
        assert_contains(err, "403 Forbidden: nodes \"gpu-1\" is forbidden: User \"system:serviceaccount:gpunode:gpunode\" "
                             "cannot patch resource \"nodes/status\" in API group \"\" at the cluster scope");
        free(err);
        assert_int_equal(kube_post(k, "/api/v1/namespaces/default/events", "{}", NULL, &err), -EPERM);
        assert_contains(err, "cannot create resource \"events\" in API group \"\" in the namespace \"default\"");
        free(err);
        /* reads still work */
        assert_int_equal(kube_get_node(k, "gpu-1", &j, &err), 0);
        json_decref(j);

        server_writes(k, "{\"writes\":\"409-once\"}");
        assert_int_equal(kube_patch(k, path, KUBE_PATCH_STRATEGIC, patch, NULL, &err), -EBUSY);
        free(err);
        assert_int_equal(kube_patch(k, path, KUBE_PATCH_STRATEGIC, patch, NULL, &err), 0);

        server_writes(k, "{\"writes\":\"garbage\"}");
        assert_int_equal(kube_patch(k, path, KUBE_PATCH_STRATEGIC, patch, &j, &err), -EBADMSG);
        assert_contains(err, "the answer is not JSON");
        free(err);

        server_writes(k, "{\"writes\":\"huge\"}");
        kube_client_set_max_body(k, (size_t)1 << 20);
        assert_int_equal(kube_patch(k, path, KUBE_PATCH_STRATEGIC, patch, &j, &err), -EFBIG);
        free(err);
        kube_client_set_max_body(k, KUBE_MAX_BODY_DEFAULT);

        server_writes(k, "{\"writes\":\"hang\"}");
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        assert_int_equal(kube_patch(k, path, KUBE_PATCH_STRATEGIC, patch, &j, &err), -ETIMEDOUT);
        clock_gettime(CLOCK_MONOTONIC, &b);
        long ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
        assert_true(ms >= 900 && ms < 2500);
        assert_contains(err, "no answer within 1000 ms");
        free(err);

        /* down for a second: refused, then back with writes normal */
        server_writes(k, "{\"writes\":\"down\",\"down_seconds\":1}");
        usleep(200 * 1000);
        int r = kube_patch(k, path, KUBE_PATCH_STRATEGIC, patch, NULL, &err);
        if (r != -ECONNREFUSED) print_error("%d %s\n", r, err);
        assert_int_equal(r, -ECONNREFUSED);
        free(err);
        for (int i = 0; i < 40; i++) {
                usleep(100 * 1000);
                err = NULL;
                if ((r = kube_patch(k, path, KUBE_PATCH_STRATEGIC, patch, NULL, &err)) == 0) break;
                free(err);
        }
        assert_int_equal(r, 0);

        /* a server that fails every request */
        _cleanup_kube_config_ struct kube_config *c5 = server_config(srv_500.port, TOKEN, "ca.crt");
        _cleanup_kube_client_ struct kube_client *k5 = client_for(c5, 5000);
        assert_int_equal(kube_patch(k5, path, KUBE_PATCH_MERGE, patch, NULL, &err), -EIO);
        assert_contains(err, "PATCH https://127.0.0.1:");
        assert_contains(err, "HTTP 500");
        free(err);
}

/* A snapshot replay client writes nothing. */
static void test_write_offline(void **state) {
        (void)state;
        _cleanup_kube_client_ struct kube_client *k = NULL;
        assert_int_equal(kube_client_new_offline("https://10.0.0.1:6443", 1000, &k), 0);
        char *err = NULL;
        assert_int_equal(kube_patch(k, "/api/v1/nodes/gpu-1/status", KUBE_PATCH_STRATEGIC, "{}", NULL, &err), -EROFS);
        assert_contains(err, "PATCH https://10.0.0.1:6443/api/v1/nodes/gpu-1/status");
        free(err);
        assert_int_equal(kube_post(k, "/api/v1/namespaces/default/events", "{}", NULL, &err), -EROFS);
        free(err);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_base64),
                cmocka_unit_test(test_kind),
                cmocka_unit_test(test_eks_exec),
                cmocka_unit_test(test_gke_exec),
                cmocka_unit_test(test_exec_not_found),
                cmocka_unit_test(test_exec_timeout),
                cmocka_unit_test(test_exec_failures),
                cmocka_unit_test(test_client_cert_files),
                cmocka_unit_test(test_kubeconfig_merge),
                cmocka_unit_test(test_errors),
                cmocka_unit_test(test_home_config),
                cmocka_unit_test(test_no_config),
                cmocka_unit_test(test_in_cluster),
                        cmocka_unit_test(test_get_ok),
                cmocka_unit_test(test_get_404_403),
                cmocka_unit_test(test_get_wrong_token),
                cmocka_unit_test(test_get_client_cert),
                cmocka_unit_test(test_get_via_exec_kubeconfig),
                cmocka_unit_test(test_get_tls),
                cmocka_unit_test(test_get_hang_bounded),
                cmocka_unit_test(test_patch_node),
                cmocka_unit_test(test_post_event),
                cmocka_unit_test(test_write_failures),
                cmocka_unit_test(test_write_offline),
                cmocka_unit_test(test_get_nul),
                cmocka_unit_test(test_list_cycle),
                cmocka_unit_test(test_get_500_and_refused),
        };
        return cmocka_run_group_tests_name("kube", tests, group_setup, group_teardown);
}
