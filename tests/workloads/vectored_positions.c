/* Vectored calls at the file's position (offset -1) and appending ones (RWF_APPEND), on an fd
 * opened with openat2 in DIR, each moving bytes of its own:
 *   write "ab" (at 0); pwritev2 "cdefghij" at -1 (at 2); pwritev2 "KLMNOPQR" at 100;
 *   write "s" (at 10); pwritev2 "tuvwxyz0" at 100 with RWF_APPEND (at the end, 108; the
 *   position stays 11); write "1" (at 11); pwritev2 "23456789" at -1 with RWF_APPEND (at the
 *   end, 116; the position is then the end); write "!" (at 124, where strata loses track);
 *   lseek to 0; preadv2 of 4 at -1 (at 0); preadv2 of 4 at 100; read of 4 (at 4).
 *
 * usage: vectored_positions DIR */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static int pw(int fd, const char *s, off_t at, int flags) {
    struct iovec iov[2] = {{(void *)s, 3}, {(void *)(s + 3), 5}};
    return pwritev2(fd, iov, 2, at, flags) == 8 ? 0 : 1;
}

int main(int argc, char **argv) {
    if (argc != 2 || chdir(argv[1]) != 0) return 2;
    struct open_how how = {.flags = O_CREAT | O_RDWR | O_TRUNC, .mode = 0644, .resolve = RESOLVE_BENEATH};
    int fd = syscall(SYS_openat2, AT_FDCWD, "v.dat", &how, sizeof how);
    if (fd < 0) return 3;
    char b[4];
    struct iovec r = {b, 4};
    if (write(fd, "ab", 2) != 2 || pw(fd, "cdefghij", -1, 0) || pw(fd, "KLMNOPQR", 100, 0) ||
        write(fd, "s", 1) != 1 || pw(fd, "tuvwxyz0", 100, RWF_APPEND) || write(fd, "1", 1) != 1 ||
        pw(fd, "23456789", -1, RWF_APPEND) || write(fd, "!", 1) != 1 || lseek(fd, 0, SEEK_SET) != 0 ||
        preadv2(fd, &r, 1, -1, 0) != 4 || preadv2(fd, &r, 1, 100, 0) != 4 || read(fd, b, 4) != 4)
        return 4;
    return close(fd) == 0 ? 0 : 5;
}
