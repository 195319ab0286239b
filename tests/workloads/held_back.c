/* Two files opened before strata attaches (by --pid); then, on SIGUSR1, ROUNDS children in
 * turn each write one byte to each (fds they inherited, opened before tracing: strata names
 * their files from /proc) and exit LINGER_MS later. The kernel does not wake strata for a
 * syscall's record, only per 256 KiB of them, and a fork's record has just woken it: strata
 * must take the writes' records, and read /proc, while the child lives.
 *
 * Usage: held_back FILE_A FILE_B LINGER_MS ROUNDS
 */
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void pause_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

int main(int argc, char **argv) {
    if (argc != 5)
        return 2;
    int a = open(argv[1], O_CREAT | O_WRONLY | O_TRUNC, 0644);
    int b = open(argv[2], O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (a < 0 || b < 0)
        return 1;
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGUSR1);
    sigprocmask(SIG_BLOCK, &set, NULL);
    int sig;
    if (sigwait(&set, &sig) != 0)
        return 1;
    long linger = atol(argv[3]);
    for (int i = atoi(argv[4]); i > 0; i--) {
        pid_t child = fork();
        if (child < 0)
            return 1;
        if (child == 0) {
            if (write(a, "a", 1) != 1 || write(b, "b", 1) != 1)
                _exit(1);
            pause_ms(linger);
            _exit(0);
        }
        int status;
        if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
            return 1;
    }
    return 0;
}
