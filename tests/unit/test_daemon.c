/* test_daemon.c: unit tests of src/daemon/: the Xid watch's fan-out over the fake NVML, the diagnosis
 * loop's rounds (a good report parsed once for every sink, invalid output, a failing exit, a timeout),
 * the HTTP routes in order, and the supervisor's restarts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "basic/util.h"
#include "daemon/daemon.h"
#include "daemon/diagnosis.h"
#include "daemon/supervisor.h"
#include "daemon/xid_watch.h"
#include "nvml/nvml_lib.h"

/* Sleeps ms milliseconds. Returns nothing. */
static void sleep_ms(unsigned ms) {
        struct timespec t = { ms / 1000, (long)(ms % 1000) * 1000000L };
        nanosleep(&t, NULL);
}

/* What one Xid subscriber saw. */
struct xid_seen {
        pthread_mutex_t lock;
        unsigned n;
        unsigned index[8];
        char uuid[8][96];
        unsigned long long xid[8];
        unsigned gi[8], ci[8];
};

/* Records an Xid. Returns nothing. */
static void record_xid(void *userdata, const struct xid_event *ev) {
        struct xid_seen *s = userdata;
        pthread_mutex_lock(&s->lock);
        if (s->n < 8) {
                s->index[s->n] = ev->index;
                snprintf(s->uuid[s->n], sizeof s->uuid[s->n], "%s", ev->uuid);
                s->xid[s->n] = ev->xid;
                s->gi[s->n] = ev->gpu_instance_id;
                s->ci[s->n] = ev->compute_instance_id;
                s->n++;
        }
        pthread_mutex_unlock(&s->lock);
}

/* Returns how many Xids s saw. */
static unsigned seen(struct xid_seen *s) {
        pthread_mutex_lock(&s->lock);
        unsigned n = s->n;
        pthread_mutex_unlock(&s->lock);
        return n;
}

/* Writes text to a new file in dir named name, mode 0755 when executable. Returns its malloc'd path. */
static char *write_file(const char *dir, const char *name, const char *text, bool executable) {
        char *p = xasprintf("%s/%s", dir, name);
        FILE *f = fopen(p, "w");
        assert_non_null(f);
        fputs(text, f);
        fclose(f);
        if (executable) chmod(p, 0755);
        return p;
}

/* The fake NVML delivers each Xid of its description once: both subscribers hear every one, with the
 * GPU's index and UUID, and an unsubscribed one hears nothing more. */
static void test_xid_fan_out(void **state) {
        char dir[] = "/tmp/test-daemon-XXXXXX";
        assert_non_null(mkdtemp(dir));
        _cleanup_free_ char *desc = write_file(
                dir, "nvml.json",
                "{\"driver_version\": \"570.133.20\", \"gpus\": ["
                "{\"name\": \"NVIDIA H200\", \"uuid\": \"GPU-aaaaaaaa-0000-0000-0000-000000000000\", \"xid_events\": []},"
                "{\"name\": \"NVIDIA H200\", \"uuid\": \"GPU-bbbbbbbb-0000-0000-0000-000000000001\", \"xid_events\": [79, {\"xid\": 48, \"gi\": 3, \"ci\": 1}]}]}",
                false);
        setenv("GPUNODE_FAKE_NVML", desc, 1);
        struct xid_seen a = { .lock = PTHREAD_MUTEX_INITIALIZER }, b = { .lock = PTHREAD_MUTEX_INITIALIZER };
        struct xid_watch *w = NULL;
        const struct xid_subscriber subs[] = { { .on_xid = record_xid, .userdata = &a },
                                               { .on_xid = record_xid, .userdata = &b } };
        assert_int_equal(xid_watch_start(getenv("GPUNODE_FAKE_NVML_LIB"), subs, 2, &w), 0);
        int ia = 0; /* the first subscriber's id */
        for (int i = 0; i < 100 && (seen(&a) < 2 || seen(&b) < 2); i++) sleep_ms(50);
        assert_int_equal(seen(&a), 2);
        assert_int_equal(seen(&b), 2);
        assert_int_equal(a.index[0], 1);
        assert_string_equal(a.uuid[0], "GPU-bbbbbbbb-0000-0000-0000-000000000001");
        assert_true((a.xid[0] == 79 && a.xid[1] == 48) || (a.xid[0] == 48 && a.xid[1] == 79));
        /* NVML's instance ids reach the subscribers: none for 79, MIG GPU instance 3 / compute 1 for 48 */
        unsigned k48 = a.xid[0] == 48 ? 0 : 1;
        assert_int_equal(a.gi[k48], 3);
        assert_int_equal(a.ci[k48], 1);
        assert_int_equal(a.gi[1 - k48], XID_NO_INSTANCE);
        assert_int_equal(a.ci[1 - k48], XID_NO_INSTANCE);
        assert_int_equal(xid_watch_events(w), 2);
        xid_watch_unsubscribe(w, ia);
        for (int i = 0; i < XID_WATCH_MAX_SUBSCRIBERS - 1; i++)
                xid_watch_subscribe(w, &(struct xid_subscriber){ .on_xid = record_xid, .userdata = &b });
        assert_int_equal(xid_watch_subscribe(w, &(struct xid_subscriber){ .on_xid = record_xid, .userdata = &b }),
                         -ENOSPC);
        xid_watch_stop(w);
        unsetenv("GPUNODE_FAKE_NVML");
        unlink(desc);
        rmdir(dir);
}

/* Issue 20 (#15): a GPU whose event registration failed when the set was made (lost, resetting) was
 * never registered again while the session lasted; it is tried again every reregister_ms, and its
 * Xids are heard once it answers. */
static void test_xid_reregister(void **state) {
        char dir[] = "/tmp/test-daemon-XXXXXX";
        assert_non_null(mkdtemp(dir));
#define GPU_C "{\"name\": \"NVIDIA H200\", \"uuid\": \"GPU-cccccccc-0000-0000-0000-000000000000\", \"xid_events\": [79]%s}"
        _cleanup_free_ char *lost = xasprintf(GPU_C, ", \"errors\": {\"nvmlDeviceRegisterEvents\": 15}");
        _cleanup_free_ char *back = xasprintf(GPU_C, "");
#undef GPU_C
        _cleanup_free_ char *d1 = xasprintf("{\"driver_version\": \"570.133.20\", \"gpus\": [%s]}", lost);
        _cleanup_free_ char *d2 = xasprintf("{\"driver_version\": \"570.133.20\", \"gpus\": [%s]}", back);
        _cleanup_free_ char *desc = write_file(dir, "nvml.json", d1, false);
        setenv("GPUNODE_FAKE_NVML", desc, 1);
        struct xid_seen a = { .lock = PTHREAD_MUTEX_INITIALIZER };
        struct xid_watch *w = NULL;
        const struct xid_subscriber subs[] = { { .on_xid = record_xid, .userdata = &a } };
        assert_int_equal(xid_watch_start_retrying(getenv("GPUNODE_FAKE_NVML_LIB"), subs, 1, 200, &w), 0);
        sleep_ms(700);
        assert_int_equal(seen(&a), 0); /* NVML_ERROR_GPU_IS_LOST on registration: nothing heard */
        /* the GPU answers again; the fake reads its description anew at an nvmlInit */
        _cleanup_free_ char *tmp = write_file(dir, "nvml.json.new", d2, false);
        assert_int_equal(rename(tmp, desc), 0);
        struct nvml_lib *lib = NULL;
        assert_int_equal(nvml_lib_open(getenv("GPUNODE_FAKE_NVML_LIB"), &lib, NULL), 0);
        assert_int_equal(lib->nvmlInit(), NVML_SUCCESS);
        lib->nvmlShutdown();
        for (int i = 0; i < 60 && seen(&a) < 1; i++) sleep_ms(50);
        if (seen(&a) != 1) fail_msg("the GPU back: %u Xid events heard, wanted 1 (never registered again)", seen(&a));
        assert_int_equal(a.xid[0], 79);
        assert_int_equal(a.index[0], 0);
        xid_watch_stop(w);
        nvml_lib_unref(lib);
        unsetenv("GPUNODE_FAKE_NVML");
        unlink(desc);
        rmdir(dir);
}

/* What a diagnosis sink saw. */
struct rounds {
        pthread_mutex_t lock;
        unsigned n;
        enum diagnosis_result last;
        char node[64];
        enum verdict verdict;
        char root_cause[64];
        char error[256];
};

/* Records a round. Returns nothing. */
static void record_round(void *userdata, const struct diagnosis_round *round) {
        struct rounds *r = userdata;
        pthread_mutex_lock(&r->lock);
        r->n++;
        r->last = round->result;
        if (round->result == DIAGNOSIS_OK) {
                snprintf(r->node, sizeof r->node, "%s", round->report->node);
                r->verdict = round->report->verdict;
                snprintf(r->root_cause, sizeof r->root_cause, "%s",
                         round->report->root_cause ? round->report->root_cause->def->id : "");
                assert_true(json_is_object(round->doc));
                assert_true(round->json_len > 0 && round->json[0] == '{');
        } else {
                snprintf(r->error, sizeof r->error, "%s", round->error ? round->error : "(none)");
        }
        pthread_mutex_unlock(&r->lock);
}

/* Runs the loop with `self` a script whose body is script, until both sinks saw a round (or 10 s), the
 * child given kmsg and expect_gpus (NULL, 0: none). Returns nothing; the sinks' records in *a and *b. */
static void run_loop_with(const char *script, unsigned timeout_ms, const char *kmsg, unsigned expect_gpus,
                          struct rounds *a, struct rounds *b) {
        char dir[] = "/tmp/test-daemon-XXXXXX";
        assert_non_null(mkdtemp(dir));
        _cleanup_free_ char *self = write_file(dir, "gpunode", script, true);
        struct diagnosis_options o = { .self = self, .root = "/", .node = "node-a", .interval_ms = 60000,
                                       .timeout_ms = timeout_ms, .n_sinks = 2, .kmsg = kmsg,
                                       .expect_gpus = expect_gpus };
        o.sinks[0] = (struct diagnosis_sink){ .on_round = record_round, .userdata = a };
        o.sinks[1] = (struct diagnosis_sink){ .on_round = record_round, .userdata = b };
        struct diagnosis *d = NULL;
        assert_int_equal(diagnosis_start(&o, &d), 0);
        for (int i = 0; i < 200; i++) {
                pthread_mutex_lock(&b->lock);
                unsigned n = b->n;
                pthread_mutex_unlock(&b->lock);
                if (n > 0) break;
                sleep_ms(50);
        }
        diagnosis_stop(d);
        unlink(self);
        rmdir(dir);
}

/* run_loop_with() without the optional options. */
static void run_loop(const char *script, unsigned timeout_ms, struct rounds *a, struct rounds *b) {
        run_loop_with(script, timeout_ms, NULL, 0, a, b);
}

#define REPORT_SCRIPT                                                                                                  \
        "#!/bin/sh\n"                                                                                                  \
        "[ \"$1 $2 $3 $4 $5 $6 $7\" = \"check --output json --root / --node node-a\" ] || exit 64\n"                   \
        "cat <<'END'\n"                                                                                                \
        "{\"schema\": \"gpunode.report/v1\", \"node\": \"node-a\", \"verdict\": \"failed\",\n"                         \
        " \"root_cause\": {\"layer\": 1, \"component\": \"driver\", \"check\": \"driver.module-signature\"},\n"        \
        " \"checks\": [{\"id\": \"driver.module-signature\", \"layer\": 1, \"component\": \"driver\",\n"              \
        "              \"status\": \"fail\", \"summary\": \"rejected by Secure Boot\", \"evidence\": []}]}\n"          \
        "END\n"                                                                                                        \
        "exit 2\n"

/* A good report (exit 2: failures) reaches every sink parsed: node, verdict, root cause. */
static void test_diagnosis_report_to_every_sink(void **state) {
        struct rounds a = { .lock = PTHREAD_MUTEX_INITIALIZER }, b = { .lock = PTHREAD_MUTEX_INITIALIZER };
        run_loop(REPORT_SCRIPT, 10000, &a, &b);
        assert_int_equal(a.n, 1);
        assert_int_equal(b.n, 1);
        assert_int_equal(a.last, DIAGNOSIS_OK);
        assert_string_equal(a.node, "node-a");
        assert_int_equal(a.verdict, VERDICT_FAILED);
        assert_string_equal(a.root_cause, "driver.module-signature");
        assert_string_equal(b.root_cause, "driver.module-signature");
}

/* The agent's --kmsg and --expect-gpus reach its diagnosis child (the script refuses to report without
 * them). */
static void test_diagnosis_child_options(void **state) {
        (void)state;
        struct rounds a = { .lock = PTHREAD_MUTEX_INITIALIZER }, b = { .lock = PTHREAD_MUTEX_INITIALIZER };
        static const char script[] = "#!/bin/sh\n"
                                     "case \" $* \" in *' --kmsg /host/var/log/kern.log '*) ;; *) exit 64 ;; esac\n"
                                     "case \" $* \" in *' --expect-gpus 8 '*) ;; *) exit 64 ;; esac\n"
                                     "echo '{\"schema\": \"gpunode.report/v1\", \"verdict\": \"healthy\", \"checks\": []}'\n";
        run_loop_with(script, 10000, "/host/var/log/kern.log", 8, &a, &b);
        assert_int_equal(a.n, 1);
        if (a.last != DIAGNOSIS_OK) fail_msg("the child did not get the options: %s", a.error);
}

/* Output that is not a report is INVALID, with the reader's sentence. */
static void test_diagnosis_invalid(void **state) {
        struct rounds a = { .lock = PTHREAD_MUTEX_INITIALIZER }, b = { .lock = PTHREAD_MUTEX_INITIALIZER };
        run_loop("#!/bin/sh\necho '{\"schema\": \"something/v9\"}'\n", 10000, &a, &b);
        assert_int_equal(a.last, DIAGNOSIS_INVALID);
        assert_non_null(strstr(a.error, "gpunode.report/v1"));
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        run_loop("#!/bin/sh\necho 'gpunode_verdict 1'\n", 10000, &a, &b);
        assert_int_equal(a.last, DIAGNOSIS_INVALID);
        assert_non_null(strstr(a.error, "not JSON"));
}

/* An internal-error exit is FAILED; a child past the timeout is killed and TIMEOUT. */
static void test_diagnosis_failed_and_timeout(void **state) {
        struct rounds a = { .lock = PTHREAD_MUTEX_INITIALIZER }, b = { .lock = PTHREAD_MUTEX_INITIALIZER };
        run_loop("#!/bin/sh\nexit 70\n", 10000, &a, &b);
        assert_int_equal(a.last, DIAGNOSIS_FAILED);
        memset(&a, 0, sizeof a);
        memset(&b, 0, sizeof b);
        uint64_t t0 = monotonic_ms();
        run_loop("#!/bin/sh\nexec sleep 30\n", 300, &a, &b);
        assert_int_equal(a.last, DIAGNOSIS_TIMEOUT);
        assert_true(monotonic_ms() - t0 < 5000);
}

/* The supervisor restarts a child that exits, and stops it when told. */
static void test_supervisor_restarts(void **state) {
        char dir[] = "/tmp/test-daemon-XXXXXX";
        assert_non_null(mkdtemp(dir));
        _cleanup_free_ char *count = xasprintf("%s/count", dir);
        _cleanup_free_ char *body = xasprintf("#!/bin/sh\necho x >> %s\nexit 3\n", count);
        _cleanup_free_ char *self = write_file(dir, "gpunode", body, true);
        const char *argv[] = { "gpunode", "labels", NULL };
        struct supervisor *s = NULL;
        assert_int_equal(supervisor_start("test", "labels", self, argv, &s), 0);
        sleep_ms(1600); /* the first run, then one restart after 1 s */
        supervisor_stop(s);
        FILE *f = fopen(count, "r");
        assert_non_null(f);
        int lines = 0, c;
        while ((c = fgetc(f)) != EOF) lines += c == '\n';
        fclose(f);
        assert_int_equal(lines, 2);
        unlink(count);
        unlink(self);
        rmdir(dir);
}

/* A thread that cannot start (RLIMIT_NPROC, as nobody: root ignores it) is said as such, not as "cannot
 * listen" (before: "cannot listen on 127.0.0.1:0: Resource temporarily unavailable"). */
static void test_thread_start_fails(void **state) {
        (void)state;
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                close(p[0]);
                if (getuid() == 0 && (setgid(65534) < 0 || setuid(65534) < 0)) _exit(2);
                struct rlimit rl = { 1, 1 }; /* this process is the one task allowed */
                if (setrlimit(RLIMIT_NPROC, &rl) < 0) _exit(3);
                struct daemon *d = daemon_new();
                const struct daemon_options o = { .who = "test", .listen_addr = "127.0.0.1:0" };
                char *error = NULL;
                int r = daemon_start(d, &o, &error);
                if (error) (void)!write(p[1], error, strlen(error));
                _exit(r == -EAGAIN ? 0 : 4);
        }
        close(p[1]);
        char text[512];
        ssize_t n = 0, k;
        while ((k = read(p[0], text + n, sizeof text - 1 - (size_t)n)) > 0) n += k;
        text[n] = 0;
        close(p[0]);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        assert_int_equal(WEXITSTATUS(status), 0);
        assert_string_equal(text, "cannot start the HTTP server for 127.0.0.1:0 (cannot start a thread): Resource "
                                  "temporarily unavailable");
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_xid_fan_out),
                cmocka_unit_test(test_xid_reregister),
                cmocka_unit_test(test_diagnosis_child_options),
                cmocka_unit_test(test_diagnosis_report_to_every_sink),
                cmocka_unit_test(test_diagnosis_invalid),
                cmocka_unit_test(test_diagnosis_failed_and_timeout),
                cmocka_unit_test(test_supervisor_restarts),
                cmocka_unit_test(test_thread_start_fails),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
