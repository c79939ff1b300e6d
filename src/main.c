/* main.c: gpunode's entry: the command table, --help generated from it, --version. */
#include "cmd/commands.h"
#include "basic/util.h"

#include <stdio.h>

#ifndef GPUNODE_VERSION
#define GPUNODE_VERSION "0.0.0"
#endif

static const struct command commands[] = {
        {"check", cmd_check, "diagnose the node bottom-up and name the root cause", "[OPTIONS]",
         "  --root DIR            host root to read (env GPUNODE_ROOT, default /)\n"
         "  --output FORMAT       text, json or prometheus (default text)\n"
         "  --kmsg FILE           read a saved kernel log (dmesg, journal or kmsg format) instead of /dev/kmsg\n"
         "  --nvml-library PATH   load this file instead of libnvidia-ml.so.1\n"
         "  --nvml-timeout MS     bound on all NVML calls together (default 10000)\n"
         "  --node NAME           node name in the report (default $NODE_NAME, else the host name)\n"
         "  --verbose             evidence for passing checks too\n"
         "  --no-color            no colours (NO_COLOR is honoured too)\n"
         "  --record-paths FILE   list every host path read (what a snapshot must hold)\n"
         "  --save-nvml FILE      write NVML's answers in the test NVML's description format\n"
         "  --snapshot FILE       check a node from its `gpunode collect` archive (replaces --root, --kmsg,\n"
         "                        --nvml-library and the API and metrics options: all answers come from it)\n"
         "  --kubeconfig FILE     Kubernetes credentials (default $KUBECONFIG, ~/.kube/config, else the pod's\n"
         "                        service account); no configuration: the API checks are skipped\n"
         "  --timeout DURATION    bound on each API request and metrics fetch (default 5s; \"500ms\" works)\n"
         "  --operator-namespace NS  the GPU Operator's namespace (default: found from its pods on the node)\n"
         "  --dcgm-url URL        DCGM exporter metrics (default: the exporter pod on this node, port 9400,\n"
         "                        else http://localhost:9400/metrics)\n"
         "  --node-exporter-url URL  node exporter metrics (default: its pod on this node, else localhost:9100)\n"
         "exit status: 0 healthy, 1 warnings, 2 failures, 64 usage error, 70 internal error\n"},
        {"explain", cmd_explain, "what every check reads and means, and the symptom table", "[CHECK-ID | TEXT]",
         "  with no argument: the symptom table and every check, layer by layer\n"
         "  CHECK-ID: what the check reads, what each outcome means, its dependencies\n"
         "  TEXT: the symptoms and checks whose words match\n"},
        {"exporter", cmd_exporter, "serve DCGM-exporter-compatible GPU metrics and the layer diagnosis over HTTP", "[OPTIONS]",
         "  --listen ADDR          HOST:PORT, [V6]:PORT or :PORT (every address; default :9400)\n"
         "  --interval DURATION    how often NVML is sampled (default 10s; 500ms, 1.5s, 30 accepted)\n"
         "  --sample-timeout DUR   an NVML call running longer is stuck: its GPU is skipped (default 10s)\n"
         "  --check-interval DUR   how often the layer diagnosis runs; 0 disables it (default 60s)\n"
         "  --check-timeout DUR    a diagnosis (a `gpunode check` child) running longer is killed (default 60s)\n"
         "  --kubeconfig FILE      passed to the diagnosis (default: in-cluster, $KUBECONFIG, ~/.kube/config)\n"
         "  --root DIR             host root for the diagnosis (env GPUNODE_ROOT, default /)\n"
         "  --nvml-library PATH    load this file instead of libnvidia-ml.so.1\n"
         "  --no-hostname          drop the Hostname label ($NODE_NAME, else the host name)\n"
         "  --hostname-label NAME  Hostname (dcgm-exporter up to 4.8) or hostname (later releases)\n"
         "  --no-xid-events        do not listen for Xid events (DCGM_FI_DEV_XID_ERRORS is then left out)\n"
         "serves /metrics, /health (503 with the reason when stale or NVML fails) and an index page;\n"
         "stops cleanly on SIGTERM or SIGINT\n"},
        {"collect", cmd_collect, "archive everything the probes read (secrets redacted) for check --snapshot", "-o FILE [OPTIONS]",
         "  -o, --output FILE     the archive to write (gzip tar; - for standard output)\n"
         "  --root DIR            host root to read (env GPUNODE_ROOT, default /); never written to\n"
         "  --kmsg FILE           read a saved kernel log instead of /dev/kmsg\n"
         "  --nvml-library PATH   load this file instead of libnvidia-ml.so.1\n"
         "  --nvml-timeout MS     bound on all NVML calls together (default 10000)\n"
         "  --node NAME           node name in the manifest (default $NODE_NAME, else the host name)\n"
         "  --kubeconfig, --timeout, --operator-namespace, --dcgm-url, --node-exporter-url  as for check:\n"
         "                        every API and metrics answer is recorded, and check --snapshot replays them\n"
         "the archive holds root/ (host files as read), kmsg, nvml.json, api/ (INDEX.json and the answers)\n"
         "and MANIFEST.json (members, sizes, sha256, what was redacted and why, what could not be read)\n"},
        {"labels", cmd_labels, "GPU feature discovery (GFD) compatible node labels for NFD", "[OPTIONS]",
         "  -o, --output FILE       NFD feature file, - for standard output\n"
         "                          (default /etc/kubernetes/node-feature-discovery/features.d/gfd)\n"
         "  --once                  label once and exit (default: every --interval)\n"
         "  --interval DURATION     time between rounds (default 60s; 500ms, 5m accepted)\n"
         "  --mig-strategy S        none, single or mixed (default none)\n"
         "  --sharing S --replicas N  none, time-slicing or mps with N replicas of nvidia.com/gpu\n"
         "  --config-file FILE      the device plugin / GFD config (sharing.timeSlicing or sharing.mps)\n"
         "  --no-timestamp          leave out nvidia.com/gfd.timestamp\n"
         "  --machine-type-file F   file under the root naming the machine (default /sys/class/dmi/id/product_name)\n"
         "  --root DIR              host root (env GPUNODE_ROOT, default /); the output path is not under it\n"
         "  --nvml-library PATH     load this file instead of libnvidia-ml.so.1\n"
         "  --nvml-timeout MS       bound on all NVML calls of a round (default 10000)\n"
         "exit status: 0 written, 1 NVML failed (nothing written; a loop removes its file, as GFD does),\n"
         "64 usage error, 70 the file could not be written\n"},
};

const struct command *command_table(size_t *ret_n) {
        *ret_n = ELEMENTSOF(commands);
        return commands;
}

void command_help(const struct command *c) {
        printf("usage: gpunode %s %s\n%s\n\n%s", c->name, c->usage, c->summary, c->options);
}

/* Prints the program help from the command table. */
static void program_help(void) {
        printf("usage: gpunode [--version] [--help] COMMAND [ARGS]\n\n"
               "Diagnoses an NVIDIA GPU node in Kubernetes bottom-up: hardware enablement, container\n"
               "integration, Kubernetes resource exposure, observability.\n\ncommands:\n");
        for (size_t i = 0; i < ELEMENTSOF(commands); i++) printf("  %-10s %s\n", commands[i].name, commands[i].summary);
        printf("\n`gpunode COMMAND --help` describes a command's options.\n");
}

/* Returns the exit code; a failed write to stdout is an error (exit 70), as in git. */
static int finish(int rc) {
        if (fflush(stdout) != 0 || ferror(stdout)) {
                fprintf(stderr, "gpunode: could not write to standard output\n");
                return EXIT_INTERNAL;
        }
        return rc;
}

int main(int argc, char **argv) {
        if (argc < 2) {
                program_help();
                return finish(EXIT_USAGE);
        }
        const char *name = argv[1];
        if (streq(name, "--help") || streq(name, "-h") || streq(name, "help")) {
                if (argc > 2)
                        for (size_t i = 0; i < ELEMENTSOF(commands); i++)
                                if (streq(argv[2], commands[i].name)) {
                                        command_help(&commands[i]);
                                        return finish(0);
                                }
                program_help();
                return finish(0);
        }
        if (streq(name, "--version") || streq(name, "version")) {
                printf("gpunode %s\n", GPUNODE_VERSION);
                return finish(0);
        }
        for (size_t i = 0; i < ELEMENTSOF(commands); i++) {
                if (!streq(name, commands[i].name)) continue;
                for (int a = 2; a < argc; a++)
                        if (streq(argv[a], "--help") || streq(argv[a], "-h")) {
                                command_help(&commands[i]);
                                return finish(0);
                        }
                return finish(commands[i].run(argc - 1, argv + 1));
        }
        fprintf(stderr, "gpunode: '%s' is not a command; see gpunode --help\n", name);
        return EXIT_USAGE;
}
