/* The random numbers of the seeded workloads (stdio_random.c, posix_random.c, fd_random.c,
 * fd_processes.c, uring_random.c):
 * one sequence per seed, the same on every machine and in every run, so that an untraced run
 * that asks for the ground truth and a traced run that does not make the same calls. */
#ifndef SEEDED_H
#define SEEDED_H

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static unsigned long long seeded_state;

/* Starts the sequence of `seed`. */
static void seed_with(unsigned long long seed) { seeded_state = seed; }

/* The next number of the sequence, in [0, n). */
static long pick(long n) {
    seeded_state = seeded_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (long)((seeded_state >> 33) % (unsigned long long)n);
}

/* The ground truth of an fd slot, asked by the untraced run after a call: the file `fd`
 * holds among the `n` named `names` (its index; -1: none or another), its position (-1 when
 * the slot is empty) and whether it appends. */
struct slot_truth {
    int file;
    long long pos;
    int appends;
};

static inline struct slot_truth truth_of(int fd, char (*names)[4096], int n) {
    struct slot_truth t = {-1, -1, 0};
    struct stat s, f;
    if (fstat(fd, &s) != 0) return t;
    for (int k = 0; k < n; k++)
        if (stat(names[k], &f) == 0 && f.st_ino == s.st_ino && f.st_dev == s.st_dev) t.file = k;
    t.pos = lseek(fd, 0, SEEK_CUR);
    t.appends = (fcntl(fd, F_GETFL) & O_APPEND) != 0;
    return t;
}

#endif
