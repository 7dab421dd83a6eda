# SPDX-License-Identifier: Apache-2.0
"""Comments, docstrings and docs cite what a reader can open: Aeron's own classes, functions and files
(``aeron_loss_detector.c``, ``TermScanner.scanForAvailability``), never sections of notes that are not in the
repository (the section sign, the notes' file names, the style and design documents)."""
import pathlib
import re

import pytest

from tests.conftest import PROJECT_ROOT
from tests.test_standalone import project_files

THIS_FILE = pathlib.Path(__file__).resolve()
# Verbatim outputs and files of official Aeron, not our prose.
VERBATIM = ("tests/data/",)

# Spelled from pieces so that no line of this file matches: a plain search of the project finds nothing here.
SECTION = "\u00a7"
NOTES = ["wire-and-" + "logbuffers", "cnc-and-" + "driver"]
# docs/reference/archive.md is a page of ours: only a bare archive/cluster name followed by a section number cites
# the notes, and there are no style or design documents in the repository to cite at all.
CITATION = re.compile(
    re.escape(SECTION)
    + "|" + "|".join(re.escape(name) for name in NOTES)
    + r"|(?<![\w/.-])(?:archive|cluster)\.md\s*(?:sections?\s*)?\d"
    + r"|(?<![\w/.-])(?:" + "STY" + "LE|DES" + r"IGN)\.md\b")


def citations(text: str) -> list[tuple[int, str]]:
    """(line number, matched text) of every citation of the notes in ``text``."""
    return [(text.count("\n", 0, m.start()) + 1, m.group()) for m in CITATION.finditer(text)]


@pytest.mark.parametrize("text", [
    "# the formula of " + SECTION + "6.8 evaluated directly",
    "(reference " + SECTION + "5.4; Aeron FragmentAssembler)",
    '"""Codecs of the control protocol (' + NOTES[1] + ".md " + SECTION + '6)."""',
    "# driver pid, int64 (" + NOTES[1] + ".md 2.1)",
    "Reference: " + NOTES[0] + ".md, the data path",
    "frames into a replay publication (archive" + ".md 4.4-4.6)",
    "stop-position recovery (cluster" + ".md section 11)",
    "never per message (STY" + "LE.md section 3)",
    "see DES" + "IGN.md",
])
def test_the_check_finds_each_way_of_citing_the_notes(text):
    assert citations("first line\n" + text)[0][0] == 2


@pytest.mark.parametrize("text", [
    "Port of aeron_publication_image.c (track_rebuild); LossDetector.scan",
    "the API pages: docs/reference/archive.md and reference/cluster.md",
    "[Archive](archive.md) lists the catalog commands",
    "README.md section 2 of the quick start",
])
def test_the_check_leaves_openable_references_alone(text):
    assert citations(text) == []


def test_no_project_file_cites_the_reference_notes():
    files = [f for f in project_files() if f.resolve() != THIS_FILE
             and not f.relative_to(PROJECT_ROOT).as_posix().startswith(VERBATIM)]
    assert len(files) > 50                      # the listing saw the project, not an empty tree
    offenders = []
    for f in files:
        try:
            text = f.read_text(encoding="utf-8")
        except (UnicodeDecodeError, IsADirectoryError, FileNotFoundError):
            continue                            # binary data, or a path git lists but the tree lacks
        offenders += [f"{f.relative_to(PROJECT_ROOT)}:{line}: {match}" for line, match in citations(text)]
    assert not offenders, "\n".join(offenders)
