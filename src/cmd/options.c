/* options.c: the options that several commands share, one duration syntax, the one node-name rule. */
#include "cmd/options.h"
#include "basic/hostfs.h"

#include <ctype.h>
#include <math.h>

void shared_options_init(struct shared_options *o) {
        *o = (struct shared_options){0};
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
        if (mult < 0) return -EINVAL;
        double ms = v * mult;
        if (ms < (double)min_ms || ms > (double)max_ms) return -EINVAL;
        if (ms > 0 && ms < 1) return -EINVAL; /* below a millisecond cannot be honoured */
        *ret = (uint64_t)llround(ms);
        return 0;
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
        case OPT_NODE: o->node = arg; return 1;
        case OPT_KUBECONFIG: o->kube.kubeconfig = arg; return 1;
        case OPT_TIMEOUT:
                if (parse_duration_ms(arg, 1, 600000, &ms) < 0) {
                        *ret_error = xasprintf("--timeout must be 1..600 s (\"5\", \"5s\" or \"500ms\"), not '%s'", arg);
                        return -EINVAL;
                }
                o->kube.timeout_ms = (unsigned)ms;
                o->timeout_given = true;
                return 1;
        case OPT_OPERATOR_NAMESPACE: o->kube.operator_namespace = arg; return 1;
        case OPT_DCGM_URL: o->kube.dcgm_url = arg; return 1;
        case OPT_NODE_EXPORTER_URL: o->kube.node_exporter_url = arg; return 1;
        default: return 0;
        }
}

char *node_name_resolve(const char *flag) {
        if (flag && *flag) return xstrdup(flag);
        const char *env = getenv("NODE_NAME");
        if (env && *env) return xstrdup(env);
        char *name = NULL;
        if (hostfs_read_line("/proc/sys/kernel/hostname", &name) == 0 && name && *name) {
                for (char *p = name; *p; p++) *p = (char)tolower((unsigned char)*p);
                return name;
        }
        free(name);
        return xstrdup("unknown");
}
