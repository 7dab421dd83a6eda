# SPDX-License-Identifier: Apache-2.0
"""Run by test_disk_full.py inside a user and mount namespace, with argv[1] a small tmpfs: an embedded driver and a
client on it; prints one JSON line of what happened."""
from __future__ import annotations

import json
import os
import sys

from aeron import Aeron, Context
from aeron.common.errors import ErrorCode, StorageSpaceError
from aeron.driver import Context as DriverContext, MediaDriver

KIB = 1024


def main(root: str) -> None:
    out: dict = {}
    ctx = DriverContext(environ={}, aeron_dir=os.path.join(root, "aeron"), threading_mode="SHARED",
                        conductor_buffer_length=64 * KIB + 768, clients_buffer_length=64 * KIB + 128,
                        counters_buffer_length=64 * KIB, error_buffer_length=64 * KIB,
                        loss_report_buffer_length=64 * KIB, ipc_term_buffer_length=64 * KIB,
                        term_buffer_length=64 * KIB)
    with MediaDriver.launch_embedded(ctx) as driver, Aeron.connect(Context(driver.aeron_dir)) as client:
        small = client.add_publication("aeron:ipc", 1)
        sub = client.add_subscription("aeron:ipc", 1)
        try:
            client.add_publication("aeron:ipc?term-length=4m", 2)         # 12 MiB on a 6 MiB file system
            out["big"] = "created"
        except StorageSpaceError as exc:
            out["big"] = [type(exc).__name__, int(exc.error_code) == ErrorCode.STORAGE_SPACE, str(exc)]
        # fill what is left but ~100 KiB, then a 64 KiB-term log (~196 KiB) does not fit either
        stat = os.statvfs(root)
        with open(os.path.join(root, "filler"), "wb") as filler:
            os.posix_fallocate(filler.fileno(), 0, stat.f_bavail * stat.f_frsize - 100 * KIB)
        try:
            client.add_exclusive_publication("aeron:ipc", 3)
            out["full"] = "created"
        except StorageSpaceError as exc:
            out["full"] = [type(exc).__name__, int(exc.error_code) == ErrorCode.STORAGE_SPACE]
        # the driver still serves: the stream that existed flows, and with space back a new publication is made
        got = []
        for i in range(100):
            while small.offer(i.to_bytes(4, "little")) < 0:
                sub.poll(lambda buffer, offset, length, header: got.append(buffer.get_bytes(offset, length)), 10)
        while len(got) < 100:
            sub.poll(lambda buffer, offset, length, header: got.append(buffer.get_bytes(offset, length)), 10)
        out["flowed"] = [int.from_bytes(m, "little") for m in got] == list(range(100))
        os.unlink(os.path.join(root, "filler"))
        out["after"] = client.add_exclusive_publication("aeron:ipc", 3).stream_id
        out["leftover_logs"] = sorted(os.listdir(os.path.join(driver.aeron_dir, "publications")))
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
