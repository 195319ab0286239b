/* Relative names after changes of the working directory: every write has its own byte count
 * (1..9), so a test can tell which file each one went to.
 *
 *   chdir TOP    TOP: an absolute path, created here; started in some directory D
 *
 *   1 byte   D/start        the directory inherited from the parent
 *   2 bytes  TOP/a/f        chdir("a") after chdir(TOP)
 *   3 bytes  TOP/b/f        chdir("../b")
 *   4 bytes  TOP/b/g        chdir("missing") fails and changes nothing
 *   5 bytes  TOP/a/g        fchdir() to a directory fd opened before
 *   6 bytes  TOP/b/h        a forked child's chdir("../b")
 *   7 bytes  TOP/a/h        ... which does not move its parent
 *   8 bytes  TOP/i          a thread's chdir("..") moves the whole process
 *   9 bytes  TOP/b/k        "../k" after chdir("ls"), a symbolic link to b/sub
 *  10 bytes  z              relative to the directory fd $STRATA_TEST_DIRFD, if set, which
 *                           the process inherited (opened before tracing)
 *
 * Calls of chdir and fchdir: 8, one of them failed (ENOENT).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static void write_file(const char *name, size_t n) {
    static const char bytes[16] = "0123456789abcdef";
    int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || write(fd, bytes, n) != (ssize_t)n || close(fd) != 0) {
        perror(name);
        exit(1);
    }
}

static void must(int ok, const char *what) {
    if (!ok) {
        perror(what);
        exit(1);
    }
}

static void *up(void *arg) {
    (void)arg;
    must(chdir("..") == 0, "thread chdir ..");
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2 || argv[1][0] != '/') {
        fprintf(stderr, "usage: %s /absolute/dir\n", argv[0]);
        return 2;
    }
    write_file("start", 1);
    must(mkdir(argv[1], 0755) == 0 || errno == EEXIST, "mkdir top");
    must(chdir(argv[1]) == 0, "chdir top");
    must(mkdir("a", 0755) == 0, "mkdir a");
    must(mkdir("b", 0755) == 0, "mkdir b");
    must(mkdir("b/sub", 0755) == 0, "mkdir b/sub");
    must(symlink("b/sub", "ls") == 0, "symlink ls");
    int da = open("a", O_RDONLY | O_DIRECTORY);
    must(da >= 0, "open a");

    must(chdir("a") == 0, "chdir a");
    write_file("f", 2);
    must(chdir("../b") == 0, "chdir ../b");
    write_file("f", 3);
    must(chdir("missing") != 0 && errno == ENOENT, "chdir missing must fail");
    write_file("g", 4);
    must(fchdir(da) == 0, "fchdir a");
    write_file("g", 5);

    pid_t child = fork();
    must(child >= 0, "fork");
    if (child == 0) {
        must(chdir("../b") == 0, "child chdir ../b");
        write_file("h", 6);
        _exit(0);
    }
    int status;
    must(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
         "child");
    write_file("h", 7);

    pthread_t t;
    must(pthread_create(&t, NULL, up, NULL) == 0, "pthread_create");
    must(pthread_join(t, NULL) == 0, "pthread_join");
    write_file("i", 8);

    must(chdir("ls") == 0, "chdir ls");
    write_file("../k", 9);

    const char *dirfd = getenv("STRATA_TEST_DIRFD");
    if (dirfd) {
        int fd = openat(atoi(dirfd), "z", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        must(fd >= 0 && write(fd, "0123456789", 10) == 10 && close(fd) == 0, "z");
    }
    return 0;
}
