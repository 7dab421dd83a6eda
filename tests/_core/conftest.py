# SPDX-License-Identifier: Apache-2.0
"""Fixtures of the core tests: a log of one 64 KiB term length (framing.TERM, SESSION, STREAM, INITIAL), a
pure-Python frame writer into its first term and a TermReader of it."""
import pytest

from aeron._core.logbuffer import LogBuffers
from aeron._core.term_reader import TermReader

from .framing import INITIAL, SESSION, STREAM, TERM, TermWriter


@pytest.fixture
def log():
    return LogBuffers.create(term_length=TERM, initial_term_id=INITIAL, session_id=SESSION, stream_id=STREAM)


@pytest.fixture
def writer(log):
    w = TermWriter(log, 0, session_id=SESSION, stream_id=STREAM, term_id=INITIAL)
    yield w
    w.close()


@pytest.fixture
def reader(log):
    r = TermReader(log)
    yield r
    r.close()
