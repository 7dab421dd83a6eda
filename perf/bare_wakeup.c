// SPDX-License-Identifier: Apache-2.0
// The UDP round trip of the wake-up design with no Python and no Aeron logic: the floor of that design on this
// machine (perf/bench_wakeup.py compiles and runs it beside our driver and samples).
//
//     cc -O2 -o bare_wakeup perf/bare_wakeup.c
//     bare_wakeup <pings> <warm-up> [spin_ns] [touch_pages] [park_timeout_ns] [yield_ns]
//
// Three processes, as in our UDP ping-pong on one driver: a "driver" and two clients, "ping" and "pong". A client
// offers by writing a sequence number to shared memory (its publication); the driver, spinning (its data spin),
// sees it, sends a 32-byte datagram with sendto from the channel's sending socket to its receiving socket on
// 127.0.0.1, receives it with recv (the datagram is there when sendto returns, as for our driver), writes the
// sequence number to the other client's image and, if that client is parked, wakes it with FUTEX_WAKE. A client
// waiting for its image spins for spin_ns (default 0, as our clients of network streams), then parks: it marks
// its slot parked, checks its image once more and sleeps in FUTEX_WAIT on the slot (the driver swaps the slot
// from parked to woken before its FUTEX_WAKE, so a wake-up is never lost). The ping times each round trip from
// its offer to the pong's arrival in its image. Prints one JSON line: p10, p50, p90, p99 in microseconds.
// touch_pages (an experiment, default 0): after each offer, before it waits, a client writes one byte in each of
// that many pages of its own, as an interpreter's run touches its code and objects: what a larger working set per
// wake-up costs on this machine (docs/wakeup.md). park_timeout_ns (an experiment, default 0: none): each FUTEX_WAIT
// bounded by that timeout, as a bounded park is. yield_ns (default 0): before it parks, a client marks its slot
// yielding and calls sched_yield in a loop for up to that long, watching the slot; the driver swaps a yielding slot
// to awake with no FUTEX_WAKE (as our clients of network streams do by default, 100 µs: docs/wakeup.md), and a
// yield that found another process on the CPU holds the next phases off, as ours.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <linux/futex.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { AWAKE = 0, PARKED = 1, YIELDING = 2 };

typedef struct {
    _Alignas(64) _Atomic int64_t offered;   // the client's publication: last sequence offered
    _Alignas(64) _Atomic int64_t image;     // the client's image: last sequence delivered to it
    _Alignas(64) _Atomic int32_t slot;      // its wake-up slot: AWAKE, PARKED or YIELDING (a futex word)
} client_t;

typedef struct {
    client_t ping, pong;
    _Alignas(64) _Atomic int32_t stop;
} shared_t;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static struct timespec park_timeout;             // zero: a park waits with no timeout

static long futex(_Atomic int32_t *word, int op, int32_t value) {
    const struct timespec *timeout = op == FUTEX_WAIT && (park_timeout.tv_sec || park_timeout.tv_nsec) ? &park_timeout
                                                                                                     : NULL;
    return syscall(SYS_futex, (int32_t *)word, op, value, timeout, NULL, 0);
}

static int udp_socket(struct sockaddr_in *bound) {
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t length = sizeof(address);
    if (fd < 0 || bind(fd, (struct sockaddr *)&address, sizeof(address)) < 0 ||
        getsockname(fd, (struct sockaddr *)bound, &length) < 0) {
        perror("udp socket");
        exit(2);
    }
    return fd;
}

// a client's working set beyond this loop's (touch_pages): one byte written in each of that many distinct pages
static volatile char *working_set;
static int64_t touch_pages;

static void touch_working_set(void) {
    for (int64_t i = 0; i < touch_pages; i++) {
        working_set[i * 4096 + 64]++;
    }
}

static int64_t yield_ns;
// as ours (aeron/_core/wakeup.pyx): a yield of 500 µs or more had another process on the CPU; the phases are then
// held off for 100 ms, doubling up to 1.6 s while the first phase after each hold-off is contended too
static int64_t yield_resume_ns, yield_holdoff_ns;
static int last_phase_contended;

// after the re-check: yield for yield_ns while the slot stays YIELDING, then park unless the driver swapped it
static void yield_then_park(client_t *c) {
    int32_t expected = PARKED;
    int64_t start = yield_ns > 0 ? now_ns() : 0;
    if (yield_ns > 0 && start >= yield_resume_ns && atomic_compare_exchange_strong(&c->slot, &expected, YIELDING)) {
        int64_t before, after = start;
        int contended = 0;
        while (atomic_load(&c->slot) == YIELDING && after - start < yield_ns) {
            before = after;
            sched_yield();
            after = now_ns();
            if (after - before >= 500000) {
                contended = 1;
                break;
            }
        }
        if (contended) {
            if (!last_phase_contended) {
                yield_holdoff_ns = 100000000;
            } else if (yield_holdoff_ns < 1600000000) {
                yield_holdoff_ns *= 2;
            }
            yield_resume_ns = after + yield_holdoff_ns;
        }
        last_phase_contended = contended;
        expected = YIELDING;
        if (!atomic_compare_exchange_strong(&c->slot, &expected, PARKED)) {
            return;                                     // the driver swapped it to AWAKE: woken
        }
    }
    futex(&c->slot, FUTEX_WAIT, PARKED);
}

// waits until the client's image holds `sequence`: spin for spin_ns, then park (yielding first for yield_ns)
static void await_image(client_t *c, int64_t sequence, int64_t spin_ns) {
    touch_working_set();
    int64_t start = now_ns();
    while (atomic_load_explicit(&c->image, memory_order_acquire) < sequence) {
        if (now_ns() - start < spin_ns) {
            __builtin_ia32_pause();
            continue;
        }
        atomic_store(&c->slot, PARKED);
        if (atomic_load(&c->image) < sequence) {
            yield_then_park(c);
        }
        atomic_store(&c->slot, AWAKE);
    }
}

// the driver's half of one hop: the datagram out and back in on loopback, into the image, the reader woken
static void deliver(int send_fd, int recv_fd, struct sockaddr_in *to, client_t *reader, int64_t sequence) {
    char datagram[32] = {0};
    memcpy(datagram, &sequence, sizeof(sequence));
    if (sendto(send_fd, datagram, sizeof(datagram), 0, (struct sockaddr *)to, sizeof(*to)) != sizeof(datagram)) {
        perror("sendto");
        exit(2);
    }
    char in[64];
    while (recv(recv_fd, in, sizeof(in), 0) < 0) {
        __builtin_ia32_pause();
    }
    int64_t received;
    memcpy(&received, in, sizeof(received));
    // a full fence between the image's store and the slot's load, as the reader has between its slot's and its
    // image's: without it the load may pass the store (x86 lets a load pass an earlier store), the reader then marking
    // its slot parked and finding the old image while the driver finds the slot awake: a lost wake-up, and with no
    // park timeout a hang (seen once in 2026-12-07's runs)
    atomic_store_explicit(&reader->image, received, memory_order_seq_cst);
    int32_t state = atomic_load(&reader->slot);
    // a failed swap reloads the state: a yielding reader may have just gone to PARKED, and must still be woken
    while (state == PARKED || state == YIELDING) {
        if (atomic_compare_exchange_strong(&reader->slot, &state, AWAKE)) {
            if (state == PARKED) {
                futex(&reader->slot, FUTEX_WAKE, 1);
            }                                           // YIELDING: it sees AWAKE between its yields
            break;
        }
    }
}

static int compare(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: bare_wakeup <pings> <warm-up> [spin_ns] [touch_pages] [park_timeout_ns] [yield_ns]\n");
        return 2;
    }
    int64_t pings = atoll(argv[1]), warm_up = atoll(argv[2]), spin_ns = argc > 3 ? atoll(argv[3]) : 0;
    touch_pages = argc > 4 ? atoll(argv[4]) : 0;
    int64_t timeout_ns = argc > 5 ? atoll(argv[5]) : 0;
    yield_ns = argc > 6 ? atoll(argv[6]) : 0;
    if (timeout_ns < 0 || yield_ns < 0) {
        fprintf(stderr, "park_timeout_ns and yield_ns must be >= 0\n");
        return 2;
    }
    park_timeout.tv_sec = timeout_ns / 1000000000;
    park_timeout.tv_nsec = timeout_ns % 1000000000;
    if (touch_pages < 0 || touch_pages > (1 << 20)) {
        fprintf(stderr, "touch_pages must be 0 to %d\n", 1 << 20);
        return 2;
    }
    if (touch_pages > 0) {                              // each client's own copy after fork, pages made resident here
        working_set = mmap(NULL, (size_t)touch_pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                           -1, 0);
        if (working_set == MAP_FAILED) {
            fprintf(stderr, "no memory for the working set\n");
            return 2;
        }
        for (int64_t i = 0; i < touch_pages; i++) {
            working_set[i * 4096] = 1;
        }
    }
    int64_t total = pings + warm_up;
    shared_t *s = mmap(NULL, sizeof(shared_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (s == MAP_FAILED || pings <= 0 || warm_up < 0) {
        fprintf(stderr, "bad arguments or no memory\n");
        return 2;
    }
    memset(s, 0, sizeof(*s));
    // two channels, as the ping and the pong streams: a sending and a receiving socket each
    struct sockaddr_in ping_rx, pong_rx, unused;
    int ping_tx_fd = udp_socket(&unused), ping_rx_fd = udp_socket(&ping_rx);
    int pong_tx_fd = udp_socket(&unused), pong_rx_fd = udp_socket(&pong_rx);

    pid_t driver = fork();
    if (driver == 0) {                                  // the driver: its data spin, for the whole run
        int64_t ping_seen = 0, pong_seen = 0;
        while (!atomic_load(&s->stop)) {
            int64_t offered = atomic_load_explicit(&s->ping.offered, memory_order_acquire);
            if (offered > ping_seen) {
                ping_seen = offered;
                deliver(ping_tx_fd, ping_rx_fd, &ping_rx, &s->pong, offered);
            }
            offered = atomic_load_explicit(&s->pong.offered, memory_order_acquire);
            if (offered > pong_seen) {
                pong_seen = offered;
                deliver(pong_tx_fd, pong_rx_fd, &pong_rx, &s->ping, offered);
            }
            __builtin_ia32_pause();
        }
        _exit(0);
    }
    pid_t pong = fork();
    if (pong == 0) {                                    // the pong: each ping offered straight back
        for (int64_t i = 1; i <= total; i++) {
            await_image(&s->pong, i, spin_ns);
            atomic_store_explicit(&s->pong.offered, i, memory_order_release);
        }
        _exit(0);
    }
    int64_t *samples = calloc((size_t)pings, sizeof(int64_t));
    usleep(100000);
    for (int64_t i = 1; i <= total; i++) {              // the ping
        int64_t start = now_ns();
        atomic_store_explicit(&s->ping.offered, i, memory_order_release);
        await_image(&s->ping, i, spin_ns);
        if (i > warm_up) {
            samples[i - warm_up - 1] = now_ns() - start;
        }
    }
    waitpid(pong, NULL, 0);
    atomic_store(&s->stop, 1);
    waitpid(driver, NULL, 0);
    qsort(samples, (size_t)pings, sizeof(int64_t), compare);
    printf("{\"p10\": %.2f, \"p50\": %.2f, \"p90\": %.2f, \"p99\": %.2f}\n", samples[pings / 10] / 1e3,
           samples[pings / 2] / 1e3, samples[pings * 9 / 10] / 1e3, samples[pings * 99 / 100] / 1e3);
    return 0;
}
