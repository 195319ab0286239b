/* A random sequence of POSIX calls, the same for a seed, on four fds of one file: A, B (a dup
 * of A: one file description), C (a second open: its own) and D (opened with O_APPEND: its
 * writes go to the end of the file, its reads from its position). Each call, on one of them:
 * write, read, pwrite, pread, writev and readv of two pieces, lseek from the start, the
 * position and the end (some failing: before the start), lseek to the next data (SEEK_DATA;
 * failing past the end), sendfile and copy_file_range from a 4,096-byte source file (sendfile
 * from the source's position or from an offset it is given; the source's position is set
 * again now and then), ftruncate. With LOG, each call's
 * line is written there: its name, its fd, the fd's position before and after it (lseek of
 * 0 from the position), the source's position before it, the offset a pwrite, pread or
 * sendfile was given (-1: none), and what it returned (-1 for any failure). The positions are
 * asked only then, so that a traced run without LOG makes the same calls and no others.
 * usage: posix_random SEED N FILE SOURCE [LOG] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <unistd.h>

#include "seeded.h"

int main(int argc, char **argv) {
    if (argc != 5 && argc != 6) return 1;
    seed_with(strtoull(argv[1], NULL, 10));
    long n = strtol(argv[2], NULL, 10);
    int fds[4];
    fds[0] = open(argv[3], O_RDWR | O_CREAT | O_TRUNC, 0644);
    fds[1] = dup(fds[0]);
    fds[2] = open(argv[3], O_RDWR);
    fds[3] = open(argv[3], O_RDWR | O_APPEND);
    int src = open(argv[4], O_RDWR | O_CREAT | O_TRUNC, 0644);
    static char data[4096], buf[4096];
    for (int i = 0; i < 4096; i++) data[i] = 'a' + i % 26;
    if (fds[0] < 0 || fds[1] < 0 || fds[2] < 0 || fds[3] < 0 || src < 0 || write(src, data, 4096) != 4096)
        return 3;
    if (lseek(src, 0, SEEK_SET)) return 4;
    /* Opened last: the fds are the same numbers with and without it. */
    FILE *log = NULL;
    if (argc == 6 && !(log = fopen(argv[5], "w"))) return 2;
    for (long i = 0; i < n; i++) {
        int fd = fds[pick(4)];
        long op = pick(11), k = 1 + pick(300);
        /* copy_file_range: Linux refuses an O_APPEND destination (EBADF). */
        if (op == 8 && fd == fds[3]) fd = fds[0];
        /* The source, read to its end by the copies, is moved back now and then. */
        if (pick(8) == 0 && lseek(src, pick(4096), SEEK_SET) < 0) return 5;
        long long before = log ? lseek(fd, 0, SEEK_CUR) : 0;
        long long src_before = log ? lseek(src, 0, SEEK_CUR) : 0;
        long long given = -1, r;
        const char *name;
        switch (op) {
        case 0:
            name = "write";
            r = write(fd, data + pick(1000), k);
            break;
        case 1:
            name = "read";
            r = read(fd, buf, k);
            break;
        case 2:
            name = "pwrite64";
            given = pick(3000);
            r = pwrite(fd, data, k, given);
            break;
        case 3:
            name = "pread64";
            given = pick(3000);
            r = pread(fd, buf, k, given);
            break;
        case 4: {
            struct iovec v[2] = {{data, k}, {data + 7, 1 + pick(50)}};
            name = "writev";
            r = writev(fd, v, 2);
            break;
        }
        case 5: {
            struct iovec v[2] = {{buf, k}, {buf + 1000, 1 + pick(50)}};
            name = "readv";
            r = readv(fd, v, 2);
            break;
        }
        case 6: {
            int whence = pick(3);
            name = "lseek";
            r = lseek(fd, whence == SEEK_SET ? pick(3000) : -pick(whence == SEEK_CUR ? 50 : 500),
                      whence);
            break;
        }
        case 7: {
            off_t at = pick(4000);
            name = "sendfile64";
            if (pick(2)) given = at;
            r = sendfile(fd, src, given < 0 ? NULL : &at, k);
            break;
        }
        case 8:
            name = "copy_file_range";
            r = copy_file_range(src, NULL, fd, NULL, k, 0);
            break;
        case 9:
            name = "ftruncate";
            r = ftruncate(fd, pick(3000));
            break;
        default:
            name = "lseek";
            r = lseek(fd, pick(3000), SEEK_DATA);
            break;
        }
        if (log)
            fprintf(log, "%s %d %lld %lld %lld %lld %lld\n", name, fd, before,
                    (long long)lseek(fd, 0, SEEK_CUR), src_before, given, r < 0 ? -1 : r);
    }
    return log && fclose(log) ? 6 : 0;
}
