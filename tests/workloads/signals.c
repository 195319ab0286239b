/* Known writes, then a wait for a signal: the signal tests stop strata (or kill this
 * process) once every write has returned, and then expect exactly these writes.
 *
 * usage: signals FILE N READY [gated | pace USEC]
 *   opens FILE, pwrite()s N records (record i: (i % 4096) + 1 bytes, each after the
 *   previous), then writes its pid to READY (created under a temporary name and renamed, so
 *   a reader never sees it half-written) and sleeps until a signal ends it.
 *   gated: the pid goes to READY before the writes instead, the process waits for SIGUSR1,
 *   writes, and stops itself (SIGSTOP): between the signal and the stop it makes no other
 *   traced call.
 *   pace USEC: sleeps USEC microseconds after each write (a quiet job, a few writes a flush
 *   interval). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int publish_pid(const char *ready) {
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", ready);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", getpid()) < 0 || fclose(f) != 0 || rename(tmp, ready) != 0) {
        perror("ready file");
        return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    int gated = argc == 5 && strcmp(argv[4], "gated") == 0;
    int paced = argc == 6 && strcmp(argv[4], "pace") == 0;
    useconds_t pause_us = paced ? (useconds_t)atol(argv[5]) : 0;
    if (argc != 4 && !gated && !paced) {
        fprintf(stderr, "usage: signals FILE N READY [gated | pace USEC]\n");
        return 2;
    }
    long n = atol(argv[2]);
    static char buf[4096];
    memset(buf, 's', sizeof buf);
    int fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        perror("open");
        return 1;
    }
    if (gated) {
        sigset_t usr1;
        int sig;
        sigemptyset(&usr1);
        sigaddset(&usr1, SIGUSR1);
        sigprocmask(SIG_BLOCK, &usr1, NULL);
        if (publish_pid(argv[3]) != 0 || sigwait(&usr1, &sig) != 0)
            return 1;
    }
    long off = 0;
    for (long i = 0; i < n; i++) {
        long len = (i % (long)sizeof buf) + 1;
        if (pwrite(fd, buf, len, off) != len) {
            perror("pwrite");
            return 1;
        }
        off += len;
        if (pause_us)
            usleep(pause_us);
    }
    if (gated)
        raise(SIGSTOP);
    else if (publish_pid(argv[3]) != 0)
        return 1;
    for (;;) pause();
}
