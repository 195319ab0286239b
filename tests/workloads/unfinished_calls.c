/* Calls that never return, each blocked in the read(2) beneath it on a pipe nothing is
 * written to:
 *   - a thread's fgets(buf, 64, stream), the thread cancelled (pthread_cancel);
 *   - a forked child's fread(buf, 1, 100, stream), the child killed by SIGKILL;
 * each ended only once /proc says its thread is in read(2). Prints "cancelled TID" and
 * "killed PID"; exits 0 when the thread ended cancelled and the child killed.
 *
 * usage: unfinished_calls DIR (DIR unused) */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Waits until thread `tid` of `pid` is in read(2) (syscall 0 on x86-64); 0 when it is. */
static int wait_in_read(pid_t pid, pid_t tid) {
    char path[64], line[32];
    snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", pid, tid);
    for (int i = 0; i < 10000; i++) {
        FILE *f = fopen(path, "r");
        int in_read = f && fgets(line, sizeof line, f) && strncmp(line, "0 ", 2) == 0;
        if (f) fclose(f);
        if (in_read) return 0;
        usleep(1000);
    }
    return -1;
}

static FILE *stream_of_pipe(void) {
    int p[2];
    if (pipe(p) != 0) return NULL;
    return fdopen(p[0], "r"); /* the write end stays open, unwritten */
}

static FILE *in;
static volatile pid_t reader_tid;

static void *reader(void *arg) {
    char buf[64];
    (void)arg;
    reader_tid = gettid();
    fgets(buf, sizeof buf, in);
    return NULL;
}

int main(void) {
    in = stream_of_pipe();
    FILE *child_in = stream_of_pipe();
    if (!in || !child_in) return 2;
    pthread_t t;
    if (pthread_create(&t, NULL, reader, NULL) != 0) return 3;
    while (!reader_tid) usleep(1000);
    if (wait_in_read(getpid(), reader_tid) != 0) return 4;
    void *res;
    if (pthread_cancel(t) != 0 || pthread_join(t, &res) != 0 || res != PTHREAD_CANCELED) return 5;
    printf("cancelled %d\n", (int)reader_tid);
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        char buf[100];
        fread(buf, 1, sizeof buf, child_in);
        _exit(1);
    }
    int status;
    if (c < 0 || wait_in_read(c, c) != 0 || kill(c, SIGKILL) != 0) return 6;
    if (waitpid(c, &status, 0) != c || !WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
        return 7;
    printf("killed %d\n", (int)c);
    return 0;
}
