/* child.c: starting and killing the bounded child processes gpunode runs. */
#include "basic/child.h"
#include "basic/util.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>

extern char **environ;

void child_self_path(char *buf, size_t size) {
        if (size == 0) return;
        ssize_t l = readlink("/proc/self/exe", buf, size - 1);
        buf[l > 0 && (size_t)l < size ? l : 0] = 0;
        if (!buf[0] || access(buf, X_OK) < 0) snprintf(buf, size, "/proc/self/exe");
}

pid_t child_spawn(const char *path, const char *const *argv, int in_fd, int out_fd, bool quiet) {
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        posix_spawn_file_actions_init(&fa);
        posix_spawnattr_init(&attr);
        if (in_fd >= 0) posix_spawn_file_actions_adddup2(&fa, in_fd, STDIN_FILENO);
        else posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        if (out_fd >= 0) posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
        if (quiet) posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 34))
        posix_spawn_file_actions_addclosefrom_np(&fa, 3); /* NVML's device files and the like stay here */
#endif
        sigset_t none, deflt;
        sigemptyset(&none);
        sigemptyset(&deflt);
        sigaddset(&deflt, SIGPIPE);
        sigaddset(&deflt, SIGTERM);
        sigaddset(&deflt, SIGINT);
        posix_spawnattr_setsigmask(&attr, &none); /* the calling thread blocks SIGTERM; the child must not */
        posix_spawnattr_setsigdefault(&attr, &deflt);
        posix_spawnattr_setpgroup(&attr, 0);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
        pid_t pid;
        int r = -posix_spawn(&pid, path, &fa, &attr, (char *const *)argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        return r < 0 ? r : pid;
}

void child_kill(pid_t pid) {
        kill(-pid, SIGKILL);
        kill(pid, SIGKILL);
        for (int i = 0; i < 200; i++) {
                if (waitpid(pid, NULL, WNOHANG) != 0) return;
                struct timespec t = { 0, 10 * 1000000L };
                nanosleep(&t, NULL);
        }
}
