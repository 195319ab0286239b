/* Copies inside the kernel and fds closed in ranges, with known offsets and sizes.
 *
 * Usage: copy DIR (then it executes itself as `copy DIR child FD_G FD_DUP FD_E FD_H`)
 *
 * Parent, in DIR:
 *   src: one 100000-byte write, lseek to 0
 *   copy_file_range src -> dst1: 30000 at the positions (0, 0); 20000 at (50000, 70000)
 *     given; 5000 from src's position (30000) to dst1 at 1000 given
 *   sendfile src -> dst2: 4000 from src's position (35000), dst2 at 0; 10000 from 90000
 *     given, dst2 at 4000
 *   write 4 bytes to dst1 (its position: 30000), read 1 byte of src (39000)
 *   sendfile from a bad fd (EBADF)
 *   ap: 10 bytes at 0; through a second fd opened O_APPEND, lseek to 0 then 2 bytes (at the
 *   end: 10), and a pwrite of 1 byte at 0 (at the end too: Linux appends it); 3 at the first
 *   fd's position (10); O_APPEND set on it by F_SETFL, lseek to 0,
 *   1 byte (at the end: 13); O_APPEND cleared, lseek to 2, 1 byte at 2
 *   a, b, c opened, closed by one close_range; d closed by close_range(d, d)
 *   e marked by close_range(e, e, CLOSE_RANGE_CLOEXEC); g opened O_CLOEXEC then F_SETFD 0;
 *   h F_SETFD FD_CLOEXEC; k opened O_CLOEXEC and dup2'ed to 20 (not close-on-exec)
 * Child (after exec): writes 1 byte to g, 2 to fd 20, 3 to e and 4 to h (both EBADF).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <unistd.h>

static char dir[4096];
static char buf[100000];

static int open_in(const char *name, int flags) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, flags, 0644);
    if (fd < 0) {
        perror(path);
        exit(1);
    }
    return fd;
}

static void expect(long got, long want, const char *what) {
    if (got != want) {
        fprintf(stderr, "%s: %ld, expected %ld (errno %d)\n", what, got, want, errno);
        exit(1);
    }
}

static int child(char **argv) {
    int g = atoi(argv[3]), dup = atoi(argv[4]), e = atoi(argv[5]), h = atoi(argv[6]);
    expect(write(g, "g", 1), 1, "write g");
    expect(write(dup, "kk", 2), 2, "write dup");
    expect(write(e, "eee", 3), -1, "write e");
    expect(write(h, "hhhh", 4), -1, "write h");
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: copy DIR\n");
        return 2;
    }
    snprintf(dir, sizeof dir, "%s", argv[1]);
    if (argc > 2)
        return child(argv);

    memset(buf, 's', sizeof buf);
    int src = open_in("src", O_CREAT | O_RDWR | O_TRUNC);
    expect(write(src, buf, sizeof buf), sizeof buf, "write src");
    expect(lseek(src, 0, SEEK_SET), 0, "lseek src");
    int dst1 = open_in("dst1", O_CREAT | O_WRONLY | O_TRUNC);
    int dst2 = open_in("dst2", O_CREAT | O_WRONLY | O_TRUNC);

    expect(copy_file_range(src, NULL, dst1, NULL, 30000, 0), 30000, "copy 1");
    loff_t in = 50000, out = 70000;
    expect(copy_file_range(src, &in, dst1, &out, 20000, 0), 20000, "copy 2");
    loff_t out2 = 1000;
    expect(copy_file_range(src, NULL, dst1, &out2, 5000, 0), 5000, "copy 3");
    expect(sendfile(dst2, src, NULL, 4000), 4000, "sendfile 1");
    off_t off = 90000;
    expect(sendfile(dst2, src, &off, 10000), 10000, "sendfile 2");
    expect(write(dst1, "tail", 4), 4, "write dst1");
    expect(read(src, buf, 1), 1, "read src");
    expect(sendfile(dst2, 1000, NULL, 10), -1, "sendfile from a bad fd");

    int ap = open_in("ap", O_CREAT | O_WRONLY | O_TRUNC);
    expect(write(ap, "0123456789", 10), 10, "write ap");
    int ap2 = open_in("ap", O_WRONLY | O_APPEND);
    expect(lseek(ap2, 0, SEEK_SET), 0, "lseek ap2");
    expect(write(ap2, "ab", 2), 2, "append ap2");
    expect(pwrite(ap2, "P", 1, 0), 1, "pwrite ap2");
    expect(write(ap, "xyz", 3), 3, "write ap at 10");
    int fl = fcntl(ap, F_GETFL);
    expect(fcntl(ap, F_SETFL, fl | O_APPEND), 0, "F_SETFL O_APPEND");
    expect(lseek(ap, 0, SEEK_SET), 0, "lseek ap");
    expect(write(ap, "q", 1), 1, "append ap");
    expect(fcntl(ap, F_SETFL, fl), 0, "F_SETFL");
    expect(lseek(ap, 2, SEEK_SET), 2, "lseek ap to 2");
    expect(write(ap, "r", 1), 1, "write ap at 2");

    int a = open_in("a", O_CREAT | O_WRONLY | O_TRUNC);
    open_in("b", O_CREAT | O_WRONLY | O_TRUNC);
    int c = open_in("c", O_CREAT | O_WRONLY | O_TRUNC);
    /* a < b < c (lowest free numbers); fds inherited between them close too */
    expect(close_range(a, c, 0), 0, "close_range a-c");
    int d = open_in("d", O_CREAT | O_WRONLY | O_TRUNC);
    expect(close_range(d, d, 0), 0, "close_range d");

    int e = open_in("e", O_CREAT | O_WRONLY | O_TRUNC);
    expect(close_range(e, e, CLOSE_RANGE_CLOEXEC), 0, "close_range e cloexec");
    int g = open_in("g", O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC);
    expect(fcntl(g, F_SETFD, 0), 0, "F_SETFD g");
    int h = open_in("h", O_CREAT | O_WRONLY | O_TRUNC);
    expect(fcntl(h, F_SETFD, FD_CLOEXEC), 0, "F_SETFD h");
    int k = open_in("k", O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC);
    expect(dup2(k, 20), 20, "dup2 k");

    char sg[16], se[16], sh[16];
    snprintf(sg, sizeof sg, "%d", g);
    snprintf(se, sizeof se, "%d", e);
    snprintf(sh, sizeof sh, "%d", h);
    char *args[] = {argv[0], dir, "child", sg, "20", se, sh, NULL};
    execv("/proc/self/exe", args);
    perror("execv");
    return 1;
}
