# SPDX-License-Identifier: Apache-2.0
"""Payload decoders on Arrow batches, without Spark."""
import json
import struct

import pyarrow as pa
import pytest

from aeron.common.errors import InvalidArgumentError
from aeron.spark import decoders


def test_utf8():
    out = decoders.Utf8Decoder().decode(pa.array([b"abc", "é".encode(), b""], pa.binary()))
    assert out[0].to_pylist() == ["abc", "é", ""]
    with pytest.raises(InvalidArgumentError, match="UTF-8"):
        decoders.Utf8Decoder().decode(pa.array([b"\xff"], pa.binary()))


def test_struct_values_from_the_payload_start():
    d = decoders.StructDecoder("<qidB?", ["a", "b", "c", "d", "e"])
    assert d.ddl == "`a` bigint, `b` int, `c` double, `d` smallint, `e` boolean"
    payloads = [struct.pack("<qidB?", i, -i, i / 2, 200 + i, i % 2 == 0) + b"trailer" * i for i in range(5)]
    arr = pa.array(payloads, pa.binary()).slice(1)                # a sliced column keeps its offsets right
    cols = d.decode(arr)
    assert [c.to_pylist() for c in cols] == [[1, 2, 3, 4], [-1, -2, -3, -4], [0.5, 1.0, 1.5, 2.0],
                                             [201, 202, 203, 204], [False, True, False, True]]
    big = decoders.StructDecoder(">Hxi", ["x", "y"]).decode(pa.array([struct.pack(">Hxi", 65535, -7)], pa.binary()))
    assert [c.to_pylist() for c in big] == [[65535], [-7]]
    with pytest.raises(InvalidArgumentError, match="shorter"):
        d.decode(pa.array([b"short"], pa.binary()))
    with pytest.raises(InvalidArgumentError, match="values"):
        decoders.StructDecoder("<qq", ["one"])
    with pytest.raises(InvalidArgumentError, match="unsupported"):
        decoders.StructDecoder("<s", ["x"])


def test_json_documents():
    d = decoders.JsonDecoder("sym string, px double, qty bigint", (pa.string(), pa.float64(), pa.int64()))
    docs = [json.dumps({"sym": "ABC", "px": 1.5 + i, "qty": i, "extra": [1]}).encode() for i in range(3)]
    cols = d.decode(pa.array(docs, pa.binary()).slice(1))
    assert [c.to_pylist() for c in cols] == [["ABC", "ABC"], [2.5, 3.5], [1, 2]]
    with pytest.raises(InvalidArgumentError, match="newline"):
        d.decode(pa.array([b'{"sym":\n"x"}'], pa.binary()))
    with pytest.raises(InvalidArgumentError, match="JSON"):
        d.decode(pa.array([b"{not json"], pa.binary()))


def test_function_and_options():
    f = decoders.FunctionDecoder(lambda p: pa.compute.binary_length(p), "n int")
    assert f.decode(pa.array([b"ab", b""], pa.binary()))[0].to_pylist() == [2, 0]
    bad = decoders.FunctionDecoder(lambda p: [p, p], "n int")
    with pytest.raises(InvalidArgumentError, match="columns"):
        bad.decode(pa.array([b"x"], pa.binary()))
    assert decoders.decoder_from_options({}) is None
    assert isinstance(decoders.decoder_from_options({"decoder": "UTF-8"}), decoders.Utf8Decoder)
    with pytest.raises(InvalidArgumentError, match="valueSchema"):
        decoders.decoder_from_options({"decoder": "json"})
    with pytest.raises(InvalidArgumentError, match="unknown decoder"):
        decoders.decoder_from_options({"decoder": "avro"})
    batch = pa.RecordBatch.from_pydict({"payload": pa.array([b"ab"], pa.binary())})
    out = decoders.apply(f, batch, (pa.int32(),))
    assert out.schema.names == ["payload", "n"] and out.column("n").type == pa.int32()
