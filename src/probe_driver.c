/* probe_driver.c: the NVIDIA kernel driver's own view: /proc/driver/nvidia and /sys/module/nvidia. */
#include "facts.h"
#include "hostfs.h"

#include <ctype.h>

#define DRIVER_VERSION_FILE "/proc/driver/nvidia/version"
#define DRIVER_GPUS_DIR "/proc/driver/nvidia/gpus"

/* Returns a malloc'd copy of the first token in line that looks like a driver version
 * ("550.54.15", "580.95.05", "367.44"), or NULL. */
static char *find_version_token(const char *line) {
        const char *p = line;
        while (*p) {
                while (*p && isspace((unsigned char)*p)) p++;
                const char *start = p;
                while (*p && !isspace((unsigned char)*p)) p++;
                size_t len = (size_t)(p - start);
                bool digits = len > 0, dot = false;
                for (size_t i = 0; i < len && digits; i++) {
                        if (start[i] == '.') dot = true;
                        else if (!isdigit((unsigned char)start[i])) digits = false;
                }
                if (digits && dot && isdigit((unsigned char)start[0]) && isdigit((unsigned char)start[len - 1]))
                        return xstrndup(start, len);
        }
        return NULL;
}

/* Returns the value of "Key:  value" in an information file, or NULL. */
static char *info_value(const char *text, const char *key) {
        size_t klen = strlen(key);
        for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
                if (strncmp(line, key, klen) != 0 || line[klen] != ':') continue;
                const char *v = line + klen + 1;
                while (*v == ' ' || *v == '\t') v++;
                size_t len = strcspn(v, "\n");
                char *s = xstrndup(v, len);
                return strstrip_right(s);
        }
        return NULL;
}

void probe_driver(struct driver_facts *ret) {
        *ret = (struct driver_facts){0};
        char *line = NULL;
        int r = hostfs_read_line(DRIVER_VERSION_FILE, &line);
        if (r < 0) {
                ret->version_rc = r;
                ret->version_error = read_error(DRIVER_VERSION_FILE, r);
        } else {
                ret->version_line = line;
                if (!startswith(line, "NVRM version:")) {
                        ret->version_rc = -EINVAL;
                        ret->version_error = xasprintf("%s: first line does not start with \"NVRM version:\": %.120s",
                                                       DRIVER_VERSION_FILE, line);
                } else {
                        ret->version = find_version_token(line + strlen("NVRM version:"));
                        ret->open_module = strstr(line, "Open Kernel Module") != NULL;
                        if (!ret->version) {
                                ret->version_rc = -EINVAL;
                                ret->version_error = xasprintf("%s: no version number in \"%.120s\"", DRIVER_VERSION_FILE, line);
                        }
                }
        }

        _cleanup_strv_free_ char **names = NULL;
        int n = hostfs_list(DRIVER_GPUS_DIR, false, &names);
        for (int i = 0; i < n; i++) {
                _cleanup_free_ char *p = xasprintf(DRIVER_GPUS_DIR "/%s/information", names[i]);
                _cleanup_free_ char *text = NULL;
                struct driver_gpu_info g = {.minor = -1};
                snprintf(g.address, sizeof g.address, "%s", names[i]);
                if (hostfs_read(p, 64 * 1024, &text, NULL) == 0) {
                        g.model = info_value(text, "Model");
                        g.uuid = info_value(text, "GPU UUID");
                        _cleanup_free_ char *minor = info_value(text, "Device Minor");
                        int64_t m;
                        if (minor && parse_i64(minor, &m) == 0 && m >= 0 && m < 4096) g.minor = (int)m;
                }
                ret->gpus = xrealloc(ret->gpus, (ret->n_gpus + 1) * sizeof *ret->gpus);
                ret->gpus[ret->n_gpus++] = g;
        }
        (void)hostfs_read_line("/sys/module/nvidia/taint", &ret->taint);
}

void driver_facts_free(struct driver_facts *f) {
        free(f->version_error);
        free(f->version_line);
        free(f->version);
        for (size_t i = 0; i < f->n_gpus; i++) {
                free(f->gpus[i].model);
                free(f->gpus[i].uuid);
        }
        free(f->gpus);
        free(f->taint);
        *f = (struct driver_facts){0};
}
