# SPDX-License-Identifier: Apache-2.0
"""The distribution as a user gets it.

Fast checks: one name and one version everywhere, and ``--version`` on every command-line entry point.
The slow tests build the sdist from this tree, builds the wheel from the unpacked sdist (so the sdist is
proven to build, without the generated C), checks what the wheel holds, installs it into a fresh virtualenv
outside the source tree and runs from there: the console scripts, the demo, a sample against the installed
driver, and the tools reading that driver.
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib
import importlib.machinery
import os
import queue
import re
import shutil
import signal
import struct
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import urllib.request
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import aeron
from aeron.common.version import DISTRIBUTION, VERSION_TEXT, __version__

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
CONSOLE_SCRIPTS = PYPROJECT["project"]["scripts"]
# Every module a user runs with `python -m`: the driver, each tool, each sample (found by listing, so a new
# one without --version fails here).
ENTRY_MODULES = ["aeron.driver"] + [
    f"aeron.{package}.{path.stem}"
    for package in ("tools", "samples")
    for path in sorted((ROOT / "aeron" / package).glob("*.py")) if not path.stem.startswith("_")
]
SO_SUFFIX = importlib.machinery.EXTENSION_SUFFIXES[0]
COMPILED = sorted(p.relative_to(ROOT).with_suffix("").as_posix() for p in (ROOT / "aeron").rglob("*.pyx"))
# Variables that would change how the wheel is built or what the installed package sees.
BUILD_VARIABLES = ("AERON_PY_DEBUG", "AERON_PY_SANITIZE", "AERON_PY_BUILD_ONLY", "AERON_PY_BUILD_TESTS",
                   "AERON_PY_OPT_CFLAGS", "PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "PYTHONUSERBASE")


# ---- fast: names, versions, entry points in-process ----------------------------------------------------------

def test_one_distribution_name_and_version():
    project = PYPROJECT["project"]
    assert project["name"] == DISTRIBUTION == "aeron-py"
    assert project["dynamic"] == ["version"] and "version" not in project
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "aeron.common.version.__version__"}
    assert aeron.__version__ == __version__
    assert re.fullmatch(r"\d+\.\d+\.\d+((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?", __version__)   # PEP 440, public
    assert VERSION_TEXT == f"aeron-py {__version__}"


def test_one_requires_python():
    floor = re.fullmatch(r">=(\d+)\.(\d+)", PYPROJECT["project"]["requires-python"])
    assert floor, "setup.py reads requires-python as >=X.Y"
    need = (int(floor[1]), int(floor[2]))
    assert sys.version_info[:2] >= need
    # no other file states its own minimum
    for path in [ROOT / name for name in ("setup.py", "run.sh", "README.md", "CONTRIBUTING.md")] + sorted(
            (ROOT / "docs").rglob("*.md")):
        text = path.read_text()
        for match in re.finditer(r"(?:Python|python)\s*(3\.\d+)\s*(\+|or newer|or later)", text):
            assert match[1] == f"{need[0]}.{need[1]}", (path.name, match[0])
    minors = {int(m) for m in re.findall(r'"Programming Language :: Python :: 3\.(\d+)"',
                                         (ROOT / "pyproject.toml").read_text())}
    assert min(minors) == need[1]


def test_console_scripts_name_callables():
    assert {"aeron-driver", "aeron-stat", "aeron-error-stat", "aeron-loss-stat", "aeron-stream-stat"} <= set(
        CONSOLE_SCRIPTS)
    # the driver and every tool have one
    targets = {target.partition(":")[0] for target in CONSOLE_SCRIPTS.values()}
    assert {"aeron.driver.__main__"} | {m for m in ENTRY_MODULES if m.startswith("aeron.tools.")} <= targets
    for target in CONSOLE_SCRIPTS.values():
        module, _, attr = target.partition(":")
        assert callable(getattr(importlib.import_module(module), attr)), target


@pytest.mark.parametrize("module", ENTRY_MODULES)
def test_version_flag_in_process(module, capsys):
    main = importlib.import_module(module + ".__main__" if module == "aeron.driver" else module).main
    try:
        rc = main(["--version"])
    except SystemExit as exit_:     # argparse's version action
        rc = exit_.code
    assert rc in (0, None)
    assert capsys.readouterr().out == VERSION_TEXT + "\n"


def _usage_lines(text: str, name: str) -> list[str]:
    return [line for line in text.splitlines() if re.match(rf"\s*(usage: |Usage: )?{re.escape(name)} [\[<]", line)]


@pytest.mark.parametrize("script", sorted(CONSOLE_SCRIPTS))
def test_help_names_the_command_as_it_was_started(script, capsys, monkeypatch):
    module, _, attr = CONSOLE_SCRIPTS[script].partition(":")
    main = getattr(importlib.import_module(module), attr)
    as_module = f"python -m {module.removesuffix('.__main__')}"
    for argv0, name, other in ((f"/opt/venv/bin/{script}", script, as_module),
                               (f"/src/{module.replace('.', '/')}.py", as_module, script)):
        monkeypatch.setattr(sys, "argv", [argv0, "--help"])
        try:
            rc = main(["--help"])
        except SystemExit as exit_:     # argparse's help action
            rc = exit_.code
        assert rc in (0, None), script
        out = capsys.readouterr().out
        assert _usage_lines(out, name) and not _usage_lines(out, other), out


# ---- slow: sdist -> wheel -> fresh venv ----------------------------------------------------------------------
# Each slow test has room for the fixtures' first build of the wheel (about 1 min on an idle 2-core machine,
# a few under load); the commands they run have their own, shorter bounds.

def _clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in BUILD_VARIABLES and not k.startswith("AERON_")}
    env.update(extra)
    return env


def _run(args, *, cwd, env, timeout=120.0, check=True) -> subprocess.CompletedProcess:
    proc = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        pytest.fail(f"{args} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}")
    return proc


def _elf_section_names(data: bytes) -> set[str]:
    """Section names of a 64-bit little-endian ELF file (the shared objects built here)."""
    assert data[:4] == b"\x7fELF" and data[4] == 2 and data[5] == 1, "not an ELF64 LE file"
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)

    def header(index):
        (name,) = struct.unpack_from("<I", data, shoff + index * shentsize)
        offset, size = struct.unpack_from("<QQ", data, shoff + index * shentsize + 0x18)
        return name, offset, size

    _, strings, _ = header(shstrndx)
    names = set()
    for index in range(shnum):
        name = header(index)[0]
        names.add(data[strings + name:data.index(b"\0", strings + name)].decode())
    return names


def _carries_symbols_or_debug_info(data: bytes) -> bool:
    return any(n == ".symtab" or n.startswith(".debug") for n in _elf_section_names(data))


def _wheel_key(sdist: Path) -> str:
    """What a wheel built from ``sdist`` depends on: each member's name and bytes (not the archive's
    timestamps), this interpreter and the build tools."""
    digest = hashlib.sha256()
    with tarfile.open(sdist) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            if member.isfile():
                digest.update(member.name.encode() + b"\0" + tar.extractfile(member).read())
    tools = [sys.version, sys.platform] + [metadata.version(name) for name in ("cython", "setuptools", "pip")]
    digest.update(" ".join(tools).encode())
    return digest.hexdigest()[:24]


@pytest.fixture(scope="module")
def dists(tmp_path_factory):
    """(sdist, wheel): the sdist built from this tree by the PEP 517 backend; the wheel built by pip from the
    unpacked sdist with this venv's Cython and setuptools (no network, no build isolation). A wheel built
    from a byte-identical sdist by the same tools is kept under build/ and reused: a fresh clone (CI) always
    builds it, a developer rerunning the suite pays the ~1 min compile only after changing the package."""
    out = tmp_path_factory.mktemp("dist")
    env = _clean_env()
    # The sdist's file list comes from the tree; the lock keeps a concurrent ./run.sh build from racing it.
    with open(ROOT / ".build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            _run([sys.executable, "-c", "import sys; from setuptools import build_meta as b; "
                  "b.build_sdist(sys.argv[1])", str(out)], cwd=ROOT, env=env)
        finally:
            shutil.rmtree(ROOT / "aeron_py.egg-info", ignore_errors=True)
    (sdist,) = out.glob("*.tar.gz")
    cache = ROOT / "build" / "test-packaging"
    kept = cache / _wheel_key(sdist)
    if not list(kept.glob("*.whl")):
        with tarfile.open(sdist) as tar:
            top = tar.getnames()[0].split("/")[0]
            if sys.version_info >= (3, 12):
                tar.extractall(out, filter="data")
            else:
                tar.extractall(out)
        built = out / "built"
        _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
              "-w", str(built), str(out / top)], cwd=out, env=env, timeout=900)
        shutil.rmtree(cache, ignore_errors=True)        # one kept wheel at most
        cache.mkdir(parents=True)
        staging = Path(tempfile.mkdtemp(dir=cache))
        for wheel in built.glob("*.whl"):
            shutil.copy2(wheel, staging)
        staging.rename(kept)
    (wheel,) = kept.glob("*.whl")
    shutil.copy2(wheel, out)
    return sdist, out / wheel.name


@pytest.fixture(scope="module")
def venv(dists, tmp_path_factory):
    """A fresh virtualenv (no system site-packages) outside the source tree with the wheel installed, with the
    ``metrics`` extra for the exporter (prometheus-client, from the package index or pip's cache)."""
    _, wheel = dists
    home = tmp_path_factory.mktemp("venv")
    path = home / "venv"
    env = _clean_env()
    _run([sys.executable, "-m", "venv", str(path)], cwd=home, env=env)
    python = path / "bin" / "python"
    with zipfile.ZipFile(wheel) as whl:
        core_metadata = whl.read(f"aeron_py-{__version__}.dist-info/METADATA").decode()
    needed = [r for r in (Requirement(line.split(":", 1)[1].strip())
                          for line in core_metadata.splitlines() if line.startswith("Requires-Dist:"))
              if r.marker is None or any(r.marker.evaluate({"extra": extra}) for extra in ("", "metrics"))]
    install = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "--no-input"]
    if not needed:
        _run(install + ["--no-index", f"{wheel}[metrics]"], cwd=home, env=env)
    else:
        proc = _run(install + [f"{wheel}[metrics]"], cwd=home, env=env, timeout=300, check=False)
        if proc.returncode != 0:
            # Skip only when pip cannot get the dependencies at all (no index reachable, nothing cached).
            probe = _run([str(python), "-m", "pip", "download", "--no-deps", "-d", str(home / "probe"),
                          *map(str, needed)], cwd=home, env=env, timeout=300, check=False)
            if probe.returncode == 0:
                pytest.fail(f"installing {wheel.name} failed\n{proc.stdout}\n{proc.stderr}")
            pytest.skip(f"{wheel.name} needs {', '.join(map(str, needed))}: no package index and no cache")
    return path


def _venv_env(venv: Path) -> dict[str, str]:
    return _clean_env(PATH=f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}", VIRTUAL_ENV=str(venv))


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_sdist_has_sources_not_generated_c(dists):
    sdist, _ = dists
    with tarfile.open(sdist) as tar:
        names = {"/".join(n.split("/")[1:]) for n in tar.getnames()}
    for required in ("pyproject.toml", "setup.py", "LICENSE", "README.md", "CHANGELOG.md", "CONTRIBUTING.md",
                     "aeron/py.typed", "aeron/_core/include/aeron_atomic.h"):
        assert required in names, required
    for module in COMPILED:
        assert {module + ".pyx", module + ".pxd", module + ".pyi"} <= names, module
    assert not [n for n in names if n.endswith((".c", ".so", ".html")) and "/include/" not in n]
    assert not [n for n in names if n.startswith(("tests/", "perf/", ".ci/", "build/"))]


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_wheel_has_stripped_modules_and_sources_not_generated_c(dists):
    _, wheel = dists
    assert wheel.name.startswith(f"aeron_py-{__version__}-")
    with zipfile.ZipFile(wheel) as whl:
        names = set(whl.namelist())
        info = f"aeron_py-{__version__}.dist-info/"
        core_metadata = whl.read(info + "METADATA").decode()
        entry_points = whl.read(info + "entry_points.txt").decode()
        shared_objects = {n: whl.read(n) for n in names if n.endswith(".so")}
    assert f"Name: {DISTRIBUTION}\n" in core_metadata and f"Version: {__version__}\n" in core_metadata
    assert f"Requires-Python: {PYPROJECT['project']['requires-python']}\n" in core_metadata
    assert "License-Expression: Apache-2.0\n" in core_metadata and info + "licenses/LICENSE" in names
    for script, target in CONSOLE_SCRIPTS.items():
        assert f"{script} = {target}" in entry_points
    # every compiled module once, for this interpreter, stripped; its .pyx (tracebacks), .pxd and .pyi beside it
    assert sorted(shared_objects) == [m + SO_SUFFIX for m in COMPILED]
    for module in COMPILED:
        assert {module + ".pyx", module + ".pxd", module + ".pyi"} <= names, module
    for name, data in shared_objects.items():
        assert not _carries_symbols_or_debug_info(data), f"{name} is not stripped"
    # the check can fail: the in-place developer build keeps its symbols
    in_place = ROOT / (COMPILED[0] + SO_SUFFIX)
    if in_place.exists():
        assert _carries_symbols_or_debug_info(in_place.read_bytes())
    sources = {p.relative_to(ROOT).as_posix() for p in (ROOT / "aeron").rglob("*.py")}
    assert sources <= names
    assert {"aeron/py.typed", "aeron/_core/include/aeron_atomic.h"} <= names
    assert not [n for n in names if n.endswith((".c", ".html")) or n.startswith(("tests/", "perf/"))]
    assert sum(len(d) for d in shared_objects.values()) < 8 * 1024 * 1024


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_installed_package_imports_from_the_venv(venv, tmp_path):
    site = subprocess.run([str(venv / "bin" / "python"), "-c", "import site; print(site.getsitepackages()[0])"],
                          capture_output=True, text=True, check=True, cwd=tmp_path, env=_venv_env(venv)).stdout
    for pth in Path(site.strip()).glob("*.pth"):
        assert str(ROOT) not in pth.read_text(), f"{pth} points into the source tree"
    assert not (Path(site.strip()) / "aeron-py-dev.pth").exists()
    code = ("import importlib, importlib.metadata as md, aeron, aeron.aio, aeron.driver\n"
            f"mods = [importlib.import_module(m.replace('/', '.')) for m in {COMPILED!r}]\n"
            "print(aeron.__version__, md.version('aeron-py'))\n"
            "print('\\n'.join([aeron.__file__] + [m.__file__ for m in mods]))\n")
    out = _run([str(venv / "bin" / "python"), "-c", code], cwd=tmp_path, env=_venv_env(venv)).stdout.splitlines()
    assert out[0] == f"{__version__} {__version__}"
    for path in out[1:]:
        assert Path(path).resolve().is_relative_to(venv.resolve()), path


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_installed_entry_points_print_the_version(venv, tmp_path):
    env = _venv_env(venv)
    commands = [[str(venv / "bin" / script)] for script in CONSOLE_SCRIPTS]
    commands += [[str(venv / "bin" / "python"), "-m", module] for module in ENTRY_MODULES]
    for command in commands:
        assert _run(command + ["--version"], cwd=tmp_path, env=env, timeout=60).stdout == VERSION_TEXT + "\n"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_installed_demo_runs(venv, tmp_path):
    out = _run([str(venv / "bin" / "python"), "-m", "aeron.samples.demo", "--messages", "20000", "--pings", "100",
                "--term-length", "65536", "--timeout", "90"], cwd=tmp_path, env=_venv_env(venv), timeout=150).stdout
    assert "received 20000 messages, 0 out of order" in out
    assert "latency: 100 round trips" in out and out.rstrip().endswith("demo: OK")


class _Process:
    """A command started in the background whose merged output a thread reads, so that every wait for a line
    is bounded."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path) -> None:
        self.args = args
        self.proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True)
        self.output: list[str] = []
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def wait_for(self, marker: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                break
            if line is None:
                break
            self.output.append(line)
            if marker in line:
                return
        self.kill()
        pytest.fail(f"no {marker!r} from {self.args} (rc {self.proc.returncode}):\n{''.join(self.output)}")

    def interrupt(self, timeout: float = 15.0) -> int:
        """SIGINT, as a user's Ctrl-C; the exit status once the process has ended."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            pass
        self.kill()
        return self.proc.returncode

    def kill(self) -> None:
        """Kill it if it still runs, then collect the rest of its output and close the pipe (idempotent)."""
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(5)
        if self.proc.stdout.closed:
            return
        self._reader.join(5)
        with contextlib.suppress(queue.Empty):
            while (line := self._lines.get_nowait()) is not None:
                self.output.append(line)
        self.proc.stdout.close()

    @property
    def text(self) -> str:
        return "".join(self.output)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_installed_driver_sample_and_tools(venv, tmp_path):
    """The installed `aeron-driver`; basic_subscriber and basic_publisher over IPC on it; then each tool
    reading that driver's files while the subscriber is still attached, the exporter scraped over HTTP."""
    env = _venv_env(venv)
    bin_ = venv / "bin"
    aeron_dir = tempfile.mkdtemp(prefix="aeron-py-pkg-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    started: list[_Process] = []
    try:
        driver = _Process([str(bin_ / "aeron-driver"), f"aeron.dir={aeron_dir}", "aeron.dir.delete.on.start=true",
                           "aeron.threading.mode=SHARED", "aeron.shared.idle.strategy=backoff",
                           "aeron.ipc.term.buffer.length=64k"], env, tmp_path)
        started.append(driver)
        driver.wait_for("aeron.driver: started in")
        subscriber = _Process([str(bin_ / "python"), "-m", "aeron.samples.basic_subscriber", "-p", aeron_dir,
                               "-c", "aeron:ipc"], env, tmp_path)
        started.append(subscriber)
        subscriber.wait_for("Subscription channel status")
        published = _run([str(bin_ / "python"), "-m", "aeron.samples.basic_publisher", "-p", aeron_dir,
                          "-c", "aeron:ipc", "-m", "1"], cwd=tmp_path, env=env, timeout=60).stdout
        assert "offering 0/1 - yay!" in published
        subscriber.wait_for("(14 bytes) <<Hello World! 0>>")

        stat = _run([str(bin_ / "aeron-stat"), "-d", aeron_dir, "-w", "false"], cwd=tmp_path, env=env).stdout
        assert "Aeron Stat (CnC v" in stat.splitlines()[0], stat
        assert f"Aeron software: version={__version__} commit=aeron-py" in stat, stat
        assert f"version={__version__} commit=python" in stat, stat   # the subscriber's client-heartbeat
        _run([str(bin_ / "aeron-stream-stat"), "-d", aeron_dir], cwd=tmp_path, env=env)
        errors = _run([str(bin_ / "aeron-error-stat"), "-d", aeron_dir], cwd=tmp_path, env=env).stdout
        assert errors.strip().endswith("0 distinct errors observed."), errors
        loss = _run([str(bin_ / "aeron-loss-stat"), "-d", aeron_dir], cwd=tmp_path, env=env).stdout
        assert loss.strip().endswith("0 entries read"), loss
        exporter = _Process([str(bin_ / "aeron-metrics-exporter"), "--dir", aeron_dir, "--port", "0"], env, tmp_path)
        started.append(exporter)
        exporter.wait_for("/metrics")
        url = re.search(r"http://\S+/metrics", exporter.output[-1])[0]
        with urllib.request.urlopen(url, timeout=30) as response:
            scraped = response.read().decode()
        assert re.search(r"^aeron_driver_up(\{[^}]*\})? 1\.0$", scraped, re.M), scraped
        assert re.search(r"^aeron_clients(\{[^}]*\})? [1-9]", scraped, re.M), scraped   # the subscriber at least
        assert exporter.interrupt() == 0, exporter.text

        assert subscriber.interrupt() == 0, subscriber.text
        assert "Shutting down..." in subscriber.text
        assert driver.interrupt() == 0, driver.text
        assert "aeron.driver: shutting down" in driver.text
    finally:
        for process in started:
            process.kill()
        shutil.rmtree(aeron_dir, ignore_errors=True)
