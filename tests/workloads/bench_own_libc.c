/* Benchmark workload: a job in a container that brings its own libc, a file the tracer has
 * not probed before the job's loader maps it. From its first instruction of main, makes a
 * write(2) of nothing (the reference), then calls fwrite N times, 16 bytes to /dev/null,
 * PERIOD_US microseconds apart. The fwrites a tracer records show how soon after the job
 * started its libc's probes were on.
 * usage: bench_own_libc N PERIOD_US */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (write(1, "", 0) != 0) return 3;
    if (argc != 3) return 2;
    FILE *f = fopen("/dev/null", "w");
    if (!f) return 4;
    long n = atol(argv[1]);
    useconds_t period = (useconds_t)atoi(argv[2]);
    for (long i = 0; i < n; i++) {
        if (fwrite("0123456789abcdef", 1, 16, f) != 16) return 5;
        usleep(period);
    }
    return fclose(f) == 0 ? 0 : 6;
}
