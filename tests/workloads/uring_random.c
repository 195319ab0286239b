/* A random sequence of io_uring requests and syscalls on two files, the same for a seed:
 * three slots, fds 10 to 12, each holding one of DIR/f0 and DIR/f1 opened read-write and
 * moved into it by dup2, or a copy of another slot, or nothing after close; a ring with two
 * registered files, each set now and then to a slot's file (IORING_REGISTER_FILES_UPDATE;
 * fd 20 + k, a copy of it, keeps the registered description for the log) or to none. The
 * calls: write, read and lseek on a slot; IORING_OP_WRITE and IORING_OP_READ on a slot or on
 * a registered file (IOSQE_FIXED_FILE), at an offset or at the file's position (-1), each
 * submitted and waited for alone. With LOG, a line after each call: its name, its slot (a
 * registered file's: 20 + k), result (-1: failed), the file the slot holds then (its index;
 * -1: none), its position, and a request's offset (-1: the file's position). What the log
 * asks is asked only then, so that a traced run without LOG makes the same calls.
 * usage: uring_random SEED N DIR [LOG] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "ring.h"
#include "seeded.h"

static int last_res;

static void keep(void *ctx, unsigned long long user_data, int res) {
    (void)ctx;
    (void)user_data;
    last_res = res;
}

/* One request, submitted and waited for: its result. */
static long request(struct ring *r, int opcode, int fd, void *buf, unsigned len, long long off,
                    int flags) {
    ring_queue(r, 0, opcode, fd, buf, len, off, flags);
    if (ring_enter(r, 1) != 1 || ring_reap(r, keep, NULL) != 1) exit(5);
    return last_res;
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) return 1;
    seed_with(strtoull(argv[1], NULL, 10));
    long n = strtol(argv[2], NULL, 10);
    char names[2][4096];
    for (int i = 0; i < 2; i++) snprintf(names[i], sizeof names[i], "%s/f%d", argv[3], i);
    static char data[512], buf[512];
    for (int i = 0; i < 512; i++) data[i] = 'a' + i % 26;
    if (syscall(SYS_close_range, 10, 21, 0)) return 4;
    struct ring r = {0};
    int table[2] = {-1, -1};
    if (ring_setup(&r, 4) || syscall(__NR_io_uring_register, r.fd, IORING_REGISTER_FILES, table, 2))
        return 6;
    FILE *log = NULL;
    if (argc == 5) {
        int l = open(argv[4], O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (l < 0 || dup2(l, 100) != 100 || close(l) || !(log = fdopen(100, "w"))) return 2;
    }
    for (long i = 0; i < n; i++) {
        int fd = 10 + pick(3), k = pick(2);
        long op = pick(12);
        long long r_ = 0, off = pick(3) ? -1 : pick(2000);
        int slot = fd, fixed = 0;
        const char *name;
        switch (op) {
        case 0: {
            int f = open(names[pick(2)], O_RDWR | O_CREAT, 0644);
            name = "open";
            r_ = f < 0 ? -1 : dup2(f, fd);
            if (f >= 0 && f != fd) close(f);
            break;
        }
        case 1:
            name = "dup2";
            r_ = dup2(10 + pick(3), fd);
            break;
        case 2:
            name = "close";
            r_ = close(fd);
            break;
        case 3: {
            /* The registered file k becomes the slot's file, or none where the slot is
             * empty; fd 20 + k follows it. */
            struct io_uring_files_update up = {.offset = k};
            int set = fcntl(fd, F_GETFD) < 0 ? -1 : fd;
            up.fds = (unsigned long)&set;
            name = "register";
            slot = 20 + k;
            r_ = syscall(__NR_io_uring_register, r.fd, IORING_REGISTER_FILES_UPDATE, &up, 1);
            if (r_ == 1) r_ = set < 0 ? close(20 + k) : dup2(fd, 20 + k);
            break;
        }
        case 4:
        case 5:
            name = "write";
            r_ = write(fd, data + pick(100), 1 + pick(300));
            break;
        case 6:
            name = "read";
            r_ = read(fd, buf, 1 + pick(300));
            break;
        case 7:
            name = "lseek";
            r_ = lseek(fd, pick(1000), SEEK_SET);
            break;
        default:
            fixed = op >= 10;
            slot = fixed ? 20 + k : fd;
            name = op % 2 ? "uring_read" : "uring_write";
            r_ = request(&r, op % 2 ? IORING_OP_READ : IORING_OP_WRITE, fixed ? k : fd,
                         op % 2 ? buf : data + pick(100), 1 + pick(300), off,
                         fixed ? IOSQE_FIXED_FILE : 0);
            break;
        }
        if (log) {
            struct slot_truth t = truth_of(slot, names, 2);
            fprintf(log, "%s %d %lld %d %lld %lld\n", name, slot, r_ < 0 ? -1 : r_, t.file, t.pos,
                    strncmp(name, "uring", 5) == 0 ? off : -1);
        }
    }
    return log && fclose(log) ? 3 : 0;
}
