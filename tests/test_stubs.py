# SPDX-License-Identifier: Apache-2.0
"""Every compiled module under aeron/_core ships a .pyi stub that names what the module exports.

The module list comes from a glob of the .pyx sources, so a new compiled module without a stub fails
here. Stubs are parsed with ``ast`` and compared with the built modules in both directions: every
public runtime name (and public class attribute) must be in the stub, every def/class/annotated name
in the stub must exist at runtime, and parameter names, kinds and literal defaults must match the
signatures Cython embeds.
"""
import ast
import fnmatch
import importlib
import inspect
import sys
import types
from pathlib import Path

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
CORE = ROOT / "aeron" / "_core"
PYX = sorted(CORE.rglob("*.pyx"))
MODULES = [".".join(p.relative_to(ROOT).with_suffix("").parts) for p in PYX]


def _stub_path(module_name):
    return ROOT.joinpath(*module_name.split(".")).with_suffix(".pyi")


_trees = {}


def _stub(module_name):
    if module_name not in _trees:
        path = _stub_path(module_name)
        if not path.is_file():
            pytest.fail(f"{module_name} has no .pyi stub")
        _trees[module_name] = ast.parse(path.read_text(), filename=str(path))
    return _trees[module_name]


def _flat(body):
    """Statements of a stub body, descending into ``if`` blocks (version checks)."""
    for node in body:
        if isinstance(node, ast.If):
            yield from _flat(node.body)
            yield from _flat(node.orelse)
        else:
            yield node


def _defined(body, reexports=True):
    """Names a stub body defines: defs, classes, assignments, annotations, explicit re-exports."""
    names = set()
    for node in _flat(body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif reexports and isinstance(node, (ast.Import, ast.ImportFrom)):
            # PEP 484: only ``import X as X`` / ``from m import X as X`` re-export a name.
            names.update(a.asname for a in node.names if a.asname is not None and a.asname == a.name)
    return names


def _checked(body):
    """Names a stub claims exist at runtime: defs, classes and annotated names (not type aliases)."""
    for node in _flat(body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name, node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            yield node.target.id, node


def _stub_class(module_name, class_name):
    for node in _flat(_stub(module_name).body):
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            return node
    return None


def _stub_class_names(module_name, class_name, seen=None):
    """Names defined in a stub class block and in the blocks of its stub-declared aeron bases."""
    seen = set() if seen is None else seen
    if (module_name, class_name) in seen:
        return set()
    seen.add((module_name, class_name))
    node = _stub_class(module_name, class_name)
    if node is None:
        return set()
    names = _defined(node.body, reexports=False)
    imported = {}
    for stmt in _flat(_stub(module_name).body):
        if isinstance(stmt, ast.ImportFrom) and stmt.module and stmt.module.startswith("aeron."):
            for alias in stmt.names:
                imported[alias.asname or alias.name] = (stmt.module, alias.name)
    for base in node.bases:
        if not isinstance(base, ast.Name):
            continue
        if _stub_class(module_name, base.id) is not None:
            names |= _stub_class_names(module_name, base.id, seen)
        elif base.id in imported and _stub_path(imported[base.id][0]).exists():
            names |= _stub_class_names(*imported[base.id], seen)
    return names


def _is_imported(module, name, obj):
    """True for modules and for objects that are attributes of the module they were defined in."""
    if isinstance(obj, types.ModuleType):
        return True
    origin = getattr(obj, "__module__", None)
    if not isinstance(origin, str) or origin == module.__name__:
        return False
    source = sys.modules.get(origin)
    return source is not None and getattr(source, getattr(obj, "__name__", name), None) is obj


def _exports(module):
    for name in dir(module):
        if name.startswith("_"):
            continue
        obj = getattr(module, name)
        if not _is_imported(module, name, obj):
            yield name, obj


def _own_classes(module):
    """Classes defined by the module (aliases resolved to the class)."""
    classes = {}
    for _, obj in _exports(module):
        if isinstance(obj, type):
            classes[obj.__name__] = obj
    return classes


def _public_attributes(cls):
    """Public, non-dunder attributes of ``cls`` that it or an aeron base defines (not builtins')."""
    for attr in dir(cls):
        if attr.startswith("_") or attr in dir(object):
            continue
        owner = next((k for k in cls.__mro__ if attr in vars(k)), cls)
        if owner is not cls and not owner.__module__.startswith("aeron"):
            continue        # inherited from tuple, int, ... (NamedTuple's count/index)
        yield attr


def test_every_compiled_module_is_listed():
    assert "aeron._core.atomic_buffer" in MODULES
    assert len(MODULES) == len(set(MODULES))


def test_stubs_and_marker_are_package_data():
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["*"]
    assert (ROOT / "aeron" / "py.typed").is_file()
    for name in ("counters.pyi", "py.typed"):
        assert any(fnmatch.fnmatch(name, pattern) for pattern in package_data), (name, package_data)


@pytest.mark.parametrize("module_name", MODULES)
def test_stub_exists(module_name):
    assert _stub_path(module_name).is_file(), f"{module_name} has no .pyi stub"


@pytest.mark.parametrize("module_name", MODULES)
def test_stub_names_every_export(module_name):
    module = importlib.import_module(module_name)
    declared = _defined(_stub(module_name).body)
    missing = sorted(name for name, _ in _exports(module) if name not in declared)
    assert not missing, f"{_stub_path(module_name).name} lacks: {', '.join(missing)}"


@pytest.mark.parametrize("module_name", MODULES)
def test_stub_classes_name_every_public_attribute(module_name):
    module = importlib.import_module(module_name)
    problems = []
    for class_name, cls in sorted(_own_classes(module).items()):
        if _stub_class(module_name, class_name) is None:
            problems.append(f"class {class_name} has no block")
            continue
        declared = _stub_class_names(module_name, class_name)
        missing = sorted(a for a in _public_attributes(cls) if a not in declared)
        if missing:
            problems.append(f"{class_name} lacks {', '.join(missing)}")
    assert not problems, f"{_stub_path(module_name).name}: " + "; ".join(problems)


@pytest.mark.parametrize("module_name", MODULES)
def test_stub_names_exist_at_runtime(module_name):
    module = importlib.import_module(module_name)
    problems = []
    for name, node in _checked(_stub(module_name).body):
        if not hasattr(module, name):
            problems.append(name)
        elif isinstance(node, ast.ClassDef):
            cls = getattr(module, name)
            problems.extend(f"{name}.{attr}" for attr, _ in _checked(node.body)
                            if not (attr.startswith("__") and attr.endswith("__")) and not hasattr(cls, attr))
    assert not problems, f"{_stub_path(module_name).name} declares names the module lacks: {', '.join(problems)}"


_KINDS = {"posonlyargs": inspect.Parameter.POSITIONAL_ONLY, "args": inspect.Parameter.POSITIONAL_OR_KEYWORD,
          "kwonlyargs": inspect.Parameter.KEYWORD_ONLY}


def _stub_parameters(node):
    """[(name, kind, default node or None)] of a stub def, in order."""
    a = node.args
    positional = [(p, "posonlyargs") for p in a.posonlyargs] + [(p, "args") for p in a.args]
    defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    params = [(p.arg, _KINDS[k], d) for (p, k), d in zip(positional, defaults)]
    if a.vararg:
        params.append((a.vararg.arg, inspect.Parameter.VAR_POSITIONAL, None))
    params += [(p.arg, inspect.Parameter.KEYWORD_ONLY, d) for p, d in zip(a.kwonlyargs, a.kw_defaults)]
    if a.kwarg:
        params.append((a.kwarg.arg, inspect.Parameter.VAR_KEYWORD, None))
    return params


def _is_property(node):
    return any((isinstance(d, ast.Name) and d.id == "property") or
               (isinstance(d, ast.Attribute) and d.attr in ("setter", "getter", "deleter"))
               for d in node.decorator_list)


def _signature_problems(qualname, node, runtime):
    try:
        signature = inspect.signature(runtime)
    except (TypeError, ValueError):
        return []       # no introspectable signature (slot wrappers)
    expected = [(p.name, p.kind, p.default) for p in signature.parameters.values()]
    stub = _stub_parameters(node)
    names_kinds = [(n, k) for n, k, _ in stub]
    if names_kinds != [(n, k) for n, k, _ in expected]:
        return [f"{qualname}{signature} vs stub ({', '.join(n for n, _, _ in stub)})"]
    problems = []
    for (name, _, stub_default), (_, _, default) in zip(stub, expected):
        if stub_default is None:
            if default is not inspect.Parameter.empty:
                problems.append(f"{qualname}: {name} has a default at runtime, none in the stub")
            continue
        if default is inspect.Parameter.empty:
            problems.append(f"{qualname}: {name} has a default in the stub, none at runtime")
        elif not (isinstance(stub_default, ast.Constant) and stub_default.value is Ellipsis):
            try:
                value = ast.literal_eval(stub_default)
            except ValueError:
                continue
            if value != default:
                problems.append(f"{qualname}: {name}={value!r} in the stub, {default!r} at runtime")
    return problems


@pytest.mark.parametrize("module_name", MODULES)
def test_stub_signatures_match_runtime(module_name):
    module = importlib.import_module(module_name)
    problems = []
    for name, node in _checked(_stub(module_name).body):
        runtime = getattr(module, name, None)
        if runtime is None:
            continue        # reported by test_stub_names_exist_at_runtime
        if isinstance(node, ast.FunctionDef):
            problems += _signature_problems(name, node, runtime)
        elif isinstance(node, ast.ClassDef):
            for attr, member in _checked(node.body):
                if (not isinstance(member, ast.FunctionDef) or _is_property(member)
                        or (attr.startswith("__") and attr.endswith("__"))):
                    continue
                method = inspect.getattr_static(runtime, attr, None)
                if isinstance(method, staticmethod):
                    method = method.__func__
                elif method is not None:
                    method = getattr(runtime, attr)
                if method is not None:
                    problems += _signature_problems(f"{name}.{attr}", member, method)
    assert not problems, f"{_stub_path(module_name).name}:\n  " + "\n  ".join(problems)
