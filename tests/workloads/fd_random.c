/* A random sequence of calls on the fd table, the same for a seed: ten slots, fds 10 to 19,
 * each holding, now and then, one of six files (DIR/f0 .. DIR/f5) opened read-write (or, one
 * in four each, write-only or read-only; one in four with O_APPEND) and moved into the slot
 * by dup2, or a copy of another slot by dup2, dup3 (O_CLOEXEC) or fcntl(F_DUPFD) and dup2,
 * or nothing after close or close_range; and
 * reads, writes and lseeks on the slots, on whatever they hold. With LOG, a line after each
 * call: its number, name, slot, result (-1: failed), the file the slot holds then (its index;
 * -1: none), its position and whether it appends. The log's own fd is 100, and what it
 * asks is asked only then, so that a traced run without LOG makes the same calls.
 * usage: fd_random SEED N DIR [LOG] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "seeded.h"

int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) return 1;
    seed_with(strtoull(argv[1], NULL, 10));
    long n = strtol(argv[2], NULL, 10);
    char names[6][4096];
    for (int i = 0; i < 6; i++) snprintf(names[i], sizeof names[i], "%s/f%d", argv[3], i);
    static char data[512], buf[512];
    for (int i = 0; i < 512; i++) data[i] = 'a' + i % 26;
    /* The slots start empty, whatever this process inherited. */
    if (syscall(SYS_close_range, 10, 19, 0)) return 4;
    FILE *log = NULL;
    if (argc == 5) {
        int l = open(argv[4], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (l < 0 || dup2(l, 100) != 100 || close(l) || !(log = fdopen(100, "w"))) return 2;
    }
    for (long i = 0; i < n; i++) {
        int fd = 10 + pick(10), other = 10 + pick(10);
        long op = pick(9);
        long long r;
        const char *name;
        switch (op) {
        case 0: {
            /* Read-write mostly; a read on a write-only fd and a write on a read-only one
             * fail with EBADF, on a file. */
            static const int access[4] = {O_RDWR, O_RDWR, O_WRONLY, O_RDONLY};
            int how = access[pick(4)] | O_CREAT | (pick(4) ? 0 : O_APPEND);
            int f = open(names[pick(6)], how, 0644);
            name = "open";
            r = f < 0 ? -1 : dup2(f, fd);
            if (f >= 0 && f != fd) close(f);
            break;
        }
        case 1:
            name = "dup2";
            r = dup2(other, fd);
            break;
        case 2:
            name = "dup3";
            r = other == fd ? -1 : dup3(other, fd, O_CLOEXEC);
            break;
        case 3: {
            int g = fcntl(other, F_DUPFD, 20);
            name = "fcntl";
            r = g < 0 ? -1 : dup2(g, fd);
            if (g >= 0) close(g);
            break;
        }
        case 4:
            name = "close";
            r = close(fd);
            break;
        case 5:
            name = "close_range";
            r = syscall(SYS_close_range, fd, fd + pick(3), 0);
            break;
        case 6:
            name = "write";
            r = write(fd, data + pick(100), 1 + pick(300));
            break;
        case 7:
            name = "read";
            r = read(fd, buf, 1 + pick(300));
            break;
        default:
            name = "lseek";
            r = lseek(fd, pick(1000), SEEK_SET);
            break;
        }
        if (log) {
            struct slot_truth t = truth_of(fd, names, 6);
            fprintf(log, "%ld %s %d %lld %d %lld %d\n", i, name, fd, r < 0 ? -1 : r, t.file, t.pos,
                    t.appends);
        }
    }
    return log && fclose(log) ? 3 : 0;
}
