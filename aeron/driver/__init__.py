# SPDX-License-Identifier: Apache-2.0
"""The media driver (IPC and UDP): ``MediaDriver``, ``MediaDriver.Context``, ``ThreadingMode``.

Run it standalone with ``python -m aeron.driver [key=value ...]`` (reads ``AERON_*`` like aeronmd).
"""
from aeron.driver.media_driver import Context, MediaDriver, ThreadingMode, is_driver_active

__all__ = ["MediaDriver", "Context", "ThreadingMode", "is_driver_active"]
