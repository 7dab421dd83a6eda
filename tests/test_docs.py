# SPDX-License-Identifier: Apache-2.0
"""The documentation site builds with ``mkdocs build --strict`` (any warning fails: a broken link, a missing
page, an API reference entry that does not resolve), every page is in its navigation, and the examples the
guides show are the README's, which tests/test_readme.py (and tests/spark/test_session.py) runs; tests/test_guides.py
and tests/spark/test_guide.py run the archive and Spark guides' examples; tests/test_typing.py type-checks every
example of the README and the site.

Skips only when mkdocs is not installed (``./run.sh`` installs the docs extra).
"""
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import PROJECT_ROOT

DOCS = PROJECT_ROOT / "docs"
SNIPPET = re.compile(r"```python\n(.*?)```", re.S)


def _first_snippet(path):
    return SNIPPET.search(path.read_text())[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install -e .[docs])")
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(PROJECT_ROOT / "mkdocs.yml"),
         "--site-dir", str(out)],
        cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "WARNING" not in result.stderr, result.stderr
    return out


@pytest.mark.timeout(300)
def test_site_builds_strict_with_every_page(site):
    pages = sorted(p.relative_to(DOCS).with_suffix("") for p in DOCS.rglob("*.md"))
    assert len(pages) >= 15
    for page in pages:
        html = site / ("index.html" if page.name == "index" else page / "index.html")
        assert html.is_file(), page


@pytest.mark.timeout(300)
def test_api_reference_renders_docstrings(site):
    client = (site / "reference" / "client" / "index.html").read_text()
    for text in ("add_subscription", "try_claim", "MAX_POSITION_EXCEEDED", "handler(buffer, offset, length, header)"):
        assert text in client, text
    assert "TermAppender.offer(self" not in client, "Cython's embedded signature line is not stripped"
    assert ":meth:" not in client and ":class:" not in client, "Sphinx roles are not rewritten"
    aio = (site / "reference" / "aio" / "index.html").read_text()
    assert "receive_many" in aio and "wait_connected" in aio
    driver = (site / "reference" / "driver" / "index.html").read_text()
    assert "launch_embedded" in driver and "SHARED_NETWORK" in driver
    archive = (site / "reference" / "archive" / "index.html").read_text()
    assert "start_recording_op" in archive and "drive_async" in archive and "AsyncConnect" in archive
    assert ":meth:" not in archive and ":mod:" not in archive
    for text in ("ReplayMerge", "PersistentSubscription", "ArchivingMediaDriver", "segment_file_length", "verify"):
        assert text in archive, text
    aio_archive = (site / "reference" / "aio-archive" / "index.html").read_text()
    for text in ("AsyncAeronArchive", "ReplayStream", "recording_signals", "start_recording"):
        assert text in aio_archive, text
    spark = (site / "reference" / "spark" / "index.html").read_text()
    for text in ("configure", "register", "with_decoder", "maxBytesPerPartition", "read_range"):
        assert text in spark, text


def test_every_page_is_in_the_navigation():
    config = (PROJECT_ROOT / "mkdocs.yml").read_text()
    for page in DOCS.rglob("*.md"):
        assert f" {page.relative_to(DOCS).as_posix()}\n" in config, f"{page} is not in mkdocs.yml's nav"


def test_guides_show_the_readme_examples():
    readme = SNIPPET.findall((PROJECT_ROOT / "README.md").read_text())
    assert _first_snippet(DOCS / "getting-started.md") == readme[0]
    assert _first_snippet(DOCS / "asyncio.md") == readme[1]
    assert _first_snippet(DOCS / "archive.md") == readme[2]
    assert SNIPPET.findall((DOCS / "spark.md").read_text())[1] == readme[3]   # tests/spark/test_session.py runs it
