/* peakrss.c: runs a command, output discarded, and prints its wall time (ms) and peak RSS (KiB).
 * A tiny launcher, so the child's peak RSS is not inflated by a large parent's pages at fork. */
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv) {
        if (argc < 2) {
                fprintf(stderr, "usage: peakrss COMMAND [ARGS]\n");
                return 64;
        }
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        pid_t pid = fork();
        if (pid < 0) return 70;
        if (pid == 0) {
                int fd = open("/dev/null", O_WRONLY);
                dup2(fd, 1);
                dup2(fd, 2);
                execvp(argv[1], argv + 1);
                _exit(127);
        }
        int status;
        struct rusage ru;
        if (wait4(pid, &status, 0, &ru) < 0) return 70;
        clock_gettime(CLOCK_MONOTONIC, &b);
        double ms = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
        printf("%.3f %ld %d\n", ms, ru.ru_maxrss, WIFEXITED(status) ? WEXITSTATUS(status) : 128);
        return 0;
}
