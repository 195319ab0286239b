/* Known I/O for the kernel layers (block, page cache, writeback).
 *
 * usage: kernel_io MODE FILE
 *   direct    O_DIRECT pwrites of 4 KiB, 64 KiB, 256 KiB and 1 MiB at offsets 0, 1, 2, 4 MiB
 *   fsync     four buffered 64 KiB writes, then fsync
 *   writeback two buffered 64 KiB writes to a new file, close, then sync(): a writeback
 *             worker writes them (a file truncated by O_TRUNC would be flushed at close)
 *   read      reads the whole (256 KiB) file twice with pread: misses, then hits
 *   msync     a new 256 KiB file mapped shared and written through the mapping, then
 *             msync(MS_SYNC) of its middle 128 KiB twice: the first writes them, the second
 *             finds nothing dirty */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define KIB 1024L

static void check(int ok, const char *what) {
    if (!ok) {
        perror(what);
        exit(1);
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: kernel_io direct|fsync|writeback|read|msync FILE\n");
        return 2;
    }
    const char *mode = argv[1], *path = argv[2];
    void *buf;
    check(posix_memalign(&buf, 4096, 1024 * KIB) == 0, "posix_memalign");
    memset(buf, 'x', 1024 * KIB);
    if (!strcmp(mode, "direct")) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_DIRECT, 0644);
        check(fd >= 0, "open O_DIRECT");
        const long sizes[] = {4 * KIB, 64 * KIB, 256 * KIB, 1024 * KIB};
        const long offsets[] = {0, 1024 * KIB, 2048 * KIB, 4096 * KIB};
        for (int i = 0; i < 4; i++)
            check(pwrite(fd, buf, sizes[i], offsets[i]) == sizes[i], "pwrite");
        close(fd);
    } else if (!strcmp(mode, "fsync")) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        check(fd >= 0, "open");
        for (int i = 0; i < 4; i++) check(write(fd, buf, 64 * KIB) == 64 * KIB, "write");
        check(fsync(fd) == 0, "fsync");
        close(fd);
    } else if (!strcmp(mode, "writeback")) {
        unlink(path);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
        check(fd >= 0, "open");
        for (int i = 0; i < 2; i++) check(write(fd, buf, 64 * KIB) == 64 * KIB, "write");
        close(fd);
        sync();
    } else if (!strcmp(mode, "read")) {
        int fd = open(path, O_RDONLY);
        check(fd >= 0, "open");
        for (int i = 0; i < 2; i++) check(pread(fd, buf, 256 * KIB, 0) == 256 * KIB, "pread");
        close(fd);
    } else if (!strcmp(mode, "msync")) {
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
        check(fd >= 0, "open");
        check(ftruncate(fd, 256 * KIB) == 0, "ftruncate");
        char *p = mmap(NULL, 256 * KIB, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        check(p != MAP_FAILED, "mmap");
        memset(p, 'm', 256 * KIB);
        for (int i = 0; i < 2; i++) check(msync(p + 64 * KIB, 128 * KIB, MS_SYNC) == 0, "msync");
        check(munmap(p, 256 * KIB) == 0, "munmap");
        close(fd);
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    return 0;
}
