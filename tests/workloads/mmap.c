/* File mappings with known addresses, lengths and file offsets.
 *
 * Usage: mmap DIR. Prints "a=ADDR b=ADDR anon=ADDR child=PID" (addresses in hex).
 *
 * In DIR, map.dat is opened and made 1 MiB long. Then, in order:
 *   anon = mmap 2 MiB of anonymous memory (fd -1: not recorded)
 *   a = mmap 1 MiB of map.dat from 0, shared, read-write; b = 128 KiB from 64 KiB, read-only
 *   mmap of a bad fd (999): EBADF
 *   a filled; msync(a + 256 KiB, 128 KiB, MS_SYNC)      file offset 256 KiB
 *   munmap(a + 768 KiB, 256 KiB)                         a keeps 768 KiB
 *   msync(a, 768 KiB, MS_SYNC)                           file offset 0
 *   munmap(b, 128 KiB)                                   b is closed
 *   munmap(a, 256 KiB)                                   a keeps a + 256 KiB .. a + 768 KiB
 *   msync(a + 512 KiB, 4 KiB, MS_ASYNC)                  file offset 512 KiB
 *   close(fd)                                            the mapping stays
 *   a child (fork) msyncs a + 300 KiB, 4 KiB            file offset 300 KiB, in its own mapping
 *   munmap(anon, 2 MiB)                                  no mapping: a row without a handle
 *   munmap(a + 256 KiB, 512 KiB)                         a is closed
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define KIB 1024L

static void check(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "%s failed (errno %d)\n", what, errno);
        exit(1);
    }
}

int main(int argc, char **argv) {
    check(argc == 2, "usage: mmap DIR");
    char path[4200];
    snprintf(path, sizeof path, "%s/map.dat", argv[1]);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    check(fd >= 0, "open");
    check(ftruncate(fd, 1024 * KIB) == 0, "ftruncate");

    char *anon = mmap(NULL, 2048 * KIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    check(anon != MAP_FAILED, "mmap anon");
    char *a = mmap(NULL, 1024 * KIB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    check(a != MAP_FAILED, "mmap a");
    char *b = mmap(NULL, 128 * KIB, PROT_READ, MAP_SHARED, fd, 64 * KIB);
    check(b != MAP_FAILED, "mmap b");
    check(mmap(NULL, 4 * KIB, PROT_READ, MAP_SHARED, 999, 0) == MAP_FAILED && errno == EBADF,
          "mmap of a bad fd");

    memset(a, 'x', 1024 * KIB);
    check(msync(a + 256 * KIB, 128 * KIB, MS_SYNC) == 0, "msync 1");
    check(munmap(a + 768 * KIB, 256 * KIB) == 0, "munmap tail");
    check(msync(a, 768 * KIB, MS_SYNC) == 0, "msync 2");
    check(munmap(b, 128 * KIB) == 0, "munmap b");
    check(munmap(a, 256 * KIB) == 0, "munmap head");
    check(msync(a + 512 * KIB, 4 * KIB, MS_ASYNC) == 0, "msync 3");
    check(close(fd) == 0, "close");

    pid_t child = fork();
    check(child >= 0, "fork");
    if (child == 0) {
        a[300 * KIB] = 'c';
        _exit(msync(a + 300 * KIB, 4 * KIB, MS_SYNC) == 0 ? 0 : 1);
    }
    int status;
    check(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
          "child");

    check(munmap(anon, 2048 * KIB) == 0, "munmap anon");
    check(munmap(a + 256 * KIB, 512 * KIB) == 0, "munmap rest");
    printf("a=%lx b=%lx anon=%lx child=%d\n", (unsigned long)a, (unsigned long)b,
           (unsigned long)anon, (int)child);
    return 0;
}
