# SPDX-License-Identifier: Apache-2.0
# UdpTransport: batched recvmmsg/sendmmsg over preallocated slots for the driver's channel endpoints.
from cpython.buffer cimport Py_buffer
from libc.errno cimport EAGAIN, EINTR
from libc.stdint cimport int32_t, int64_t, uint8_t

cdef extern from "<sys/socket.h>" nogil:
    ctypedef unsigned int socklen_t
    ctypedef unsigned short sa_family_t
    struct sockaddr:
        sa_family_t sa_family
    struct sockaddr_storage:
        sa_family_t ss_family
    struct iovec:
        void *iov_base
        size_t iov_len
    struct msghdr:
        void *msg_name
        socklen_t msg_namelen
        iovec *msg_iov
        size_t msg_iovlen
        void *msg_control
        size_t msg_controllen
        int msg_flags
    struct mmsghdr:
        msghdr msg_hdr
        unsigned int msg_len
    int recvmmsg(int fd, mmsghdr *msgvec, unsigned int vlen, int flags, void *timeout)
    int sendmmsg(int fd, mmsghdr *msgvec, unsigned int vlen, int flags)
    ssize_t recvfrom(int fd, void *buf, size_t n, int flags, sockaddr *addr, socklen_t *addr_len)
    ssize_t sendto(int fd, const void *buf, size_t n, int flags, const sockaddr *addr, socklen_t addr_len)
    int MSG_DONTWAIT
    int AF_INET
    int AF_INET6

cdef extern from "<netinet/in.h>" nogil:
    struct in_addr:
        unsigned int s_addr
    struct sockaddr_in:
        sa_family_t sin_family
        unsigned short sin_port
        in_addr sin_addr
    struct in6_addr:
        unsigned char s6_addr[16]
    struct sockaddr_in6:
        sa_family_t sin6_family
        unsigned short sin6_port
        unsigned int sin6_flowinfo
        in6_addr sin6_addr
        unsigned int sin6_scope_id
    unsigned short ntohs(unsigned short)
    unsigned short htons(unsigned short)

cdef extern from "<errno.h>" nogil:
    int ECONNREFUSED
    int EWOULDBLOCK

cdef extern from "aeron_timestamps.h" nogil:
    int AERON_PY_TIMESTAMP_CONTROL_LENGTH
    int aeron_py_enable_receive_timestamps(int fd)
    int64_t aeron_py_message_timestamp_ns(msghdr *message)
    int64_t aeron_py_realtime_ns()


cdef inline bint nothing_sent(int err) noexcept nogil:
    """A send or receive error that only means nothing went (a full socket, an interrupt, a port refused)."""
    return err == EAGAIN or err == EWOULDBLOCK or err == EINTR or err == ECONNREFUSED


cdef inline int send_datagrams(int fd, mmsghdr *tx, iovec *iov, int count, sockaddr_storage *destination,
                               socklen_t destination_length) noexcept nogil:
    """One sendmmsg of the ``count`` datagrams ``iov[0:count]``, each to ``destination``, through the headers ``tx``:
    how many the socket took, or -1 with errno set."""
    cdef int i
    for i in range(count):
        tx[i].msg_hdr.msg_name = destination
        tx[i].msg_hdr.msg_namelen = destination_length
        tx[i].msg_hdr.msg_iov = &iov[i]
        tx[i].msg_hdr.msg_iovlen = 1
        tx[i].msg_hdr.msg_control = NULL
        tx[i].msg_hdr.msg_controllen = 0
        tx[i].msg_hdr.msg_flags = 0
    return sendmmsg(fd, tx, <unsigned int>count, 0)


cdef int to_sockaddr(object address, int family, sockaddr_storage *out, socklen_t *length) except -1


cdef enum:
    MAX_BATCH = 64                        # most datagrams per recvmmsg/sendmmsg call
    NO_TIMESTAMP = -1                     # timestamp offset: none (AERON_NULL_VALUE)
    RESERVED_VALUE_OFFSET = -8            # timestamp offset: the frame's reserved value (AERON_UDP_CHANNEL_...)


cdef class UdpTransport:
    cdef int fd
    cdef readonly object socket               # the Python socket: keeps the fd alive, closes it
    cdef readonly int family
    cdef readonly int batch                   # receive slots
    cdef readonly int slot_length
    cdef readonly list slots                  # bytearray per slot (never resized: C holds their pointers)
    cdef readonly object receive_buffer       # slots[0], for single-datagram callers
    cdef readonly object bound_address
    cdef readonly bint use_mmsg
    cdef uint8_t **slot_data
    cdef mmsghdr *rx
    cdef iovec *rx_iov
    cdef sockaddr_storage *rx_addr
    cdef int *rx_len                          # datagram length per slot after receive_batch
    cdef int received                         # slots filled by the last receive_batch
    cdef mmsghdr *tx
    cdef iovec *tx_iov
    cdef sockaddr_storage destination         # cached destination for send_term_batch / send
    cdef socklen_t destination_length
    cdef object destination_key
    cdef Py_buffer *slot_views             # pins on the slot bytearrays
    cdef int pinned                         # how many slot_views are held
    cdef bint closed
    cdef readonly object name
    # channel timestamps (media-rcv-ts-offset, channel-rcv-ts-offset, channel-snd-ts-offset): where in each DATA
    # frame (its reserved value, or an offset into its payload) the time goes; NO_TIMESTAMP when off
    cdef readonly int32_t media_receive_timestamp_offset
    cdef readonly int32_t channel_receive_timestamp_offset
    cdef readonly int32_t channel_send_timestamp_offset
    cdef uint8_t *rx_control                  # one control buffer per slot for SO_TIMESTAMPNS (media timestamps)


    cdef void _release(self) noexcept
    cdef int receive_slots(self, int most=*) noexcept nogil
    cdef int received_or_raise(self, int n) except -1
    cdef void _stamp_received(self, int count, bint has_control) noexcept nogil
    cdef int _check(self) except -1
    cdef int _destination(self, object address) except -1
