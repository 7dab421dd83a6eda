# SPDX-License-Identifier: Apache-2.0
"""Every public class, method and function of the public API has a docstring.

Python modules: ruff's pydocstyle rules D100-D107 (``--select D1``, the convention set in pyproject.toml) over the
public packages; aeron/driver's internals and the samples are outside the rule. Compiled classes: the methods and
properties users reach through the client's classes show a docstring in ``help()`` (Cython embeds the signature as
the first line; text must follow it).
"""
import inspect
import re
import subprocess
import sys
import types

import pytest

import aeron.aio
import aeron.client
from tests.conftest import PROJECT_ROOT

PUBLIC_PATHS = ["aeron/client", "aeron/aio", "aeron/common", "aeron/tools", "aeron/driver/media_driver.py",
                "aeron/__init__.py"]
COMPILED_FACES = [aeron.client.Publication, aeron.client.ExclusivePublication, aeron.client.Image,
                  aeron.client.BufferClaim, aeron.client.Header, aeron.client.FragmentAssembler,
                  aeron.client.ControlledFragmentAssembler, aeron.client.ImageFragmentAssembler,
                  aeron.client.ImageControlledFragmentAssembler]
# `cdef readonly` attributes: Cython gives them no docstring (the classes' docstrings describe them)
UNDOCUMENTABLE = {"log"}
EMBEDDED_SIGNATURE = re.compile(r"^[\w.]+\(.*\)(\s*->.*)?$")


def ruff(*args):
    return subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise",
                           *args], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=120)


def test_public_packages_pass_pydocstyle_d1():
    result = ruff("--select", "D1", *PUBLIC_PATHS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_rule_reports_a_missing_docstring(tmp_path):
    # the configuration in force (pyproject.toml) must not switch D1 off: an undocumented function fails
    module = tmp_path / "undocumented.py"
    module.write_text('"""A module."""\n\n\ndef public_function():\n    return 1\n')
    result = ruff("--select", "D1", str(module))
    assert result.returncode == 1 and "D103" in result.stdout, result.stdout + result.stderr


def _text(doc):
    lines = [line for line in (doc or "").strip().splitlines() if line.strip()]
    if lines and EMBEDDED_SIGNATURE.match(lines[0].strip()):
        lines = lines[1:]
    return "\n".join(lines).strip()


def _public_members(cls):
    for name in dir(cls):
        if name.startswith("_") or name in UNDOCUMENTABLE:
            continue
        member = inspect.getattr_static(cls, name)
        if isinstance(member, (types.MemberDescriptorType, int, str)):
            continue        # __slots__ fields and constants: described by the class docstring
        yield name, member


@pytest.mark.parametrize("cls", COMPILED_FACES, ids=lambda cls: cls.__name__)
def test_compiled_members_show_a_docstring_in_help(cls):
    assert _text(cls.__doc__), cls
    missing = [name for name, member in _public_members(cls) if not _text(getattr(member, "__doc__", None))]
    assert not missing, f"{cls.__name__}: no docstring for {missing}"


def test_help_on_offer_names_the_result_codes():
    text = _text(aeron.client.Publication.offer.__doc__)
    for code in ("NOT_CONNECTED", "BACK_PRESSURED", "ADMIN_ACTION", "CLOSED", "MAX_POSITION_EXCEEDED"):
        assert code in text
