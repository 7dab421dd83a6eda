# SPDX-License-Identifier: Apache-2.0
"""The README's main command: the two-process demo must deliver every message in order."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.mark.timeout(90)
def test_demo_delivers_every_message_in_order():
    proc = subprocess.run(
        [sys.executable, "-m", "aeron.samples.demo", "--messages", "20000", "--size", "64",
         "--term-length", "65536", "--rate", "20000", "--timeout", "60"],
        capture_output=True, text=True, timeout=80, cwd=ROOT,
        env={**os.environ, "PYTHONPATH": ROOT})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # term length 64 KiB with 40,000 96-byte frames forces many rotations and cleanings
    assert "received 40000 messages, 0 out of order" in proc.stdout
    assert "p99.9" in proc.stdout


def test_demo_rejects_too_small_messages():
    proc = subprocess.run([sys.executable, "-m", "aeron.samples.demo", "--size", "8"],
                          capture_output=True, text=True, timeout=30, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": ROOT})
    assert proc.returncode == 2
    assert "--size must be at least 16" in proc.stderr
