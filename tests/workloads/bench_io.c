/* Benchmark workload: a tight loop of one kind of I/O call. Prints the loop's own wall time in
 * nanoseconds on stdout, so tracer start-up and teardown are not counted.
 *
 * usage: bench_io syscall|stdio|meta|pagewrite|ioctl|uring|random|maplibc|mapld N DIR
 *        bench_io rate:R|stdiorate:R|paths:R N DIR
 *   pagewrite: N buffered 4 KiB writes to a new file, then fsync (the loop time includes it)
 *   ioctl: N TCGETS on /dev/null (ENOTTY), a command probes.toml does not name
 *   uring: N io_uring writes of 4 KiB (IORING_OP_WRITE, raw syscalls), 8 submitted and waited
 *     for per io_uring_enter, over the first MiB of a file (cached pages, rewritten), on the
 *     one CPU the loop starts on
 *   rate:R: N 1-byte writes to /dev/null paced at R per second (a sustained event rate)
 *   stdiorate:R: N fwrites of 16 bytes to DIR/bench.dat paced at R per second (library calls
 *     at a steady rate)
 *   paths:R: N opens and closes of DIR/bench.dat paced at R per second, open i naming it
 *     DIR/ + (i % 16) times "./" + bench.dat (records of many sizes)
 *   random: N preads and pwrites, each chosen at random, of 1 B to 64 KiB at random offsets
 *     in a 64 MiB file (an irregular access pattern; the sequence is the same every run)
 *   maplibc, mapld: N mappings of the libc it runs (of its dynamic loader), read and execute
 *     as the loader maps a library's text, each unmapped at once (a uprobe on that file writes
 *     its breakpoint into each mapping)
 *   clock: nothing; prints CLOCK_MONOTONIC at its start instead (when a tracer let it run)
 * BENCH_IO_CPU=C in the environment pins the process to CPU C first (the benchmark keeps a
 * tracer's threads off the loop's CPU this way, also when the tracer starts the loop). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "ring.h"

static long long now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static void page_written(void *failed, unsigned long long user_data, int res) {
    (void)user_data;
    if (res != 4096) *(int *)failed = 1;
}

/* N 4 KiB writes through an io_uring, `batch` per io_uring_enter; 0 or an exit code. */
static int uring_writes(const char *path, long n, long long *t0, long long *t1) {
    enum { batch = 8 };
    static char page[4096];
    memset(page, 'r', sizeof page);
    /* The kernel completes such writes in a worker and wakes the loop: with the two on
     * different CPUs, each wait pays an idle CPU's wakeup, which on a virtual machine costs
     * more than the writes (the loop ran 7x faster while anything kept the other CPU busy,
     * a tracer's reader included). Pinned, as an HPC job's ranks are, it does not. */
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) return 17;
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    struct ring r;
    memset(&r, 0, sizeof r);
    if (fd < 0 || ring_setup(&r, batch) != 0) return 13;
    int failed = 0;
    *t0 = now();
    for (long i = 0; i < n; i += batch) {
        for (unsigned k = 0; k < batch; k++)
            ring_queue(&r, k, IORING_OP_WRITE, fd, page, sizeof page,
                       (long long)((i + k) % 256) * sizeof page, 0);
        if (ring_enter(&r, batch) != batch) return 15;
        if (ring_reap(&r, page_written, &failed) != batch || failed) return 16;
    }
    *t1 = now();
    close(r.fd);
    close(fd);
    unlink(path);
    return 0;
}

/* N mappings of the file that holds `in`, each unmapped at once; 0 or an exit code. */
static int map_file_of(const void *in, long n, long long *t0, long long *t1) {
    Dl_info lib;
    struct stat st;
    if (dladdr(in, &lib) == 0 || lib.dli_fname == NULL) return 19;
    int fd = open(lib.dli_fname, O_RDONLY);
    if (fd < 0 || fstat(fd, &st) != 0) return 20;
    *t0 = now();
    for (long i = 0; i < n; i++) {
        void *p = mmap(NULL, st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED || munmap(p, st.st_size) != 0) return 21;
    }
    *t1 = now();
    close(fd);
    return 0;
}

int main(int argc, char **argv) {
    if (argc != 4) return 2;
    const char *cpu = getenv("BENCH_IO_CPU");
    if (cpu != NULL) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(atoi(cpu), &one);
        if (sched_setaffinity(0, sizeof one, &one) != 0) return 18;
    }
    long n = atol(argv[2]);
    char path[4096];
    snprintf(path, sizeof path, "%s/bench.dat", argv[3]);
    char buf[16] = "0123456789abcde";
    long long t0 = 0, t1 = 0;
    if (strcmp(argv[1], "clock") == 0) {
        printf("%lld\n", now());
        return 0;
    }
    if (strcmp(argv[1], "syscall") == 0) {
        int fd = open("/dev/null", O_WRONLY);
        t0 = now();
        for (long i = 0; i < n; i++)
            if (write(fd, buf, 1) != 1) return 3;
        t1 = now();
        close(fd);
    } else if (strcmp(argv[1], "ioctl") == 0) {
        int fd = open("/dev/null", O_RDONLY);
        struct termios t;
        t0 = now();
        for (long i = 0; i < n; i++)
            if (ioctl(fd, TCGETS, &t) != -1) return 11;
        t1 = now();
        close(fd);
    } else if (strcmp(argv[1], "stdio") == 0) {
        FILE *f = fopen(path, "w");
        t0 = now();
        for (long i = 0; i < n; i++)
            if (fwrite(buf, 16, 1, f) != 1) return 4;
        fclose(f);
        t1 = now();
        unlink(path);
    } else if (strcmp(argv[1], "meta") == 0) {
        close(open(path, O_WRONLY | O_CREAT, 0600));
        struct stat st;
        t0 = now();
        for (long i = 0; i < n; i++) {
            int fd = open(path, O_RDONLY);
            if (fd < 0 || fstat(fd, &st) != 0) return 5;
            close(fd);
        }
        t1 = now();
        unlink(path);
    } else if (strcmp(argv[1], "pagewrite") == 0) {
        static char page[4096];
        memset(page, 'p', sizeof page);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0) return 6;
        t0 = now();
        for (long i = 0; i < n; i++)
            if (write(fd, page, sizeof page) != (ssize_t)sizeof page) return 7;
        if (fsync(fd) != 0) return 8;
        t1 = now();
        close(fd);
        unlink(path);
    } else if (strncmp(argv[1], "rate:", 5) == 0) {
        long rate = atol(argv[1] + 5);
        if (rate <= 0) return 2;
        int fd = open("/dev/null", O_WRONLY);
        t0 = now();
        for (long i = 0; i < n; i++) {
            // Write i is due at t0 + i / rate: wait for it (busy, to keep the pace exact).
            long long due = t0 + (long long)((double)i * 1e9 / rate);
            while (now() < due) {
            }
            if (write(fd, buf, 1) != 1) return 3;
        }
        t1 = now();
        close(fd);
    } else if (strncmp(argv[1], "stdiorate:", 10) == 0) {
        long rate = atol(argv[1] + 10);
        if (rate <= 0) return 2;
        FILE *f = fopen(path, "w");
        t0 = now();
        for (long i = 0; i < n; i++) {
            long long due = t0 + (long long)((double)i * 1e9 / rate);
            while (now() < due) {
            }
            if (fwrite(buf, 16, 1, f) != 1) return 4;
        }
        fclose(f);
        t1 = now();
        unlink(path);
    } else if (strncmp(argv[1], "paths:", 6) == 0) {
        long rate = atol(argv[1] + 6);
        if (rate <= 0) return 2;
        close(open(path, O_WRONLY | O_CREAT, 0600));
        char name[4096];
        t0 = now();
        for (long i = 0; i < n; i++) {
            long long due = t0 + (long long)((double)i * 1e9 / rate);
            while (now() < due) {
            }
            int len = snprintf(name, sizeof name, "%s/", argv[3]);
            for (long k = 0; k < i % 16; k++) len += snprintf(name + len, sizeof name - len, "./");
            snprintf(name + len, sizeof name - len, "bench.dat");
            int fd = open(name, O_RDONLY);
            if (fd < 0) return 12;
            close(fd);
        }
        t1 = now();
        unlink(path);
    } else if (strcmp(argv[1], "uring") == 0) {
        int rc = uring_writes(path, n, &t0, &t1);
        if (rc != 0) return rc;
    } else if (strcmp(argv[1], "maplibc") == 0 || strcmp(argv[1], "mapld") == 0) {
        /* fopen is libc's; the auxiliary vector's AT_BASE is where the kernel loaded the loader. */
        const void *in = strcmp(argv[1], "maplibc") == 0 ? (const void *)fopen
                                                         : (const void *)getauxval(AT_BASE);
        int rc = map_file_of(in, n, &t0, &t1);
        if (rc != 0) return rc;
    } else if (strcmp(argv[1], "random") == 0) {
        static char block[65536];
        int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || ftruncate(fd, 64L << 20) != 0) return 9;
        unsigned long long x = 88172645463325252ULL;
        t0 = now();
        for (long i = 0; i < n; i++) {
            // xorshift64: the same pseudo-random sequence on every run.
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            size_t len = 1 + (x & 0xffff);
            off_t off = (off_t)((x >> 16) % ((64UL << 20) - len));
            ssize_t r = (x >> 63) ? pwrite(fd, block, len, off) : pread(fd, block, len, off);
            if (r != (ssize_t)len) return 10;
        }
        t1 = now();
        close(fd);
        unlink(path);
    } else {
        return 2;
    }
    printf("%lld\n", t1 - t0);
    return 0;
}
