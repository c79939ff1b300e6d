/* podres_call.c: calls the kubelet's pod-resources List and GetAllocatableResources once and prints what came back (tests, measurements). */
/*
 * usage: podres_call [--root DIR] [--socket PATH] [--timeout MS] [--quiet] list|allocatable...
 * Prints one line per device ("pod <ns>/<name> <container> <resource> <id,...> numa <n,...>",
 * "allocatable <resource> <id,...> numa <n,...>"), or the error sentence on stderr; exits 0, or
 * 1 when a call failed. --quiet prints counts only.
 */
#include <getopt.h>

#include "basic/hostfs.h"
#include "kube/podresources.h"

/* Prints ids and NUMA nodes of one devices entry after prefix. */
static void print_devices(const char *prefix, const struct podres_devices *d) {
        printf("%s %s ", prefix, d->resource_name);
        for (size_t i = 0; i < d->n_device_ids; i++) printf("%s%s", i ? "," : "", d->device_ids[i]);
        printf(" numa ");
        for (size_t i = 0; i < d->n_numa_nodes; i++) printf("%s%lld", i ? "," : "", (long long)d->numa_nodes[i]);
        printf("%s\n", d->n_numa_nodes ? "" : "-");
}

int main(int argc, char **argv) {
        const char *root = "/", *socket = NULL;
        unsigned timeout = 0;
        bool quiet = false;
        static const struct option opts[] = {
                {"root", required_argument, NULL, 'r'},
                {"socket", required_argument, NULL, 's'},
                {"timeout", required_argument, NULL, 't'},
                {"quiet", no_argument, NULL, 'q'},
                {},
        };
        int o;
        while ((o = getopt_long(argc, argv, "", opts, NULL)) >= 0) {
                if (o == 'r') root = optarg;
                else if (o == 's') socket = optarg;
                else if (o == 't') timeout = (unsigned)atoi(optarg);
                else if (o == 'q') quiet = true;
                else return 64;
        }
        if (hostfs_init(root) < 0) {
                fprintf(stderr, "podres_call: cannot open root %s\n", root);
                return 64;
        }
        struct podres_client *c = podres_client_new(socket, timeout);
        int code = 0;
        for (int i = optind; i < argc; i++) {
                char *err = NULL;
                if (streq(argv[i], "list")) {
                        struct podres_list *l = NULL;
                        if (podres_list(c, &l, &err) < 0) {
                                fprintf(stderr, "%s\n", err);
                                free(err);
                                code = 1;
                                continue;
                        }
                        size_t devices = 0;
                        for (size_t p = 0; p < l->n_pods; p++)
                                for (size_t k = 0; k < l->pods[p].n_containers; k++) {
                                        const struct podres_container *ct = &l->pods[p].containers[k];
                                        devices += ct->n_devices;
                                        for (size_t d = 0; d < ct->n_devices && !quiet; d++) {
                                                _cleanup_free_ char *prefix = xasprintf("pod %s/%s %s", l->pods[p].namespace,
                                                                                        l->pods[p].name, ct->name);
                                                print_devices(prefix, &ct->devices[d]);
                                        }
                                }
                        printf("list: %zu pods, %zu device entries\n", l->n_pods, devices);
                        podres_list_free(l);
                } else if (streq(argv[i], "allocatable")) {
                        struct podres_allocatable *a = NULL;
                        if (podres_allocatable(c, &a, &err) < 0) {
                                fprintf(stderr, "%s\n", err);
                                free(err);
                                code = 1;
                                continue;
                        }
                        for (size_t d = 0; d < a->n_devices && !quiet; d++) print_devices("allocatable", &a->devices[d]);
                        printf("allocatable: %zu device entries\n", a->n_devices);
                        podres_allocatable_free(a);
                } else {
                        fprintf(stderr, "podres_call: unknown call %s (list, allocatable)\n", argv[i]);
                        code = 64;
                }
        }
        podres_client_free(c);
        hostfs_done();
        return code;
}
