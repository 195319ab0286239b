/* A library call that never returns: an alarm's handler jumps out of an fgets blocked on an
 * empty pipe, back into the function that set the jump. Its caller then writes a file
 * through stdio: those calls are not inside the fgets.
 *
 * Usage: longjmp FILE
 *   fgets on a pipe nobody writes (left by siglongjmp after 0.2 s)
 *   then fopen(FILE, "w"), fwrite 5 bytes, fclose (one write of 5 bytes)
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

static sigjmp_buf env;

static void on_alarm(int sig) {
    (void)sig;
    siglongjmp(env, 1);
}

/* Returns 1 when the fgets was jumped out of. */
static __attribute__((noinline)) int attempt(FILE *in) {
    char buf[16];
    if (sigsetjmp(env, 1))
        return 1;
    struct itimerval t = {.it_value = {.tv_usec = 200000}};
    setitimer(ITIMER_REAL, &t, NULL);
    fgets(buf, sizeof buf, in);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: longjmp FILE\n");
        return 2;
    }
    int p[2];
    if (pipe(p) != 0)
        return 1;
    FILE *in = fdopen(p[0], "r");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    if (attempt(in) != 1) {
        fprintf(stderr, "fgets returned\n");
        return 1;
    }
    FILE *f = fopen(argv[1], "w");
    if (!f)
        return 1;
    fwrite("after", 1, 5, f);
    return fclose(f) == 0 ? 0 : 1;
}
