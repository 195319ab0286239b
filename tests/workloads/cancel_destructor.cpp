/* A C++ thread cancelled while blocked in fgets on a pipe nothing is written to (once /proc
 * says it is in read(2)), with an object in the function that called fgets: prints
 * "destructor ran" when the object's destructor runs as the thread unwinds, then
 * "cancelled" when the thread ended cancelled (exit 0).
 *
 * usage: cancel_destructor */
#include <cstdio>
#include <cstring>

#include <pthread.h>
#include <unistd.h>

static FILE *in;
static volatile pid_t reader_tid;

struct Guard {
    ~Guard() {
        std::puts("destructor ran");
        std::fflush(stdout);
    }
};

static void *reader(void *) {
    Guard g;
    char buf[64];
    reader_tid = gettid();
    std::fgets(buf, sizeof buf, in);
    return nullptr;
}

int main() {
    int p[2];
    if (pipe(p) != 0 || !(in = fdopen(p[0], "r"))) return 2;
    pthread_t t;
    if (pthread_create(&t, nullptr, reader, nullptr) != 0) return 3;
    while (!reader_tid) usleep(1000);
    char path[64], line[32];
    std::snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)reader_tid);
    for (int i = 0;; i++) {
        FILE *f = std::fopen(path, "r");
        bool in_read = f && std::fgets(line, sizeof line, f) && std::strncmp(line, "0 ", 2) == 0;
        if (f) std::fclose(f);
        if (in_read) break;
        if (i == 10000) return 4;
        usleep(1000);
    }
    void *res;
    if (pthread_cancel(t) != 0 || pthread_join(t, &res) != 0 || res != PTHREAD_CANCELED) return 5;
    std::puts("cancelled");
    return 0;
}
