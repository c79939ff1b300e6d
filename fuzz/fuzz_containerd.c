/* fuzz_containerd.c: libFuzzer target for containerd config resolution: the input is the main config.toml, resolved
 * with its imports (a fixed drop-in, globs, itself) through hostfs in a scratch root, under containerd 1.x, 2.x
 * and an unknown version; and the same input as a version string (dpkg's status file: fuzz_dpkg.c). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "facts/node.h"
#include "facts/layer2_container.h"
#include "basic/hostfs.h"
#include "basic/toml.h"

static char root[64];
static char main_path[128];

int LLVMFuzzerInitialize(int *argc, char ***argv);
/* Returns 0: sets up a scratch root with a drop-in the input may import; aborts when it cannot. */
int LLVMFuzzerInitialize(int *argc, char ***argv) {
        snprintf(root, sizeof root, "/tmp/gpunode-fuzz-ctd-XXXXXX");
        if (!mkdtemp(root)) abort();
        char p[256];
        snprintf(p, sizeof p, "%s/etc", root);
        mkdir(p, 0755);
        snprintf(p, sizeof p, "%s/etc/containerd", root);
        mkdir(p, 0755);
        snprintf(p, sizeof p, "%s/etc/containerd/conf.d", root);
        mkdir(p, 0755);
        snprintf(p, sizeof p, "%s/etc/containerd/conf.d/99-nvidia.toml", root);
        FILE *f = fopen(p, "w");
        if (!f) abort();
        fputs("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]\nruntime_type = "
              "\"io.containerd.runc.v2\"\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\n"
              "BinaryName = \"/usr/bin/nvidia-container-runtime\"\n",
              f);
        fclose(f);
        snprintf(main_path, sizeof main_path, "%s/etc/containerd/config.toml", root);
        if (hostfs_init(root) < 0) abort();
        return 0;
}

/* Returns 0 always: libFuzzer's contract; crashes and sanitizer reports are the findings. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        if (size > 1 << 16) return 0;
        /* the single-file parser on its own */
        struct runtime_config_file rf;
        struct toml_value *doc = NULL;
        int r = containerd_parse_file("/fuzz.toml", (const char *)data, size, &rf, &doc);
        if ((r < 0) != (rf.error != NULL) || (r == 0 && !doc)) abort();
        toml_free(doc);
        runtime_config_file_free(&rf);

        /* the whole resolution, with the input as the main file */
        FILE *f = fopen(main_path, "w");
        if (!f) abort();
        fwrite(data, 1, size, f);
        fclose(f);
        for (int major = 0; major <= 2; major++) {
                struct containerd_facts c = {.major = major};
                c.config_path = strdup("/etc/containerd/config.toml");
                containerd_resolve(&c);
                if (c.rc < 0 && !c.error) abort();
                if (c.n_files == 0) abort();
                if (c.merge_other && !c.merge_assumed) abort();
                containerd_facts_free(&c);
        }

        /* a version string (NUL-terminated copy) */
        char *str = malloc(size + 1);
        if (!str) abort();
        memcpy(str, data, size);
        str[size] = 0;
        int major, minor;
        if (containerd_parse_version(str, &major, &minor) == 0 && (major < 1 || minor < 0)) abort();
        free(str);
        return 0;
}
