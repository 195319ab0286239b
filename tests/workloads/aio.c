/* I/O through Linux AIO, with the raw syscalls (no libaio): what strata can see of it.
 *
 * Usage: aio DIR [requests]. Prints "data=FD".
 *
 * io_setup of 2048 events; one IOCB_CMD_PWRITE of 4 KiB ('a') at offset 8 KiB to DIR/aio.dat,
 * handed over by io_submit (1 taken) and reaped by io_getevents(1, 1), whose event says 4096;
 * io_destroy. The write itself is no syscall of the process.
 *
 * With `requests`, three more io_submit calls follow, each reaped before the next, every
 * event's result checked (events are matched to requests by their aio_data):
 *   2. three iocbs, all taken, reaped by io_getevents(3, 3):
 *      a. IOCB_CMD_PWRITE on data of 4096 B ('w') at 0: 4096
 *      b. IOCB_CMD_PWRITEV on data of two iovecs (1000 'b', 3000 'c') at 4096: 4000
 *      c. IOCB_CMD_PWRITE on data of 100 B at 0 from address 1 (unmapped): -EFAULT
 *   3. four iocbs; the kernel takes three (io_submit returns 3: the fourth's fd is not open),
 *      reaped by io_getevents(2, 2) and io_getevents(1, 1):
 *      d. IOCB_CMD_FDSYNC on data: 0
 *      e. IOCB_CMD_PREAD on data of 1000 B at 1000: 1000
 *      f. IOCB_CMD_PREADV on data of two iovecs (500, 1500) at 0 with RWF_HIPRI|RWF_DSYNC
 *         cleared and RWF_SYNC (4) set in aio_rw_flags: 2000
 *      g. IOCB_CMD_PREAD on fd 999 of 10 B at 0: not taken
 *   4. 1030 IOCB_CMD_PWRITEs on data of 1 B ('z') at 20000 + i, all taken, reaped by one
 *      io_getevents(1030, 1030): 1 each.
 *   5. two iocbs, both taken, reaped by io_pgetevents(2, 2) with SIGUSR1 masked:
 *      h. IOCB_CMD_PWRITE on data of 512 B ('p') at 30000: 512
 *      i. IOCB_CMD_PREAD on data of 100 B at 0: 100 (step 2's 'w')
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static void check(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "%s failed (errno %d)\n", what, errno);
        exit(1);
    }
}

static aio_context_t ctx;

/* An iocb of `op` on `fd` at `offset`, its buffer (or iovec array) and length, tagged `tag`. */
static void prep(struct iocb *cb, int op, int fd, void *buf, size_t n, long long offset,
                 int tag) {
    memset(cb, 0, sizeof *cb);
    cb->aio_lio_opcode = op;
    cb->aio_fildes = fd;
    cb->aio_buf = (unsigned long)buf;
    cb->aio_nbytes = n;
    cb->aio_offset = offset;
    cb->aio_data = tag;
}

/* Submits `n` iocbs, expecting `taken`. */
static void submit(struct iocb **list, long n, long taken) {
    long r = syscall(SYS_io_submit, ctx, n, list);
    if (r != taken) {
        fprintf(stderr, "io_submit of %ld: %ld, not %ld (errno %d)\n", n, r, taken, errno);
        exit(1);
    }
}

/* Reaps exactly `n` events, by io_pgetevents with `mask` if there is one, and checks each
 * one's result against `want[aio_data]`. */
static void reap_masked(long n, const long long *want, const sigset_t *mask) {
    static struct io_event ev[1030];
    /* struct __aio_sigset (the kernel's own; this libc's headers lack it): the kernel's
     * sigset is 8 bytes (_NSIG / 8), glibc's sigset_t 128. */
    struct {
        const void *sigmask;
        size_t sigsetsize;
    } usig = {mask, 8};
    long r = mask ? syscall(SYS_io_pgetevents, ctx, n, n, ev, NULL, &usig)
                  : syscall(SYS_io_getevents, ctx, n, n, ev, NULL);
    if (r != n) {
        fprintf(stderr, "%s of %ld: %ld (errno %d)\n", mask ? "io_pgetevents" : "io_getevents",
                n, r, errno);
        exit(1);
    }
    for (long i = 0; i < n; i++) {
        if (ev[i].res != want[ev[i].data]) {
            fprintf(stderr, "request %llu: %lld, not %lld\n", (unsigned long long)ev[i].data,
                    (long long)ev[i].res, want[ev[i].data]);
            exit(1);
        }
    }
}

static void reap(long n, const long long *want) { reap_masked(n, want, NULL); }

static void requests(int data) {
    static char w[4096], b[1000], c[3000], r1[1000], r2[500], r3[1500];
    memset(w, 'w', sizeof w);
    memset(b, 'b', sizeof b);
    memset(c, 'c', sizeof c);
    struct iocb cb[4];
    struct iocb *list[4] = {&cb[0], &cb[1], &cb[2], &cb[3]};
    struct iovec wv[2] = {{b, sizeof b}, {c, sizeof c}};
    prep(&cb[0], IOCB_CMD_PWRITE, data, w, sizeof w, 0, 0);
    prep(&cb[1], IOCB_CMD_PWRITEV, data, wv, 2, 4096, 1);
    prep(&cb[2], IOCB_CMD_PWRITE, data, (void *)1, 100, 0, 2);
    submit(list, 3, 3);
    reap(3, (const long long[]){4096, 4000, -EFAULT});

    struct iovec rv[2] = {{r2, sizeof r2}, {r3, sizeof r3}};
    prep(&cb[0], IOCB_CMD_FDSYNC, data, NULL, 0, 0, 0);
    prep(&cb[1], IOCB_CMD_PREAD, data, r1, sizeof r1, 1000, 1);
    prep(&cb[2], IOCB_CMD_PREADV, data, rv, 2, 0, 2);
    cb[2].aio_rw_flags = 4; /* RWF_SYNC */
    prep(&cb[3], IOCB_CMD_PREAD, 999, r1, 10, 0, 3);
    submit(list, 4, 3);
    const long long want3[] = {0, 1000, 2000};
    reap(2, want3);
    reap(1, want3);
    check(memcmp(r1, w + 1000, sizeof r1) == 0, "the read's bytes");
    check(memcmp(r3, w + 500, sizeof r3) == 0, "the vectored read's bytes");

    static struct iocb many[1030];
    static struct iocb *many_list[1030];
    static long long ones[1030];
    static char z = 'z';
    for (int i = 0; i < 1030; i++) {
        prep(&many[i], IOCB_CMD_PWRITE, data, &z, 1, 20000 + i, i);
        many_list[i] = &many[i];
        ones[i] = 1;
    }
    submit(many_list, 1030, 1030);
    reap(1030, ones);

    static char p[512], r4[100];
    memset(p, 'p', sizeof p);
    prep(&cb[0], IOCB_CMD_PWRITE, data, p, sizeof p, 30000, 0);
    prep(&cb[1], IOCB_CMD_PREAD, data, r4, sizeof r4, 0, 1);
    submit(list, 2, 2);
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGUSR1);
    reap_masked(2, (const long long[]){512, 100}, &mask);
    check(memcmp(r4, w, sizeof r4) == 0, "the read's bytes under io_pgetevents");
}

int main(int argc, char **argv) {
    check(argc == 2 || (argc == 3 && strcmp(argv[2], "requests") == 0),
          "usage: aio DIR [requests]");
    char path[4200];
    snprintf(path, sizeof path, "%s/aio.dat", argv[1]);
    int data = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    check(data >= 0, "open");
    check(syscall(SYS_io_setup, 2048, &ctx) == 0, "io_setup");
    static char buf[4096];
    memset(buf, 'a', sizeof buf);
    struct iocb cb;
    memset(&cb, 0, sizeof cb);
    cb.aio_lio_opcode = IOCB_CMD_PWRITE;
    cb.aio_fildes = data;
    cb.aio_buf = (unsigned long)buf;
    cb.aio_nbytes = sizeof buf;
    cb.aio_offset = 8192;
    struct iocb *list[1] = {&cb};
    check(syscall(SYS_io_submit, ctx, 1, list) == 1, "io_submit");
    struct io_event ev;
    check(syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL) == 1, "io_getevents");
    check(ev.res == sizeof buf, "the write's event");
    if (argc == 3)
        requests(data);
    check(syscall(SYS_io_destroy, ctx) == 0, "io_destroy");
    check(close(data) == 0, "close");
    printf("data=%d\n", data);
    return 0;
}
