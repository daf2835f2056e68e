#define _GNU_SOURCE
#include "CShim.h"
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/time.h>
#include <stdlib.h>
#include <unistd.h>
#include <errno.h>
#include <fcntl.h>

int meow_peer_credentials(int fd, pid_t *pid, uid_t *uid, gid_t *gid) {
    struct ucred cred;
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
    *pid = cred.pid; *uid = cred.uid; *gid = cred.gid;
    return 0;
}

int meow_accept_cloexec(int fd) {
    return accept4(fd, NULL, NULL, SOCK_CLOEXEC);
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
