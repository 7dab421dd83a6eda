# SPDX-License-Identifier: Apache-2.0
"""Type checkers see the public API: ``mypy --strict`` passes over every Python example of README.md and docs/ and
over the samples, and reports a misspelt keyword, attribute or method as an error.

``import aeron; aeron.Aeron`` resolves lazily at run time (a module ``__getattr__``), which a type checker reads
as ``object``; ``aeron/__init__.py`` names the same classes under ``if TYPE_CHECKING:``. The examples are written
to a temporary directory and checked as a user's own files would be, in one mypy run; the imported package is
analysed but only the checked files report errors (``--follow-imports=silent``), so this holds the public types,
not every module. An example that is deliberately partial is marked by the line ``<!-- mypy: skip -->`` right
above its fence (none is, today).
"""
import ast
import os
import re
import subprocess
import sys

import pytest

import aeron
import aeron.client.handlers
from tests.conftest import PROJECT_ROOT

SAMPLES = sorted((PROJECT_ROOT / "aeron" / "samples").rglob("*.py"))    # the cluster samples too
DOC_PAGES = [PROJECT_ROOT / "README.md"] + sorted((PROJECT_ROOT / "docs").rglob("*.md"))
EXAMPLE = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
SKIP_MARK = "<!-- mypy: skip -->"


def doc_examples() -> list[tuple[str, int, str]]:
    """(page relative to the project, line of the fence, code) of every ```python block, but those marked skip."""
    examples = []
    for page in DOC_PAGES:
        text = page.read_text()
        for match in EXAMPLE.finditer(text):
            before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            if before.strip() != SKIP_MARK:
                examples.append((page.relative_to(PROJECT_ROOT).as_posix(), text.count("\n", 0, match.start()) + 1,
                                 match[1]))
    return examples


# What mypy must refuse, each on its own line: the line's comment is the error code it must report there.
TYPOS = """\
import asyncio

import aeron.aio
from aeron import Aeron, AtomicBufferTypo, Context, MediaDriver  # attr-defined
from aeron.driver import Context as DriverContext


async def main() -> None:
    async with aeron.aio.connect(aeron_dri="x") as client:  # call-arg
        publication = await client.add_publication("aeron:ipc", 10)
        await publication.offer("text")  # arg-type
        print(publication.positon)  # attr-defined
        subscription = await client.add_subscription("aeron:ipc", 10)
        print(subscription.image_cont)  # attr-defined
        message = await subscription.receive()
        print(message.payloadd)  # attr-defined


with Aeron.connect(aeron_dri="x") as client:  # call-arg
    sub = client.add_subscription("aeron:ipc", 10)
    sub.poll(lambda buffer, offset, length, header: buffer.get_bytez(offset, length), 10)  # attr-defined
    sub.poll(lambda buffer, offset: None, 10)  # arg-type
    sub.poll(print, "10")  # arg-type
    client.add_subscription("aeron:ipc", 10, available_image_handler=lambda image: image.session_idd)  # attr-defined
    claim = client.add_publication("aeron:ipc", 10).try_claim(5)
    claim.comit()  # attr-defined
Context(error_handler=lambda: None)  # arg-type
driver_context = DriverContext(term_bufer_length=65536)  # call-arg
driver_context.term_bufer_length = 65536  # attr-defined
driver_context.term_buffer_length = "64k"  # assignment
MediaDriver.launch(driver_context).aeron_dirr  # attr-defined
asyncio.run(main())
"""


def _mypy(files: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent", "--cache-dir", os.devnull,
         "--no-error-summary", "--show-error-codes", *files],
        cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600, check=False)


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
        value = getattr(aeron, name)
        if name in aeron.client.handlers.__all__:
            assert value is getattr(aeron.client.handlers, name)       # a type alias: no __name__ of its own
        else:
            assert value.__name__ == name


def test_py_typed_is_shipped():
    assert (PROJECT_ROOT / "aeron" / "py.typed").is_file()
    text = (PROJECT_ROOT / "pyproject.toml").read_text()
    assert '"py.typed"' in text and '"*.pyi"' in text


def test_doc_examples_are_found():
    pages = {page for page, _, _ in doc_examples()}
    assert {"README.md", "docs/getting-started.md", "docs/asyncio.md", "docs/concepts.md", "docs/spark.md",
            "docs/archive.md"} <= pages
    assert not [page for page in DOC_PAGES if SKIP_MARK in page.read_text()], "an example is skipped: make it whole"


@pytest.mark.timeout(600)
def test_mypy_strict_passes_on_every_doc_example_and_sample_and_refuses_typos(tmp_path):
    """One mypy run: every example and sample passes, and each line of TYPOS is an error of its code."""
    files = []
    where = {}
    for index, (page, line, code) in enumerate(doc_examples()):
        path = tmp_path / f"example_{index}_{re.sub(r'[^a-z0-9]+', '_', page.lower())}_line_{line}.py"
        path.write_text(code)
        files.append(str(path))
        where[path.name] = f"{page}:{line}"
    typos = tmp_path / "typos.py"
    typos.write_text(TYPOS)
    files += [str(path) for path in SAMPLES] + [str(typos)]
    result = _mypy(files)
    reported = [line for line in result.stdout.splitlines() if ": error: " in line]
    elsewhere = [line for line in reported if not line.startswith(str(typos))]
    assert not elsewhere, "\n".join(f"{where.get(line.split(':')[0].rsplit('/', 1)[-1], '')} {line}"
                                    for line in elsewhere) + result.stderr
    expected = {number: line.rsplit("# ", 1)[1] for number, line in enumerate(TYPOS.splitlines(), 1) if "  # " in line}
    found: dict[int, set[str]] = {}
    for line in reported:
        number = int(line.split(":")[1])
        found.setdefault(number, set()).add(line.rsplit("[", 1)[1].rstrip("]"))
    assert set(found) == set(expected), (sorted(found), sorted(expected), result.stdout)
    for number, code in expected.items():
        assert code in found[number], (number, TYPOS.splitlines()[number - 1], found[number])


def test_connect_keywords_are_the_contexts():
    """Aeron.connect and aeron.aio.connect take the Context's settings as keywords of their own, spelt, typed and
    defaulted as the Context's (aio's conductor is an invoker on the loop: no thread to configure)."""
    import inspect

    import aeron.aio
    from aeron.client import Aeron, Context

    def keywords(function: object) -> dict[str, tuple[object, object]]:
        return {name: (p.annotation, p.default) for name, p in inspect.signature(function).parameters.items()
                if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and name not in ("self", "cls", "context")}

    context = keywords(Context.__init__)
    assert keywords(Aeron.connect) == context
    # (and the driver invoker a synchronous request runs while it waits: aio's requests are awaited, nothing waits)
    thread_only = {"use_conductor_agent_invoker", "idle_strategy", "conductor_parking", "driver_agent_invoker"}
    aio = keywords(inspect.unwrap(aeron.aio.connect))
    assert {name: aio[name] for name in aio if name not in ("launch_embedded", "driver_context")} == {
        name: value for name, value in context.items() if name not in thread_only}
    assert not [p for p in inspect.signature(inspect.unwrap(aeron.aio.connect)).parameters.values()
                if p.kind is p.VAR_KEYWORD]
