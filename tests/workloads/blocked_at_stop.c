/* Calls in progress as strata stops, one blocked and one on a CPU: a thread scans /dev/zero
 * for a newline with fscanf(zero, "%*[^\n]") (a 1 MiB buffer: a read(2) of 1 MiB per refill,
 * each scanned in user space), which never ends; once it is about to, the main thread writes
 * its pid to READY (under a temporary name, renamed) and calls fgets(buf, 64, stream) on a
 * pipe nothing is written to, for ever: the signal tests stop strata once /proc says the main
 * thread is in read(2), then kill the process.
 *
 * usage: blocked_at_stop READY */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

static atomic_int scanning;

static void *scan_zeros(void *arg) {
    FILE *zero = arg;
    static char buf[1 << 20];
    if (setvbuf(zero, buf, _IOFBF, sizeof buf) != 0) return NULL;
    atomic_store(&scanning, 1);
    fscanf(zero, "%*[^\n]");
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    int p[2];
    if (pipe(p) != 0) return 3;
    FILE *in = fdopen(p[0], "r");
    FILE *zero = fopen("/dev/zero", "r");
    pthread_t t;
    if (!in || !zero || pthread_create(&t, NULL, scan_zeros, zero) != 0) return 4;
    while (!atomic_load(&scanning)) usleep(1000);
    char tmp[4096], buf[64];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", getpid()) < 0 || fclose(f) != 0 || rename(tmp, argv[1]) != 0)
        return 5;
    fgets(buf, sizeof buf, in);
    return 6;
}
