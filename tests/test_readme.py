# SPDX-License-Identifier: Apache-2.0
"""The README's Python examples run as written (on an embedded driver) and print what they say.

Every ```python block of the README is run here: a new block fails ``test_every_readme_snippet_is_run`` until
a test runs it. The first example also runs over UDP (its ``CHANNEL`` line swapped for a free loopback port),
where the first offers come back NOT_CONNECTED until the subscriber's image is up.
"""
import contextlib
import io
import re

import pytest

from tests.conftest import PROJECT_ROOT
from tests.support import free_port

SNIPPET = re.compile(r"```python\n(.*?)```", re.S)
IPC_CHANNEL_LINE = 'CHANNEL = "aeron:ipc"'


def readme_snippets() -> list[str]:
    return SNIPPET.findall((PROJECT_ROOT / "README.md").read_text())


def snippet_after(heading: str) -> str:
    text = (PROJECT_ROOT / "README.md").read_text()
    return SNIPPET.search(text, text.index(heading))[1]


def run(code: str) -> list[str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    return out.getvalue().splitlines()


def test_every_readme_snippet_is_run():
    assert readme_snippets() == [snippet_after("## Using it"), snippet_after("### With asyncio"),
                                 snippet_after("### Recording and replaying with the archive"),
                                 snippet_after("## Spark")]   # the Spark one: tests/spark/test_local_session.py


@pytest.mark.timeout(60)
def test_readme_example_runs():
    assert run(snippet_after("## Using it")) == ["hello", "world"]


@pytest.mark.timeout(60)
def test_readme_example_runs_over_udp():
    code = snippet_after("## Using it")
    assert code.count(IPC_CHANNEL_LINE) == 1
    udp = code.replace(IPC_CHANNEL_LINE, f'CHANNEL = "aeron:udp?endpoint=127.0.0.1:{free_port()}"')
    assert run(udp) == ["hello", "world"]


@pytest.mark.timeout(60)
def test_readme_async_echo_example_runs():
    assert run(snippet_after("### With asyncio")) == ["b'hello'", "b'world'"]


@pytest.mark.timeout(60)
def test_readme_archive_example_runs():
    assert run(snippet_after("### Recording and replaying with the archive")) == ["hello", "archive"]


def test_the_console_scripts_list_names_every_script_pyproject_installs():
    import sys
    if sys.version_info >= (3, 11):
        import tomllib
    else:
        import tomli as tomllib
    scripts = tomllib.loads((PROJECT_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    text = " ".join((PROJECT_ROOT / "README.md").read_text().split())
    listed = text[text.index("the console scripts"):].split(";", 1)[0]
    assert sorted(re.findall(r"`(aeron-[a-z-]+)`", listed)) == sorted(scripts)
