# SPDX-License-Identifier: Apache-2.0
"""Build: one extension per aeron/_core/**/*.pyx (and tests/**/*.pyx with AERON_PY_BUILD_TESTS=1).

Switches (as asyncpg/uvloop): ``build_ext --cython-always --cython-annotate
--cython-directives=k=v,...``. Environment: ``AERON_PY_DEBUG=1`` (annotate, linetrace, -Og -g,
debug checks on), ``AERON_PY_OPT_CFLAGS`` (default ``-O2``), ``AERON_PY_SANITIZE=1`` (ASan/UBSan),
``AERON_PY_BUILD_ONLY=mod1,mod2`` (build a subset while developing), ``AERON_PY_BUILD_PROGRESS=1`` (one line per
module: ``[ i/n] Cythonizing ...`` from Cython, then ``[ i/n] compiled ...`` as each extension is done; run.sh shows
these on a first build).

Builds that are not in place (wheels, ``pip install``) compile with ``-g0`` and link with ``-s``: the
installed modules carry no debug info or symbol table (about a fifth of the size). In-place developer builds
keep both for perf and gdb. Cythonizing and compiling run one job per CPU unless ``AERON_PY_CYTHON_JOBS``
and ``-j`` say otherwise.
"""
import os
import pathlib
import re
import shlex
import sys
import threading
import time

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext as _build_ext

HERE = pathlib.Path(__file__).parent.resolve()
DEBUG = os.environ.get("AERON_PY_DEBUG", "") not in ("", "0")
SANITIZE = os.environ.get("AERON_PY_SANITIZE", "") not in ("", "0")
OPT_CFLAGS = shlex.split(os.environ.get("AERON_PY_OPT_CFLAGS", "-Og -g" if DEBUG else "-O2"))
BUILD_TESTS = os.environ.get("AERON_PY_BUILD_TESTS", "") not in ("", "0")
BUILD_ONLY = {m for m in os.environ.get("AERON_PY_BUILD_ONLY", "").split(",") if m}
PROGRESS = os.environ.get("AERON_PY_BUILD_PROGRESS", "") not in ("", "0")
INCLUDE_DIRS = [str(HERE / "aeron" / "_core" / "include")]


def _module_name(pyx: pathlib.Path) -> str:
    return ".".join(pyx.relative_to(HERE).with_suffix("").parts)


def _extensions():
    roots = ["aeron/_core"] + (["tests"] if BUILD_TESTS else [])
    cflags = OPT_CFLAGS + ["-fno-omit-frame-pointer", "-Wall", "-Wsign-compare", "-Wconversion",
                           "-Wno-unused-function", "-Wno-unreachable-code"]
    ldflags = []
    macros = [("CYTHON_TRACE", "1"), ("CYTHON_TRACE_NOGIL", "1"), ("AERON_PY_DEBUG", "1")] if DEBUG else []
    if SANITIZE:
        cflags += ["-fsanitize=address,undefined"]
        ldflags += ["-fsanitize=address,undefined"]
    exts = []
    for root in roots:
        for pyx in sorted((HERE / root).rglob("*.pyx")):
            name = _module_name(pyx)
            if BUILD_ONLY and name.rsplit(".", 1)[-1] not in BUILD_ONLY and name not in BUILD_ONLY:
                continue
            exts.append(Extension(name, [str(pyx.relative_to(HERE))], include_dirs=INCLUDE_DIRS,
                                  extra_compile_args=cflags, extra_link_args=ldflags,
                                  define_macros=macros))
    return exts


class build_ext(_build_ext):
    user_options = _build_ext.user_options + [
        ("cython-always", None, "always cythonize, even if .c files are newer"),
        ("cython-annotate", None, "write Cython annotate HTML next to the sources"),
        ("cython-directives=", None, "comma separated Cython directives, k=v,..."),
    ]
    boolean_options = _build_ext.boolean_options + ["cython-always", "cython-annotate"]

    def initialize_options(self):
        super().initialize_options()
        self.cython_always = False
        self.cython_annotate = False
        self.cython_directives = None

    def finalize_options(self):
        # run() clears inplace while it builds (then copies into the tree): decide here, from the option given
        self._strip = not self.inplace and not DEBUG
        if self.parallel is None:
            self.parallel = os.cpu_count() or 1
        if not getattr(self, "_cythonized", False):
            self._cythonize()
        super().finalize_options()
        if self.inplace:
            # Their own build folders: a wheel built from the same tree must not pick up these unstripped
            # modules as up to date, nor an in-place build the wheel's stripped ones.
            self.build_lib = os.path.join(self.build_temp + "-inplace", "lib")
            self.build_temp = os.path.join(self.build_temp + "-inplace", "temp")

    def _cythonize(self):
        from Cython.Build import cythonize

        directives = {"language_level": "3", "embedsignature": True}
        if DEBUG:
            directives["linetrace"] = True
            self.cython_always = self.cython_annotate = True
        if self.cython_directives:
            for pair in self.cython_directives.split(","):
                key, _, value = pair.partition("=")
                directives[key.strip()] = value.strip()
        self.distribution.ext_modules[:] = cythonize(
            self.distribution.ext_modules,
            compiler_directives=directives,
            annotate=self.cython_annotate,
            force=self.cython_always,
            include_path=[str(HERE)],
            nthreads=int(os.environ.get("AERON_PY_CYTHON_JOBS", os.cpu_count() or 1)),
            quiet=not PROGRESS,
        )
        self._cythonized = True
        self._done = 0
        self._done_lock = threading.Lock()   # -j builds extensions on a pool of threads

    def build_extension(self, ext):
        if self._strip:
            ext.extra_compile_args = [*ext.extra_compile_args, "-g0"]
            ext.extra_link_args = [*ext.extra_link_args, "-s"]
        started = time.monotonic()
        super().build_extension(ext)
        if PROGRESS:
            with self._done_lock:
                self._done += 1
                total = len(self.extensions)
                took = time.monotonic() - started
                print(f"[{self._done:>{len(str(total))}}/{total}] compiled {ext.name} ({took:.0f} s)", flush=True)


def _check_python():
    # pip enforces requires-python; this gives `python setup.py build_ext` (run.sh) the same floor, read from
    # the one place it is written.
    text = (HERE / "pyproject.toml").read_text()
    floor = re.search(r'^requires-python = ">=(\d+)\.(\d+)"$', text, re.M)
    if floor is None:
        raise SystemExit("setup.py: pyproject.toml has no requires-python of the form \">=X.Y\"")
    need = (int(floor[1]), int(floor[2]))
    if sys.version_info < need:
        raise SystemExit(f"aeron-py needs Python {need[0]}.{need[1]} or newer, this is {sys.version.split()[0]}")


if __name__ == "__main__":
    _check_python()
    setup(ext_modules=_extensions(), cmdclass={"build_ext": build_ext})
