/* Files with no path: pipes and a memfd, made and used across a fork.
 *   pipe2(O_CLOEXEC); fork: the child reads the pipe in 512-byte reads until its end and
 *     exits; the parent writes 3 x 1000 bytes into it, closes it and waits
 *   pipe (the syscall itself: glibc's pipe() makes a pipe2); 10 bytes written and read back
 *     by the same process
 *   memfd_create("strata-stage"): 4096 bytes written, lseek to 0, 100 read
 *   mkfifo LOG.fifo; fork: the child opens it to write and writes 3 x 10 bytes; the parent
 *     opens it to read and reads it in 7-byte reads until its end
 *   /dev/null: 5 bytes written, lseek to 100 (which stays at 0), 5 bytes written
 *   two pipes: vmsplice of 12 bytes (two iovecs, 5 + 7) into the first; tee of them into the
 *     second; both read (12 bytes each)
 *   LOG.tmp created, removed at once, 100 bytes written, closed (a temporary file)
 * Writes each file's inode (fstat) to LOG, a line each: "pipe2 INO", "pipe INO",
 * "memfd INO", "tee_a INO", "tee_b INO", "tmp INO".
 * usage: pipes LOG */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

static unsigned long ino(int fd) {
    struct stat st;
    if (fstat(fd, &st)) exit(2);
    return (unsigned long)st.st_ino;
}

int main(int argc, char **argv) {
    if (argc != 2) return 1;
    FILE *log = fopen(argv[1], "w");
    if (!log) return 1;
    char buf[4096];
    memset(buf, 'p', sizeof buf);

    int fds[2];
    if (pipe2(fds, O_CLOEXEC)) return 3;
    fprintf(log, "pipe2 %lu\n", ino(fds[0]));
    fflush(log);
    pid_t child = fork();
    if (child < 0) return 4;
    if (child == 0) {
        close(fds[1]);
        char in[512];
        long total = 0;
        for (ssize_t n; (n = read(fds[0], in, sizeof in)) > 0;) total += n;
        _exit(total == 3000 ? 0 : 5);
    }
    close(fds[0]);
    for (int i = 0; i < 3; i++)
        if (write(fds[1], buf, 1000) != 1000) return 6;
    close(fds[1]);
    int status;
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
        return 7;

    if (syscall(SYS_pipe, fds)) return 8;
    fprintf(log, "pipe %lu\n", ino(fds[1]));
    if (write(fds[1], buf, 10) != 10 || read(fds[0], buf, 10) != 10) return 9;
    close(fds[0]);
    close(fds[1]);

    int mfd = memfd_create("strata-stage", 0);
    if (mfd < 0) return 10;
    fprintf(log, "memfd %lu\n", ino(mfd));
    if (write(mfd, buf, sizeof buf) != sizeof buf || lseek(mfd, 0, SEEK_SET) != 0 ||
        read(mfd, buf, 100) != 100)
        return 11;
    close(mfd);

    char fifo[4200];
    snprintf(fifo, sizeof fifo, "%s.fifo", argv[1]);
    unlink(fifo);
    if (mkfifo(fifo, 0600)) return 13;
    fflush(log);
    if ((child = fork()) < 0) return 14;
    if (child == 0) {
        int w = open(fifo, O_WRONLY);
        for (int i = 0; i < 3; i++)
            if (write(w, buf, 10) != 10) _exit(15);
        _exit(close(w) ? 16 : 0);
    }
    int r = open(fifo, O_RDONLY);
    long total = 0;
    for (ssize_t n; (n = read(r, buf, 7)) > 0;) total += n;
    close(r);
    if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) ||
        total != 30)
        return 17;
    unlink(fifo);

    int null = open("/dev/null", O_WRONLY);
    /* Linux's /dev/null stays at 0: lseek returns 0. */
    if (write(null, buf, 5) != 5 || lseek(null, 100, SEEK_SET) < 0 || write(null, buf, 5) != 5)
        return 18;
    close(null);

    int a[2], b[2];
    if (pipe(a) || pipe(b)) return 19;
    fprintf(log, "tee_a %lu\ntee_b %lu\n", ino(a[0]), ino(b[0]));
    struct iovec iov[2] = {{buf, 5}, {buf + 5, 7}};
    if (vmsplice(a[1], iov, 2, 0) != 12 || tee(a[0], b[1], 12, 0) != 12 ||
        read(a[0], buf, 64) != 12 || read(b[0], buf, 64) != 12)
        return 20;
    for (int i = 0; i < 2; i++) close(a[i]), close(b[i]);

    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    int t = open(tmp, O_CREAT | O_RDWR | O_TRUNC, 0600);
    if (t < 0 || unlink(tmp)) return 21;
    fprintf(log, "tmp %lu\n", ino(t));
    if (write(t, buf, 100) != 100) return 22;
    close(t);
    return fclose(log) ? 12 : 0;
}
