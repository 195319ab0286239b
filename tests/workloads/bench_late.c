/* Benchmark workload: a library loaded at run time, as Python loads its extension modules or a
 * container brings its own libraries. After 100 ms (a job under way, its tracer idle), opens
 * DIR/libstratatest.so.1 with dlopen (named by its directory, so that a tracer cannot probe it
 * before the process loads it, as it probes the programs and libraries a command names), then
 * calls its stt_write
 * (tests/workloads/dlopen_lib.c) N times, writing one byte to /dev/null, PERIOD_US
 * microseconds apart from the moment dlopen returns. The calls a tracer records show how soon
 * after the library's load its probes were on.
 * usage: bench_late DIR N PERIOD_US */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 4) return 2;
    int fd = open("/dev/null", O_WRONLY);
    if (fd < 0) return 3;
    usleep(100000);
    char lib[4096];
    if (snprintf(lib, sizeof lib, "%s/libstratatest.so.1", argv[1]) >= (int)sizeof lib) return 7;
    void *h = dlopen(lib, RTLD_NOW);
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        return 4;
    }
    ssize_t (*write_one)(int, const void *, size_t) =
        (ssize_t (*)(int, const void *, size_t))dlsym(h, "stt_write");
    if (!write_one) return 5;
    long n = atol(argv[2]);
    useconds_t period = (useconds_t)atoi(argv[3]);
    for (long i = 0; i < n; i++) {
        if (write_one(fd, "x", 1) != 1) return 6;
        usleep(period);
    }
    return 0;
}
