/* Blocked in a library call as strata stops: writes its pid to READY (under a temporary name,
 * renamed), then fgets(buf, 64, stream) on a pipe nothing is written to, for ever: the signal
 * tests stop strata once /proc says it is in read(2), then kill it.
 *
 * usage: blocked_at_stop READY */
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    int p[2];
    if (pipe(p) != 0) return 3;
    FILE *in = fdopen(p[0], "r");
    char tmp[4096], buf[64];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    FILE *f = fopen(tmp, "w");
    if (!in || !f || fprintf(f, "%d\n", getpid()) < 0 || fclose(f) != 0 || rename(tmp, argv[1]) != 0)
        return 4;
    fgets(buf, sizeof buf, in);
    return 5;
}
