/* options.c: the options that several commands share, one duration syntax, the one node-name rule. */
#include "cmd/options.h"
#include "basic/hostfs.h"

#include <ctype.h>
#include <math.h>

void shared_options_init(struct shared_options *o) {
        *o = (struct shared_options){ 0 };
        o->root = getenv("GPUNODE_ROOT");
        if (!o->root || !*o->root) o->root = "/";
        o->probe.nvml_timeout_ms = NVML_DEFAULT_TIMEOUT_MS;
        o->kube.timeout_ms = KUBE_DEFAULT_TIMEOUT_MS;
}

int parse_duration_ms(const char *s, uint64_t min_ms, uint64_t max_ms, uint64_t *ret) {
        char *end;
        errno = 0;
        double v = strtod(s, &end);
        if (end == s || errno || !isfinite(v) || v < 0 || isspace((unsigned char)*s)) return -EINVAL;
        double mult = streq(end, "") || streq(end, "s") ? 1000
                      : streq(end, "ms")                ? 1
                      : streq(end, "m")                 ? 60000
                      : streq(end, "h")                 ? 3600000
                                                        : -1;
        if (mult < 0) return parse_go_duration_ms(s, min_ms, max_ms, ret); /* "1m30s" */
        double ms = v * mult;
        if (ms < (double)min_ms || ms > (double)max_ms) return -EINVAL;
        if (ms > 0 && ms < 1) return -EINVAL; /* below a millisecond cannot be honoured */
        *ret = (uint64_t)llround(ms);
        return 0;
}

int parse_go_duration_ms(const char *s, uint64_t min_ms, uint64_t max_ms, uint64_t *ret) {
        /* Go's grammar, [-+]?([0-9]*(\.[0-9]*)?[a-z]+)+ or "0" (less the "-": no negative intervals),
         * scanned by hand: strtod would also take exponents, hex, "inf" and leading spaces. The sum is
         * kept in nanoseconds, as Go does. */
        static const struct {
                const char *unit;
                double ns;
        } units[] = {
                { "ns", 1 },   { "us", 1e3 }, { "\u00b5s", 1e3 }, { "\u03bcs", 1e3 },
                { "ms", 1e6 }, { "s", 1e9 },  { "m", 60e9 },      { "h", 3600e9 },
        };
        const char *p = s;
        if (*p == '+') p++;
        if (streq(p, "0")) {
                if (min_ms > 0) return -EINVAL;
                *ret = 0;
                return 0;
        }
        if (!*p) return -EINVAL;
        double total_ns = 0;
        while (*p) {
                const char *num = p;
                size_t digits = 0;
                while (*p >= '0' && *p <= '9') p++, digits++;
                if (*p == '.') {
                        p++;
                        while (*p >= '0' && *p <= '9') p++, digits++;
                }
                if (digits == 0 || (size_t)(p - num) > 40) return -EINVAL;
                char buf[48];
                memcpy(buf, num, (size_t)(p - num));
                buf[p - num] = 0;
                double v = strtod(buf, NULL); /* digits and one dot only: always a finite number */
                /* the unit: every character up to the next number, as Go takes it */
                const char *unit = p;
                while (*p && *p != '.' && !(*p >= '0' && *p <= '9')) p++;
                size_t k;
                for (k = 0; k < ELEMENTSOF(units); k++)
                        if (strlen(units[k].unit) == (size_t)(p - unit) &&
                            memcmp(units[k].unit, unit, (size_t)(p - unit)) == 0)
                                break;
                if (k == ELEMENTSOF(units)) return -EINVAL;
                total_ns += v * units[k].ns;
                if (total_ns > 9.2e18) return -EINVAL; /* past Go's int64 nanoseconds */
        }
        double ms = total_ns / 1e6;
        if (ms < (double)min_ms || ms > (double)max_ms) return -EINVAL;
        if (ms > 0 && ms < 1) return -EINVAL; /* below a millisecond cannot be honoured */
        *ret = (uint64_t)llround(ms);
        return 0;
}

int parse_go_bool(const char *s, bool *ret) {
        static const char *const yes[] = { "1", "t", "T", "TRUE", "true", "True" };
        static const char *const no[] = { "0", "f", "F", "FALSE", "false", "False" };
        for (size_t i = 0; i < ELEMENTSOF(yes); i++) {
                if (streq(s, yes[i])) {
                        *ret = true;
                        return 0;
                }
                if (streq(s, no[i])) {
                        *ret = false;
                        return 0;
                }
        }
        return -EINVAL;
}

const char *env_first(const char *const *names, const char **ret_name) {
        for (; *names; names++) {
                const char *v = getenv(*names);
                if (v && *v) {
                        if (ret_name) *ret_name = *names;
                        return v;
                }
        }
        return NULL;
}

/* The shared options' help, in the order of their SHARED_OPT_* bits: written here once, beside their parser. */
static const char *const shared_help[] = {
        /* SHARED_OPT_ROOT */
        "  --root DIR            host root to read, never written to (env GPUNODE_ROOT, default /); the\n"
        "                        driver's libnvidia-ml.so.1 is loaded from it (root's files only)\n",
        /* SHARED_OPT_KMSG */
        "  --kmsg FILE           read a saved kernel log (dmesg, journal or kmsg format) instead of /dev/kmsg\n",
        /* SHARED_OPT_NVML_LIBRARY */
        "  --nvml-library PATH   load this file instead of libnvidia-ml.so.1 (default: the root's: its\n"
        "                        ld.so.cache, /usr/lib/<triplet>, /usr/lib64, /usr/lib, also under\n"
        "                        /run/nvidia/driver; then the dynamic linker's search)\n",
        /* SHARED_OPT_NVML_TIMEOUT */
        "  --nvml-timeout MS     bound on all NVML calls together, per round when looping (default 10000)\n",
        /* SHARED_OPT_NODE */
        "  --node NAME           the node's name (default $NODE_NAME, else the host name under the root)\n",
        /* SHARED_OPT_KUBECONFIG */
        "  --kubeconfig FILE     Kubernetes credentials (default $KUBECONFIG, ~/.kube/config, else the pod's\n"
        "                        service account)\n",
        /* SHARED_OPT_TIMEOUT */
        "  --timeout DURATION    bound on each API request and metrics fetch (default 5s; \"500ms\" works)\n",
        /* SHARED_OPT_OPERATOR_NAMESPACE */
        "  --operator-namespace NS  the GPU Operator's namespace (default: found from its pods on the node)\n",
        /* SHARED_OPT_DCGM_URL */
        "  --dcgm-url URL        DCGM exporter metrics (default: the exporter pod on this node, at the port it\n"
        "                        declares, 9400 when none; else http://localhost:9400/metrics)\n",
        /* SHARED_OPT_NODE_EXPORTER_URL */
        "  --node-exporter-url URL  node exporter metrics (default: its pod on this node, at the port it declares,\n"
        "                        9100 when none; else localhost:9100)\n",
        /* SHARED_OPT_EXPECT_GPUS */
        "  --expect-gpus N       the GPUs this node should have (1..1024): fewer on the PCI bus or in NVML\n"
        "                        fails driver.gpu-count\n",
};

_Static_assert(1u << (ELEMENTSOF(shared_help) - 1) == SHARED_OPT_EXPECT_GPUS, "one help text per SHARED_OPT_*");

const char *shared_option_help(unsigned bit) {
        for (size_t i = 0; i < ELEMENTSOF(shared_help); i++)
                if (bit == 1u << i) return shared_help[i];
        return NULL;
}

int shared_option(int c, const char *arg, struct shared_options *o, char **ret_error) {
        uint64_t ms;
        switch (c) {
        case OPT_ROOT:
                o->root = arg;
                o->root_given = true;
                return 1;
        case OPT_KMSG: o->probe.kmsg_file = arg; return 1;
        case OPT_NVML_LIBRARY: o->probe.nvml_library = arg; return 1;
        case OPT_NVML_TIMEOUT:
                if (parse_u64(arg, 10, &ms) < 0 || ms == 0 || ms > 600000) {
                        *ret_error = xasprintf("--nvml-timeout must be 1..600000 ms, not '%s'", arg);
                        return -EINVAL;
                }
                o->probe.nvml_timeout_ms = (unsigned)ms;
                return 1;
        case OPT_NODE:
                if (node_name_check(arg, "--node", ret_error) < 0) return -EINVAL;
                o->node = arg;
                return 1;
        case OPT_KUBECONFIG: o->kube.kubeconfig = arg; return 1;
        case OPT_TIMEOUT:
                if (parse_duration_ms(arg, 1, 600000, &ms) < 0) {
                        *ret_error =
                                xasprintf("--timeout must be 1..600 s (\"5\", \"5s\" or \"500ms\"), not '%s'", arg);
                        return -EINVAL;
                }
                o->kube.timeout_ms = (unsigned)ms;
                o->timeout_given = true;
                return 1;
        case OPT_OPERATOR_NAMESPACE: o->kube.operator_namespace = arg; return 1;
        case OPT_DCGM_URL: o->kube.dcgm_url = arg; return 1;
        case OPT_NODE_EXPORTER_URL: o->kube.node_exporter_url = arg; return 1;
        case OPT_EXPECT_GPUS:
                if (parse_u64(arg, 10, &ms) < 0 || ms == 0 || ms > 1024) {
                        *ret_error = xasprintf("--expect-gpus must be a number of GPUs, 1..1024, not '%s'", arg);
                        return -EINVAL;
                }
                o->probe.expect_gpus = (unsigned)ms;
                return 1;
        default: return 0;
        }
}

int node_name_check(const char *name, const char *what, char **ret_error) {
        size_t n = name ? strlen(name) : 0;
        const char *why = NULL;
        if (n == 0)
                why = "it is empty";
        else if (n > 253)
                why = "it is longer than 253 characters";
        else
                for (size_t i = 0; i < n && !why; i++) {
                        unsigned char c = (unsigned char)name[i];
                        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
                        bool edge = i == 0 || i == n - 1 || name[i - 1] == '.' || name[i + 1] == '.';
                        if (!alnum && c != '-' && c != '.')
                                why = "only lowercase letters, digits, '-' and '.' may be in it";
                        else if (!alnum && edge)
                                why = "it and each of its dot-separated parts must start and end with a lowercase "
                                      "letter or digit";
                }
        if (!why) return 0;
        _cleanup_free_ char *shown = utf8_sanitize(name ? name : "");
        for (char *p = shown; *p; p++)
                if ((unsigned char)*p < ' ' || *p == 0x7f) *p = '?';
        return errorf(ret_error, -EINVAL, "%s '%.300s' is not a node name (a DNS-1123 subdomain): %s", what, shown,
                      why);
}

char *node_name_resolve(const char *flag) {
        if (flag && *flag) return xstrdup(flag);
        const char *env = getenv("NODE_NAME");
        if (env && *env) {
                _cleanup_free_ char *err = NULL;
                if (node_name_check(env, "$NODE_NAME", &err) < 0) {
                        fprintf(stderr, "gpunode: %s\n", err);
                        exit(64); /* EXIT_USAGE: what the downward API sets is never refused */
                }
                return xstrdup(env);
        }
        char *name = NULL;
        if (hostfs_read_line("/proc/sys/kernel/hostname", &name) == 0 && name && *name) {
                for (char *p = name; *p; p++) *p = (char)tolower((unsigned char)*p);
                return name;
        }
        free(name);
        return xstrdup("unknown");
}
