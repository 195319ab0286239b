/* A minimal io_uring through the raw syscalls (no liburing), shared by the test workloads:
 * set up a ring, queue requests, submit them and wait, read their results. */
#ifndef STRATA_RING_H
#define STRATA_RING_H

#include <linux/io_uring.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

struct ring {
    int fd;
    /* Added to every io_uring_enter (IORING_ENTER_SQ_WAKEUP under SQPOLL). */
    unsigned enter_flags;
    struct io_uring_params p;
    char *sq, *cq;
    struct io_uring_sqe *sqes;
};

/* io_uring_setup of `entries`, with the parameters the caller set in `r->p` (flags), and
 * its rings mapped. 0, or -1 with errno set. */
static int ring_setup(struct ring *r, unsigned entries) {
    r->fd = syscall(__NR_io_uring_setup, entries, &r->p);
    if (r->fd < 0) return -1;
    struct io_uring_params *p = &r->p;
    size_t sq_len = p->sq_off.array + p->sq_entries * sizeof(unsigned);
    size_t cq_len = p->cq_off.cqes + p->cq_entries * sizeof(struct io_uring_cqe);
    if (p->features & IORING_FEAT_SINGLE_MMAP && cq_len > sq_len) sq_len = cq_len;
    r->sq = mmap(NULL, sq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
                 IORING_OFF_SQ_RING);
    if (r->sq == MAP_FAILED) return -1;
    r->cq = r->sq;
    if (!(p->features & IORING_FEAT_SINGLE_MMAP)) {
        r->cq = mmap(NULL, cq_len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, r->fd,
                     IORING_OFF_CQ_RING);
        if (r->cq == MAP_FAILED) return -1;
    }
    r->sqes = mmap(NULL, p->sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
                   MAP_SHARED | MAP_POPULATE, r->fd, IORING_OFF_SQES);
    return r->sqes == MAP_FAILED ? -1 : 0;
}

/* Queues one request in SQE slot `i` of the batch being built (its user_data is `i`);
 * returns it for more fields. */
static struct io_uring_sqe *ring_queue(struct ring *r, unsigned i, int opcode, int fd,
                                       const void *addr, unsigned len, long long off,
                                       int flags) {
    unsigned *tail = (unsigned *)(r->sq + r->p.sq_off.tail);
    unsigned mask = *(unsigned *)(r->sq + r->p.sq_off.ring_mask);
    unsigned *array = (unsigned *)(r->sq + r->p.sq_off.array);
    struct io_uring_sqe *e = &r->sqes[i];
    memset(e, 0, sizeof *e);
    e->opcode = opcode;
    e->fd = fd;
    e->addr = (unsigned long)addr;
    e->len = len;
    e->off = (unsigned long long)off;
    e->flags = flags;
    e->user_data = i;
    unsigned t = *tail;
    array[t & mask] = i;
    __atomic_store_n(tail, t + 1, __ATOMIC_RELEASE);
    return e;
}

/* One io_uring_enter submitting the `n` requests queued and waiting for as many: its
 * return (the requests the kernel took), or -1. */
static long ring_enter(struct ring *r, unsigned n) {
    return syscall(__NR_io_uring_enter, r->fd, n, n, IORING_ENTER_GETEVENTS | r->enter_flags,
                   NULL, 0);
}

/* Takes the completions waiting: calls `each(ctx, user_data, res)` for each; their count. */
static unsigned ring_reap(struct ring *r, void (*each)(void *, unsigned long long, int),
                          void *ctx) {
    unsigned *head = (unsigned *)(r->cq + r->p.cq_off.head);
    unsigned tail = __atomic_load_n((unsigned *)(r->cq + r->p.cq_off.tail), __ATOMIC_ACQUIRE);
    struct io_uring_cqe *cqes = (struct io_uring_cqe *)(r->cq + r->p.cq_off.cqes);
    unsigned cmask = *(unsigned *)(r->cq + r->p.cq_off.ring_mask);
    unsigned h = *head, n = tail - h;
    for (; h != tail; h++) each(ctx, cqes[h & cmask].user_data, cqes[h & cmask].res);
    __atomic_store_n(head, h, __ATOMIC_RELEASE);
    return n;
}

#endif
