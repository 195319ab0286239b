/* The random numbers of the seeded workloads (stdio_random.c, posix_random.c, fd_random.c):
 * one sequence per seed, the same on every machine and in every run, so that an untraced run
 * that asks for the ground truth and a traced run that does not make the same calls. */
#ifndef SEEDED_H
#define SEEDED_H

static unsigned long long seeded_state;

/* Starts the sequence of `seed`. */
static void seed_with(unsigned long long seed) { seeded_state = seed; }

/* The next number of the sequence, in [0, n). */
static long pick(long n) {
    seeded_state = seeded_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (long)((seeded_state >> 33) % (unsigned long long)n);
}

#endif
