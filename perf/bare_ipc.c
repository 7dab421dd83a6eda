// SPDX-License-Identifier: Apache-2.0
// The IPC round trip of the wake-up design with no Python and no Aeron logic: the floor of that design on this
// machine for perf/aio_counts.py, which compiles and runs it beside our asyncio client and sync ping sample.
//
//     cc -O2 -o bare_ipc perf/bare_ipc.c
//     bare_ipc <pings> <warm-up> [pong_spin_ns] [ping_spin_ns]
//
// Two processes, as in perf/aio_counts.py's IPC ping-pong: "ping" (the asyncio client there) and "pong" (our pong
// sample with --idle wakeup). IPC has no driver hop: a client offers by writing a sequence number to the other's
// image in shared memory, then wakes the reader if its wake-up slot says it is parked (swapping PARKED to AWAKE
// first, so a wake-up is never lost). The pong waits as WakeupIdleStrategy does for an IPC subscription: it spins
// for pong_spin_ns (default 10 µs, WakeupIdleStrategy.DEFAULT_SPIN_NS), gives the spin up after 4 spins in a row
// that ended in a park but for one spin in 8 (SPIN_GIVE_UP_MISSES, SPIN_PROBE_EVERY), marks its slot parked,
// checks its image once more and sleeps in FUTEX_WAIT. The ping waits as an aeron.aio client on an IPC subscription
// does: it spins for ping_spin_ns (default 50 µs: the loop turns of aeron.aio's SHARED_MEMORY_SPIN_S), marks its slot
// parked, checks once more, then sleeps in poll() on an AF_UNIX datagram socket that the pong writes one byte to (the
// loop's add_reader on the board's socket). The ping times each round trip from its offer to the pong's answer in
// its image. Prints one JSON line: p10, p50, p90, p99 in microseconds.
#define _GNU_SOURCE
#include <linux/futex.h>
#include <poll.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { AWAKE = 0, PARKED = 1 };

typedef struct {
    _Alignas(64) _Atomic int64_t image;     // the client's image: last sequence delivered to it
    _Alignas(64) _Atomic int32_t slot;      // its wake-up slot: AWAKE or PARKED (the pong's is a futex word)
} client_t;

typedef struct {
    client_t ping, pong;
} shared_t;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static long futex(_Atomic int32_t *word, int op, int32_t value) {
    return syscall(SYS_futex, (int32_t *)word, op, value, NULL, NULL, 0);
}

// the ping's wake-ups: a datagram socket pair, the pong writing one end, the ping parked in poll() on the other
static int ping_wake_fd[2];

// the writer's half of a hop: the sequence into the reader's image, the reader woken if it is parked
static void offer(client_t *reader, int64_t sequence, int wake_by_socket) {
    atomic_store_explicit(&reader->image, sequence, memory_order_release);
    int32_t state = PARKED;
    if (atomic_load(&reader->slot) == PARKED && atomic_compare_exchange_strong(&reader->slot, &state, AWAKE)) {
        if (wake_by_socket) {
            char byte = 1;
            if (send(ping_wake_fd[1], &byte, 1, 0) != 1) {
                perror("send");
                exit(2);
            }
        } else {
            futex(&reader->slot, FUTEX_WAKE, 1);
        }
    }
}

static int64_t spin_misses, spin_skips;

// the pong's wait for `sequence`: the spin (unless given up), then the park on its futex
static void pong_await(client_t *c, int64_t sequence, int64_t spin_ns) {
    int spin = spin_ns > 0 && (spin_misses < 4 || ++spin_skips % 8 == 0);
    int64_t start = now_ns();
    while (spin && atomic_load_explicit(&c->image, memory_order_acquire) < sequence) {
        if (now_ns() - start >= spin_ns) {
            break;
        }
        __builtin_ia32_pause();
    }
    if (atomic_load_explicit(&c->image, memory_order_acquire) >= sequence) {
        spin_misses = 0;                               // answered within the spin (or already there)
        return;
    }
    if (spin) {
        spin_misses++;
    }
    while (atomic_load_explicit(&c->image, memory_order_acquire) < sequence) {
        atomic_store(&c->slot, PARKED);
        if (atomic_load(&c->image) < sequence) {
            futex(&c->slot, FUTEX_WAIT, PARKED);
        }
        atomic_store(&c->slot, AWAKE);
    }
}

// the ping's wait for `sequence`: its spin, then parked in poll() on its socket, as the loop's add_reader
static void ping_await(client_t *c, int64_t sequence, int64_t spin_ns) {
    int64_t start = now_ns();
    while (atomic_load_explicit(&c->image, memory_order_acquire) < sequence && now_ns() - start < spin_ns) {
        __builtin_ia32_pause();
    }
    while (atomic_load_explicit(&c->image, memory_order_acquire) < sequence) {
        atomic_store(&c->slot, PARKED);
        if (atomic_load(&c->image) < sequence) {
            struct pollfd fd = {.fd = ping_wake_fd[0], .events = POLLIN};
            poll(&fd, 1, 1000);
            char byte;
            while (recv(ping_wake_fd[0], &byte, 1, MSG_DONTWAIT) > 0) {
            }
        }
        int32_t state = PARKED;
        atomic_compare_exchange_strong(&c->slot, &state, AWAKE);
    }
}

static int compare(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: bare_ipc <pings> <warm-up> [pong_spin_ns] [ping_spin_ns]\n");
        return 2;
    }
    int64_t pings = atoll(argv[1]), warm_up = atoll(argv[2]);
    int64_t spin_ns = argc > 3 ? atoll(argv[3]) : 10000, ping_spin_ns = argc > 4 ? atoll(argv[4]) : 50000;
    if (pings <= 0 || warm_up < 0) {
        fprintf(stderr, "bare_ipc: pings must be > 0 and warm-up >= 0\n");
        return 2;
    }
    shared_t *shared = mmap(NULL, sizeof(shared_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED || socketpair(AF_UNIX, SOCK_DGRAM, 0, ping_wake_fd) < 0) {
        perror("set-up");
        return 2;
    }
    int64_t total = pings + warm_up;
    pid_t pong = fork();
    if (pong < 0) {
        perror("fork");
        return 2;
    }
    if (pong == 0) {
        for (int64_t i = 1; i <= total; i++) {
            pong_await(&shared->pong, i, spin_ns);
            offer(&shared->ping, i, 1);
        }
        _exit(0);
    }
    int64_t *rtts = malloc(sizeof(int64_t) * (size_t)pings);
    if (rtts == NULL) {
        perror("malloc");
        return 2;
    }
    for (int64_t i = 1; i <= total; i++) {
        int64_t start = now_ns();
        offer(&shared->pong, i, 0);
        ping_await(&shared->ping, i, ping_spin_ns);
        if (i > warm_up) {
            rtts[i - warm_up - 1] = now_ns() - start;
        }
    }
    waitpid(pong, NULL, 0);
    qsort(rtts, (size_t)pings, sizeof(int64_t), compare);
    printf("{\"p10\": %.2f, \"p50\": %.2f, \"p90\": %.2f, \"p99\": %.2f}\n", rtts[pings / 10] / 1e3,
           rtts[pings / 2] / 1e3, rtts[pings * 9 / 10] / 1e3, rtts[pings * 99 / 100] / 1e3);
    return 0;
}
