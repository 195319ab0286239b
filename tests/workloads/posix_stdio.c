/* A workload with a fixed, known sequence of POSIX and stdio calls. The host tests trace it
 * and compare the Parquet rows with exactly this sequence: keep the two in step.
 *
 * usage: posix_stdio DIR     (DIR must exist and be empty)
 * exit code 0; the forked child exits 7. Writes nothing to stdout/stderr on success. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char dir[512];
static char buf[8192];

static void path(char *out, const char *name) { snprintf(out, 600, "%s/%s", dir, name); }

static void *thread_main(void *arg) {
    (void)arg;
    char p[600];
    path(p, "thread.dat");
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (write(fd, buf, 1000) != 1000 || write(fd, buf, 1000) != 1000) exit(10);
    close(fd);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    snprintf(dir, sizeof dir, "%s", argv[1]);
    memset(buf, 'x', sizeof buf);
    char a[600], b[600], b2[600], c[600], sub[600];
    path(a, "posix.dat");
    path(b, "stdio.txt");
    path(b2, "stdio-renamed.txt");
    path(c, "child.dat");
    path(sub, "subdir");

    /* POSIX: explicit offsets, implicit positions, dup sharing the position. */
    int fd = open(a, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (pwrite(fd, buf, 4096, 0) != 4096) return 11;
    if (pwrite(fd, buf, 4096, 8192) != 4096) return 12;
    if (pwrite(fd, buf, 100, 20000) != 100) return 13;
    if (lseek(fd, 0, SEEK_SET) != 0) return 14;
    if (read(fd, buf, 4096) != 4096) return 15;   /* offset 0 */
    if (write(fd, buf, 10) != 10) return 16;      /* offset 4096 */
    if (fsync(fd) != 0) return 17;
    int fd2 = dup(fd);
    if (write(fd2, buf, 5) != 5) return 18;       /* offset 4106, through the dup */
    close(fd2);
    close(fd);
    if (close(fd) != -1) return 19;               /* EBADF, recorded with errno 9 */

    /* stdio: 100 small fwrites, flushed as one write(2) inside fclose. */
    FILE *f = fopen(b, "w");
    if (fflush(f) != 0) return 21;                /* nothing buffered yet: no write(2) */
    for (int i = 0; i < 100; i++)
        if (fwrite(buf, 16, 1, f) != 1) return 20;
    fclose(f);

    /* A forked child writes its own file and exits 7. */
    pid_t pid = fork();
    if (pid == 0) {
        int cfd = open(c, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        for (int i = 0; i < 3; i++)
            if (write(cfd, buf, 512) != 512) _exit(30);
        close(cfd);
        _exit(7);
    }
    int status;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 7) return 31;

    /* A second thread. */
    pthread_t t;
    pthread_create(&t, NULL, thread_main, NULL);
    pthread_join(t, NULL);

    /* Metadata. */
    struct stat st;
    if (stat(b, &st) != 0 || st.st_size != 1600) return 40;
    if (access(b, R_OK) != 0) return 41;
    if (rename(b, b2) != 0) return 42;
    if (mkdir(sub, 0755) != 0) return 43;
    if (rmdir(sub) != 0) return 44;
    if (unlink(a) != 0) return 45;
    return 0;
}
