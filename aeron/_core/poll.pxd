# SPDX-License-Identifier: Apache-2.0
# poll(2)'s descriptor and events, declared once for the modules that wait on or look at sockets (udp_transport's
# ReadySockets, data_spin's DataSpin, wakeup's Waiter, which declares ppoll beside its own timespec).
cdef extern from "<poll.h>" nogil:
    struct pollfd:
        int fd
        short events
        short revents
    short POLLIN
    short POLLERR
    int poll(pollfd *fds, unsigned long nfds, int timeout)
