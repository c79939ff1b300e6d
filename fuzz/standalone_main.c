/* standalone_main.c: a plain main for a libFuzzer target, so that its LLVMFuzzerTestOneInput replays
 * files under valgrind (a -fsanitize=fuzzer binary cannot run there): every file named on the command
 * line is read into a buffer of exactly its size and handed to the target once. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
/* Defined by the targets that need a setup (fuzz_containerd.c); NULL for the others. */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

/* Reads a whole file into a malloc'd buffer of exactly its size (one byte for an empty file).
 * Returns 0 and *ret, *ret_len, or -errno. */
static int read_file(const char *path, uint8_t **ret, size_t *ret_len) {
        FILE *f = fopen(path, "rbe");
        if (!f) return -errno;
        size_t cap = 1 << 16, len = 0;
        uint8_t *data = malloc(cap);
        for (;;) {
                if (!data) {
                        fclose(f);
                        return -ENOMEM;
                }
                size_t n = fread(data + len, 1, cap - len, f);
                len += n;
                if (n == 0) break;
                if (len == cap) data = realloc(data, cap *= 2);
        }
        int err = ferror(f) ? -EIO : 0;
        fclose(f);
        uint8_t *exact = err ? NULL : malloc(len ? len : 1);
        if (exact) memcpy(exact, data, len);
        free(data);
        if (err) return err;
        if (!exact) return -ENOMEM;
        *ret = exact;
        *ret_len = len;
        return 0;
}

/* Returns seconds of CLOCK_MONOTONIC. */
static double now_s(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* usage: replay_NAME [-max_total_time=SECONDS] FILE...
 * Runs the target on each file in order; with -max_total_time, starts no new file once that many
 * seconds have passed (the files left are counted, not run). Returns 0 when every file could be read
 * (a finding aborts, or is valgrind's to report), 1 when one could not, 64 on a usage error. */
int main(int argc, char **argv) {
        double limit = 0;
        int first = 1;
        if (argc > 1 && strncmp(argv[1], "-max_total_time=", 16) == 0) {
                limit = strtod(argv[1] + 16, NULL);
                first = 2;
        }
        if (first >= argc) {
                fprintf(stderr, "usage: %s [-max_total_time=SECONDS] FILE...\n", argv[0]);
                return 64;
        }
        if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
        double start = now_s();
        int ran = 0, skipped = 0, unreadable = 0;
        for (int i = first; i < argc; i++) {
                if (limit > 0 && now_s() - start >= limit) {
                        skipped = argc - i;
                        break;
                }
                uint8_t *data = NULL;
                size_t len = 0;
                int r = read_file(argv[i], &data, &len);
                if (r < 0) {
                        fprintf(stderr, "%s: %s\n", argv[i], strerror(-r));
                        unreadable++;
                        continue;
                }
                LLVMFuzzerTestOneInput(data, len);
                free(data);
                ran++;
        }
        printf("%d input(s) run, %d left for the time bound, %d unreadable, %.1f s\n", ran, skipped, unreadable, now_s() - start);
        return unreadable ? 1 : 0;
}
