# SPDX-License-Identifier: Apache-2.0
"""A held request on the kernel's CPU latency QoS (``/dev/cpu_dma_latency``).

Linux keeps one system-wide CPU latency limit, the smallest of the requests held (Documentation/power/
pm_qos_interface.rst): a process holds a request by keeping the device open after writing its maximum tolerated
wake-up latency in microseconds, as a native-endian 32-bit int (the other accepted form, a hex string, is not
used), and drops it by closing the file. The cpuidle governor then keeps idle CPUs out of every idle state whose
exit latency exceeds the limit; at 0 an idle CPU stays in the polling state, and a thread woken on it runs at
once instead of after the CPU leaves a halt (on a VM, a halted vCPU's wake-up costs tens of microseconds).

This is opt-in machinery for the driver (``aeron.driver.cpu.latency.qos.us``, docs/wakeup.md), cold and
per-process: it is taken once at start and released at close. The device is root's only by default.
"""
from __future__ import annotations

import errno
import os
import struct
import threading

from aeron.common.errors import CpuLatencyQosError

DEFAULT_CPU_LATENCY_QOS_PATH = "/dev/cpu_dma_latency"
# the kernel's request is an s32; larger values are not representable, negative ones are refused
MAX_CPU_LATENCY_QOS_US = 2**31 - 1

_VALUE = struct.Struct("=i")        # native byte order and size: what the device's write expects


def check_cpu_latency_us(max_latency_us: object) -> int:
    """``max_latency_us`` as an int in 0..2**31-1; anything else raises CpuLatencyQosError."""
    if isinstance(max_latency_us, bool) or not isinstance(max_latency_us, int):
        raise CpuLatencyQosError(f"CPU latency QoS must be an integer number of microseconds, got {max_latency_us!r}")
    if not 0 <= max_latency_us <= MAX_CPU_LATENCY_QOS_US:
        raise CpuLatencyQosError(
            f"CPU latency QoS must be in 0..{MAX_CPU_LATENCY_QOS_US} us, got {max_latency_us}")
    return max_latency_us


class CpuLatencyRequest:
    """A CPU latency QoS request held from construction until :meth:`release` (or the end of a ``with`` block).

    ``CpuLatencyRequest(max_latency_us, path="/dev/cpu_dma_latency")`` opens ``path`` for writing and writes
    ``max_latency_us`` as a native 4-byte int; the request lasts while the file stays open. The file descriptor is
    not inherited by child processes, so a request never outlives its holder in a child. Raises
    CpuLatencyQosError (a ConfigurationError) for a value out of range, or naming ``path`` and the OS error when
    the device cannot be opened or written (absent: no PM QoS in this kernel; permission denied: the device is
    root's only unless granted).
    """

    __slots__ = ("_fd", "_lock", "max_latency_us", "path")

    def __init__(self, max_latency_us: int, path: str = DEFAULT_CPU_LATENCY_QOS_PATH) -> None:
        """Open ``path`` and write ``max_latency_us`` (microseconds, 0..2**31-1): the request is held on return."""
        self.max_latency_us = check_cpu_latency_us(max_latency_us)
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        self._fd = -1
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CLOEXEC)
        except OSError as exc:
            raise CpuLatencyQosError(f"cannot open {self.path} to hold a CPU latency QoS request: {exc}"
                                     f"{_hint(exc)}", self.path, exc) from exc
        try:
            written = os.write(fd, _VALUE.pack(self.max_latency_us))
            if written != _VALUE.size:
                # the device takes the value in one write or not at all: a partial write is not a request
                raise CpuLatencyQosError(f"short write of the CPU latency QoS request to {self.path}: "
                                         f"{written} of {_VALUE.size} bytes", self.path)
        except OSError as exc:
            os.close(fd)
            raise CpuLatencyQosError(f"cannot write the CPU latency QoS request ({self.max_latency_us} us) to "
                                     f"{self.path}: {exc}", self.path, exc) from exc
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd

    @property
    def is_held(self) -> bool:
        """True until :meth:`release`."""
        return self._fd >= 0

    @property
    def fd(self) -> int:
        """The open file descriptor that holds the request, -1 once released."""
        return self._fd

    def release(self) -> None:
        """Close the file, which drops the request. Idempotent."""
        with self._lock:
            fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)

    def __enter__(self) -> CpuLatencyRequest:
        """Return the held request; the ``with`` block releases it."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Release the request."""
        self.release()

    def __repr__(self) -> str:
        """Path, value and state."""
        state = "held" if self.is_held else "released"
        return f"<CpuLatencyRequest {self.path} {self.max_latency_us} us {state}>"


def _hint(exc: OSError) -> str:
    if exc.errno in (errno.EACCES, errno.EPERM):
        return " (the device is root's only by default: run as root, or grant write access to the driver's user)"
    if exc.errno == errno.ENOENT:
        return " (absent: a kernel without the CPU latency QoS device, or a wrong path)"
    return ""
