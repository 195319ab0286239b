/* Opens a path through a pointer that cannot be read, N times: each openat fails with EFAULT,
 * and strata cannot read the path either, so each is one `run.str_read_failed`.
 *
 * usage: bad_path N     exit code 0 when every open failed with EFAULT */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    int n = atoi(argv[1]);
    for (int i = 0; i < n; i++) {
        /* The raw syscall: libc's open would not be called with such a pointer. */
        if (syscall(SYS_openat, AT_FDCWD, (const char *)8, O_RDONLY) != -1 || errno != EFAULT)
            return 3;
    }
    return 0;
}
