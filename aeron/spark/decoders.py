# SPDX-License-Identifier: Apache-2.0
"""Optional payload decoders of the aeron-archive source: typed columns added after ``payload``.

Every decoder works on a whole Arrow batch (vectorised by Arrow or NumPy, no Python per message):

- ``option("decoder", "raw")`` (default): no extra column.
- ``"utf-8"``: a ``value string`` column (invalid UTF-8 fails the read with InvalidArgumentError).
- ``"json"`` with ``option("valueSchema", "<DDL>")``: one compact JSON document per message (no raw newline)
  parsed by Arrow's JSON reader into the DDL's columns.
- ``"struct:<format>"`` with ``option("valueColumns", "a,b,...")``: Python ``struct`` format characters
  (``<`` / ``>`` / ``=`` then ``bBhHiIlLqQfd?`` and ``x`` padding) read from the start of each payload, one
  column per value; a shorter payload fails the read.
- a user function: :func:`with_decoder` makes a source format whose decoder is ``fn(payload) -> columns``.
"""
from __future__ import annotations

import dataclasses
import io
import re
import struct
from collections.abc import Callable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pajson

from aeron.common.errors import InvalidArgumentError

# struct format character -> (numpy type, size, Spark DDL type, Arrow type Spark expects)
_STRUCT_TYPES: dict[str, tuple[str, str, pa.DataType]] = {
    "b": ("i1", "tinyint", pa.int8()), "B": ("u1", "smallint", pa.int16()),
    "h": ("i2", "smallint", pa.int16()), "H": ("u2", "int", pa.int32()),
    "i": ("i4", "int", pa.int32()), "I": ("u4", "bigint", pa.int64()),
    "l": ("i4", "int", pa.int32()), "L": ("u4", "bigint", pa.int64()),
    "q": ("i8", "bigint", pa.int64()), "Q": ("u8", "bigint", pa.int64()),   # above 2**63 - 1 wraps, as Java's long
    "f": ("f4", "float", pa.float32()), "d": ("f8", "double", pa.float64()), "?": ("?", "boolean", pa.bool_()),
}


class Decoder:
    """Turns a batch's payload column into extra columns (``ddl`` names them for Spark)."""

    ddl: str = ""

    def decode(self, payload: pa.BinaryArray) -> list[pa.Array]:
        """The extra columns for ``payload``, one value per message."""
        raise NotImplementedError

    def names(self) -> list[str]:
        """The extra columns' names, in order."""
        return [f.name for f in _ddl_fields(self.ddl)]


def _ddl_fields(ddl: str) -> list[pa.Field]:
    # names only matter here: types come from Spark's parse of the same DDL
    return [pa.field(part.strip().split()[0].strip("`"), pa.null()) for part in _split_ddl(ddl)]


def _split_ddl(ddl: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in ddl:
        if ch in "<(":
            depth += 1
        elif ch in ">)":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return parts


class Utf8Decoder(Decoder):
    """``value string``."""

    ddl = "value string"

    def decode(self, payload: pa.BinaryArray) -> list[pa.Array]:
        """The payloads as text."""
        try:
            return [payload.cast(pa.string())]
        except pa.ArrowInvalid as e:
            raise InvalidArgumentError(f"payload is not UTF-8: {e}") from None


@dataclasses.dataclass
class JsonDecoder(Decoder):
    """Columns of ``value_schema`` (Spark DDL) from one JSON document per message; ``types`` are the columns'
    Arrow types (from Spark's parse of the DDL, given by the reader) that the documents are read as."""

    value_schema: str
    types: Sequence[pa.DataType] = ()

    def __post_init__(self) -> None:
        self.ddl = self.value_schema

    def decode(self, payload: pa.BinaryArray) -> list[pa.Array]:
        """Parse the batch's documents with Arrow's JSON reader."""
        names = self.names()
        if len(payload) == 0:
            return [pa.nulls(0) for _ in names]
        data = payload.buffers()[2]
        offsets = np.frombuffer(payload.buffers()[1], dtype=np.int32)[payload.offset:payload.offset + len(payload) + 1]
        raw = np.frombuffer(data, dtype=np.uint8)[offsets[0]:offsets[-1]]
        if np.count_nonzero(raw == 10):
            raise InvalidArgumentError("the json decoder takes compact documents: a payload holds a newline")
        ends = offsets[1:] - offsets[0]
        # one document per line: insert a newline after every payload, vectorised
        out = np.empty(len(raw) + len(ends), dtype=np.uint8)
        positions = ends + np.arange(len(ends))
        mask = np.ones(len(out), dtype=bool)
        mask[positions] = False
        out[mask] = raw
        out[positions] = 10
        try:
            explicit = pa.schema(list(zip(names, self.types))) if len(self.types) == len(names) else None
            table = pajson.read_json(io.BytesIO(out.tobytes()),
                                     read_options=pajson.ReadOptions(block_size=max(1 << 20, len(out) + 1)),
                                     parse_options=pajson.ParseOptions(explicit_schema=explicit,
                                                                       unexpected_field_behavior="ignore"))
        except pa.ArrowInvalid as e:
            raise InvalidArgumentError(f"payload is not a JSON document: {e}") from None
        if table.num_rows != len(payload):
            raise InvalidArgumentError(f"{len(payload)} messages parsed into {table.num_rows} JSON documents")
        return [table.column(n).combine_chunks() if n in table.column_names else pa.nulls(len(payload))
                for n in names]


@dataclasses.dataclass
class StructDecoder(Decoder):
    """Fixed-layout values at the start of each payload (Python ``struct`` format)."""

    fmt: str
    columns: Sequence[str]

    def __post_init__(self) -> None:
        m = re.fullmatch(r"([<>=!]?)([bBhHiIlLqQfd?x0-9]*)", self.fmt)
        if m is None or not m.group(2):
            raise InvalidArgumentError(f"unsupported struct format {self.fmt!r}: use [<>=] then bBhHiIlLqQfd?x")
        order = ">" if m.group(1) in (">", "!") else "<"
        self.size = struct.calcsize(order + m.group(2))
        fields, offset = [], 0
        for count, ch in re.findall(r"(\d*)([bBhHiIlLqQfd?x])", m.group(2)):
            for _ in range(int(count or 1)):
                if ch == "x":
                    offset += 1
                    continue
                np_type = _STRUCT_TYPES[ch][0]
                fields.append((order + np_type if np_type not in ("?", "i1", "u1") else np_type, offset, ch))
                offset += struct.calcsize(order + ch)
        if len(fields) != len(self.columns):
            raise InvalidArgumentError(f"struct format {self.fmt!r} has {len(fields)} values but valueColumns names "
                                       f"{len(self.columns)}")
        self.fields = fields
        self.ddl = ", ".join(f"`{n}` {_STRUCT_TYPES[ch][1]}" for n, (_, _, ch) in zip(self.columns, fields))

    def decode(self, payload: pa.BinaryArray) -> list[pa.Array]:
        """Gather the first ``size`` bytes of each payload, then view them as the values."""
        n = len(payload)
        if n and pc.min(pc.binary_length(payload)).as_py() < self.size:
            raise InvalidArgumentError(f"a payload is shorter than struct format {self.fmt!r} ({self.size} bytes)")
        offsets = np.frombuffer(payload.buffers()[1], dtype=np.int32)[payload.offset:payload.offset + n]
        data = np.frombuffer(payload.buffers()[2], dtype=np.uint8) if n else np.zeros(0, np.uint8)
        rows = data[offsets[:, None] + np.arange(self.size)] if n else np.zeros((0, self.size), np.uint8)
        rows = np.ascontiguousarray(rows)
        out = []
        for np_type, offset, ch in self.fields:
            width = np.dtype(np_type).itemsize
            values = rows[:, offset:offset + width].copy().view(np_type).reshape(n)
            values = values.astype(values.dtype.newbyteorder("="))     # Arrow takes native byte order only
            out.append(pa.array(values).cast(_STRUCT_TYPES[ch][2]) if ch not in "Q" else
                       pa.array(values.view(np.int64)))
        return out


DecoderResult = pa.Array | pa.ChunkedArray | Sequence[pa.Array] | pa.RecordBatch
"""What a decoder function returns for a batch of payloads: one column, several, or a RecordBatch of them."""


@dataclasses.dataclass
class FunctionDecoder(Decoder):
    """A user function ``fn(payload: pa.BinaryArray) -> pa.Array | Sequence[pa.Array] | pa.RecordBatch``."""

    fn: Callable[[pa.BinaryArray], DecoderResult]
    value_schema: str

    def __post_init__(self) -> None:
        self.ddl = self.value_schema

    def decode(self, payload: pa.BinaryArray) -> list[pa.Array]:
        """Call the function on the batch's payloads."""
        result = self.fn(payload)
        if isinstance(result, pa.RecordBatch):
            columns = list(result.columns)
        elif isinstance(result, (pa.Array, pa.ChunkedArray)):
            columns = [result]
        else:
            columns = list(result)
        columns = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns]
        if len(columns) != len(self.names()) or any(len(c) != len(payload) for c in columns):
            raise InvalidArgumentError(f"decoder function returned {len(columns)} columns for valueSchema "
                                       f"{self.value_schema!r} (one value per message wanted)")
        return columns


def decoder_from_options(options: Mapping[str, str]) -> Decoder | None:
    """The decoder an ``aeron-archive`` read asks for, or None for raw payloads."""
    name = (options.get("decoder") or "raw").strip()
    lower = name.lower()
    if lower == "raw":
        return None
    if lower in ("utf-8", "utf8"):
        return Utf8Decoder()
    if lower == "json":
        schema = options.get("valueSchema")
        if not schema:
            raise InvalidArgumentError("decoder json needs option('valueSchema', '<Spark DDL>')")
        return JsonDecoder(schema)
    if lower.startswith("struct:"):
        columns = [c.strip() for c in (options.get("valueColumns") or "").split(",") if c.strip()]
        return StructDecoder(name[len("struct:"):], columns)
    raise InvalidArgumentError(f"unknown decoder {name!r}: raw, utf-8, json or struct:<format>")


def apply(decoder: Decoder | None, batch: pa.RecordBatch, types: Sequence[pa.DataType] = ()) -> pa.RecordBatch:
    """``batch`` with the decoder's columns appended, cast to ``types`` (the Arrow types Spark expects)."""
    if decoder is None:
        return batch
    extra = decoder.decode(batch.column("payload"))
    if types:
        extra = [c if c.type == t else c.cast(t) for c, t in zip(extra, types)]
    return pa.RecordBatch.from_arrays(list(batch.columns) + extra, names=batch.schema.names + decoder.names())
