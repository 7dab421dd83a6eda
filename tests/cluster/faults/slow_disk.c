/* SPDX-License-Identifier: Apache-2.0
 *
 * A slow disk for the fault campaign: an LD_PRELOAD library that delays every fsync, fdatasync and msync of the
 * process by the milliseconds written (as text) in the file named by FAULTS_SLOW_DISK_FILE, read again at most
 * every 50 ms (0, a missing file or no variable: no delay). Each delayed call appends one byte to
 * "<that file>.count", so the campaign can tell that its fault was felt. It works for any process that forces
 * through libc: our members (os.fsync, mmap.flush, the archive's compiled writer) and Java's
 * (FileChannel.force, MappedByteBuffer.force).
 *
 * Built by the campaign at run time with the machine's cc (slow_disk.py); nothing is built without one.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define REREAD_NS 50000000LL

static long long next_read_ns;
static long delay_ms;

static long long monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void slow_down(void)
{
    const char *path = getenv("FAULTS_SLOW_DISK_FILE");
    long long now;
    long delay;
    if (path == NULL)
    {
        return;
    }
    now = monotonic_ns();
    if (now >= __atomic_load_n(&next_read_ns, __ATOMIC_RELAXED))
    {
        char text[32] = {0};
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        long value = 0;
        if (fd >= 0)
        {
            ssize_t got = read(fd, text, sizeof(text) - 1);
            close(fd);
            if (got > 0)
            {
                value = strtol(text, NULL, 10);
            }
        }
        __atomic_store_n(&delay_ms, value > 0 ? value : 0, __ATOMIC_RELAXED);
        __atomic_store_n(&next_read_ns, now + REREAD_NS, __ATOMIC_RELAXED);
    }
    delay = __atomic_load_n(&delay_ms, __ATOMIC_RELAXED);
    if (delay > 0)
    {
        char count_path[4096];
        struct timespec pause = { delay / 1000, (delay % 1000) * 1000000L };
        size_t length = strlen(path);
        if (length + 7 < sizeof(count_path))
        {
            int fd;
            memcpy(count_path, path, length);
            memcpy(count_path + length, ".count", 7);
            fd = open(count_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
            if (fd >= 0)
            {
                ssize_t ignored = write(fd, "f", 1);
                (void)ignored;
                close(fd);
            }
        }
        while (nanosleep(&pause, &pause) != 0)
        {
        }
    }
}

int fsync(int fd)
{
    static int (*real)(int);
    if (real == NULL)
    {
        real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
    }
    slow_down();
    return real(fd);
}

int fdatasync(int fd)
{
    static int (*real)(int);
    if (real == NULL)
    {
        real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    }
    slow_down();
    return real(fd);
}

int msync(void *address, size_t length, int flags)
{
    static int (*real)(void *, size_t, int);
    if (real == NULL)
    {
        real = (int (*)(void *, size_t, int))dlsym(RTLD_NEXT, "msync");
    }
    slow_down();
    return real(address, length, flags);
}
