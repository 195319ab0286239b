/* Two files opened before strata attaches (by --pid); then, on SIGUSR1, ROUNDS children in
 * turn each write one byte to each (fds they inherited, opened before tracing: strata names
 * their files from /proc) and exit LINGER_MS later. The kernel does not wake strata for a
 * syscall's record, only per 256 KiB of them, and a fork's record has just woken it: strata
 * must take the writes' records, and read /proc, while the child lives.
 *
 * With BUSY_US, another child writes a byte to /dev/null every BUSY_US microseconds all the
 * while, so that records keep coming and strata looks at its ring on a timer of its own:
 * the kernel wakes it for no record then, not even a library call's, and the children
 * write through stdio (fflush, a library call around each write).
 *
 * Usage: held_back FILE_A FILE_B LINGER_MS ROUNDS [BUSY_US]
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void pause_us(long us) {
    struct timespec t = {us / 1000000, (us % 1000000) * 1000L};
    nanosleep(&t, NULL);
}

/* One byte to FD: by write(2), or through a stream and fflush. */
static int put(int fd, char c, int stdio) {
    if (!stdio)
        return write(fd, &c, 1) == 1;
    FILE *f = fdopen(fd, "w");
    return f && fputc(c, f) == c && fflush(f) == 0;
}

int main(int argc, char **argv) {
    if (argc != 5 && argc != 6)
        return 2;
    int a = open(argv[1], O_CREAT | O_WRONLY | O_TRUNC, 0644);
    int b = open(argv[2], O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (a < 0 || b < 0)
        return 1;
    long busy_us = argc == 6 ? atol(argv[5]) : 0;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, NULL);
    int sig;
    if (sigwait(&set, &sig) != 0)
        return 1;
    pid_t noise = 0;
    if (busy_us > 0) {
        noise = fork();
        if (noise < 0)
            return 1;
        if (noise == 0) {
            int null = open("/dev/null", O_WRONLY);
            for (;;) {
                if (write(null, "n", 1) != 1)
                    _exit(1);
                pause_us(busy_us);
            }
        }
        pause_us(50000); /* until strata looks on its own timer */
    }
    long linger = atol(argv[3]);
    for (int i = atoi(argv[4]); i > 0; i--) {
        pid_t child = fork();
        if (child < 0)
            return 1;
        if (child == 0) {
            if (!put(a, 'a', busy_us > 0) || !put(b, 'b', busy_us > 0))
                _exit(1);
            pause_us(linger * 1000);
            _exit(0);
        }
        int status;
        if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
            return 1;
    }
    if (noise > 0) {
        kill(noise, SIGKILL);
        waitpid(noise, NULL, 0);
    }
    return 0;
}
