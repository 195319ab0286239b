/* Library calls that never return: an alarm's handler jumps out of an fgets blocked on an
 * empty pipe, twice. First back into a function that then returns to its caller, which
 * writes FILE through stdio; then back into the very function that called fgets, which
 * writes FILE2 itself: its stdio calls enter where the fgets did, at the same stack pointer.
 *
 * Usage: longjmp FILE FILE2
 *   fgets on a pipe nobody writes (left by siglongjmp after 0.2 s)
 *   then fopen(FILE, "w"), fwrite 5 bytes, fclose (one write of 5 bytes)
 *   fgets on the pipe again (left the same way)
 *   then fopen(FILE2, "w"), fwrite 5 bytes, fclose, from the function that called it
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

static void arm(void) {
    struct itimerval t = {.it_value = {.tv_usec = 200000}};
    setitimer(ITIMER_REAL, &t, NULL);
}

/* Returns 1 when the fgets was jumped out of. */
static __attribute__((noinline)) int attempt(FILE *in) {
    char buf[16];
    if (sigsetjmp(env, 1))
        return 1;
    arm();
    fgets(buf, sizeof buf, in);
    return 0;
}

static int write_file(FILE *f) {
    if (!f)
        return 1;
    fwrite("after", 1, 5, f);
    return fclose(f) == 0 ? 0 : 1;
}

/* Returns 0 when the fgets was jumped out of and PATH written. */
static __attribute__((noinline)) int again(FILE *in, const char *path) {
    char buf[16];
    if (sigsetjmp(env, 1)) {
        FILE *f = fopen(path, "w");
        if (!f)
            return 1;
        fwrite("again", 1, 5, f);
        return fclose(f) == 0 ? 0 : 1;
    }
    arm();
    fgets(buf, sizeof buf, in);
    return 1;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: longjmp FILE FILE2\n");
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
    if (write_file(fopen(argv[1], "w")) != 0)
        return 1;
    return again(in, argv[2]);
}
