/* A random sequence of calls on the fd tables of a process tree, the same for a seed: six
 * slots, fds 10 to 15, each holding now and then one of four files (DIR/f0 .. DIR/f3) opened
 * read-write (one in four with O_APPEND) and moved into the slot by dup2, or by dup3 with
 * O_CLOEXEC; or a copy of another slot; or nothing after close or exec. Besides reads, writes,
 * lseeks and F_SETFD:
 * - fork: the child makes up to 20 calls of its own sequence and exits; the parent waits;
 * - posix_spawn of this program with one file action (dup2 of a slot onto another, close,
 *   open), its child as fork's;
 * - exec of this program, which goes on with the sequence in the fds the exec kept;
 * - send: the slot's fd sent as SCM_RIGHTS on a unix socket (fd 20) all of them share;
 * - recv: the next fd waiting on the socket's other end (fd 21), from this process or
 *   another, before an exec or not, into the slot.
 * Children nest two deep at most. With LOG, a line after each call: its name, slot, result
 * (-1: failed), the file the slot holds then (its index; -1: none), its position and whether
 * it appends. The log's own fd is 100, shared by the whole tree; what it asks is asked only
 * then, so that a traced run without LOG makes the same calls.
 * usage: fd_processes SEED N DIR [LOG]; an exec'ed or spawned one: fd_processes
 * cSTATE,N,DEPTH DIR [LOG] */
#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "seeded.h"

extern char **environ;

static char names[4][4096];
static char *dir, *log_name;
static FILE *log_file;

/* This program's arguments to go on with the sequence, N calls at DEPTH. */
static void go_on_args(char *buf, size_t size, long n, int depth) {
    snprintf(buf, size, "c%llu,%ld,%d", seeded_state, n, depth);
}

/* One SCM_RIGHTS message of one byte on `sock`: sends `*fd`, or receives into it. */
static long message(int sock, int *fd, int send, int flags) {
    char c = 'x';
    struct iovec io = {&c, 1};
    union {
        char b[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr m = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = u.b,
                       .msg_controllen = sizeof u.b};
    if (!send) {
        if (recvmsg(sock, &m, flags) != 1 || !CMSG_FIRSTHDR(&m)) return -1;
        memcpy(fd, CMSG_DATA(CMSG_FIRSTHDR(&m)), sizeof *fd);
        return 1;
    }
    struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), fd, sizeof *fd);
    return sendmsg(sock, &m, flags);
}

static void run(long n, int depth) {
    static char data[512], buf[512];
    for (int i = 0; i < 512; i++) data[i] = 'a' + i % 26;
    for (long i = 0; i < n; i++) {
        int fd = 10 + pick(6);
        long op = pick(20);
        long long r = 0;
        const char *name;
        switch (op) {
        case 0:
        case 1: {
            int f = open(names[pick(4)], O_RDWR | O_CREAT | (pick(4) ? 0 : O_APPEND), 0644);
            int cloexec = pick(3) == 0;
            name = "open";
            r = f < 0 ? -1 : cloexec ? dup3(f, fd, O_CLOEXEC) : dup2(f, fd);
            if (f >= 0 && f != fd) close(f);
            break;
        }
        case 2:
            name = "setfd";
            r = fcntl(fd, F_SETFD, pick(2) ? FD_CLOEXEC : 0);
            break;
        case 3:
            name = "close";
            r = close(fd);
            break;
        case 4:
        case 5:
        case 6:
            name = "write";
            r = write(fd, data + pick(100), 1 + pick(300));
            break;
        case 7:
        case 8:
            name = "read";
            r = read(fd, buf, 1 + pick(300));
            break;
        case 9:
            name = "lseek";
            r = lseek(fd, pick(1000), SEEK_SET);
            break;
        case 10:
        case 11: {
            long budget = 1 + pick(20);
            name = "fork";
            if (depth >= 2) {
                r = -1;
                break;
            }
            if (log_file) fflush(log_file);
            pid_t child = fork();
            if (child == 0) {
                run(budget, depth + 1);
                if (log_file) fflush(log_file);
                _exit(0);
            }
            r = child < 0 || waitpid(child, NULL, 0) != child ? -1 : 0;
            break;
        }
        case 12: {
            char go_on[128];
            go_on_args(go_on, sizeof go_on, n - i - 1, depth);
            if (log_file) fflush(log_file);
            char *argv[] = {"fd_processes", go_on, dir, log_name, NULL};
            execv("/proc/self/exe", argv);
            return;
        }
        case 16: {
            long budget = 1 + pick(20);
            int other = 10 + pick(6);
            posix_spawn_file_actions_t actions;
            name = "spawn";
            if (depth >= 2) {
                r = -1;
                break;
            }
            posix_spawn_file_actions_init(&actions);
            switch (pick(3)) {
            case 0:
                posix_spawn_file_actions_adddup2(&actions, other, fd);
                break;
            case 1:
                posix_spawn_file_actions_addclose(&actions, other);
                break;
            default:
                posix_spawn_file_actions_addopen(&actions, other, names[pick(4)],
                                                 O_RDWR | O_CREAT, 0644);
            }
            char go_on[128];
            go_on_args(go_on, sizeof go_on, budget, depth + 1);
            if (log_file) fflush(log_file);
            char *argv[] = {"fd_processes", go_on, dir, log_name, NULL};
            pid_t child;
            r = posix_spawn(&child, "/proc/self/exe", &actions, NULL, argv, environ);
            posix_spawn_file_actions_destroy(&actions);
            r = r == 0 && waitpid(child, NULL, 0) == child ? 0 : -1;
            break;
        }
        case 17:
            name = "send";
            r = fcntl(fd, F_GETFD) < 0 ? -1 : message(20, &fd, 1, 0);
            break;
        case 18: {
            int queued = 0, got;
            name = "recv";
            if (ioctl(21, FIONREAD, &queued) || queued == 0 ||
                message(21, &got, 0, pick(2) ? MSG_CMSG_CLOEXEC : 0) != 1) {
                r = -1;
                break;
            }
            r = dup2(got, fd);
            if (got != fd) close(got);
            break;
        }
        default:
            name = "dup";
            r = dup2(10 + pick(6), fd);
            break;
        }
        if (log_file) {
            struct slot_truth t = truth_of(fd, names, 4);
            fprintf(log_file, "%s %d %lld %d %lld %d\n", name, fd, r < 0 ? -1 : r, t.file, t.pos,
                    t.appends);
        }
    }
}

int main(int argc, char **argv) {
    long n;
    int depth = 0, first = argc > 1 && argv[1][0] != 'c';
    if (first) {
        if (argc != 4 && argc != 5) return 1;
        seed_with(strtoull(argv[1], NULL, 10));
        n = strtol(argv[2], NULL, 10);
        dir = argv[3];
        log_name = argc == 5 ? argv[4] : NULL;
    } else {
        unsigned long long state;
        if ((argc != 3 && argc != 4) || sscanf(argv[1], "c%llu,%ld,%d", &state, &n, &depth) != 3)
            return 1;
        seed_with(state);
        dir = argv[2];
        log_name = argc == 4 ? argv[3] : NULL;
    }
    for (int i = 0; i < 4; i++) snprintf(names[i], sizeof names[i], "%s/f%d", dir, i);
    if (first) {
        /* The slots start empty, whatever this process inherited; the socket's ends are
         * 20 and 21. */
        int sv[2];
        if (syscall(SYS_close_range, 10, 21, 0) || socketpair(AF_UNIX, SOCK_STREAM, 0, sv) ||
            dup2(sv[0], 20) != 20 || dup2(sv[1], 21) != 21 || close(sv[0]) || close(sv[1]))
            return 4;
    }
    if (log_name) {
        if (first) {
            int l = open(log_name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (l < 0 || dup2(l, 100) != 100 || close(l)) return 2;
        }
        if (!(log_file = fdopen(100, "w"))) return 2;
    }
    run(n, depth);
    return log_file && fclose(log_file) ? 3 : 0;
}
