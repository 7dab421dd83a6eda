# SPDX-License-Identifier: Apache-2.0
"""Mapped files hold no file descriptor: 2,000 IPC publications (each a log mapped by the driver and again by
the client) fit under the usual limit of 1,024 open descriptors, as they do with the C driver."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests import procs

pytestmark = pytest.mark.timeout(300)

CHILD = textwrap.dedent("""
    import os, resource, sys
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(1024, hard), hard))
    from aeron import Aeron, Context, MediaDriver
    from aeron.driver import Context as DriverContext
    count = int(sys.argv[2])
    ctx = DriverContext(environ={}, aeron_dir=sys.argv[1], threading_mode="SHARED", ipc_term_buffer_length=65536,
                        counters_buffer_length=16 * 1024 * 1024)
    with MediaDriver.launch_embedded(ctx) as driver, Aeron.connect(Context(driver.aeron_dir)) as client:
        pubs = [client.add_publication("aeron:ipc", 1000 + i) for i in range(count)]
        assert len({p.registration_id for p in pubs}) == count
        print("publications", len(pubs), "open fds", len(os.listdir("/proc/self/fd")), flush=True)
        for p in pubs:
            p.close()
""")


def test_two_thousand_publications_under_1024_descriptors(shm_dir):
    out = subprocess.run([sys.executable, "-c", CHILD, str(shm_dir / "d"), "2000"], capture_output=True, text=True,
                         env=procs.client_env(), timeout=280)
    assert out.returncode == 0, out.stderr[-3000:]
    line = out.stdout.split()
    assert line[:2] == ["publications", "2000"], out.stdout
    assert int(line[-1]) < 200, out.stdout          # a handful of sockets, pipes and files, none per mapping
