// Baseline for the benchmark: a raw echo server with the same framing (4-byte big-endian length
// + body), a thread per connection, blocking sockets. The ratio service/echo is what matters.
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <signal.h>
#include <errno.h>

static int read_full(int fd, unsigned char *buf, size_t n) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        got += (size_t)r;
    }
    return 0;
}

static int write_full(int fd, const unsigned char *buf, size_t n) {
    size_t sent = 0;
    while (sent < n) {
        ssize_t w = send(fd, buf + sent, n - sent, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        sent += (size_t)w;
    }
    return 0;
}

static void *serve(void *arg) {
    int fd = (int)(intptr_t)arg;
    unsigned char *buf = malloc(16 * 1024 * 1024 + 4);
    for (;;) {
        if (read_full(fd, buf, 4) != 0) break;
        uint32_t len = ((uint32_t)buf[0] << 24) | ((uint32_t)buf[1] << 16) | ((uint32_t)buf[2] << 8) | buf[3];
        if (len == 0 || len > 16 * 1024 * 1024) break;
        if (read_full(fd, buf + 4, len) != 0) break;
        if (write_full(fd, buf, len + 4) != 0) break;
    }
    free(buf);
    close(fd);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2 || strcmp(argv[1], "--help") == 0) {
        fprintf(stderr, "usage: echo-baseline SOCKET_PATH\nEchoes length-prefixed frames back unchanged (benchmark baseline).\n");
        return argc == 2 ? 0 : 64;
    }
    signal(SIGPIPE, SIG_IGN);
    int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un addr = {0};
    addr.sun_family = AF_UNIX;
    strncpy(addr.sun_path, argv[1], sizeof(addr.sun_path) - 1);
    unlink(argv[1]);
    if (bind(listener, (struct sockaddr *)&addr, sizeof(addr)) != 0 || listen(listener, 128) != 0) {
        perror("echo-baseline: bind/listen");
        return 1;
    }
    fprintf(stderr, "ready\n");
    for (;;) {
        int fd = accept(listener, NULL, NULL);
        if (fd < 0) { if (errno == EINTR) continue; break; }
        pthread_t thread;
        pthread_create(&thread, NULL, serve, (void *)(intptr_t)fd);
        pthread_detach(thread);
    }
    return 0;
}
