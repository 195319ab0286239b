/* Sockets and event descriptors, each closed before strata can look at it in /proc.
 *   socket(AF_UNIX, SOCK_DGRAM): closed at once
 *   a listening socket on an abstract Unix name; a client connects, and accept takes it;
 *     the client writes 6 bytes, the accepted socket reads them
 *   a second client, taken with accept4(SOCK_CLOEXEC)
 *   every socket closed
 *   eventfd(0, EFD_CLOEXEC): 8 bytes written and 8 read, closed; epoll_create1(EPOLL_CLOEXEC),
 *   closed; a second eventfd, closed
 * Writes a line per socket to LOG, in the order they were made: "FUNCTION INO", FUNCTION the
 * call that made it (socket, accept, accept4) and INO its inode (fstat).
 * usage: sockets LOG */
#define _GNU_SOURCE
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

static FILE *logf;

static int logged(const char *function, int fd) {
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) return -1;
    fprintf(logf, "%s %lu\n", function, (unsigned long)st.st_ino);
    return fd;
}

int main(int argc, char **argv) {
    if (argc != 2) return 1;
    logf = fopen(argv[1], "w");
    if (!logf) return 1;
    int d = logged("socket", socket(AF_UNIX, SOCK_DGRAM, 0));
    if (d < 0 || close(d)) return 2;

    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    int n = snprintf(addr.sun_path + 1, sizeof addr.sun_path - 1, "strata-sockets-%d", getpid());
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
    int l = logged("socket", socket(AF_UNIX, SOCK_STREAM, 0));
    if (l < 0 || bind(l, (struct sockaddr *)&addr, len) || listen(l, 2)) return 3;

    int c = logged("socket", socket(AF_UNIX, SOCK_STREAM, 0));
    if (c < 0 || connect(c, (struct sockaddr *)&addr, len)) return 4;
    int a = logged("accept", (int)syscall(SYS_accept, l, NULL, NULL));
    if (a < 0) return 5;
    char buf[8];
    if (write(c, "strata", 6) != 6 || read(a, buf, sizeof buf) != 6) return 6;

    int c2 = logged("socket", socket(AF_UNIX, SOCK_STREAM, 0));
    if (c2 < 0 || connect(c2, (struct sockaddr *)&addr, len)) return 7;
    int a2 = logged("accept4", accept4(l, NULL, NULL, SOCK_CLOEXEC));
    if (a2 < 0) return 8;

    if (close(a2) || close(c2) || close(a) || close(c) || close(l)) return 9;

    int e = eventfd(0, EFD_CLOEXEC);
    unsigned long long v = 3;
    if (e < 0 || write(e, &v, 8) != 8 || read(e, &v, 8) != 8 || close(e)) return 10;
    int p = epoll_create1(EPOLL_CLOEXEC);
    if (p < 0 || close(p)) return 11;
    int e2 = eventfd(0, EFD_CLOEXEC);
    if (e2 < 0 || close(e2)) return 12;
    fclose(logf);
    return 0;
}
