# SPDX-License-Identifier: Apache-2.0
"""The project stands alone: no tracked file names a folder outside the clone (the workspace's shared/
folder that the golden data once came from), and the golden data inside the clone is intact."""
import hashlib
import os
import pathlib
import re
import subprocess

import pytest

from tests.conftest import GOLDEN, PROJECT_ROOT

# Names of the outside folder, however written: relative, absolute, one of its subfolders or documents,
# or the environment variable that used to point at it.
OUTSIDE = re.compile(rb"\.\./shared\b|/work/shared\b|\bshared/(?:golden|reference|DESIGN\.md|STYLE\.md)"
                     rb"|AERON_PY_SHARED")
THIS_FILE = pathlib.Path(__file__).resolve()
# Used only when the tree is not a git checkout (an unpacked sdist): what git would not track.
UNTRACKED_DIRS = {".git", ".venv", "build", "dist", "__pycache__", ".pytest_cache", ".hypothesis"}


def project_files() -> list[pathlib.Path]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=PROJECT_ROOT, capture_output=True, check=True,
                             timeout=60).stdout
        return [PROJECT_ROOT / os.fsdecode(name) for name in out.split(b"\0") if name]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for root, dirs, names in os.walk(PROJECT_ROOT):
            dirs[:] = [d for d in dirs if d not in UNTRACKED_DIRS and not d.endswith(".egg-info")]
            files.extend(pathlib.Path(root) / n for n in names if not n.endswith((".so", ".c", ".html")))
        return files


def outside_names(data: bytes) -> list[tuple[int, str]]:
    """(line number, matched text) of every name of the outside folder in ``data``."""
    return [(data.count(b"\n", 0, m.start()) + 1, m.group().decode("ascii", "replace"))
            for m in OUTSIDE.finditer(data)]


# The inputs below spell the outside folder's name from pieces, so that no line of this file names it whole: a
# plain search of the project for that folder then finds nothing, here included.
DIR = b"sha" + b"red"


@pytest.mark.parametrize("text", [
    b"see ../" + DIR + b"/DES" + b"IGN.md section 7",
    b"golden-file tests read ../" + DIR,
    b"# from " + DIR + b"/golden/cnc/README.md",
    b"offsets as in " + DIR + b"/reference/cnc-and-" + b"driver.md",
    b"python -c 'open(\"/work/" + DIR + b"\")'",
    b"AERON_PY_SHARED=/somewhere ./run.sh test",
    b"layout: see " + DIR + b"/DES" + b"IGN.md",
])
def test_the_check_finds_each_way_of_naming_the_outside_folder(text):
    assert outside_names(b"first line\n" + text) != []
    assert outside_names(b"first line\n" + text)[0][0] == 2


@pytest.mark.parametrize("text", [
    b"aeron.shared.idle.strategy=backoff",
    b"AERON_THREADING_MODE=SHARED AERON_SHARED_IDLE_STRATEGY=backoff",
    b"golden data from official Aeron, see tests/data/golden/README.md",
    b"concurrent publications are shared/exclusive ones are not",
    b"../" + DIR + b"_memory/x",
])
def test_the_check_leaves_other_uses_of_the_word_alone(text):
    assert outside_names(text) == []


def test_no_project_file_names_a_folder_outside_the_clone():
    files = [f for f in project_files() if f.resolve() != THIS_FILE]
    assert len(files) > 50                      # the listing saw the project, not an empty tree
    offenders = [f"{f.relative_to(PROJECT_ROOT)}:{line}: {text}"
                 for f in files if f.is_file() for line, text in outside_names(f.read_bytes())]
    assert not offenders, "\n".join(offenders)


def test_golden_data_in_the_clone_matches_its_checksums():
    lines = (GOLDEN / "SHA256SUMS").read_text().splitlines()
    assert len(lines) > 30
    for line in lines:
        digest, name = line.split(maxsplit=1)
        assert hashlib.sha256((GOLDEN / name).read_bytes()).hexdigest() == digest, name
