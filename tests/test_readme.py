# SPDX-License-Identifier: Apache-2.0
"""The README's Python example runs as written (on an embedded driver) and prints what it says."""
import contextlib
import io
import re

import pytest

from tests.conftest import PROJECT_ROOT


@pytest.mark.timeout(60)
def test_readme_example_runs():
    text = (PROJECT_ROOT / "README.md").read_text()
    section = text[text.index("## Using it"):]
    code = re.search(r"```python\n(.*?)```", section, re.S)[1]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    assert out.getvalue().splitlines() == ["b'hello'", "b'world" + "\\x00" * 59 + "'"]


@pytest.mark.timeout(60)
def test_readme_async_echo_example_runs():
    text = (PROJECT_ROOT / "README.md").read_text()
    section = text[text.index("### With asyncio"):]
    code = re.search(r"```python\n(.*?)```", section, re.S)[1]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), {"__name__": "readme"})
    assert out.getvalue().splitlines() == ["b'hello'", "b'world'"]
