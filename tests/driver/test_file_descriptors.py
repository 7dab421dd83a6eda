# SPDX-License-Identifier: Apache-2.0
"""Mapped files hold no file descriptor: 400 IPC publications (each a log mapped by the driver and again by the
client: 800 mappings) fit under a limit of 64 open descriptors, as they do with the C driver. (The limit is lowered
so that the proof costs few publications: a descriptor kept per mapping would need 12 times the limit.)"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from tests import procs

pytestmark = pytest.mark.timeout(120)
LIMIT = 64
PUBLICATIONS = 400

CHILD = textwrap.dedent("""
    import os, resource, sys
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(int(sys.argv[3]), hard), hard))
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


def test_publications_mapping_many_times_the_descriptor_limit_fit_under_it(shm_dir):
    out = subprocess.run([sys.executable, "-c", CHILD, str(shm_dir / "d"), str(PUBLICATIONS), str(LIMIT)],
                         capture_output=True, text=True, env=procs.client_env(), timeout=100)
    assert out.returncode == 0, out.stderr[-3000:]
    line = out.stdout.split()
    assert line[:2] == ["publications", str(PUBLICATIONS)], out.stdout
    assert int(line[-1]) < LIMIT // 2, out.stdout   # a handful of sockets, pipes and files, none per mapping
