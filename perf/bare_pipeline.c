// SPDX-License-Identifier: Apache-2.0
// The archive's data path with no Aeron logic: the ceiling of its design on this machine (perf/bench_archive.py
// compiles and runs it next to dd and the archive).
//
//     cc -O2 -pthread -o bare_pipeline perf/bare_pipeline.c
//     bare_pipeline <dir> <bytes> <payload> [term_length] [run] [sleep|spin] [shared|own]
//
// record: a producer thread copies runs of pre-framed messages (one term's worth of <payload>-byte DATA frames,
// fragmented at an 8 KiB MTU, padding at the term's end, as bench_archive.py's publisher offers them) into a ring of
// three terms in a fresh /dev/shm file (a log), at most a term window (half a term) ahead of the writer; a cleaner
// thread zeroes the ring a term behind the writer (as the driver cleans a log); a writer thread pwrites each run the
// producer published to a file in <dir> (as the recorder does, page cache, no sync).
// replay: a reader thread preads that file into a fresh ring at most a window ahead of the consumer, the cleaner
// zeroes a term behind the consumer, a consumer thread walks the frames by their length words (as a block poll does).
//
// shared: the three threads share one mapping of the ring, made at once (the passes alone); own: each maps the ring
// itself, as the design's parties do (each in its own process, or our driver and archive each with a mapping), and
// maps its pages in one madvise where it first touches them (see view()).
// Positions hand over through atomics; a thread with nothing to do sleeps on a condition variable (no spinning, so
// the three threads leave the two cores to whoever has work). Prints one JSON line: seconds and per-thread CPU
// seconds of each phase.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define HEADER 32
#define MTU 8192

typedef struct {
    int64_t total;          // bytes to move
    int64_t term;           // term length
    int64_t window;         // how far the producer may run ahead of the consumer
    int64_t run;            // bytes per producer step
    uint8_t *ring;          // three terms (shared mode: every thread's view)
    int ring_fd;            // the ring's file (own mode: each thread maps it itself)
    int own;                // 1: each thread its own mapping, as separate processes (and our driver) have
    uint8_t *frames;        // one term of frames (record's source)
    int fd;                 // the segment file
    int replay;             // 0: record, 1: replay
    int spin;               // 1: wait by sched_yield (as the publisher and consumer processes do), 0: sleep
    double done_at;         // when the consumer (writer) finished
    _Atomic int64_t produced, consumed, cleaned;
    pthread_mutex_t lock;
    pthread_cond_t moved;
    double cpu[3];          // producer, cleaner, consumer
    int64_t checksum;       // what the consumer saw (bytes), so nothing is optimised away
} pipeline_t;

static double now_s(clockid_t clock) {
    struct timespec ts;
    clock_gettime(clock, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void announce(pipeline_t *p) {
    if (p->spin) return;
    pthread_mutex_lock(&p->lock);
    pthread_cond_broadcast(&p->moved);
    pthread_mutex_unlock(&p->lock);
}

// Wait until *pos > floor (or the run is over); returns the value seen.
static int64_t wait_past(pipeline_t *p, _Atomic int64_t *pos, int64_t floor) {
    int64_t v = atomic_load_explicit(pos, memory_order_acquire);
    if (v > floor) return v;
    if (p->spin) {
        while ((v = atomic_load_explicit(pos, memory_order_acquire)) <= floor) sched_yield();
        return v;
    }
    pthread_mutex_lock(&p->lock);
    while ((v = atomic_load_explicit(pos, memory_order_acquire)) <= floor)
        pthread_cond_wait(&p->moved, &p->lock);
    pthread_mutex_unlock(&p->lock);
    return v;
}

static void die(const char *what) {
    perror(what);
    exit(2);
}

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

// A thread's view of the ring: the shared one, or (own mode) its own mapping of the file, as each party of the
// design maps the log for itself (the publisher and the consumer are other processes; our driver and archive each
// map it too). A new mapping has no page-table entries: each page costs a fault on first touch, unless mapped in
// one madvise, which is what first_touch does (the best case: about half the cost of the faults here).
static uint8_t *view(pipeline_t *p) {
    if (!p->own) return p->ring;
    uint8_t *ring = mmap(NULL, 3 * p->term, PROT_READ | PROT_WRITE, MAP_SHARED, p->ring_fd, 0);
    if (ring == MAP_FAILED) die("mmap view");
    return ring;
}

static void unview(pipeline_t *p, uint8_t *ring) {
    if (p->own) munmap(ring, 3 * p->term);
}

// Own mode, first lap of the ring: map [pos, pos + n) of this thread's view in one call before touching it.
static void first_touch(pipeline_t *p, uint8_t *ring, int64_t pos, int64_t n, int advice) {
    if (!p->own || pos >= 3 * p->term) return;
    uintptr_t begin = (uintptr_t)(ring + (pos / p->term) % 3 * p->term + pos % p->term) & ~(uintptr_t)4095;
    uintptr_t end = (uintptr_t)(ring + (pos / p->term) % 3 * p->term + pos % p->term + n);
    madvise((void *)begin, end - begin, advice);
}

static void *producer(void *arg) {
    pipeline_t *p = arg;
    uint8_t *ring = view(p);
    int64_t pos = 0;
    while (pos < p->total) {
        // room: a window ahead of the consumer, and the slot three terms back must have been cleaned
        int64_t consumed = atomic_load_explicit(&p->consumed, memory_order_acquire);
        int64_t cleaned = atomic_load_explicit(&p->cleaned, memory_order_acquire);
        int64_t limit = consumed + p->window;
        if (cleaned + 2 * p->term < limit) limit = cleaned + 2 * p->term;
        if (limit > p->total) limit = p->total;
        if (pos >= limit) {
            if (consumed + p->window <= pos) wait_past(p, &p->consumed, pos - p->window);
            else wait_past(p, &p->cleaned, pos - 2 * p->term);
            continue;
        }
        int64_t offset = pos % p->term;
        int64_t n = limit - pos;
        if (n > p->run) n = p->run;
        if (n > p->term - offset) n = p->term - offset;
        first_touch(p, ring, pos, n, MADV_POPULATE_WRITE);          // a new log: allocates the run's pages
        uint8_t *dst = ring + (pos / p->term) % 3 * p->term + offset;
        if (p->replay) {
            ssize_t got = pread(p->fd, dst, n, pos);
            if (got <= 0) die("pread");
            n = got;
        } else {
            memcpy(dst, p->frames + offset, n);
        }
        atomic_store_explicit(&p->produced, pos + n, memory_order_release);
        pos += n;
        announce(p);
    }
    unview(p, ring);
    p->cpu[0] = now_s(CLOCK_THREAD_CPUTIME_ID);
    return NULL;
}

static void *cleaner(void *arg) {
    pipeline_t *p = arg;
    uint8_t *ring = view(p);
    int64_t pos = 0;    // cleaned up to here
    // the driver cleans a term behind the slowest consumer, up to a term boundary at a time
    while (pos < p->total - p->term) {
        int64_t consumed = wait_past(p, &p->consumed, pos + p->term);
        int64_t target = consumed - p->term;
        while (pos < target) {
            int64_t offset = pos % p->term;
            int64_t n = target - pos;
            if (n > p->term - offset) n = p->term - offset;
            if (offset == 0) first_touch(p, ring, pos, p->term, MADV_POPULATE_WRITE);  // written: only maps
            memset(ring + (pos / p->term) % 3 * p->term + offset, 0, n);
            pos += n;
        }
        atomic_store_explicit(&p->cleaned, pos, memory_order_release);
        announce(p);
    }
    unview(p, ring);
    p->cpu[1] = now_s(CLOCK_THREAD_CPUTIME_ID);
    return NULL;
}

static void *consumer(void *arg) {
    pipeline_t *p = arg;
    uint8_t *ring = view(p);
    int64_t pos = 0, seen = 0, frame = 0;   // frame: where the next frame starts (replay)
    while (pos < p->total) {
        int64_t produced = wait_past(p, &p->produced, pos);
        first_touch(p, ring, pos, produced - pos, MADV_POPULATE_READ);
        if (p->replay) {
            // a block poll: step from frame to frame by the length words (a run may end inside a frame; its header
            // is whole, the runs being 32-byte aligned)
            while (frame < produced) {
                int32_t length = *(volatile int32_t *)(ring + (frame / p->term) % 3 * p->term + frame % p->term);
                if (length < HEADER) die("frame");
                int64_t aligned = (length + 31) & ~31;
                seen += aligned;
                frame += aligned;
            }
            pos = produced;
        }
        while (pos < produced) {
            int64_t offset = pos % p->term;
            int64_t n = produced - pos;
            if (n > p->term - offset) n = p->term - offset;
            uint8_t *src = ring + (pos / p->term) % 3 * p->term + offset;
            int64_t done = 0;
            while (done < n) {
                ssize_t put = pwrite(p->fd, src + done, n - done, pos + done);
                if (put <= 0) die("pwrite");
                done += put;
            }
            seen += n;
            pos += n;
        }
        atomic_store_explicit(&p->consumed, pos, memory_order_release);
        announce(p);
    }
    p->checksum = seen;
    p->done_at = now_s(CLOCK_MONOTONIC);
    unview(p, ring);
    p->cpu[2] = now_s(CLOCK_THREAD_CPUTIME_ID);
    return NULL;
}

// One term of DATA frames of <payload>-byte messages, fragmented at the MTU; a PAD frame fills the term's end.
static void build_frames(uint8_t *frames, int64_t term, int64_t payload) {
    int64_t max_payload = MTU - HEADER;
    int64_t k = (payload + max_payload - 1) / max_payload;
    int64_t message = 0;
    for (int64_t j = 0; j < k; j++) {
        int64_t n = j < k - 1 ? max_payload : payload - (k - 1) * max_payload;
        message += (n + HEADER + 31) & ~31;
    }
    memset(frames, 0x5a, term);
    int64_t offset = 0;
    while (offset + message <= term) {
        for (int64_t j = 0; j < k; j++) {
            int64_t n = j < k - 1 ? max_payload : payload - (k - 1) * max_payload;
            uint8_t *h = frames + offset;
            memset(h, 0, HEADER);
            *(int32_t *)h = (int32_t)(n + HEADER);
            h[5] = (uint8_t)((j == 0 ? 0x80 : 0) | (j == k - 1 ? 0x40 : 0));
            h[6] = 1;                                   // DATA
            *(int32_t *)(h + 8) = (int32_t)offset;
            offset += (n + HEADER + 31) & ~31;
        }
    }
    if (offset < term) {
        memset(frames + offset, 0, HEADER);
        *(int32_t *)(frames + offset) = (int32_t)(term - offset);
        frames[offset + 6] = 0;                         // PAD
    }
}

static void new_ring(pipeline_t *p, char *path) {
    snprintf(path, 256, "/dev/shm/bare-pipeline-%d-%ld.logbuffer", getpid(), (long)random());
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) die("open ring");
    if (ftruncate(fd, 3 * p->term) != 0) die("ftruncate ring");
    p->ring_fd = fd;
    p->ring = NULL;
    if (p->own) return;         // each thread maps it (and its producer allocates its pages)
    p->ring = mmap(NULL, 3 * p->term, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p->ring == MAP_FAILED) die("mmap ring");
    // the best case of a new log: its pages allocated and mapped in one call, not one fault per page
    madvise(p->ring, 3 * p->term, MADV_POPULATE_WRITE);
}

// One phase: seconds (the replay's from before its new log is made, as a replay's set-up counts; the record's from
// the first copy, as the publisher's log exists before it offers) and CPU seconds per thread (the new log's making
// added to the replay's reader, which makes it in the archive).
static double run_phase(pipeline_t *p, double cpu[3]) {
    char ring_path[256];
    double t0 = now_s(CLOCK_MONOTONIC);
    double c0 = now_s(CLOCK_THREAD_CPUTIME_ID);
    new_ring(p, ring_path);
    double setup_cpu = now_s(CLOCK_THREAD_CPUTIME_ID) - c0;
    if (!p->replay) t0 = now_s(CLOCK_MONOTONIC);
    atomic_store(&p->produced, 0);
    atomic_store(&p->consumed, 0);
    atomic_store(&p->cleaned, 0);
    pthread_t threads[3];
    void *(*bodies[3])(void *) = {producer, cleaner, consumer};
    for (int i = 0; i < 3; i++)
        if (pthread_create(&threads[i], NULL, bodies[i], p) != 0) die("pthread_create");
    for (int i = 0; i < 3; i++) pthread_join(threads[i], NULL);
    if (p->ring != NULL) munmap(p->ring, 3 * p->term);
    close(p->ring_fd);
    unlink(ring_path);
    double elapsed = p->done_at - t0;           // to the consumer's end, as the benchmark times ours
    for (int i = 0; i < 3; i++) cpu[i] = p->cpu[i];
    if (p->replay) cpu[0] += setup_cpu;
    return elapsed;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s <dir> <bytes> <payload> [term_length] [run] [sleep|spin] [shared|own]\n", argv[0]);
        return 1;
    }
    pipeline_t p;
    memset(&p, 0, sizeof p);
    int64_t payload = atoll(argv[3]);
    p.term = argc > 4 ? atoll(argv[4]) : 16 << 20;
    p.run = argc > 5 ? atoll(argv[5]) : 1 << 20;
    p.spin = argc > 6 && strcmp(argv[6], "spin") == 0;
    p.own = argc > 7 && strcmp(argv[7], "own") == 0;
    p.window = p.term / 2;
    p.total = atoll(argv[2]) / p.term * p.term;         // whole terms: every term ends in its padding
    if (p.total < p.term || payload <= 0) {
        fprintf(stderr, "need at least one term and a payload\n");
        return 1;
    }
    pthread_mutex_init(&p.lock, NULL);
    pthread_cond_init(&p.moved, NULL);
    srandom(time(NULL) ^ getpid());
    if (posix_memalign((void **)&p.frames, 4096, p.term) != 0) die("posix_memalign");
    build_frames(p.frames, p.term, payload);

    char file[512];
    snprintf(file, sizeof file, "%s/bare-pipeline-%d.rec", argv[1], getpid());
    p.fd = open(file, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (p.fd < 0) die("open segment");

    double record_cpu[3], replay_cpu[3];
    p.replay = 0;
    double record_s = run_phase(&p, record_cpu);
    int64_t recorded = p.checksum;
    p.replay = 1;
    double replay_s = run_phase(&p, replay_cpu);
    int64_t replayed = p.checksum;
    close(p.fd);
    unlink(file);
    if (recorded != p.total || replayed != p.total) {
        fprintf(stderr, "moved %lld and %lld of %lld bytes\n", (long long)recorded, (long long)replayed,
                (long long)p.total);
        return 2;
    }
    printf("{\"bytes\": %lld, \"record_s\": %.6f, \"replay_s\": %.6f, "
           "\"record_cpu_s\": {\"producer\": %.6f, \"cleaner\": %.6f, \"writer\": %.6f}, "
           "\"replay_cpu_s\": {\"reader\": %.6f, \"cleaner\": %.6f, \"consumer\": %.6f}}\n",
           (long long)p.total, record_s, replay_s, record_cpu[0], record_cpu[1], record_cpu[2],
           replay_cpu[0], replay_cpu[1], replay_cpu[2]);
    return 0;
}
