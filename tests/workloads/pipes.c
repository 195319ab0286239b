/* Files with no path: pipes and a memfd, made and used across a fork.
 *   pipe2(O_CLOEXEC); fork: the child reads the pipe in 512-byte reads until its end and
 *     exits; the parent writes 3 x 1000 bytes into it, closes it and waits
 *   pipe (the syscall itself: glibc's pipe() makes a pipe2); 10 bytes written and read back
 *     by the same process
 *   memfd_create("strata-stage"): 4096 bytes written, lseek to 0, 100 read
 * Writes each file's inode (fstat) to LOG, a line each: "pipe2 INO", "pipe INO",
 * "memfd INO".
 * usage: pipes LOG */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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
    return fclose(log) ? 12 : 0;
}
