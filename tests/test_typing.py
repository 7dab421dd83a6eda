# SPDX-License-Identifier: Apache-2.0
"""Type checkers see the public API: ``mypy --strict`` passes over the README's Python examples and the samples.

``import aeron; aeron.Aeron`` resolves lazily at run time (a module ``__getattr__``), which a type checker reads
as ``object``; ``aeron/__init__.py`` names the same classes under ``if TYPE_CHECKING:``. The snippets are written
to a temporary directory and checked as a user's own files would be; the imported package is analysed but only
the checked files report errors (``--follow-imports=silent``), so this holds the public types, not every module.
"""
import ast
import os
import re
import subprocess
import sys

import aeron
from tests.conftest import PROJECT_ROOT

SAMPLES = sorted((PROJECT_ROOT / "aeron" / "samples").glob("*.py"))


def readme_snippets() -> list[str]:
    return re.findall(r"```python\n(.*?)```", (PROJECT_ROOT / "README.md").read_text(), re.S)


def test_type_checking_names_match_the_lazy_exports():
    tree = ast.parse((PROJECT_ROOT / "aeron" / "__init__.py").read_text())
    guarded = set()
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                assert isinstance(statement, ast.ImportFrom)
                for alias in statement.names:
                    assert alias.asname == alias.name, "re-export as `X as X`"
                    guarded.add(alias.name)
    lazy = set(aeron.__all__) - set(aeron.common.errors.__all__)
    assert guarded == lazy
    for name in guarded:
        assert getattr(aeron, name).__name__ == name


def test_py_typed_is_shipped():
    assert (PROJECT_ROOT / "aeron" / "py.typed").is_file()
    text = (PROJECT_ROOT / "pyproject.toml").read_text()
    assert '"py.typed"' in text and '"*.pyi"' in text


def test_mypy_strict_passes_on_readme_snippets_and_samples(tmp_path):
    snippets = readme_snippets()
    assert len(snippets) >= 2
    files = []
    for index, code in enumerate(snippets):
        path = tmp_path / f"readme_snippet_{index}.py"
        path.write_text(code)
        files.append(str(path))
    files += [str(path) for path in SAMPLES]
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--cache-dir", os.devnull,
         "--no-error-summary", *files],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
