# SPDX-License-Identifier: Apache-2.0
"""StreamStat over the golden cnc.dat files of the official C driver: one line per stream, positions in counter
order, values and registration ids as the official AeronStat printed them beside the files."""
import gzip
import subprocess
import sys

import pytest

from aeron.tools import stream_stat
from tests import procs

CASES = {
    "c-aeronmd-ipc": [
        "sessionId=-1382497356 streamId=1001 channel=aeron:ipc : pub-pos (concurrent):4:320 pub-lmt:4:32768 "
        "sub-pos:2:320"],
    "c-aeronmd-udp-unicast/publisher-driver": [
        "sessionId=-1814757439 streamId=1001 channel=aeron:udp?endpoint=127.0.0.1:40601|interface=127.0.0.1:40602 :"
        " pub-pos (concurrent):2:320 pub-lmt:2:{publmt} snd-pos:2:320 snd-lmt:2:{sndlmt} snd-bpe:2:0"
        " snd-naks-received:2:0"],
    "c-aeronmd-udp-unicast/subscriber-driver": [
        "sessionId=-1814757439 streamId=1001 channel=aeron:udp?endpoint=127.0.0.1:40601 : rcv-hwm:3:320 "
        "rcv-pos:3:320 rcv-naks-sent:3:0 sub-pos:2:320"],
}


def _aeron_dir(golden_dir, case, tmp_path):
    target = tmp_path / case.replace("/", "-")
    target.mkdir()
    (target / "cnc.dat").write_bytes(gzip.decompress((golden_dir / "cnc" / case / "cnc.dat.gz").read_bytes()))
    return target


def _expected(golden_dir, case):
    # limits are whatever the official AeronStat printed for this file
    text = (golden_dir / "cnc" / case / "aeronstat-c.txt").read_text()
    values = {}
    for line in text.splitlines():
        if " - " in line and ":" in line.split(" - ")[0]:
            value, label = line.split(" - ", 1)
            values[label.split(":")[0]] = int(value.split(":")[1].strip().replace(",", ""))
    return [line.format(publmt=values.get("pub-lmt"), sndlmt=values.get("snd-lmt")) for line in CASES[case]]


@pytest.mark.parametrize("case", list(CASES))
def test_stream_stat_reads_the_golden_counters(golden_dir, tmp_path, case):
    aeron_dir = _aeron_dir(golden_dir, case, tmp_path)
    assert stream_stat.format_streams(stream_stat.read_streams(str(aeron_dir))).splitlines() == \
        _expected(golden_dir, case)


def test_cli_prints_the_same(golden_dir, tmp_path):
    aeron_dir = _aeron_dir(golden_dir, "c-aeronmd-ipc", tmp_path)
    out = subprocess.run([sys.executable, "-m", "aeron.tools.stream_stat", "-d", str(aeron_dir)],
                         capture_output=True, text=True, timeout=30, env=procs.client_env())
    assert out.returncode == 0 and out.stdout.splitlines() == _expected(golden_dir, "c-aeronmd-ipc")


def test_cli_reports_a_missing_directory(tmp_path):
    out = subprocess.run([sys.executable, "-m", "aeron.tools.stream_stat", "-d", str(tmp_path / "none"), "-t", "0"],
                         capture_output=True, text=True, timeout=30, env=procs.client_env())
    assert out.returncode == 1 and "CnC file not found" in out.stderr
