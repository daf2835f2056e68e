#ifndef MEOW_CSHIM_H
#define MEOW_CSHIM_H
#include <sys/types.h>

/// Peer credentials of a connected Unix socket (SO_PEERCRED). Returns 0 or -1 with errno set.
int meow_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid);

/// SO_PEERGROUPS: the peer's supplementary groups at connect time, at most `capacity` of them;
/// the count, or -1 (ERANGE when there are more than `capacity`).
int meow_peer_groups(int fd, gid_t *groups, int capacity);

/// accept4(..., SOCK_CLOEXEC): not visible from Swift's Glibc module without _GNU_SOURCE.
int meow_accept_cloexec(int fd);

/// sd_listen_fds(): the number of sockets systemd passed (from fd 3), or 0 when LISTEN_PID is not
/// this process. Unsets LISTEN_PID/LISTEN_FDS/LISTEN_FDNAMES so children do not inherit them.
int meow_listen_fds(void);

/// Whether fd is a listening Unix stream socket (checks the socket, not just the number).
int meow_is_unix_listener(int fd);

/// Sets SO_SNDTIMEO / SO_RCVTIMEO in milliseconds (0 disables).
int meow_set_send_timeout(int fd, int milliseconds);
int meow_set_receive_timeout(int fd, int milliseconds);

/// pidfd_open(pid, 0): a descriptor that becomes readable when the process ends, also for a
/// process that is not our child (tests wait on services they did not start themselves).
/// Returns the descriptor or -1 with errno set.
int meow_pidfd_open(pid_t pid);

/// 1 when `path` is on a tmpfs (statfs's f_type is TMPFS_MAGIC), 0 when not or unknown.
int meow_is_tmpfs(const char *path);

/// pipe2(O_CLOEXEC): neither end leaks into children spawned concurrently by other threads.
int meow_pipe_cloexec(int fds[2]);

/// posix_spawn with stdin from /dev/null, stdout/stderr to the given fds, every other
/// descriptor closed (glibc 2.34 and later), an empty signal mask and default dispositions for
/// SIGTERM, SIGINT, SIGPIPE and SIGCHLD — so a child never inherits a parent's descriptors or
/// its blocked or ignored signals. With `cpu` ≥ 0 (Linux) the child runs on that CPU alone, and
/// so do the threads it makes. Returns the pid, or -1 with errno set.
pid_t meow_spawn(const char *path, char *const argv[], char *const envp[], int stdout_fd, int stderr_fd, int cpu);

/// The CPUs this process may run on (sched_getaffinity), in order, at most `capacity` of them:
/// their count, 0 where the system does not say, or -1 with errno set.
int meow_allowed_cpus(int *cpus, int capacity);

/// Installs SIGTERM/SIGINT handlers that write the signal number (one byte) to `write_fd`, and
/// ignores SIGPIPE. sigaction is synchronous: once this returns, a signal cannot be lost or
/// ignored (a Dispatch signal source registers asynchronously, so an early SIGTERM could be).
int meow_install_shutdown_signals(int write_fd);

/// mallopt(M_MMAP_THRESHOLD) and mallopt(M_TRIM_THRESHOLD): blocks below `mmap_threshold` come
/// from the heap, and freed memory is returned to the kernel only when more than `trim_threshold`
/// is free at a heap's top. Returns 0, or -1 when glibc refused a value.
int meow_keep_freed_memory(int mmap_threshold, int trim_threshold);

/// Takes an exclusive POSIX record lock (fcntl F_SETLK, F_WRLCK) on the whole file without
/// waiting. Returns 0, or -1 with errno set (EAGAIN or EACCES: another process holds it).
int meow_lock_file(int fd);

/// The pid of a process holding a lock that conflicts with an exclusive lock on the whole
/// file (fcntl F_GETLK), 0 when none does, or -1 with errno set.
int meow_lock_holder(int fd);

/// mremap(old, old_size, new_size, MREMAP_MAYMOVE): grows a mapping without copying its pages.
/// Returns the (possibly moved) address, or MAP_FAILED with errno set.
void *meow_remap(void *old_address, size_t old_size, size_t new_size);

#endif
