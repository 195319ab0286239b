/* Loads LIB with dlopen, calls its stt_write once on FILE (5 bytes) and unloads it with
 * dlclose, N times; waits WAIT_MS after the first load. Each dlopen and each dlclose of a
 * library not loaded yet, and the start, make the loader report twice: as the change begins
 * (r_state RT_ADD or RT_DELETE) and once done (RT_CONSISTENT).
 * usage: dlopen_cycles LIB FILE N WAIT_MS */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 5) return 2;
    int fd = open(argv[2], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) return 3;
    for (int i = 0; i < atoi(argv[3]); i++) {
        void *h = dlopen(argv[1], RTLD_NOW);
        if (!h) { fprintf(stderr, "%s\n", dlerror()); return 4; }
        ssize_t (*f)(int, const void *, size_t) =
            (ssize_t (*)(int, const void *, size_t))dlsym(h, "stt_write");
        if (!f) return 5;
        if (i == 0) usleep(atoi(argv[4]) * 1000);
        if (f(fd, "cycle", 5) != 5) return 6;
        if (dlclose(h) != 0) return 7;
    }
    close(fd);
    return 0;
}
