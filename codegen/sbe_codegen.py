# SPDX-License-Identifier: Apache-2.0
"""Generate Cython flyweight codecs (and their .pyi stubs) from an SBE message-schema XML file.

    python codegen/sbe_codegen.py                 # regenerate every schema listed in SCHEMAS
    python codegen/sbe_codegen.py --check         # exit 1 if a checked-in file differs from what it would write

The schema XML is the protocol's own definition (copied unchanged from Aeron into codegen/schemas/), so the
message layouts are never written by hand. The output is checked in (a clone builds without running this) and
tests/test_codecs.py fails when regenerating would change it.

What the generated module holds, for a schema:
- one ``IntEnum`` per ``<enum>``;
- a ``MessageHeaderEncoder``/``MessageHeaderDecoder`` pair (the schema's ``messageHeader`` composite);
- per message an ``<Name>Encoder`` and an ``<Name>Decoder``: flyweights over a caller's buffer (anything with
  the buffer protocol: bytearray, memoryview, mmap, numpy). Fixed fields are properties read and written in
  place; nothing is decoded until asked for.

Decoders follow SBE's evolution rules: ``wrap`` takes the acting block length and version (from the header;
``wrap_header`` reads them), a field added after the acting version, or lying past the acting block, reads as
its null value, and the repeating groups and variable-length fields are located (and bounds-checked) once in
``wrap``, so a hostile count or length raises MalformedMessageError there instead of reading past the message.
Encoders write the variable-length fields in schema order through ``put_<name>``; a skipped one is written
empty.

Repeating groups (``<group>``, in the cluster schemas) follow SBE's Java codecs: per group a
``<Message><Group>Encoder``/``Decoder`` pair. The message encoder's ``<group>_count(n)`` writes the
``groupSizeEncoding`` header and returns the group encoder, whose ``next()`` starts each entry (fields, then the
entry's own groups and variable-length fields); the message decoder's ``<group>`` property returns the group
decoder, iterated for its entries. Groups come after the block and before the variable-length fields, nested
groups likewise inside an entry.

Class names are the schema's with the first letter capitalised, as SBE's Java generator names them
(``nodeStateHeader`` -> ``NodeStateHeaderEncoder``). A schema may declare a message header longer than the
standard 8 bytes (the cluster node-state file's 16); its first four fields must be the standard ones.
"""
from __future__ import annotations

import argparse
import dataclasses
import keyword
import pathlib
import re
import sys
import xml.etree.ElementTree as ET

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent
OUT_DIR = ROOT / "aeron" / "_core" / "codecs"

# schema file -> generated module name (aeron._core.codecs.<name>)
SCHEMAS = {
    "aeron-archive-codecs.xml": "archive",
    "aeron-archive-mark-codecs.xml": "archive_mark",
    "aeron-cluster-codecs.xml": "cluster",
    "aeron-cluster-mark-codecs.xml": "cluster_mark",
    "aeron-cluster-node-state-codecs.xml": "cluster_node_state",
}
# test-only schemas (path from the repository root) -> generated module path: what the real schemas do not use
# (nested groups, groups added in a later version), built with the tests' other Cython modules
TEST_SCHEMAS = {
    "tests/cython/sbe_nested_groups.xml": "tests/cython/sbe_nested_groups",
}

# primitive type -> (C type, size, SBE default null value, min, max)
PRIMITIVES = {
    "char": ("uint8_t", 1, 0, 0x20, 0x7E),
    "int8": ("int8_t", 1, -(2 ** 7), -(2 ** 7) + 1, 2 ** 7 - 1),
    "uint8": ("uint8_t", 1, 2 ** 8 - 1, 0, 2 ** 8 - 2),
    "int16": ("int16_t", 2, -(2 ** 15), -(2 ** 15) + 1, 2 ** 15 - 1),
    "uint16": ("uint16_t", 2, 2 ** 16 - 1, 0, 2 ** 16 - 2),
    "int32": ("int32_t", 4, -(2 ** 31), -(2 ** 31) + 1, 2 ** 31 - 1),
    "uint32": ("uint32_t", 4, 2 ** 32 - 1, 0, 2 ** 32 - 2),
    "int64": ("int64_t", 8, -(2 ** 63), -(2 ** 63) + 1, 2 ** 63 - 1),
    "uint64": ("uint64_t", 8, 2 ** 64 - 1, 0, 2 ** 64 - 2),
}

SBE_NS = "{http://fixprotocol.io/2016/sbe}"
MESSAGE_HEADER = 8          # bytes of the standard header (flyweight.pxd's MESSAGE_HEADER_LENGTH)
MAX_VAR_FIELDS = 8          # flyweight.pxd's MAX_VAR_FIELDS
MAX_GROUPS = 4              # flyweight.pxd's MAX_GROUPS
GROUP_HEADER = [("block_length", "uint16"), ("num_in_group", "uint16")]   # flyweight.pxd's GROUP_HEADER_LENGTH = 4


def cap(name: str) -> str:
    """A class name from a schema name, as SBE's Java generator makes one: the first letter capitalised."""
    return name[:1].upper() + name[1:]


def snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    s = re.sub(r"(?<=[A-Z])([A-Z][a-z])", r"_\1", s).lower()
    return s + "_" if keyword.iskeyword(s) else s


@dataclasses.dataclass
class Field:
    name: str
    primitive: str
    offset: int
    since_version: int
    null_value: int
    enum: str | None
    optional: bool
    description: str

    @property
    def size(self) -> int:
        return PRIMITIVES[self.primitive][1]

    @property
    def ctype(self) -> str:
        return PRIMITIVES[self.primitive][0]


@dataclasses.dataclass
class VarData:
    name: str
    ascii: bool
    length_primitive: str
    max_length: int
    since_version: int
    description: str


@dataclasses.dataclass
class Group:
    name: str               # snake_case, for the accessors
    schema_name: str        # as the schema spells it
    class_name: str         # <Message><Group>, the stem of its encoder and decoder classes
    since_version: int
    block_length: int
    description: str
    fields: list[Field]
    groups: list["Group"]
    var_data: list[VarData]


@dataclasses.dataclass
class Message:
    name: str
    template_id: int
    block_length: int
    since_version: int
    description: str
    fields: list[Field]
    var_data: list[VarData]
    groups: list[Group] = dataclasses.field(default_factory=list)

    @property
    def class_name(self) -> str:
        return cap(self.name)


@dataclasses.dataclass
class Schema:
    schema_id: int
    version: int
    semantic_version: str
    package: str
    description: str
    header: list[Field]
    enums: dict[str, tuple[str, list[tuple[str, int, str]]]]   # name -> (encoding primitive, [(value name, value, doc)])
    messages: list[Message]

    @property
    def header_length(self) -> int:
        return sum(f.size for f in self.header)


def _int(text: str | None, default: int = 0) -> int:
    return int(text) if text not in (None, "") else default


def _null(primitive: str, attrs: dict[str, str]) -> int:
    return int(attrs["nullValue"]) if "nullValue" in attrs else PRIMITIVES[primitive][2]


def parse(path: pathlib.Path) -> Schema:
    root = ET.parse(path).getroot()
    if root.get("byteOrder", "littleEndian") != "littleEndian":
        raise SystemExit(f"{path}: only little-endian schemas are supported")
    types_el = root.find("types")
    simple: dict[str, tuple[str, dict[str, str]]] = {}
    composites: dict[str, ET.Element] = {}
    enums: dict[str, tuple[str, list[tuple[str, int, str]]]] = {}
    for t in types_el:
        if t.tag == "type":
            simple[t.get("name")] = (t.get("primitiveType"), dict(t.attrib))
        elif t.tag == "composite":
            composites[t.get("name")] = t
        elif t.tag == "enum":
            values = [(v.get("name"), int(v.text.strip()), v.get("description", "")) for v in t.findall("validValue")]
            enums[t.get("name")] = (t.get("encodingType"), values)
    for prim in PRIMITIVES:
        simple.setdefault(prim, (prim, {}))

    header: list[Field] = []
    offset = 0
    for t in composites["messageHeader"]:
        prim = t.get("primitiveType")
        header.append(Field(snake(t.get("name")), prim, offset, 0, _null(prim, t.attrib), None, False, ""))
        offset += PRIMITIVES[prim][1]

    def members(el: ET.Element, where: str, stem: str) -> tuple[list[Field], list[Group], list[VarData], int]:
        # SBE's order inside a message or group entry: fixed fields, then groups, then variable-length data
        fields: list[Field] = []
        groups: list[Group] = []
        var_data: list[VarData] = []
        offset = 0
        for child in el:
            tag = child.tag
            if tag == "field":
                if groups or var_data:
                    raise SystemExit(f"{path}: {where}.{child.get('name')}: a field after a group or data")
                type_name = child.get("type")
                enum = None
                if type_name in enums:
                    prim, attrs = enums[type_name][0], {}
                    enum = type_name
                else:
                    prim, attrs = simple[type_name]
                if "offset" in child.attrib:
                    offset = int(child.get("offset"))
                optional = child.get("presence", attrs.get("presence")) == "optional"
                fields.append(Field(snake(child.get("name")), prim, offset, _int(child.get("sinceVersion")),
                                    _null(prim, attrs), enum, optional, child.get("description", "").strip()))
                offset += PRIMITIVES[prim][1]
            elif tag == "group":
                if var_data:
                    raise SystemExit(f"{path}: {where}.{child.get('name')}: a group after data")
                dims = composites[child.get("dimensionType", "groupSizeEncoding")]
                if [(snake(t.get("name")), t.get("primitiveType")) for t in dims] != GROUP_HEADER:
                    raise SystemExit(f"{path}: {where}.{child.get('name')}: only the groupSizeEncoding dimension "
                                     f"(blockLength uint16, numInGroup uint16) is supported")
                gname = child.get("name")
                gfields, ggroups, gvars, gblock = members(child, f"{where}.{gname}", stem + cap(gname))
                groups.append(Group(snake(gname), gname, stem + cap(gname), _int(child.get("sinceVersion")),
                                    _int(child.get("blockLength"), gblock),
                                    " ".join(child.get("description", "").split()), gfields, ggroups, gvars))
            elif tag == "data":
                comp = composites[child.get("type")]
                length_el = comp.find("type[@name='length']")
                data_el = comp.find("type[@name='varData']")
                var_data.append(VarData(snake(child.get("name")), data_el.get("characterEncoding") is not None,
                                        length_el.get("primitiveType"),
                                        _int(length_el.get("maxValue"), PRIMITIVES[length_el.get("primitiveType")][4]),
                                        _int(child.get("sinceVersion")), child.get("description", "").strip()))
        block_length = max((f.offset + f.size for f in fields), default=0)
        return fields, groups, var_data, block_length

    messages = []
    for m in root.findall(f"{SBE_NS}message"):
        fields, groups, var_data, block_length = members(m, m.get("name"), cap(m.get("name")))
        messages.append(Message(m.get("name"), int(m.get("id")), _int(m.get("blockLength"), block_length),
                                _int(m.get("sinceVersion")), " ".join(m.get("description", "").split()), fields,
                                var_data, groups))
    return Schema(int(root.get("id")), int(root.get("version")), root.get("semanticVersion", ""),
                  root.get("package", ""), root.get("description", ""), header, enums, messages)


# --- Cython ----------------------------------------------------------------------------------------------------

PYX_PRELUDE = '''\
# SPDX-License-Identifier: Apache-2.0
# cython: boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
# GENERATED by codegen/sbe_codegen.py from {source}: do not edit; regenerate instead.
"""SBE codecs of schema {schema_id} version {version} ({package}): {description}

Flyweights over a caller's buffer (aeron._core.codecs.flyweight holds what they share); see
codegen/sbe_codegen.py for the rules they follow.
"""
import enum

from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t

from aeron._core.codecs.flyweight cimport (DecoderFlyweight, EncoderFlyweight, Flyweight, get_int8_t, get_int16_t,
                                          get_int32_t, get_int64_t, get_uint8_t, get_uint16_t, get_uint32_t,
                                          get_uint64_t, put_int8_t, put_int16_t, put_int32_t, put_int64_t,
                                          put_uint8_t, put_uint16_t, put_uint32_t, put_uint64_t, wrapped)
{group_bases}
from aeron.common.errors import MalformedMessageError, OutOfBoundsError

SCHEMA_ID = {schema_id}
SCHEMA_VERSION = {version}
SEMANTIC_VERSION = "{semantic_version}"
MESSAGE_HEADER_LENGTH = {header_length}
'''

STANDARD_HEADER = [("block_length", "uint16"), ("template_id", "uint16"), ("schema_id", "uint16"),
                   ("version", "uint16")]
GROUP_IMPORT = "from aeron._core.codecs.flyweight cimport GroupDecoderFlyweight, GroupEncoderFlyweight\n"


def gen_enum(name: str, values: list[tuple[str, int, str]], encoding: str) -> str:
    null = PRIMITIVES[encoding][2]
    lines = [f"class {name}(enum.IntEnum):", f'    """SBE enum {name} ({encoding}); NULL_VAL is its null value."""', ""]
    for vname, value, _doc in values:
        lines.append(f"    {vname} = {value}")
    lines.append(f"    NULL_VAL = {null}")
    return "\n".join(lines) + "\n\n\n"


def _null_const(f: Field) -> str:
    return f"{f.name.upper()}_NULL_VALUE"


def _needs_null(f: Field, msg_since: int) -> bool:
    return f.optional or f.since_version > msg_since


def _doc(text: str, fallback: str) -> str:
    text = " ".join(text.split()) or fallback
    return text.replace('"""', "'''").replace("\\", "\\\\")


def gen_header(schema: Schema) -> str:
    length = schema.header_length
    out = []
    for cls, writable in (("MessageHeaderEncoder", True), ("MessageHeaderDecoder", False)):
        if writable:
            bad = (f'            raise OutOfBoundsError(f"message header at {{offset}} outside a buffer of '
                   f'{{self._capacity}} bytes")')
        else:
            bad = (f'            raise MalformedMessageError(f"message at {{offset}} shorter than its '
                   f'{length}-byte header", offset=offset)')
        out += [f"cdef class {cls}(Flyweight):",
                f'    """The {length}-byte message header, {"written" if writable else "read"} in place."""',
                "", f"    ENCODED_LENGTH = {length}", "",
                "    def __cinit__(self):",
                '        self._name = "messageHeader"', f"        self._schema_block_length = {length}"]
        if length != MESSAGE_HEADER:
            out.append(f"        self._header_length = {length}")
        out += ["",
                "    def wrap(self, buffer, Py_ssize_t offset=0):",
                '        """Point at ``buffer[offset:]``; returns self."""',
                f"        self._acquire(buffer, {writable})",
                f"        if offset < 0 or offset + {length} > self._capacity:", bad,
                "        self._offset = offset", f"        self._limit = offset + {length}",
                "        return self", ""]
        for f in schema.header:
            out += ["    @property", f"    def {f.name}(self):", f'        """{f.name} ({f.primitive})."""',
                    f"        return get_{f.ctype}(wrapped(self), self._offset + {f.offset})", ""]
            if writable:
                out += [f"    @{f.name}.setter", f"    def {f.name}(self, {f.ctype} value):",
                        f"        put_{f.ctype}(wrapped(self), self._offset + {f.offset}, value)", ""]
        out.append("")
    return "\n".join(out) + "\n"


def _check_members(where: str, var_data: list[VarData], groups: list[Group]) -> None:
    if len(var_data) > MAX_VAR_FIELDS:
        raise SystemExit(f"{where}: more than {MAX_VAR_FIELDS} variable-length fields")
    if len(groups) > MAX_GROUPS:
        raise SystemExit(f"{where}: more than {MAX_GROUPS} repeating groups at one level")
    for v in var_data:
        if v.length_primitive != "uint32":
            raise SystemExit(f"{where}.{v.name}: only uint32 variable-length headers are supported")


def _cinit_body(name: str, template_id: int, block_length: int, var_data: list[VarData], groups: list[Group],
                decoder: bool, schema: Schema | None = None) -> list[str]:
    # what a message body and a group entry both set: block, variable-length fields, groups
    names = "".join(repr(v.name) + ", " for v in var_data)
    lines = [f"        self._template_id = {template_id}"]
    if schema is not None:
        lines += [f"        self._schema_id = {schema.schema_id}", f"        self._schema_version = {schema.version}"]
        if schema.header_length != MESSAGE_HEADER:
            lines.append(f"        self._header_length = {schema.header_length}")
    lines += [f"        self._schema_block_length = {block_length}",
             f'        self._name = "{name}"', f"        self._var_count = {len(var_data)}",
             f"        self._var_names = ({names})"]
    for i, v in enumerate(var_data):
        lines.append(f"        self._var_max[{i}] = {v.max_length}")
        if decoder and v.since_version:
            lines.append(f"        self._var_since[{i}] = {v.since_version}")
    if groups:
        kind = "Decoder" if decoder else "Encoder"
        made = "".join(f"{g.class_name}{kind}(), " for g in groups)
        lines += [f"        self._group_count = {len(groups)}",
                  f"        self._group_{kind.lower()}s = ({made})"]
    return lines


def _encoder_members(fields: list[Field], var_data: list[VarData], groups: list[Group]) -> list[str]:
    e: list[str] = []
    for f in fields:
        e += ["    @property", f"    def {f.name}(self):", f'        """{_doc(f.description, f.name)}"""',
              f"        return get_{f.ctype}(wrapped(self), self._offset + {f.offset})", "",
              f"    @{f.name}.setter", f"    def {f.name}(self, {f.ctype} value):",
              f"        put_{f.ctype}(wrapped(self), self._offset + {f.offset}, value)", ""]
    for i, g in enumerate(groups):
        e += [f"    def {g.name}_count(self, Py_ssize_t count):",
              f'        """Start the {g.schema_name} group with ``count`` entries; returns its {g.class_name}Encoder, '
              f'whose next() begins each entry. Groups go in schema order, before the variable-length fields."""',
              f"        return self._begin_group({i}, count)", ""]
    for i, v in enumerate(var_data):
        kind = "str (US-ASCII) or bytes" if v.ascii else "bytes-like"
        e += [f"    def put_{v.name}(self, value):",
              f'        """Write {v.name} ({kind}); variable-length fields go in schema order, a skipped one empty. '
              'Returns self."""',
              f"        self._put_var({i}, value, {v.ascii})", "        return self", ""]
    return e


def _decoder_members(fields: list[Field], var_data: list[VarData], groups: list[Group]) -> list[str]:
    d: list[str] = []
    for f in fields:
        guard = f"self._block_length < {f.offset + f.size}"
        if f.since_version > 0:
            guard = f"self._version < {f.since_version} or " + guard
        d += ["    @property", f"    def {f.name}(self):", f'        """{_doc(f.description, f.name)}"""',
              "        cdef const uint8_t* buf = wrapped(self)", f"        if {guard}:",
              f"            return {f.null_value}", f"        return get_{f.ctype}(buf, self._offset + {f.offset})", ""]
    for i, g in enumerate(groups):
        d += ["    @property", f"    def {g.name}(self):",
              f'        """The {g.schema_name} group (a {g.class_name}Decoder: iterate it for the entries)."""',
              f"        return self._group({i})", ""]
    for i, v in enumerate(var_data):
        d += ["    @property", f"    def {v.name}_length(self):", f'        """Length in bytes of {v.name}."""',
              f"        return self._var_len[{i}]", "",
              "    @property", f"    def {v.name}(self):",
              f'        """{_doc(v.description, v.name)} ({"str" if v.ascii else "bytes"})"""',
              f"        return self._var_{'str' if v.ascii else 'bytes'}({i})", ""]
    return d


def gen_group(m: Message, g: Group, owner: str) -> str:
    """A group's encoder and decoder, its nested groups' first (so that they exist when it is made)."""
    where = f"{owner}.{g.schema_name}"
    _check_members(where, g.var_data, g.groups)
    out = "".join(gen_group(m, sub, where) for sub in g.groups)
    doc = f": {_doc(g.description, '')}" if g.description else "."
    consts = [f"    BLOCK_LENGTH = {g.block_length}", "    HEADER_SIZE = 4", f"    SINCE_VERSION = {g.since_version}"]
    consts += [f"    {_null_const(f)} = {f.null_value}" for f in g.fields if _needs_null(f, g.since_version)]
    fields = [f for f in g.fields if f.name != "reserved"]
    e = [f"cdef class {g.class_name}Encoder(GroupEncoderFlyweight):",
         f'    """Encoder of the {g.schema_name} group of {owner}{doc}"""', ""] + consts + [""]
    e += ["    def __cinit__(self):"] + _cinit_body(where, m.template_id, g.block_length, g.var_data, g.groups,
                                                    False) + [""]
    e += _encoder_members(fields, g.var_data, g.groups)
    d = [f"cdef class {g.class_name}Decoder(GroupDecoderFlyweight):",
         f'    """Decoder of the {g.schema_name} group of {owner}{doc}"""', ""] + consts + [""]
    d += ["    def __cinit__(self):", f"        self._since_version = {g.since_version}"]
    d += _cinit_body(where, m.template_id, g.block_length, g.var_data, g.groups, True) + [""]
    d += _decoder_members(fields, g.var_data, g.groups)
    return out + "\n".join(e) + "\n\n" + "\n".join(d) + "\n\n"


def gen_message(schema: Schema, m: Message) -> str:
    _check_members(m.name, m.var_data, m.groups)
    groups = "".join(gen_group(m, g, m.name) for g in m.groups)
    doc = _doc(m.description, m.name)
    consts = [f"    TEMPLATE_ID = {m.template_id}", f"    BLOCK_LENGTH = {m.block_length}",
              f"    SCHEMA_ID = {schema.schema_id}", f"    SCHEMA_VERSION = {schema.version}"]
    consts += [f"    {_null_const(f)} = {f.null_value}" for f in m.fields if _needs_null(f, m.since_version)]
    fields = [f for f in m.fields if f.name != "reserved"]
    cinit = ["    def __cinit__(self):"]

    e = [f"cdef class {m.class_name}Encoder(EncoderFlyweight):",
         f'    """Encoder of {m.name} (template {m.template_id}): {doc}"""', ""] + consts + [""]
    e += cinit + _cinit_body(m.name, m.template_id, m.block_length, m.var_data, m.groups, False, schema) + [""]
    e += _encoder_members(fields, m.var_data, m.groups)

    d = [f"cdef class {m.class_name}Decoder(DecoderFlyweight):",
         f'    """Decoder of {m.name} (template {m.template_id}): {doc}"""', ""] + consts + [""]
    d += cinit + _cinit_body(m.name, m.template_id, m.block_length, m.var_data, m.groups, True, schema) + [""]
    d += _decoder_members(fields, m.var_data, m.groups)
    return groups + "\n".join(e) + "\n\n" + "\n".join(d) + "\n\n"


def _source(xml_name: str) -> str:
    # an Aeron schema is named by its file in codegen/schemas/, a test schema by its path in the repository
    return xml_name if "/" in xml_name else f"codegen/schemas/{xml_name}"


def _has_groups(schema: Schema) -> bool:
    return any(m.groups for m in schema.messages)


def _all_groups(groups: list[Group]) -> list[Group]:
    # nested first, as the classes are defined
    out: list[Group] = []
    for g in groups:
        out += _all_groups(g.groups) + [g]
    return out


def gen_pyx(schema: Schema, xml_name: str) -> str:
    if [(f.name, f.primitive) for f in schema.header][:4] != STANDARD_HEADER:
        raise SystemExit(f"{xml_name}: the message header must start with the standard blockLength, templateId, "
                         f"schemaId and version (uint16 each)")
    out = [PYX_PRELUDE.format(source=_source(xml_name), schema_id=schema.schema_id, version=schema.version,
                              semantic_version=schema.semantic_version, package=schema.package,
                              description=" ".join(schema.description.split()),
                              header_length=schema.header_length,
                              group_bases=GROUP_IMPORT if _has_groups(schema) else ""), "\n"]
    for name, (encoding, values) in schema.enums.items():
        out.append(gen_enum(name, values, encoding))
    out.append(gen_header(schema))
    for m in schema.messages:
        out.append(gen_message(schema, m))
    out.append("TEMPLATES = {\n")
    for m in schema.messages:
        out.append(f"    {m.template_id}: ({m.class_name}Encoder, {m.class_name}Decoder),\n")
    out.append("}\n")
    return "".join(out).rstrip() + "\n"


# --- declarations (.pxd), so that other Cython modules can cimport the flyweights ---------------------------------

def gen_pxd(schema: Schema, xml_name: str) -> str:
    out = ["# SPDX-License-Identifier: Apache-2.0",
           f"# GENERATED by codegen/sbe_codegen.py from {_source(xml_name)}: do not edit; regenerate instead.",
           "from aeron._core.codecs.flyweight cimport DecoderFlyweight, EncoderFlyweight, Flyweight"]
    if _has_groups(schema):
        out.append(GROUP_IMPORT.rstrip())
    out += ["", "", "cdef class MessageHeaderEncoder(Flyweight):", "    pass", "", "",
            "cdef class MessageHeaderDecoder(Flyweight):", "    pass"]
    for m in schema.messages:
        for g in _all_groups(m.groups):
            out += ["", "", f"cdef class {g.class_name}Encoder(GroupEncoderFlyweight):", "    pass", "", "",
                    f"cdef class {g.class_name}Decoder(GroupDecoderFlyweight):", "    pass"]
        out += ["", "", f"cdef class {m.class_name}Encoder(EncoderFlyweight):", "    pass", "", "",
                f"cdef class {m.class_name}Decoder(DecoderFlyweight):", "    pass"]
    return "\n".join(out) + "\n"


# --- stubs -----------------------------------------------------------------------------------------------------

def _pyi_encoder_members(enc: str, fields: list[Field], var_data: list[VarData], groups: list[Group]) -> list[str]:
    out = [f"    {f.name}: int" for f in fields if f.name != "reserved"]
    out += [f"    def {g.name}_count(self, count: int) -> {g.class_name}Encoder: ..." for g in groups]
    for v in var_data:
        out.append(f"    def put_{v.name}(self, value: {'str | bytes' if v.ascii else 'bytes'}) -> {enc}: ...")
    return out


def _pyi_decoder_members(fields: list[Field], var_data: list[VarData], groups: list[Group]) -> list[str]:
    out: list[str] = []
    for f in fields:
        if f.name != "reserved":
            out += ["    @property", f"    def {f.name}(self) -> int: ..."]
    for g in groups:
        out += ["    @property", f"    def {g.name}(self) -> {g.class_name}Decoder: ..."]
    for v in var_data:
        out += ["    @property", f"    def {v.name}_length(self) -> int: ...",
                "    @property", f"    def {v.name}(self) -> {'str' if v.ascii else 'bytes'}: ..."]
    return out


def _pyi_group(g: Group) -> list[str]:
    consts = ["    BLOCK_LENGTH: int", "    HEADER_SIZE: int", "    SINCE_VERSION: int"]
    consts += [f"    {_null_const(f)}: int" for f in g.fields if _needs_null(f, g.since_version)]
    enc, dec = f"{g.class_name}Encoder", f"{g.class_name}Decoder"
    out = [f"class {enc}(GroupEncoderFlyweight):"] + consts + [f"    def next(self) -> {enc}: ..."]
    out += _pyi_encoder_members(enc, g.fields, g.var_data, g.groups) + [""]
    out += [f"class {dec}(GroupDecoderFlyweight):"] + consts
    out += [f"    def __iter__(self) -> Iterator[{dec}]: ...", f"    def __next__(self) -> {dec}: ..."]
    out += _pyi_decoder_members(g.fields, g.var_data, g.groups) + [""]
    return out


def gen_pyi(schema: Schema, xml_name: str) -> str:
    groups = _has_groups(schema)
    out = [f"# GENERATED by codegen/sbe_codegen.py from {_source(xml_name)}: do not edit.",
           "import enum", "from typing import Any, Iterator" if groups else "from typing import Any", "",
           "from aeron._core.codecs.flyweight import DecoderFlyweight, EncoderFlyweight, Flyweight"]
    if groups:
        out.append("from aeron._core.codecs.flyweight import GroupDecoderFlyweight, GroupEncoderFlyweight")
    out += ["", "SCHEMA_ID: int", "SCHEMA_VERSION: int", "SEMANTIC_VERSION: str", "MESSAGE_HEADER_LENGTH: int", ""]
    for name, (_enc, values) in schema.enums.items():
        out.append(f"class {name}(enum.IntEnum):")
        out += [f"    {v} = {n}" for v, n, _ in values]
        out += [f"    NULL_VAL = {PRIMITIVES[_enc][2]}", ""]
    for cls, writable in (("MessageHeaderEncoder", True), ("MessageHeaderDecoder", False)):
        out += [f"class {cls}(Flyweight):", "    ENCODED_LENGTH: int",
                "    def wrap(self, buffer: Any, offset: int = 0) -> " + cls + ": ..."]
        for f in schema.header:
            out.append(f"    {f.name}: int" if writable else f"    @property\n    def {f.name}(self) -> int: ...")
        out.append("")
    for m in schema.messages:
        for g in _all_groups(m.groups):
            out += _pyi_group(g)
        consts = ["    TEMPLATE_ID: int", "    BLOCK_LENGTH: int", "    SCHEMA_ID: int", "    SCHEMA_VERSION: int"]
        consts += [f"    {_null_const(f)}: int" for f in m.fields if _needs_null(f, m.since_version)]
        enc = f"{m.class_name}Encoder"
        out += [f"class {enc}(EncoderFlyweight):"] + consts + [
            f"    def wrap(self, buffer: Any, offset: int = 0) -> {enc}: ...",
            f"    def wrap_and_apply_header(self, buffer: Any, offset: int = 0) -> {enc}: ..."]
        out += _pyi_encoder_members(enc, m.fields, m.var_data, m.groups)
        out.append("")
        dec = f"{m.class_name}Decoder"
        out += [f"class {dec}(DecoderFlyweight):"] + consts + [
            f"    def wrap(self, buffer: Any, offset: int, acting_block_length: int, acting_version: int, "
            f"end: int = -1) -> {dec}: ...",
            f"    def wrap_header(self, buffer: Any, offset: int = 0, end: int = -1) -> {dec}: ..."]
        out += _pyi_decoder_members(m.fields, m.var_data, m.groups)
        out.append("")
    out.append("TEMPLATES: dict[int, tuple[type, type]]")
    return "\n".join(out) + "\n"


def outputs() -> dict[pathlib.Path, str]:
    files: dict[pathlib.Path, str] = {}
    for xml_name, module in SCHEMAS.items():
        schema = parse(HERE / "schemas" / xml_name)
        files[OUT_DIR / f"{module}.pyx"] = gen_pyx(schema, xml_name)
        files[OUT_DIR / f"{module}.pxd"] = gen_pxd(schema, xml_name)
        files[OUT_DIR / f"{module}.pyi"] = gen_pyi(schema, xml_name)
    for xml_path, module in TEST_SCHEMAS.items():
        schema = parse(ROOT / xml_path)
        files[ROOT / f"{module}.pyx"] = gen_pyx(schema, xml_path)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if a checked-in output would change")
    args = parser.parse_args(argv)
    stale = []
    for path, text in outputs().items():
        current = path.read_text() if path.exists() else None
        if current != text:
            stale.append(path)
            if not args.check:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
    for path in stale:
        print(f"{'stale' if args.check else 'wrote'}: {path.relative_to(ROOT)}")
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
