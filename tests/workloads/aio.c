/* I/O through Linux AIO, with the raw syscalls (no libaio): what strata can see of it.
 *
 * Usage: aio DIR. Prints "data=FD".
 *
 * io_setup of 4 events; one IOCB_CMD_PWRITE of 4 KiB at offset 8 KiB to DIR/aio.dat, handed
 * over by io_submit (1 taken) and reaped by io_getevents(1, 1), whose event says 4096;
 * io_destroy. The write itself is no syscall of the process.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static void check(int ok, const char *what) {
    if (!ok) {
        fprintf(stderr, "%s failed (errno %d)\n", what, errno);
        exit(1);
    }
}

int main(int argc, char **argv) {
    check(argc == 2, "usage: aio DIR");
    char path[4200];
    snprintf(path, sizeof path, "%s/aio.dat", argv[1]);
    int data = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    check(data >= 0, "open");
    aio_context_t ctx = 0;
    check(syscall(SYS_io_setup, 4, &ctx) == 0, "io_setup");
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
    check(syscall(SYS_io_destroy, ctx) == 0, "io_destroy");
    check(close(data) == 0, "close");
    printf("data=%d\n", data);
    return 0;
}
