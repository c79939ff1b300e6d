/* caps.c: drop capabilities with prctl and capset directly (libcap is not linked), in every thread. */
#include "basic/caps.h"
#include "basic/util.h"

#include <dirent.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>

/* The highest capability number prctl(PR_CAPBSET_READ) is asked about; the kernel answers EINVAL
 * past its own last one (/proc/sys/kernel/cap_last_cap). */
#define CAP_NUMBER_MAX 63

/* Reads the calling thread's sets into data[2] (version 3: 64 bits in two halves). Returns 0 or -errno. */
static int caps_get(struct __user_cap_data_struct data[2]) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        return syscall(SYS_capget, &h, data) < 0 ? -errno : 0;
}

/* Sets the calling thread's effective, permitted and inheritable sets. Returns 0 or -errno. */
static int caps_set(uint64_t effective, uint64_t permitted, uint64_t inheritable) {
        struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
        struct __user_cap_data_struct d[2] = {
                { .effective = (uint32_t)effective,
                  .permitted = (uint32_t)permitted,
                  .inheritable = (uint32_t)inheritable },
                { .effective = (uint32_t)(effective >> 32),
                  .permitted = (uint32_t)(permitted >> 32),
                  .inheritable = (uint32_t)(inheritable >> 32) },
        };
        return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

int caps_restrict_thread(uint64_t keep) {
        struct __user_cap_data_struct d[2];
        int r = caps_get(d);
        if (r < 0) return r;
        uint64_t permitted = d[0].permitted | (uint64_t)d[1].permitted << 32;
        uint64_t inheritable = d[0].inheritable | (uint64_t)d[1].inheritable << 32;
        if (permitted != 0 || inheritable != 0) {
                /* The bounding set can only shrink with CAP_SETPCAP in effect: raise what is permitted. */
                if ((r = caps_set(permitted, permitted, inheritable)) < 0) return r;
                bool setpcap = permitted & CAP_BIT(CAP_SETPCAP);
                for (int c = 0; c <= CAP_NUMBER_MAX && setpcap; c++) {
                        int in = prctl(PR_CAPBSET_READ, (unsigned long)c, 0, 0, 0);
                        if (in < 0) break; /* past the kernel's last capability */
                        if (in == 1 && !(keep & CAP_BIT(c)) && prctl(PR_CAPBSET_DROP, (unsigned long)c, 0, 0, 0) < 0)
                                return -errno;
                }
                /* Without CAP_SETPCAP the bounding set stays, but no_new_privs below keeps an execve from
                 * granting anything past the permitted set, which shrinks here. */
                if ((r = caps_set(permitted & keep, permitted & keep, 0)) < 0) return r;
        }
        /* Emptying the inheritable set drops the ambient one too; this also covers a thread that had
         * ambient capabilities only. EINVAL: a kernel before 4.3, which has no ambient set. */
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL) return -errno;
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return -errno;
        return 0;
}

/* ---- every thread ---- */

/* The threads that ran the handler, by id, for caps_restrict_process to tell who is left. */
#define THREADS_MAX 4096
static pid_t done_tids[THREADS_MAX];
static unsigned n_done;
static int first_error;
static uint64_t target_keep;

/* The signal handler: restricts the thread it runs in and records it. Returns nothing. */
static void restrict_handler(int sig) {
        int saved = errno;
        int r = caps_restrict_thread(__atomic_load_n(&target_keep, __ATOMIC_ACQUIRE));
        int zero = 0;
        if (r < 0) __atomic_compare_exchange_n(&first_error, &zero, r, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
        unsigned i = __atomic_fetch_add(&n_done, 1, __ATOMIC_SEQ_CST);
        if (i < THREADS_MAX) __atomic_store_n(&done_tids[i], (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
        errno = saved;
}

/* Returns true when thread tid is in the first n of ids. */
static bool has_tid(const pid_t *ids, unsigned n, pid_t tid) {
        for (unsigned i = 0; i < n; i++)
                if (__atomic_load_n(&ids[i], __ATOMIC_ACQUIRE) == tid) return true;
        return false;
}

int caps_restrict_process(uint64_t keep, unsigned timeout_ms, unsigned *ret_pending) {
        int sig = SIGRTMIN + 3;
        struct sigaction old;
        if (sigaction(sig, NULL, &old) < 0) return -errno;
        if (old.sa_handler != SIG_DFL && old.sa_handler != restrict_handler) return -EBUSY;
        __atomic_store_n(&target_keep, keep, __ATOMIC_RELEASE);
        struct sigaction sa = { .sa_handler = restrict_handler, .sa_flags = SA_RESTART };
        sigfillset(&sa.sa_mask);
        if (sigaction(sig, &sa, NULL) < 0) return -errno;

        pid_t self = (pid_t)syscall(SYS_gettid), pid = getpid();
        int r = caps_restrict_thread(keep);
        if (r < 0) return r;
        _cleanup_free_ pid_t *signalled = xcalloc(THREADS_MAX, sizeof *signalled);
        unsigned n_signalled = 0, pending = 0;
        uint64_t deadline = monotonic_ms() + timeout_ms;
        for (;;) {
                DIR *d = opendir("/proc/self/task");
                if (!d) return -errno;
                pending = 0;
                struct dirent *de;
                while ((de = readdir(d))) {
                        uint64_t v;
                        if (parse_u64(de->d_name, 10, &v) < 0) continue;
                        pid_t tid = (pid_t)v;
                        unsigned done = __atomic_load_n(&n_done, __ATOMIC_SEQ_CST);
                        if (tid == self || has_tid(done_tids, done < THREADS_MAX ? done : THREADS_MAX, tid)) continue;
                        if (!has_tid(signalled, n_signalled, tid)) {
                                if (syscall(SYS_tgkill, pid, tid, sig) < 0) {
                                        if (errno == ESRCH) continue; /* it ended */
                                        closedir(d);
                                        return -errno;
                                }
                                if (n_signalled < THREADS_MAX) signalled[n_signalled++] = tid;
                        }
                        pending++;
                }
                closedir(d);
                r = __atomic_load_n(&first_error, __ATOMIC_SEQ_CST);
                if (r < 0) return r;
                if (pending == 0) break;
                if (monotonic_ms() >= deadline) {
                        if (ret_pending) *ret_pending = pending;
                        return -ETIMEDOUT;
                }
                struct timespec pause = { 0, 2 * 1000000L };
                nanosleep(&pause, NULL);
        }
        if (ret_pending) *ret_pending = 0;
        return 0;
}
