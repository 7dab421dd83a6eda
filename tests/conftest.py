# SPDX-License-Identifier: Apache-2.0
"""Fixtures of every test package: the golden data, a directory of the test's own under /dev/shm, our embedded
driver in it (``driver``) and our client on it (``client``).

Modules differ in the settings, not in the fixtures: the driver takes :func:`tests.support.driver_context`'s
defaults, then the ``driver_settings`` fixture (a package's preset: override it in a conftest, or parametrize it),
then the ``driver`` marks of the module and the test (``pytestmark = pytest.mark.driver(term_buffer_length=...)``),
then an indirect parameter (``@pytest.mark.parametrize("driver", [{...}], indirect=True)``), the nearest winning.
The client takes the ``client_settings`` fixture, then the ``client`` marks, as keywords of ``aeron.Context``; it
connects to ``aeron_dir``, the driver's directory (tests/interop: the official ``aeronmd``'s)."""
import pathlib
from collections.abc import Iterator
from typing import Any

import pytest

from aeron import Aeron, Context, MediaDriver
from tests import support

PROJECT_ROOT = pathlib.Path(__file__).resolve().parent.parent
# Golden data from official Aeron, see tests/data/golden/README.md.
GOLDEN = PROJECT_ROOT / "tests" / "data" / "golden"


@pytest.fixture(scope="session")
def golden_dir() -> pathlib.Path:
    if not GOLDEN.is_dir():
        pytest.fail(f"golden data missing from the checkout: {GOLDEN}")
    return GOLDEN


@pytest.fixture
def shm_dir() -> Iterator[pathlib.Path]:
    """A fresh directory under /dev/shm, removed after the test."""
    with support.shm_directory() as path:
        yield path


def marked_settings(request: pytest.FixtureRequest, name: str) -> dict[str, Any]:
    """The keywords of the ``name`` marks on the test, its class and module; the nearest mark wins."""
    settings: dict[str, Any] = {}
    for mark in reversed(list(request.node.iter_markers(name))):
        settings.update(mark.kwargs)
    return settings


@pytest.fixture
def driver_settings() -> dict[str, Any]:
    """A package's preset for the ``driver`` fixture (none here)."""
    return {}


@pytest.fixture
def driver(request: pytest.FixtureRequest, shm_dir: pathlib.Path,
           driver_settings: dict[str, Any]) -> Iterator[MediaDriver]:
    """Our driver, embedded, in ``shm_dir / "embedded"``: one thread (SHARED, backing off), then the settings the
    module docstring lists."""
    settings = {"aeron_dir": str(shm_dir / "embedded"), **driver_settings, **marked_settings(request, "driver"),
                **getattr(request, "param", {})}
    with MediaDriver.launch(support.driver_context(**settings)) as d:
        yield d


@pytest.fixture
def aeron_dir(driver: MediaDriver) -> str:
    """The directory the ``client`` fixture connects to."""
    return driver.aeron_dir


@pytest.fixture
def client_settings() -> dict[str, Any]:
    """A package's preset for the ``client`` fixture (none here)."""
    return {}


@pytest.fixture
def client(request: pytest.FixtureRequest, aeron_dir: str, client_settings: dict[str, Any]) -> Iterator[Aeron]:
    """Our client on ``aeron_dir``."""
    with Aeron.connect(Context(aeron_dir, **{**client_settings, **marked_settings(request, "client")})) as c:
        yield c
