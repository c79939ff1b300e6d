/* labels.c: `gpunode labels`: GFD-compatible labels written atomically to the NFD feature file, once or every interval.
 */
#include "cmd/commands.h"
#include "cmd/options.h"
#include "facts/node.h"
#include "basic/hostfs.h"
#include "layer3_kubernetes/gfd_labels.h"
#include "nvml/nvml_probe.h"
#include "basic/read_cap.h"
#include "dpconfig/dp_config.h"

#include <dirent.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>

#define DEFAULT_OUTPUT            "/etc/kubernetes/node-feature-discovery/features.d/gfd"
#define DEFAULT_MACHINE_TYPE_FILE "/sys/class/dmi/id/product_name"

/* Reads GFD's (the device plugin's) config file with the device plugin's parser (dpconfig/), which refuses
 * what the plugin refuses with the same sentence; sharing.timeSlicing or sharing.mps of the resource
 * nvidia.com/gpu sets the sharing labels. Returns 0, or -errno with *ret_error. */
static int read_sharing_config(const char *file, struct label_options *o, char **ret_error) {
        /* A file the user named: read as it is, not under the root. */
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        _cleanup_close_ int fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                *ret_error = xasprintf("cannot read %s: %m", file);
                return -errno;
        }
        if (read_fd_capped(fd, DP_CONFIG_MAX_BYTES, false, &text, &len) < 0) {
                *ret_error = xasprintf("%s: unreadable or larger than 1 MiB", file);
                return -EINVAL;
        }
        struct dp_config c;
        dp_config_init(&c);
        _cleanup_free_ char *error = NULL;
        int r = dp_config_parse(text, len, DP_CONFIG_MPS, &c, &error);
        if (r < 0) {
                *ret_error = xasprintf("%s: %s", file, error);
                dp_config_done(&c);
                return r;
        }
        const struct dp_replicated *gpu = dp_config_replicated(&c, "nvidia.com/gpu");
        if (gpu) {
                o->sharing = c.sharing == DP_SHARING_MPS ? SHARING_MPS : SHARING_TIME_SLICING;
                o->replicas = gpu->replicas;
                o->renamed = gpu->rename != NULL; /* rename, or renameByDefault */
        }
        dp_config_done(&c);
        return 0;
}

/* The temporary a write starts from: a dot-file beside the output, which NFD skips (it reads every
 * other file in features.d, so a temporary left by a killed write would be read as labels). mkstemp
 * replaces the six X's with characters of [A-Za-z0-9]. */
#define TEMP_INFIX  ".tmp-"
#define TEMP_RANDOM 6

/* Splits path into a malloc'd folder (".", "/" or the part before the last slash) in *ret_dir and a
 * pointer to the file name in *ret_base. Returns nothing; never fails. */
static void split_path(const char *path, char **ret_dir, const char **ret_base) {
        const char *slash = strrchr(path, '/');
        if (!slash) {
                *ret_dir = xstrdup(".");
                *ret_base = path;
        } else {
                *ret_dir = slash == path ? xstrdup("/") : xstrndup(path, (size_t)(slash - path));
                *ret_base = slash + 1;
        }
}

/* Returns true when name is one of our temporaries for the file named base: "." base ".tmp-" and
 * exactly six characters of [A-Za-z0-9], as mkstemp makes them. */
static bool is_our_temporary(const char *name, const char *base) {
        if (name[0] != '.') return false;
        const char *p = startswith(name + 1, base);
        if (!p || !(p = startswith(p, TEMP_INFIX))) return false;
        size_t n = 0;
        for (; p[n]; n++)
                if (!((p[n] >= 'A' && p[n] <= 'Z') || (p[n] >= 'a' && p[n] <= 'z') || (p[n] >= '0' && p[n] <= '9')))
                        return false;
        return n == TEMP_RANDOM;
}

/* Removes the temporaries an earlier run killed mid-write left beside path: regular files matching
 * our pattern only, never other files. Returns how many were removed (0 when the folder does not
 * exist yet), or -errno when the folder cannot be read or one cannot be removed. */
static int remove_stale_temporaries(const char *path) {
        _cleanup_free_ char *dir = NULL;
        const char *base;
        split_path(path, &dir, &base);
        if (!*base) return 0;
        DIR *d = opendir(dir);
        if (!d) return errno == ENOENT ? 0 : -errno;
        int removed = 0, r = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (!is_our_temporary(de->d_name, base)) continue;
                struct stat st;
                if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode)) continue;
                if (unlinkat(dirfd(d), de->d_name, 0) < 0) {
                        if (errno != ENOENT) r = -errno;
                        continue;
                }
                removed++;
        }
        closedir(d);
        return r < 0 ? r : removed;
}

/* Writes text to path atomically: a dot-file temporary in the same folder (mkstemp, mode 0644
 * whatever the umask, written, fsync'd), then rename. Creates the folder when missing. Returns 0
 * or -errno; on failure the temporary is removed. */
static int write_atomically(const char *path, const char *text) {
        _cleanup_free_ char *dir = NULL;
        const char *base;
        split_path(path, &dir, &base);
        if (!*base) return -EISDIR;
        if (!streq(dir, ".") && !streq(dir, "/")) {
                /* mkdir -p of the parent */
                for (char *p = dir + 1; *p; p++)
                        if (*p == '/') {
                                *p = 0;
                                if (mkdir(dir, 0755) < 0 && errno != EEXIST) return -errno;
                                *p = '/';
                        }
                if (mkdir(dir, 0755) < 0 && errno != EEXIST) return -errno;
        }
        _cleanup_free_ char *tmp = xasprintf("%s/.%s" TEMP_INFIX "XXXXXX", dir, base);
        int fd = mkostemp(tmp, O_CLOEXEC);
        if (fd < 0) return -errno;
        size_t len = strlen(text), off = 0;
        int r = 0;
        if (fchmod(fd, 0644) < 0) r = -errno;
        while (r == 0 && off < len) {
                ssize_t n = write(fd, text + off, len - off);
                if (n < 0) {
                        if (errno == EINTR) continue;
                        r = -errno;
                } else {
                        off += (size_t)n;
                }
        }
        if (r == 0 && fsync(fd) < 0) r = -errno;
        if (close(fd) < 0 && r == 0) r = -errno;
        if (r == 0 && rename(tmp, path) < 0) r = -errno;
        if (r < 0) unlink(tmp);
        return r;
}

/* Probes NVML and PCI and computes the labels. Returns 0 and the text in *ret, or -errno with *ret_error. */
static int label_once(const char *library, unsigned timeout_ms, const char *machine_file, struct label_options *o,
                      char **ret, char **ret_error) {
        struct node_facts f = { 0 };
        probe_pci(&f.pci);
        /* Only what GFD asks: a GPU hanging in an unrelated call (power, say) does not stop the labels. */
        probe_nvml_scope(library, timeout_ms, NVML_PROBE_LABELS, &f.nvml);
        free(o->machine_type);
        o->machine_type = NULL;
        if (*machine_file && hostfs_read(machine_file, 64 * 1024, &o->machine_type, NULL) < 0) o->machine_type = NULL;
        o->now = time(NULL);
        struct gfd_vgpu_facts vgpu;
        gfd_probe_vgpu(&vgpu);
        o->vgpu = &vgpu;
        struct label_set s;
        int r = gfd_labels(&f, o, &s, ret_error);
        if (r == 0) {
                *ret = label_set_format(&s);
                label_set_free(&s);
        } else if (r == -ENODEV) {
                /* GFD's null resource manager (--fail-on-init-error=false): the timestamp and the vgpu labels */
                struct label_set none = { 0 };
                _cleanup_free_ char *verr = NULL;
                if (o->timestamp) {
                        none.v = xcalloc(1, sizeof *none.v);
                        none.v[0] = (struct label){ xstrdup("nvidia.com/gfd.timestamp"),
                                                    xasprintf("%lld", (long long)o->now) };
                        none.n = 1;
                }
                if (gfd_vgpu_labels(o, &none, &verr) == 0) *ret = label_set_format(&none);
                label_set_free(&none);
        }
        o->vgpu = NULL;
        gfd_vgpu_facts_free(&vgpu);
        pci_facts_free(&f.pci);
        nvml_state_free(&f.nvml);
        return r;
}

/* getopt_long codes of GFD's option names that gpunode's own do not cover. */
enum {
        OPT_ONESHOT = 0x200,
        OPT_SLEEP_INTERVAL,
        OPT_FAIL_ON_INIT_ERROR,
        OPT_USE_NODE_FEATURE_API,
};

/* Parses a MIG strategy: none, single or mixed. Returns 0 and *ret, or -EINVAL. */
static int parse_mig_strategy(const char *s, enum mig_strategy *ret) {
        if (streq(s, "none"))
                *ret = MIG_STRATEGY_NONE;
        else if (streq(s, "single"))
                *ret = MIG_STRATEGY_SINGLE;
        else if (streq(s, "mixed"))
                *ret = MIG_STRATEGY_MIXED;
        else
                return -EINVAL;
        return 0;
}

/* Parses GFD's sleep interval: a Go duration ("60s", "1m30s") or "infinite" (label once, then wait
 * for the end). Returns 0 with *ret_ms and *ret_infinite, or -EINVAL. */
static int parse_sleep_interval(const char *s, uint64_t *ret_ms, bool *ret_infinite) {
        if (streq(s, "infinite")) {
                *ret_infinite = true;
                return 0;
        }
        if (parse_go_duration_ms(s, 1, 365ull * 86400000, ret_ms) < 0) return -EINVAL;
        *ret_infinite = false;
        return 0;
}

/* A GFD boolean flag's value: none (--oneshot) is true, else a Go boolean (--oneshot=false). Returns
 * 0 and *ret, or -EINVAL after saying so on stderr. */
static int bool_flag(const char *name, const char *arg, bool *ret) {
        if (!arg) {
                *ret = true;
                return 0;
        }
        if (parse_go_bool(arg, ret) == 0) return 0;
        fprintf_escaped(stderr, "gpunode labels: --%s: '%s' is not true or false\n", name, arg);
        return -EINVAL;
}

/* A GFD boolean variable: the first of names set, parsed into *ret when *given is false. Returns 0
 * (set or not), or -EINVAL after saying so on stderr. */
static int bool_env(const char *const *names, bool given, bool *ret) {
        const char *name, *v = given ? NULL : env_first(names, &name);
        if (!v) return 0;
        if (parse_go_bool(v, ret) == 0) return 0;
        fprintf_escaped(stderr, "gpunode labels: %s: '%s' is not true or false\n", name, v);
        return -EINVAL;
}

/* What `gpunode labels` was asked: GFD's flags and environment, and which flags were given (a flag
 * wins over its variable, a variable over the default). */
struct labels_args {
        struct command_args base;
        struct shared_options so;
        const char *output, *machine_file, *config;
        uint64_t interval_ms;
        bool once, infinite, no_timestamp, fail_on_init_error, node_feature_api;
        struct label_options o;
        struct {
                bool output, interval, once, mig, timestamp, fail, nfd, machine;
        } given;
};

/* Applies one of labels' own options (getopt code c, its argument arg). Returns 1 when applied, 0 when
 * c is not one of them, -EINVAL after saying on stderr what is wrong. */
static int labels_option(int c, const char *arg, struct labels_args *a) {
        uint64_t n;
        switch (c) {
        case 'o':
                a->output = *arg ? arg : "-"; /* GFD: an empty output file is standard output */
                a->given.output = true;
                return 1;
        case 'i':
                if (parse_duration_ms(arg, 1, 365ull * 86400000, &a->interval_ms) < 0) {
                        fprintf_escaped(
                                stderr,
                                "gpunode labels: --interval must be a duration (60s, 500ms, 5m, 1m30s), not '%s'\n",
                                arg);
                        return -EINVAL;
                }
                a->infinite = false;
                a->given.interval = true;
                return 1;
        case OPT_SLEEP_INTERVAL:
                if (parse_sleep_interval(arg, &a->interval_ms, &a->infinite) < 0) {
                        fprintf_escaped(stderr,
                                        "gpunode labels: --sleep-interval must be a Go duration (60s, 1m30s) or "
                                        "infinite, not '%s'\n",
                                        arg);
                        return -EINVAL;
                }
                a->given.interval = true;
                return 1;
        case '1':
                a->once = true;
                a->given.once = true;
                return 1;
        case OPT_ONESHOT: a->given.once = true; return bool_flag("oneshot", arg, &a->once) < 0 ? -EINVAL : 1;
        case 'm':
                if (parse_mig_strategy(arg, &a->o.mig_strategy) < 0) {
                        fprintf_escaped(stderr,
                                        "gpunode labels: --mig-strategy must be none, single or mixed, not '%s'\n",
                                        arg);
                        return -EINVAL;
                }
                a->given.mig = true;
                return 1;
        case 'T': a->given.timestamp = true; return bool_flag("no-timestamp", arg, &a->no_timestamp) < 0 ? -EINVAL : 1;
        case OPT_FAIL_ON_INIT_ERROR:
                a->given.fail = true;
                return bool_flag("fail-on-init-error", arg, &a->fail_on_init_error) < 0 ? -EINVAL : 1;
        case OPT_USE_NODE_FEATURE_API:
                a->given.nfd = true;
                return bool_flag("use-node-feature-api", arg, &a->node_feature_api) < 0 ? -EINVAL : 1;
        case 'M':
                a->machine_file = arg;
                a->given.machine = true;
                return 1;
        case 's':
                if (streq(arg, "none"))
                        a->o.sharing = SHARING_NONE;
                else if (streq(arg, "time-slicing"))
                        a->o.sharing = SHARING_TIME_SLICING;
                else if (streq(arg, "mps"))
                        a->o.sharing = SHARING_MPS;
                else {
                        fprintf_escaped(stderr,
                                        "gpunode labels: --sharing must be none, time-slicing or mps, not '%s'\n", arg);
                        return -EINVAL;
                }
                return 1;
        case 'n':
                if (parse_u64(arg, 10, &n) < 0 || n < 1 || n > 100000) {
                        fprintf_escaped(stderr, "gpunode labels: --replicas must be 1..100000, not '%s'\n", arg);
                        return -EINVAL;
                }
                a->o.replicas = (unsigned)n;
                return 1;
        case 'c': a->config = arg; return 1;
        default: return 0;
        }
}

/* Takes GFD's environment (its names, then the older unprefixed ones it also reads) where no flag said
 * otherwise. Returns 0, or -EINVAL after saying on stderr which variable is wrong. */
static int labels_environment(struct labels_args *a) {
        const char *v, *name;
        if (!a->given.output && (v = env_first((const char *const[]){ "GFD_OUTPUT_FILE", NULL }, NULL))) a->output = v;
        if (!a->given.interval && (v = env_first((const char *const[]){ "GFD_SLEEP_INTERVAL", NULL }, NULL)) &&
            parse_sleep_interval(v, &a->interval_ms, &a->infinite) < 0) {
                fprintf_escaped(stderr,
                                "gpunode labels: GFD_SLEEP_INTERVAL must be a Go duration (60s, 1m30s) or infinite, "
                                "not '%s'\n",
                                v);
                return -EINVAL;
        }
        if (!a->given.mig &&
            (v = env_first((const char *const[]){ "GFD_MIG_STRATEGY", "MIG_STRATEGY", NULL }, &name)) &&
            parse_mig_strategy(v, &a->o.mig_strategy) < 0) {
                fprintf_escaped(stderr, "gpunode labels: %s must be none, single or mixed, not '%s'\n", name, v);
                return -EINVAL;
        }
        if (!a->given.machine && (v = env_first((const char *const[]){ "GFD_MACHINE_TYPE_FILE", NULL }, NULL)))
                a->machine_file = v;
        if (!a->config) a->config = env_first((const char *const[]){ "GFD_CONFIG_FILE", "CONFIG_FILE", NULL }, NULL);
        if (bool_env((const char *const[]){ "GFD_ONESHOT", NULL }, a->given.once, &a->once) < 0 ||
            bool_env((const char *const[]){ "GFD_NO_TIMESTAMP", NULL }, a->given.timestamp, &a->no_timestamp) < 0 ||
            bool_env((const char *const[]){ "GFD_FAIL_ON_INIT_ERROR", "FAIL_ON_INIT_ERROR", NULL }, a->given.fail,
                     &a->fail_on_init_error) < 0 ||
            bool_env((const char *const[]){ "GFD_USE_NODE_FEATURE_API", "USE_NODE_FEATURE_API", NULL }, a->given.nfd,
                     &a->node_feature_api) < 0)
                return -EINVAL;
        return 0;
}

/* Parses `gpunode labels [OPTIONS]` (argv[0] "labels"), GFD's environment and its config file. Returns 0,
 * or -EINVAL after saying on stderr what is wrong. */
static int parse_argv_labels(int argc, char **argv, struct labels_args *args) {
        static const struct option longopts[] = {
                { "output", required_argument, NULL, 'o' },
                { "output-file", required_argument, NULL, 'o' },
                { "interval", required_argument, NULL, 'i' },
                { "sleep-interval", required_argument, NULL, OPT_SLEEP_INTERVAL },
                { "once", no_argument, NULL, '1' },
                { "oneshot", optional_argument, NULL, OPT_ONESHOT },
                { "mig-strategy", required_argument, NULL, 'm' },
                { "no-timestamp", optional_argument, NULL, 'T' },
                { "fail-on-init-error", optional_argument, NULL, OPT_FAIL_ON_INIT_ERROR },
                { "use-node-feature-api", optional_argument, NULL, OPT_USE_NODE_FEATURE_API },
                { "machine-type-file", required_argument, NULL, 'M' },
                { "sharing", required_argument, NULL, 's' },
                { "replicas", required_argument, NULL, 'n' },
                { "config-file", required_argument, NULL, 'c' },
                OPTION_ROOT,
                OPTION_NVML_LIBRARY,
                OPTION_NVML_TIMEOUT,
                { 0 },
        };
        shared_options_init(&args->so);
        args->output = DEFAULT_OUTPUT;
        args->machine_file = DEFAULT_MACHINE_TYPE_FILE;
        args->interval_ms = 60000;
        args->fail_on_init_error = true;
        args->o.timestamp = true;
        int c;
        optind = 1;
        while ((c = getopt_long(argc, argv, "o:", longopts, NULL)) != -1) {
                int k = labels_option(c, optarg, args);
                if (k < 0) return k;
                if (k > 0) continue;
                _cleanup_free_ char *error = NULL;
                k = shared_option(c, optarg, &args->so, &error);
                if (k < 0) fprintf_escaped(stderr, "gpunode labels: %s\n", error);
                if (k <= 0) return -EINVAL;
        }
        if (optind < argc) {
                fprintf_escaped(stderr, "gpunode labels: unexpected argument '%s'\n", argv[optind]);
                return -EINVAL;
        }
        if (labels_environment(args) < 0) return -EINVAL;
        if (args->node_feature_api) {
                fprintf(stderr,
                        "gpunode labels: the NFD NodeFeature API is not implemented: gpunode writes the feature file "
                        "(--output-file); set --use-node-feature-api=false (GFD_USE_NODE_FEATURE_API=false)\n");
                return -EINVAL;
        }
        struct label_options *o = &args->o;
        o->timestamp = !args->no_timestamp;
        const char *config = args->config;
        if (config) {
                _cleanup_free_ char *err = NULL;
                if (read_sharing_config(config, o, &err) < 0) {
                        fprintf_escaped(stderr, "gpunode labels: %s\n", err);
                        return -EINVAL;
                }
        }
        if (o->sharing != SHARING_NONE && o->replicas == 0) o->replicas = 1;
        args->base.root = args->so.root;
        return 0;
}

/* Says on stderr what remove_stale_temporaries() did beside output, when it did anything. */
static void report_stale_temporaries(const char *output) {
        /* A run killed mid-write (kill -9, OOM) leaves its dot-file temporary behind. */
        int k = remove_stale_temporaries(output);
        if (k < 0)
                fprintf_escaped(stderr, "gpunode labels: cannot remove temporaries left beside %s: %s\n", output,
                                strerror(-k));
        else if (k > 0)
                fprintf_escaped(stderr,
                                "gpunode labels: removed %d temporary file(s) left beside %s by an earlier run\n", k,
                                output);
}

/* Labels once and writes the labels to the output (standard output when to_stdout). Returns 0; 1 when
 * NVML failed (nothing written; a loop removes its file, as GFD does); EXIT_INTERNAL when the labels
 * cannot be written. */
static int labels_round(struct labels_args *a, bool to_stdout) {
        struct label_options *o = &a->o;
        _cleanup_free_ char *text = NULL, *err = NULL;
        int r = label_once(a->so.probe.nvml_library, a->so.probe.nvml_timeout_ms, a->machine_file, o, &text, &err);
        if (r == -ENODEV && !a->fail_on_init_error) {
                /* As GFD's fallback to its null resource manager: no GPU labels, only the timestamp. */
                fprintf_escaped(stderr, "gpunode labels: %s; labelling without GPUs (--fail-on-init-error=false)\n",
                                err ? err : strerror(-r));
                if (!text)
                        text = o->timestamp ? xasprintf("nvidia.com/gfd.timestamp=%lld\n", (long long)o->now)
                                            : xstrdup("");
                r = 0;
        }
        if (r < 0) {
                /* As GFD: a failed round writes nothing; a loop then removes its labels (stale
                 * labels would steer pods to GPUs that no longer answer) and exits non-zero. */
                fprintf_escaped(stderr, "gpunode labels: %s\n", err ? err : strerror(-r));
                if (!a->once && !to_stdout && unlink(a->output) < 0 && errno != ENOENT)
                        fprintf_escaped(stderr, "gpunode labels: cannot remove %s: %m\n", a->output);
                return 1;
        }
        if (to_stdout) return fputs(text, stdout) == EOF || fflush(stdout) != 0 ? EXIT_INTERNAL : 0;
        if ((r = write_atomically(a->output, text)) < 0) {
                fprintf_escaped(stderr, "gpunode labels: cannot write %s: %s\n", a->output, strerror(-r));
                return EXIT_INTERNAL;
        }
        return 0;
}

/* Waits for the next round, termination (of term, blocked) ending the wait. Returns true when it is
 * time for the next round; false when stopped: a loop with an interval then removes its file, GFD's
 * "infinite" keeps it. */
static bool wait_next_round(const struct labels_args *a, const sigset_t *term, bool to_stdout) {
        if (a->infinite) {
                /* GFD's "infinite": labelled once, the file stays when it ends */
                while (sigwaitinfo(term, NULL) < 0 && errno == EINTR) {
                }
                return false;
        }
        struct timespec ts = { .tv_sec = (time_t)(a->interval_ms / 1000),
                               .tv_nsec = (long)(a->interval_ms % 1000) * 1000000L };
        int sig = sigtimedwait(term, NULL, &ts);
        if (sig != SIGINT && sig != SIGTERM) return true;
        if (!to_stdout && unlink(a->output) < 0 && errno != ENOENT)
                fprintf_escaped(stderr, "gpunode labels: cannot remove %s: %m\n", a->output);
        return false;
}

/* Runs `gpunode labels` (the root opened by main.c): labels once, or every interval until SIGTERM or
 * SIGINT. Returns the exit code of the last round. */
static int run_labels(struct labels_args *args) {
        bool to_stdout = streq(args->output, "-");
        if (!to_stdout) report_stale_temporaries(args->output);
        /* Termination is waited for with sigtimedwait between rounds; a loop removes its file then. */
        sigset_t term, saved;
        sigemptyset(&term);
        sigaddset(&term, SIGINT);
        sigaddset(&term, SIGTERM);
        sigprocmask(SIG_BLOCK, &term, &saved);
        int code;
        while ((code = labels_round(args, to_stdout)) == 0 && !args->once && wait_next_round(args, &term, to_stdout)) {
        }
        sigprocmask(SIG_SETMASK, &saved, NULL);
        free(args->o.machine_type);
        return code;
}

DEFINE_COMMAND_STEPS(labels)

/* `gpunode labels`: its entry in the command table, with the help text generated from it. */
const struct command command_labels = {
        .name = "labels",
        COMMAND_STEPS(labels),
        .needs_root = true,
        .summary = "GPU feature discovery (GFD) compatible node labels for NFD",
        .usage = "[OPTIONS]",
        .options =
                "  -o, --output, --output-file FILE  NFD feature file, - (or empty) for standard output (env\n"
                "                        GFD_OUTPUT_FILE; default "
                "/etc/kubernetes/node-feature-discovery/features.d/gfd)\n"
                "  --once, --oneshot[=BOOL]  label once and exit (env GFD_ONESHOT; default: every interval)\n"
                "  --interval DURATION   time between rounds (default 60s; 500ms, 5m, 1m30s accepted)\n"
                "  --sleep-interval D    the same as GFD takes it: a Go duration (60s, 1m30s) or infinite (label\n"
                "                        once, keep the file until stopped) (env GFD_SLEEP_INTERVAL)\n"
                "  --mig-strategy S      none, single or mixed (env GFD_MIG_STRATEGY, MIG_STRATEGY; default none)\n"
                "  --sharing S --replicas N  none, time-slicing or mps with N replicas of nvidia.com/gpu\n"
                "  --config-file FILE    the device plugin / GFD config (sharing.timeSlicing or sharing.mps)\n"
                "                        (env GFD_CONFIG_FILE, CONFIG_FILE)\n"
                "  --no-timestamp[=BOOL]  leave out nvidia.com/gfd.timestamp (env GFD_NO_TIMESTAMP)\n"
                "  --fail-on-init-error[=BOOL]  exit 1 when NVML cannot initialise (default true); false: label\n"
                "                        without GPUs, as GFD (env GFD_FAIL_ON_INIT_ERROR, FAIL_ON_INIT_ERROR)\n"
                "  --use-node-feature-api[=BOOL]  accepted; true is refused: the NodeFeature API is not implemented\n"
                "                        (env GFD_USE_NODE_FEATURE_API, USE_NODE_FEATURE_API)\n"
                "  --machine-type-file F  file under the root naming the machine (env GFD_MACHINE_TYPE_FILE;\n"
                "                        default /sys/class/dmi/id/product_name)\n",
        .shared = SHARED_OPT_ROOT | SHARED_OPTS_NVML,
        .notes = "the output and --config-file are paths as given, not under the root\n"
                 "a flag wins over its environment variable; a variable set empty counts as unset\n"
                 "exit status: 0 written, 1 NVML failed (nothing written; a loop removes its file, as GFD does),\n"
                 "64 usage error, 70 the file could not be written\n",
};
