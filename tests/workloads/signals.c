/* Known writes, then a wait for a signal: the signal tests stop strata (or kill this
 * process) once every write has returned, and then expect exactly these writes.
 *
 * usage: signals FILE N READY
 *   opens FILE, pwrite()s N records (record i: i+1 bytes at offset i*(i+1)/2), then writes
 *   its pid to READY (created under a temporary name and renamed, so a reader never sees it
 *   half-written) and sleeps until a signal ends it. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: signals FILE N READY\n");
        return 2;
    }
    long n = atol(argv[2]);
    static char buf[4096];
    memset(buf, 's', sizeof buf);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror("open");
        return 1;
    }
    long off = 0;
    for (long i = 0; i < n; i++) {
        long len = (i % (long)sizeof buf) + 1;
        if (pwrite(fd, buf, len, off) != len) {
            perror("pwrite");
            return 1;
        }
        off += len;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[3]);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", getpid()) < 0 || fclose(f) != 0 || rename(tmp, argv[3]) != 0) {
        perror("ready file");
        return 1;
    }
    for (;;) pause();
}
