#define _GNU_SOURCE
#include "CShim.h"
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/time.h>
#include <stdlib.h>
#include <unistd.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <pthread.h>
#include <spawn.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#ifdef __linux__
#include <malloc.h>
#endif
#include <sys/mman.h>
#ifdef __linux__
#include <sys/vfs.h>
#endif

// The services run on Linux only; the client (MeowWire) also builds on macOS, where the
// Linux-only calls below fail with ENOSYS or use the nearest portable equivalent.
int meow_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid) {
#ifndef __linux__
    (void)fd; (void)pid; (void)uid; (void)gid;
    errno = ENOSYS;
    return -1;
#else
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
    *pid = cred.pid; *uid = cred.uid; *gid = cred.gid;
    return 0;
#endif
}

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif

int meow_peer_groups(int fd, gid_t *groups, int capacity) {
#ifndef __linux__
    (void)fd; (void)groups; (void)capacity;
    errno = ENOSYS;
    return -1;
#else
    socklen_t len = (socklen_t)(capacity * (int)sizeof(gid_t));
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) != 0) return -1;
    return (int)(len / sizeof(gid_t));
#endif
}

int meow_accept_cloexec(int fd) {
#ifdef __linux__
    return accept4(fd, NULL, NULL, SOCK_CLOEXEC);
#else
    int accepted = accept(fd, NULL, NULL);
    if (accepted >= 0) fcntl(accepted, F_SETFD, FD_CLOEXEC);
    return accepted;
#endif
}

int meow_listen_fds(void) {
    const char *pid_text = getenv("LISTEN_PID");
    const char *fds_text = getenv("LISTEN_FDS");
    int count = 0;
    if (pid_text && fds_text) {
        char *end = NULL;
        long pid = strtol(pid_text, &end, 10);
        if (end && *end == '\0' && pid == (long)getpid()) {
            long n = strtol(fds_text, &end, 10);
            if (end && *end == '\0' && n > 0 && n < 1024) count = (int)n;
        }
    }
    unsetenv("LISTEN_PID");
    unsetenv("LISTEN_FDS");
    unsetenv("LISTEN_FDNAMES");
    for (int i = 0; i < count; i++) fcntl(3 + i, F_SETFD, FD_CLOEXEC);
    return count;
}

int meow_is_unix_listener(int fd) {
    struct sockaddr_un addr;
    socklen_t len = sizeof(addr);
    if (getsockname(fd, (struct sockaddr *)&addr, &len) != 0) return 0;
    if (addr.sun_family != AF_UNIX) return 0;
    int type = 0, listening = 0;
    socklen_t optlen = sizeof(int);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &optlen) != 0 || type != SOCK_STREAM) return 0;
    optlen = sizeof(int);
    if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &optlen) != 0) return 0;
    return listening ? 1 : 0;
}

static int set_timeout(int fd, int option, int milliseconds) {
    struct timeval tv;
    tv.tv_sec = milliseconds / 1000;
    tv.tv_usec = (milliseconds % 1000) * 1000;
    return setsockopt(fd, SOL_SOCKET, option, &tv, sizeof(tv));
}
int meow_set_send_timeout(int fd, int milliseconds) { return set_timeout(fd, SO_SNDTIMEO, milliseconds); }
int meow_set_receive_timeout(int fd, int milliseconds) { return set_timeout(fd, SO_RCVTIMEO, milliseconds); }

static int shutdown_signal_fd = -1;

static void on_shutdown_signal(int number) {
    int saved = errno;
    unsigned char byte = (unsigned char)number;
    if (shutdown_signal_fd >= 0) { ssize_t ignored = write(shutdown_signal_fd, &byte, 1); (void)ignored; }
    errno = saved;
}

int meow_install_shutdown_signals(int write_fd) {
    shutdown_signal_fd = write_fd;
    struct sigaction action;
    memset(&action, 0, sizeof(action));
    action.sa_handler = on_shutdown_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    if (sigaction(SIGTERM, &action, NULL) != 0 || sigaction(SIGINT, &action, NULL) != 0) return -1;
    signal(SIGPIPE, SIG_IGN);
    // A parent may have started us with these signals blocked (the mask survives exec; test
    // runners and shells do this): unblock them on this thread so the handler can run.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    return 0;
}

int meow_pipe_cloexec(int fds[2]) {
#ifdef __linux__
    return pipe2(fds, O_CLOEXEC);
#else
    if (pipe(fds) != 0) return -1;
    fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    return 0;
#endif
}

pid_t meow_spawn(const char *path, char *const argv[], char *const envp[], int stdout_fd, int stderr_fd, int cpu) {
#ifdef __linux__
    // A child inherits the affinity of the thread that spawns it: this thread is pinned to `cpu`
    // for the spawn only, so the child is on that CPU from its first instruction.
    cpu_set_t saved;
    int pinned = 0;
    if (cpu >= 0) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        if (pthread_getaffinity_np(pthread_self(), sizeof saved, &saved) != 0) return -1;
        int failed = pthread_setaffinity_np(pthread_self(), sizeof one, &one);
        if (failed != 0) { errno = failed; return -1; }
        pinned = 1;
    }
#else
    (void)cpu;
#endif
    posix_spawn_file_actions_t actions;
    posix_spawnattr_t attributes;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, stdout_fd, 1);
    posix_spawn_file_actions_adddup2(&actions, stderr_fd, 2);
#if defined(__GLIBC__) && __GLIBC_PREREQ(2, 34)
    // A descriptor the parent opened without O_CLOEXEC (Foundation's file writes, a library's)
    // must not live on in a service: a leaked write descriptor on an executable makes every
    // later exec of it fail with ETXTBSY, and a leaked SQLite descriptor holds its locks.
    posix_spawn_file_actions_addclosefrom_np(&actions, 3);
#endif
    posix_spawnattr_init(&attributes);
    sigset_t empty, defaults;
    sigemptyset(&empty);
    sigemptyset(&defaults);
    sigaddset(&defaults, SIGTERM);
    sigaddset(&defaults, SIGINT);
    sigaddset(&defaults, SIGPIPE);
    sigaddset(&defaults, SIGCHLD);
    posix_spawnattr_setsigmask(&attributes, &empty);
    posix_spawnattr_setsigdefault(&attributes, &defaults);
    posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid = -1;
    int result = posix_spawn(&pid, path, &actions, &attributes, argv, envp);
#ifdef __linux__
    if (pinned) pthread_setaffinity_np(pthread_self(), sizeof saved, &saved);
#endif
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (result != 0) { errno = result; return -1; }
    return pid;
}

int meow_allowed_cpus(int *cpus, int capacity) {
#ifdef __linux__
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
    int count = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE && count < capacity; cpu++) {
        if (CPU_ISSET(cpu, &set)) cpus[count++] = cpu;
    }
    return count;
#else
    (void)cpus; (void)capacity;
    return 0;
#endif
}

int meow_pidfd_open(pid_t pid) {
#ifdef SYS_pidfd_open
    return (int)syscall(SYS_pidfd_open, pid, 0);
#else
    errno = ENOSYS;
    return -1;
#endif
}

int meow_is_tmpfs(const char *path) {
#ifdef __linux__
    struct statfs info;
    return statfs(path, &info) == 0 && info.f_type == 0x01021994 ? 1 : 0;  // TMPFS_MAGIC
#else
    (void)path;
    return 0;
#endif
}

int meow_keep_freed_memory(int mmap_threshold, int trim_threshold) {
#ifdef __linux__
    if (mallopt(M_MMAP_THRESHOLD, mmap_threshold) != 1) return -1;
    if (mallopt(M_TRIM_THRESHOLD, trim_threshold) != 1) return -1;
#else
    (void)mmap_threshold; (void)trim_threshold;
#endif
    return 0;
}

void *meow_remap(void *old_address, size_t old_size, size_t new_size) {
#ifdef __linux__
    return mremap(old_address, old_size, new_size, MREMAP_MAYMOVE);
#else
    void *fresh = mmap(NULL, new_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANON, -1, 0);
    if (fresh == MAP_FAILED) return MAP_FAILED;
    memcpy(fresh, old_address, old_size < new_size ? old_size : new_size);
    munmap(old_address, old_size);
    return fresh;
#endif
}

static struct flock meow_whole_file_write_lock(void) {
    struct flock lock;
    memset(&lock, 0, sizeof lock);
    lock.l_type = F_WRLCK;
    lock.l_whence = SEEK_SET;
    lock.l_start = 0;
    lock.l_len = 0;
    return lock;
}

int meow_lock_file(int fd) {
    struct flock lock = meow_whole_file_write_lock();
    return fcntl(fd, F_SETLK, &lock);
}

int meow_lock_holder(int fd) {
    struct flock lock = meow_whole_file_write_lock();
    if (fcntl(fd, F_GETLK, &lock) != 0) return -1;
    return lock.l_type == F_UNLCK ? 0 : (int)lock.l_pid;
}
