# SPDX-License-Identifier: Apache-2.0
"""Our AeronStat reads the golden cnc.dat files exactly as the official AeronStat printed them."""
import datetime
import gzip
import os

import pytest

from aeron.common.errors import DriverTimeoutError, CorruptFileError
from aeron.tools import stat

CNC_SETS = ["c-aeronmd-ipc", "java-mediadriver-ipc", "c-aeronmd-udp-unicast/publisher-driver",
            "c-aeronmd-udp-unicast/subscriber-driver"]


def _golden_dir(golden_dir, shm_dir, name):
    data = gzip.decompress((golden_dir / "cnc" / name / "cnc.dat.gz").read_bytes())
    (shm_dir / "cnc.dat").write_bytes(data)
    return golden_dir / "cnc" / name


@pytest.mark.parametrize("name", CNC_SETS)
def test_counter_lines_match_official_aeron_stat(golden_dir, shm_dir, name):
    folder = _golden_dir(golden_dir, shm_dir, name)
    snapshot = stat.read_stat(str(shm_dir))
    expected = (folder / "aeronstat-c.txt").read_text().splitlines()
    text = stat.format_stat(snapshot, tz=datetime.timezone.utc).splitlines()
    # line 0 holds the reading time and heartbeat age; everything after it is fixed by the file
    assert text[1:] == expected[1:]
    header = expected[0]
    assert f"Aeron Stat (CnC v{snapshot.cnc_version}), pid {snapshot.pid}," in header


def test_snapshot_is_data(golden_dir, shm_dir):
    _golden_dir(golden_dir, shm_dir, "c-aeronmd-ipc")
    snapshot = stat.read_stat(str(shm_dir))
    assert snapshot.cnc_version == "0.2.0" and snapshot.pid == 19741
    by_id = {c.counter_id: c for c in snapshot.counters}
    assert by_id[47].label == "pub-pos (concurrent): 4 -1382497356 1001 aeron:ipc" and by_id[47].value == 320
    assert by_id[48].value == 32768 and by_id[50].value == 320
    # heartbeat from the golden ring (1795334962516 ms) is far in the past
    assert snapshot.heartbeat_age_ms == snapshot.timestamp_ms - 1795334962516


def test_cli_prints_once(golden_dir, shm_dir, capsys):
    folder = _golden_dir(golden_dir, shm_dir, "c-aeronmd-ipc")
    assert stat.main(["-d", str(shm_dir), "-w", "false"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2:] == (folder / "aeronstat-c.txt").read_text().splitlines()[2:]


def test_missing_driver_times_out(shm_dir):
    with pytest.raises(DriverTimeoutError):
        stat.read_stat(str(shm_dir), timeout_ms=50)
    assert stat.main(["-d", str(shm_dir), "-w", "false", "-t", "20"]) == 1


def test_truncated_cnc_is_reported(golden_dir, shm_dir):
    data = gzip.decompress((golden_dir / "cnc" / "c-aeronmd-ipc" / "cnc.dat.gz").read_bytes())
    (shm_dir / "cnc.dat").write_bytes(data[: len(data) // 2])
    with pytest.raises(CorruptFileError):
        stat.read_stat(str(shm_dir), timeout_ms=20)


def test_cli_rejects_bad_watch_flag(capsys):
    with pytest.raises(SystemExit):
        stat.main(["-w", "maybe"])
    assert "expected true or false" in capsys.readouterr().err


def test_default_dir_from_environment(monkeypatch):
    from aeron.tools._common import default_aeron_dir
    monkeypatch.setenv("AERON_DIR", "/dev/shm/somewhere")
    assert default_aeron_dir() == "/dev/shm/somewhere"
    monkeypatch.delenv("AERON_DIR")
    assert os.path.basename(default_aeron_dir()).startswith("aeron-")
