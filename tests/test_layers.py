# SPDX-License-Identifier: Apache-2.0
"""docs/layers.md is the rule: every import and cimport under aeron/ follows an arrow of its table.

The table is parsed from the page itself, so changing an arrow means changing the page. Python sources
(.py, .pyi) are read with ``ast``, which sees every import: module level, inside functions, under
``if TYPE_CHECKING``. Cython sources (.pyx, .pxd) are read line by line after blanking triple-quoted strings,
for ``import``, ``cimport``, ``from ... import`` and ``from ... cimport`` (parenthesised and continued lines
included). Each import is mapped to (row of the importing file, row of the imported module) and checked.
"""
from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path, PurePosixPath

import pytest

from tests import procs
from tests.conftest import PROJECT_ROOT

PACKAGE = PROJECT_ROOT / "aeron"
LAYERS_DOC = PROJECT_ROOT / "docs" / "layers.md"
SOURCE_SUFFIXES = (".py", ".pyi", ".pyx", ".pxd")
HEADER = ("package", "may import from aeron")


# -- the table ----------------------------------------------------------------------------------------------

def parse_layers(text: str) -> dict[str, frozenset[str]]:
    """``{row: names it may import}`` from the markdown table headed ``| package | may import from aeron |``.

    Only back-quoted names count, in the first two cells; a row cell may name several rows. Raises ValueError
    for a missing table, a row named twice or an allowed name that is not a row (a typo would allow nothing).
    """
    rows: dict[str, frozenset[str]] = {}
    in_table = False
    for line in text.splitlines():
        if not line.lstrip().startswith("|"):
            if in_table:
                break
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not in_table:
            in_table = tuple(cells[:2]) == HEADER
            continue
        if not "".join(cells).strip("-: "):
            continue                                            # the |---|---| line
        allowed = frozenset(re.findall(r"`([^`]+)`", cells[1]))
        for name in re.findall(r"`([^`]+)`", cells[0]):
            if name in rows:
                raise ValueError(f"row {name!r} appears twice")
            rows[name] = allowed
    if not rows:
        raise ValueError(f"no table headed | {' | '.join(HEADER)} |")
    unknown = sorted(name for allowed in rows.values() for name in allowed if name not in rows)
    if unknown:
        raise ValueError(f"allowed names without a row of their own: {unknown}")
    return rows


def row_of(module: str, rows: dict[str, frozenset[str]]) -> str | None:
    """The most specific row holding ``module`` (``aeron.common.errors`` -> ``common.errors``); the top package
    ``aeron`` itself is the row ``aeron``."""
    parts = module.split(".")[1:]
    if not parts:
        return "aeron" if "aeron" in rows else None
    for n in range(len(parts), 0, -1):
        name = ".".join(parts[:n])
        if name in rows:
            return name
    return None


def _within(name: str, outer: str) -> bool:
    return name == outer or name.startswith(outer + ".")


def is_allowed(importer: str, target: str, rows: dict[str, frozenset[str]]) -> bool:
    return _within(target, importer) or any(_within(target, allowed) for allowed in rows[importer])


# -- the imports --------------------------------------------------------------------------------------------

def _module_parts(relpath: PurePosixPath) -> list[str]:
    parts = list(relpath.with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _package_parts(relpath: PurePosixPath) -> list[str]:
    """The package a relative import starts from: the package itself for an ``__init__``, else the parent."""
    parts = list(relpath.with_suffix("").parts)
    return parts[:-1]


def _is_module(parts: list[str]) -> bool:
    path = PROJECT_ROOT.joinpath(*parts)
    return (any(path.with_suffix(suffix).is_file() for suffix in SOURCE_SUFFIXES)
            or (path / "__init__.py").is_file() or (path / "__init__.pxd").is_file())


def _resolve_from(module: str, level: int, names: list[str], package: list[str]) -> list[str]:
    """Modules a ``from module import names`` loads: ``module.name`` where that is a module, else ``module``."""
    if level:
        if level - 1 > len(package):
            raise ValueError(f"relative import beyond the top package: {'.' * level}{module}")
        base = package[:len(package) - (level - 1)] + (module.split(".") if module else [])
    else:
        base = module.split(".")
    if base[0] != "aeron":
        return []
    targets = []
    for name in names:
        target = base + [name] if name != "*" and _is_module(base + [name]) else base
        if ".".join(target) not in targets:
            targets.append(".".join(target))
    return targets


def python_imports(source: str, relpath: PurePosixPath) -> list[tuple[int, str]]:
    """``(line, module)`` for every import of an aeron module anywhere in a .py/.pyi source."""
    package = _package_parts(relpath)
    found = []
    for node in ast.walk(ast.parse(source, filename=str(relpath))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name == "aeron" or a.name.startswith("aeron.")]
        elif isinstance(node, ast.ImportFrom):
            names = [a.name for a in node.names]
            found += [(node.lineno, m) for m in _resolve_from(node.module or "", node.level, names, package)]
    return sorted(found)


_TRIPLE_QUOTED = re.compile(r'("""|\'\'\')(?:.|\n)*?\1')
_STATEMENT_START = re.compile(r"(from|import|cimport)\s")
_FROM = re.compile(r"from\s+(\.*)([\w.]*)\s+c?import\s+(.+)", re.S)
_IMPORT = re.compile(r"c?import\s+(.+)", re.S)


def _names(text: str) -> list[str]:
    """``a, b as c`` or ``(a,\n b)`` -> ``["a", "b"]``."""
    return [item.split()[0] for item in text.strip().strip("()").split(",") if item.strip()]


def cython_imports(source: str, relpath: PurePosixPath) -> list[tuple[int, str]]:
    """``(line, module)`` for every import and cimport of an aeron module in a .pyx/.pxd source."""
    package = _package_parts(relpath)
    # docstrings may quote import lines; blank them, keeping their newlines so line numbers hold
    lines = _TRIPLE_QUOTED.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), source).splitlines()
    found = []
    i = 0
    while i < len(lines):
        lineno = i + 1
        statement = lines[i].split("#", 1)[0].strip()
        i += 1
        if not _STATEMENT_START.match(statement):
            continue
        while (statement.count("(") > statement.count(")") or statement.endswith("\\")) and i < len(lines):
            statement = statement.rstrip("\\") + " " + lines[i].split("#", 1)[0].strip()
            i += 1
        for part in statement.split(";"):
            part = part.strip()
            match = _FROM.fullmatch(part)
            if match:
                modules = _resolve_from(match.group(2), len(match.group(1)), _names(match.group(3)), package)
            elif (match := _IMPORT.fullmatch(part)) is not None:
                modules = [m for m in _names(match.group(1)) if m == "aeron" or m.startswith("aeron.")]
            else:
                modules = []
            found += [(lineno, module) for module in modules]
    return found


def read_imports(relpath: PurePosixPath, source: str) -> list[tuple[int, str]]:
    """``(line, module)`` for every import of an aeron module in ``source`` (a file at ``relpath``)."""
    reader = python_imports if relpath.suffix in (".py", ".pyi") else cython_imports
    return reader(source, relpath)


def check_source(relpath: PurePosixPath, source: str, rows: dict[str, frozenset[str]],
                 imports: list[tuple[int, str]] | None = None) -> list[str]:
    """One message per import of ``source`` (a file at ``relpath`` under the project) that breaks the table;
    ``imports``: what :func:`read_imports` found in it, when already read."""
    module = ".".join(_module_parts(relpath))
    importer = row_of(module, rows)
    if importer is None:
        return [f"{relpath}: {module} has no row in docs/layers.md"]
    problems = []
    for line, imported in read_imports(relpath, source) if imports is None else imports:
        target = row_of(imported, rows)
        if target is None:
            problems.append(f"{relpath}:{line}: {imported} has no row in docs/layers.md")
        elif not is_allowed(importer, target, rows):
            problems.append(f"{relpath}:{line}: {importer} -> {target} ({imported}) is not an arrow in docs/layers.md")
    return problems


def _sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*") if p.suffix in SOURCE_SUFFIXES and p.is_file())


def _relpath(path: Path) -> PurePosixPath:
    return PurePosixPath(path.relative_to(PROJECT_ROOT).as_posix())


@pytest.fixture(scope="module")
def rows() -> dict[str, frozenset[str]]:
    return parse_layers(LAYERS_DOC.read_text())


@pytest.fixture(scope="module")
def scanned() -> dict[PurePosixPath, list[tuple[int, str]]]:
    """The imports of every source under aeron/, read once for the module's tests."""
    return {_relpath(path): read_imports(_relpath(path), path.read_text()) for path in _sources()}


# -- the project follows its table ---------------------------------------------------------------------------

def test_the_table_has_a_row_for_every_layer(rows):
    assert {"_core", "common", "client", "driver", "archive", "cluster", "aio", "spark", "tools", "samples",
            "aeron"} <= set(rows)
    assert rows["_core"] == {"common.errors"}
    assert rows["common.errors"] == frozenset()
    assert "client" not in rows["driver"]
    assert rows["aeron"] == {"client", "driver", "common"}


def test_every_import_under_aeron_follows_an_arrow_of_the_table(rows, scanned):
    problems = []
    for relpath, imports in scanned.items():
        problems += check_source(relpath, "", rows, imports)
    assert not problems, "\n".join(problems)


def test_the_scan_sees_imports_of_every_kind(scanned):
    # the check above means something only if the readers find real imports: a cimport, an import inside a
    # function, one under TYPE_CHECKING, a submodule named in a from-import
    def imports(rel):
        return {module for _, module in scanned[PurePosixPath(rel)]}

    assert {"aeron._core.atomic_buffer", "aeron._core.frame_descriptor", "aeron.common.errors"} <= imports(
        "aeron/_core/buffer_claim.pyx")
    assert "aeron.driver" in imports("aeron/aio/client.py")                 # inside a function
    assert "aeron.client.client_conductor" in imports("aeron/client/counter.py")   # under TYPE_CHECKING
    assert "aeron.common.command" in imports("aeron/driver/driver_conductor.py")   # from aeron.common import command
    assert sum(map(len, scanned.values())) > 300


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def load_time_aeron_imports(source: str) -> list[int]:
    """Lines of the imports of aeron modules that run when ``source`` is imported: at module level, in class
    bodies and in the branches of ``if``/``try``/``with``; not in a function (a lazy ``__getattr__``) nor under
    ``if TYPE_CHECKING``."""
    found: list[int] = []

    def visit(statements: list[ast.stmt]) -> None:
        for node in statements:
            if isinstance(node, ast.Import):
                if any(a.name == "aeron" or a.name.startswith("aeron.") for a in node.names):
                    found.append(node.lineno)
            elif isinstance(node, ast.ImportFrom):
                if node.level or (node.module or "").split(".")[0] == "aeron":
                    found.append(node.lineno)
            elif isinstance(node, ast.If):
                if not _is_type_checking(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif isinstance(node, (ast.With, ast.ClassDef)):
                visit(node.body)

    visit(ast.parse(source).body)
    return found


def test_a_row_inside_a_package_has_a_package_init_that_loads_nothing(rows):
    # _core imports common.errors, which first runs aeron/common/__init__.py: an import there would load
    # more of common under _core's feet; archive.client runs aeron/archive/__init__.py, which must not load
    # the archive server
    for name in rows:
        if "." not in name:
            continue
        init = PACKAGE.joinpath(*name.split(".")[:-1], "__init__.py")
        assert load_time_aeron_imports(init.read_text()) == [], init


def test_load_time_imports_are_told_from_lazy_ones():
    source = textwrap.dedent("""\
        from typing import TYPE_CHECKING
        import os
        if TYPE_CHECKING:
            from aeron.archive.archive import Archive
        def __getattr__(name):
            import aeron.archive.archive as server
            return getattr(server, name)
        from aeron.archive import errors
        try:
            from . import client
        except ImportError:
            pass
        """)
    assert load_time_aeron_imports(source) == [8, 10]


def _loaded_modules(imports: list[str]) -> list[str]:
    """The aeron modules loaded by importing ``imports`` in a fresh interpreter."""
    script = "import importlib, sys\n" + "".join(f"importlib.import_module({name!r})\n" for name in imports) + (
        "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('aeron'))))")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env=procs.client_env())
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


# the archive's server: its agent, sessions, mark file and tool; a client or a file reader loads none of it
ARCHIVE_SERVER_MODULES = {"aeron.archive.archive", "aeron.archive.archive_conductor", "aeron.archive.control_session",
                          "aeron.archive.recording_session", "aeron.archive.replay_session",
                          "aeron.archive.replication_session", "aeron.archive.archive_mark_file", "aeron.archive.tool",
                          "aeron.archive.__main__"}


def test_the_archive_client_and_file_readers_load_no_archive_server():
    assert {f"aeron.archive.{p.stem}" for p in (PACKAGE / "archive").glob("*.py")} >= ARCHIVE_SERVER_MODULES
    loaded = _loaded_modules(["aeron.archive.client", "aeron.archive.catalog", "aeron.archive.segments",
                              "aeron.aio.archive"])
    assert "aeron.archive.client.aeron_archive" in loaded and "aeron.archive.catalog" in loaded
    assert not ARCHIVE_SERVER_MODULES & set(loaded), sorted(ARCHIVE_SERVER_MODULES & set(loaded))
    # the public names of aeron.archive come from the client's modules until a server name is asked for
    loaded = _loaded_modules(["aeron.archive"])
    assert [m for m in loaded if m.startswith("aeron.archive")] == ["aeron.archive"]
    # a reader of the files loads neither the archive's client nor the Aeron client
    loaded = _loaded_modules(["aeron.archive.catalog", "aeron.archive.segments", "aeron.archive.recording_reader"])
    assert "aeron.archive.recording_reader" in loaded
    assert not [m for m in loaded if m.startswith(("aeron.archive.client", "aeron.client", "aeron.driver"))], loaded
    assert not ARCHIVE_SERVER_MODULES & set(loaded)


def test_the_cluster_client_loads_no_cluster_server_and_no_archive():
    # an application with a cluster client loads neither the consensus module nor the service container, nor the
    # archive (the cluster's server side is built on it)
    assert (PACKAGE / "cluster" / "client" / "aeron_cluster.py").is_file()
    loaded = _loaded_modules(["aeron.cluster.client", "aeron.aio.cluster"])
    assert "aeron.cluster.client.aeron_cluster" in loaded and "aeron.aio.cluster" in loaded
    outside = [m for m in loaded if m.startswith("aeron.cluster") and m not in ("aeron.cluster", "aeron.cluster.client")
               and not m.startswith("aeron.cluster.client.")]
    assert outside == [], outside
    assert [m for m in loaded if m.startswith("aeron.archive")] == [], loaded


def test_sparks_readers_load_no_archive_server():
    pytest.importorskip("pyspark")
    loaded = _loaded_modules(["aeron.spark", "aeron.spark.scan", "aeron.spark.replay"])
    assert "aeron.archive.catalog" in loaded and "aeron.archive.client" in loaded
    assert not ARCHIVE_SERVER_MODULES & set(loaded), sorted(ARCHIVE_SERVER_MODULES & set(loaded))


def test_the_driver_runs_without_loading_the_client(shm_dir):
    script = textwrap.dedent(f"""
        import importlib, pkgutil, sys
        import aeron.driver
        from aeron.driver import Context, MediaDriver
        for info in pkgutil.walk_packages(aeron.driver.__path__, "aeron.driver."):
            if info.name != "aeron.driver.__main__":
                importlib.import_module(info.name)
        ctx = Context(environ={{}}, aeron_dir={str(shm_dir / "driver")!r}, threading_mode="INVOKER")
        with MediaDriver.launch_embedded(ctx) as driver:
            for _ in range(10):
                driver.do_work()
        print(sorted(m for m in sys.modules if m == "aeron.client" or m.startswith("aeron.client.")))
        """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                          env=procs.client_env())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]", proc.stdout


# -- the check can fail -------------------------------------------------------------------------------------

def _problems(relpath: str, source: str, rows: dict[str, frozenset[str]]) -> list[str]:
    return check_source(PurePosixPath(relpath), textwrap.dedent(source), rows)


def test_a_driver_importing_the_client_is_reported_with_file_line_and_arrow(rows):
    source = """\
        from aeron.common.channel_uri import ChannelUri


        def launch():
            from aeron.client import Aeron
            return Aeron
        """
    assert _problems("aeron/driver/fake.py", source, rows) == [
        "aeron/driver/fake.py:5: driver -> client (aeron.client) is not an arrow in docs/layers.md"]


def test_type_checking_and_relative_imports_are_checked(rows):
    source = """\
        from typing import TYPE_CHECKING

        from ..client import context
        if TYPE_CHECKING:
            from aeron.driver.media_driver import MediaDriver
        """
    assert _problems("aeron/common/fake.py", source, rows) == [
        "aeron/common/fake.py:3: common -> client (aeron.client.context) is not an arrow in docs/layers.md",
        "aeron/common/fake.py:5: common -> driver (aeron.driver.media_driver) is not an arrow in docs/layers.md"]


def test_cython_imports_and_cimports_are_checked(rows):
    source = '''\
        """A docstring may quote
        from aeron.client import Aeron
        without importing it."""
        from libc.stdint cimport int64_t
        from aeron._core.atomic_buffer cimport AtomicBuffer   # from aeron.driver import x (a comment)
        from aeron.common.errors import (ConfigurationError,
                                         IllegalStateError)
        from aeron.common import errors
        from aeron.common import agent
        cimport aeron.driver.sender as sender
        from aeron.client.publication cimport (
            Publication)
        cdef extern from "aeron_atomic.h":
            pass
        '''
    assert _problems("aeron/_core/fake.pyx", source, rows) == [
        "aeron/_core/fake.pyx:9: _core -> common (aeron.common.agent) is not an arrow in docs/layers.md",
        "aeron/_core/fake.pyx:10: _core -> driver (aeron.driver.sender) is not an arrow in docs/layers.md",
        "aeron/_core/fake.pyx:11: _core -> client (aeron.client.publication) is not an arrow in docs/layers.md"]


def test_a_package_without_a_row_is_reported(rows):
    assert _problems("aeron/newlayer/x.py", "import os\n", rows) == [
        "aeron/newlayer/x.py: aeron.newlayer.x has no row in docs/layers.md"]
    assert _problems("aeron/tools/x.py", "from aeron.newlayer import y\n", rows) == [
        "aeron/tools/x.py:1: aeron.newlayer has no row in docs/layers.md"]


def test_the_page_is_the_rule():
    table = """\
        | package | may import from aeron | why |
        |---|---|---|
        | `common` | nothing | |
        | `client` | `common` | |
        | `driver` | `common`, `client` | a table that allows it |
        """
    rows = parse_layers(textwrap.dedent(table))
    assert _problems("aeron/driver/fake.py", "from aeron.client import Aeron\n", rows) == []
    assert _problems("aeron/client/fake.py", "from aeron.driver import MediaDriver\n", rows) == [
        "aeron/client/fake.py:1: client -> driver (aeron.driver) is not an arrow in docs/layers.md"]
    with pytest.raises(ValueError, match="without a row"):
        parse_layers(textwrap.dedent(table).replace("`common`, `client`", "`common`, `clinet`"))
    with pytest.raises(ValueError, match="no table"):
        parse_layers("# Layers\n\nno table here\n")
