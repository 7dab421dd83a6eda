/* SPDX-License-Identifier: Apache-2.0
 * Socket receive timestamps (SO_TIMESTAMPNS, read from a recvmmsg control buffer) and the realtime clock, for
 * the media-rcv-ts-offset / channel-rcv-ts-offset / channel-snd-ts-offset channel options
 * (aeron_udp_channel_transport.c, aeron_timestamps.c). CMSG_* are macros, hence a C shim. */
#ifndef AERON_PY_TIMESTAMPS_H
#define AERON_PY_TIMESTAMPS_H

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#define AERON_PY_TIMESTAMP_CONTROL_LENGTH 64     /* room for one cmsg holding a struct timespec */

/* 0, or -1 with errno set (EINVAL where the platform has no SO_TIMESTAMPNS) */
static inline int aeron_py_enable_receive_timestamps(int fd)
{
#if defined(SO_TIMESTAMPNS)
    int enable = 1;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &enable, sizeof(enable));
#else
    (void)fd;
    errno = EINVAL;
    return -1;
#endif
}

/* the kernel's receive time of a datagram in nanoseconds since the epoch, or -1 when the message carries none */
static inline int64_t aeron_py_message_timestamp_ns(struct msghdr *message)
{
#if defined(SCM_TIMESTAMPNS)
    struct cmsghdr *cmsg;
    for (cmsg = CMSG_FIRSTHDR(message); NULL != cmsg; cmsg = CMSG_NXTHDR(message, cmsg))
    {
        if (SOL_SOCKET == cmsg->cmsg_level && SCM_TIMESTAMPNS == cmsg->cmsg_type)
        {
            struct timespec ts;
            memcpy(&ts, CMSG_DATA(cmsg), sizeof(ts));
            return (int64_t)ts.tv_sec * 1000000000LL + (int64_t)ts.tv_nsec;
        }
    }
#else
    (void)message;
#endif
    return -1;
}

static inline int64_t aeron_py_realtime_ns(void)
{
    struct timespec ts;
    if (0 != clock_gettime(CLOCK_REALTIME, &ts))
    {
        return -1;
    }
    return (int64_t)ts.tv_sec * 1000000000LL + (int64_t)ts.tv_nsec;
}

#endif
