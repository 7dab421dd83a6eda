# SPDX-License-Identifier: Apache-2.0
"""The modules that moved to aeron.common keep their old names: every public name is still importable from
where users imported it, and is the same object."""
from __future__ import annotations

import ast
import importlib
import inspect

import pytest

import aeron
import aeron.common.version
from aeron.common.paths import default_aeron_dir

MOVED = [
    ("aeron.errors", "aeron.common.errors"),
    ("aeron.agent", "aeron.common.agent"),
    ("aeron.command", "aeron.common.command"),
    ("aeron.client.channel_uri", "aeron.common.channel_uri"),
]


def _defined_public_names(module) -> list[str]:
    """Names a module's own source binds at top level (defs, classes, assignments), not its imports."""
    names = []
    for node in ast.parse(inspect.getsource(module)).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.append(node.target.id)
    return [name for name in names if not name.startswith("_")]


@pytest.mark.parametrize("old,new", MOVED)
def test_the_old_module_gives_every_public_name_of_the_new_home(old, new):
    shim, home = importlib.import_module(old), importlib.import_module(new)
    names = _defined_public_names(home)
    assert len(names) > 5
    assert [name for name in names if getattr(shim, name, None) is not getattr(home, name)] == []
    assert shim.__all__ == home.__all__
    exec(f"from {old} import {', '.join(names)}", {})      # the from-import form, names outside __all__ too


@pytest.mark.parametrize("old,new", MOVED)
def test_a_shim_says_what_it_is_in_one_line(old, new):
    doc = importlib.import_module(old).__doc__
    assert doc.startswith("Compatibility shim") and "\n" not in doc and new in doc


def test_an_unknown_name_still_raises_attribute_error():
    import aeron.client.channel_uri as shim
    with pytest.raises(AttributeError):
        shim.NO_SUCH_NAME  # noqa: B018
    with pytest.raises(ImportError):
        exec("from aeron.errors import NoSuchError", {})


def test_the_top_package_and_the_client_keep_their_names():
    from aeron.client import ChannelUri
    from aeron.client import default_aeron_dir as client_default
    from aeron.client.context import default_aeron_dir as context_default
    from aeron.common.channel_uri import ChannelUri as common_channel_uri
    assert client_default is context_default is default_aeron_dir
    assert ChannelUri is common_channel_uri
    assert aeron.__version__ == aeron.common.version.__version__
    for name in aeron.__all__:
        assert getattr(aeron, name) is not None, name
