/* I/O through io_uring, with the raw syscalls (no liburing): what strata can see of it.
 *
 * Usage: uring DIR. Prints "ring=FD data=FD".
 *
 * io_uring_setup of 4 entries; its rings mapped; io_uring_register(IORING_REGISTER_FILES) of
 * DIR/uring.dat; one IORING_OP_WRITE of 4 KiB at offset 8 KiB to that file, submitted and
 * waited for by one io_uring_enter(ring, 1, 1, IORING_ENTER_GETEVENTS), whose completion says
 * 4096; then the ring closed. The write itself is no syscall of the process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/io_uring.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

static void check(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "%s failed (errno %d)\n", what, errno);
        exit(1);
    }
}

int main(int argc, char **argv) {
    check(argc == 2, "usage: uring DIR");
    char path[4200];
    snprintf(path, sizeof path, "%s/uring.dat", argv[1]);
    int data = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    check(data >= 0, "open");

    struct io_uring_params p;
    memset(&p, 0, sizeof p);
    int ring = syscall(__NR_io_uring_setup, 4, &p);
    check(ring >= 0, "io_uring_setup");
    size_t sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned);
    size_t cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
    if (p.features & IORING_FEAT_SINGLE_MMAP && cq_len > sq_len) sq_len = cq_len;
    char *sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring,
                    IORING_OFF_SQ_RING);
    check(sq != MAP_FAILED, "mmap sq");
    char *cq = sq;
    if (!(p.features & IORING_FEAT_SINGLE_MMAP)) {
        cq = mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring,
                  IORING_OFF_CQ_RING);
        check(cq != MAP_FAILED, "mmap cq");
    }
    struct io_uring_sqe *sqes =
        mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_POPULATE, ring, IORING_OFF_SQES);
    check(sqes != MAP_FAILED, "mmap sqes");
    check(syscall(__NR_io_uring_register, ring, IORING_REGISTER_FILES, &data, 1) == 0,
          "io_uring_register");

    static char buf[4096];
    memset(buf, 'u', sizeof buf);
    unsigned *tail = (unsigned *)(sq + p.sq_off.tail);
    unsigned mask = *(unsigned *)(sq + p.sq_off.ring_mask);
    unsigned *array = (unsigned *)(sq + p.sq_off.array);
    struct io_uring_sqe *e = &sqes[0];
    memset(e, 0, sizeof *e);
    e->opcode = IORING_OP_WRITE;
    e->fd = data;
    e->addr = (unsigned long)buf;
    e->len = sizeof buf;
    e->off = 8192;
    unsigned t = *tail;
    array[t & mask] = 0;
    __atomic_store_n(tail, t + 1, __ATOMIC_RELEASE);
    check(syscall(__NR_io_uring_enter, ring, 1, 1, IORING_ENTER_GETEVENTS, NULL, 0) == 1,
          "io_uring_enter");
    unsigned head = __atomic_load_n((unsigned *)(cq + p.cq_off.head), __ATOMIC_ACQUIRE);
    struct io_uring_cqe *cqes = (struct io_uring_cqe *)(cq + p.cq_off.cqes);
    unsigned cmask = *(unsigned *)(cq + p.cq_off.ring_mask);
    check(cqes[head & cmask].res == sizeof buf, "the write's completion");
    check(close(ring) == 0, "close ring");
    check(close(data) == 0, "close data");
    printf("ring=%d data=%d\n", ring, data);
    return 0;
}
