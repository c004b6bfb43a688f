"""Pure-Python twin of the Protobuf kernel (compiled twin: ``protobuf_c.pyx``).

The transcoder reads each Protobuf payload once, following a *program* (see
``formats/protobuf/mapping.py``), and writes the payload's Avro binary encoding under the shadow
schema the program stands for; the Avro column builders then decode those bytes into Arrow.
:func:`decode` gives those builders for a batch: here by :func:`transcode` and the Avro kernel, in
the compiled twin by appending each value to the builders as it is read (the same columns and the
same errors).

Program
-------
A flat tuple of nodes; node 0 (a message) is the root, and nodes name their children by index, so
a node may be used in several places and programs may be cyclic (``google.protobuf.Struct``). A
node is a tuple whose first item is its op:

``(P_INT32,)`` ... ``(P_BYTES,)``  a scalar of that Protobuf type, written as its Avro form: int32,
                            sint32 and sfixed32 -> Avro int; uint32 and fixed32 -> Avro int holding
                            the 32-bit pattern; the 64-bit kinds likewise as Avro long; float and
                            double as 4 / 8 bytes; bool (any non-zero varint is true) as one byte;
                            string (valid UTF-8) and bytes with their length. A varint of a 32-bit
                            kind keeps its low 32 bits (a negative int32 is a 10-byte varint).
``(P_MESSAGE, fields)``     a message -> Avro record of ``fields`` in program order; a field is
                            ``(number, shape, child, missing, group, name)``, see below.
``(P_TIMESTAMP,)``          ``google.protobuf.Timestamp`` -> Avro long ``seconds * 10**9 + nanos``;
``(P_DURATION,)``           ``google.protobuf.Duration`` the same (a result outside int64 is
                            PROTO_VALUE_RANGE). Both read fields 1 (int64) and 2 (int32).
``(P_RAW, check)``          the bytes of the value's occurrences, concatenated, as Avro bytes.
                            ``check`` is -1 or a message node the bytes must parse as (then read
                            with it and its output dropped: every error it finds is reported).

Fields of a message: ``number`` the field number (0 for PF_CASE), ``child`` the value's node (-1
for PF_CASE), ``missing`` the Avro bytes written when the field is absent (PF_IMPLICIT, PF_OPTIONAL,
PF_ONEOF; None for the others), ``group`` the oneof index of PF_ONEOF and PF_CASE fields (-1 for the
others), ``name`` the field name (the text PF_CASE writes). Shapes:

``PF_IMPLICIT``  the value; absent: ``missing`` (proto3 implicit presence: the default)
``PF_OPTIONAL``  union [null, T]: ``\\x02`` + the value; absent: ``missing`` (null, or a default)
``PF_REQUIRED``  the value; absent: PROTO_MISSING_REQUIRED
``PF_REPEATED``  Avro array of every item: one block, then 0; packed (one length-delimited run of
                 numbers) and unpacked occurrences both read, in payload order
``PF_MAP``       Avro array of the entries (child: the entry message, key = field 1, value = 2);
                 a key met again keeps its first place and takes the last entry's value
``PF_ONEOF``     as PF_OPTIONAL, present only when it is the member of its oneof met last
``PF_CASE``      union [null, string]: the name of the member of oneof ``group`` met last

Reading follows the Protobuf encoding: fields in any order; for a non-repeated scalar the last
occurrence wins; the occurrences of a non-repeated message field are read as one message (merged:
their bytes parsed as one stream); when a oneof changes member, what the earlier member had is
dropped, a message member's bytes checked first (when it is replaced: malformed bytes there are an
error, as for the runtime; a required field or a Timestamp's range is not checked). Unknown fields are skipped by their wire type (groups up to the matching end-group); a
known field with another wire type than its type's is an error (a repeated number field also takes
the packed, length-delimited form). A message reads its own fields first, then the messages inside
them, so the first error met in that order is the one reported.

Errors are ``(code, row, offset, detail)``, the offset counted from the start of the payload:

===========================  ====================================================  ==================
code                         offset                                                detail
===========================  ====================================================  ==================
PROTO_TRUNCATED              first byte of the tag, value or group cut by the end   0
                             of its message (or the partial item of a packed run)
PROTO_VARINT_TOO_LONG        first byte of the varint (over 10 bytes)               0
PROTO_WRONG_WIRE_TYPE        first byte of the tag                                  the tag
PROTO_LENGTH_PAST_END        first byte of the length                               the length
PROTO_INVALID_UTF8           first byte of the ill-formed sequence                  0
PROTO_DEPTH_EXCEEDED         first byte of the message (or group tag) too deep      PROTO_MAX_DEPTH
PROTO_INVALID_TAG            first byte of the tag (field number 0, wire type 6     the tag, -1 when
                             or 7, an end-group without its start-group)            over 5 bytes or
                                                                                    32 bits
PROTO_MISSING_REQUIRED       end of the message's (last) bytes                     message node << 29
                                                                                    | field number
PROTO_VALUE_RANGE            first byte of the Timestamp / Duration                 0
===========================  ====================================================  ==================
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from . import avro_py
from ._typing import ArrayLike, ByteData, Int64Array, KernelError, UInt8Array
from .defs import (
    P_BOOL,
    P_BYTES,
    P_DOUBLE,
    P_DURATION,
    P_FIXED32,
    P_FIXED64,
    P_FLOAT,
    P_INT32,
    P_INT64,
    P_MESSAGE,
    P_RAW,
    P_SFIXED32,
    P_SFIXED64,
    P_SINT32,
    P_SINT64,
    P_STRING,
    P_TIMESTAMP,
    P_UINT32,
    P_UINT64,
    PF_CASE,
    PF_IMPLICIT,
    PF_MAP,
    PF_ONEOF,
    PF_OPTIONAL,
    PF_REPEATED,
    PF_REQUIRED,
    PROTO_DEPTH_EXCEEDED,
    PROTO_INVALID_TAG,
    PROTO_INVALID_UTF8,
    PROTO_LENGTH_PAST_END,
    PROTO_MAX_DEPTH,
    PROTO_MISSING_REQUIRED,
    PROTO_TOO_MANY_EMPTY_ITEMS,
    PROTO_TRUNCATED,
    PROTO_VALUE_RANGE,
    PROTO_VARINT_TOO_LONG,
    PROTO_WRONG_WIRE_TYPE,
)

__all__ = ["Program", "decode", "transcode"]

BoolArray: TypeAlias = npt.NDArray[np.bool_]
# the result of transcode: errors, Avro bytes, offsets (n + 1), validity (None: every row valid)
Transcoded: TypeAlias = tuple[list[KernelError], UInt8Array, Int64Array, BoolArray | None]
# one occurrence of a field: value bytes [start, end) and the wire type they came with
Occurrence: TypeAlias = tuple[int, int, int]

_MASK32 = 0xFFFFFFFF
_MASK64 = 0xFFFFFFFFFFFFFFFF
_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_NS = 1_000_000_000
_MAX_NUMBER = (1 << 29) - 1
_VARINT_KINDS = frozenset({P_INT32, P_INT64, P_UINT32, P_UINT64, P_SINT32, P_SINT64, P_BOOL})
_FIXED32_KINDS = frozenset({P_FIXED32, P_SFIXED32, P_FLOAT})
_FIXED64_KINDS = frozenset({P_FIXED64, P_SFIXED64, P_DOUBLE})
_SCALARS = _VARINT_KINDS | _FIXED32_KINDS | _FIXED64_KINDS | {P_STRING, P_BYTES}
_MESSAGES = frozenset({P_MESSAGE, P_TIMESTAMP, P_DURATION})
# the wire type of one value of each node kind
_WIRE = {
    **dict.fromkeys(_VARINT_KINDS, 0),
    **dict.fromkeys(_FIXED64_KINDS, 1),
    **dict.fromkeys(_FIXED32_KINDS, 5),
    **dict.fromkeys((P_STRING, P_BYTES, P_MESSAGE, P_TIMESTAMP, P_DURATION, P_RAW), 2),
}
_SHAPES = frozenset({PF_IMPLICIT, PF_OPTIONAL, PF_REQUIRED, PF_REPEATED, PF_MAP, PF_ONEOF, PF_CASE})
_MAP_KEYS = _VARINT_KINDS | {P_FIXED32, P_SFIXED32, P_FIXED64, P_SFIXED64, P_STRING}


class _Fail(Exception):
    """A bad payload: the code, the payload offset and the detail of its error."""

    def __init__(self, code: int, offset: int, detail: int = 0) -> None:
        super().__init__(code, offset, detail)
        self.code, self.offset, self.detail = code, offset, detail


def _varint_bytes(n: int) -> bytes:
    """The unsigned varint of ``n`` (0 <= n < 2**64)."""
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _zigzag(value: int) -> bytes:
    """The Avro varint of a signed 64-bit ``value``."""
    return _varint_bytes(((value << 1) ^ (value >> 63)) & _MASK64)


def _signed32(raw: int) -> int:
    raw &= _MASK32
    return raw - (1 << 32) if raw >> 31 else raw


def _signed64(raw: int) -> int:
    return raw - (1 << 64) if raw >> 63 else raw


class _Field:
    """A field of a prepared message (see the module docstring); ``child`` is the prepared node."""

    __slots__ = ("number", "shape", "child", "kind", "missing", "group", "name", "wire", "packable", "collects")

    def __init__(self, number: int, shape: int, kind: int, missing: bytes | None, group: int, name: bytes) -> None:
        self.number, self.shape, self.kind, self.missing, self.group, self.name = (
            number,
            shape,
            kind,
            missing,
            group,
            name,
        )
        self.child: Any = None
        self.wire = _WIRE.get(kind, -1)
        self.packable = shape == PF_REPEATED and kind in _VARINT_KINDS | _FIXED32_KINDS | _FIXED64_KINDS
        self.collects = shape in (PF_REPEATED, PF_MAP) or kind in _MESSAGES or kind == P_RAW


class _Message:
    """A prepared message node: its fields, number -> field index, and how many oneofs it has."""

    __slots__ = ("op", "fields", "lookup", "ngroups", "index")

    def __init__(self, op: int, fields: list[_Field], index: int = -1) -> None:
        self.op = op
        self.index = index  # the node's place in the program
        self.fields = fields
        self.lookup = {f.number: i for i, f in enumerate(fields) if f.shape != PF_CASE}
        self.ngroups = max((f.group + 1 for f in fields), default=0)


class _Raw:
    __slots__ = ("op", "check")

    def __init__(self, check: _Message | None) -> None:
        self.op = P_RAW
        self.check = check


def _timestamp_fields(op: int) -> list[_Field]:
    """The two fields Timestamp and Duration share: seconds (1, int64) and nanos (2, int32)."""
    seconds = _Field(1, PF_IMPLICIT, P_INT64, b"\x00", -1, b"seconds")
    nanos = _Field(2, PF_IMPLICIT, P_INT32, b"\x00", -1, b"nanos")
    seconds.child, nanos.child = P_INT64, P_INT32
    return [seconds, nanos]


def _check_field(nodes: tuple[Any, ...], field: Any, where: str) -> tuple[int, int, int, bytes | None, int, str]:
    if not (isinstance(field, tuple) and len(field) == 6):
        raise ValueError(f"{where}: a field is (number, shape, child, missing, group, name): {field!r}")
    number, shape, child, missing, group, name = field
    if type(number) is not int or type(shape) is not int or type(child) is not int or type(group) is not int:
        raise ValueError(f"{where}: number, shape, child and group are ints: {field!r}")
    if shape not in _SHAPES:
        raise ValueError(f"{where}: unknown field shape {shape!r}")
    if not isinstance(name, str):
        raise ValueError(f"{where}: the field name is a str: {field!r}")
    if shape == PF_CASE:
        if number != 0 or child != -1 or missing is not None or group < 0:
            raise ValueError(f"{where}: a case field is (0, PF_CASE, -1, None, group, name): {field!r}")
        return number, shape, child, missing, group, name
    if not 1 <= number <= _MAX_NUMBER:
        raise ValueError(f"{where}: field number {number} outside 1..{_MAX_NUMBER}")
    if not 0 <= child < len(nodes):
        raise ValueError(f"{where}: child {child} is not a node")
    if (shape == PF_ONEOF) != (group >= 0) or group < -1:
        raise ValueError(f"{where}: only oneof members (and case fields) have a group: {field!r}")
    needs_missing = shape in (PF_IMPLICIT, PF_OPTIONAL, PF_ONEOF)
    if needs_missing != isinstance(missing, bytes) or (missing is not None and not isinstance(missing, bytes)):
        raise ValueError(f"{where}: missing bytes are given exactly for implicit, optional and oneof fields")
    if shape == PF_MAP:
        entry = nodes[child]
        entry_fields: tuple[Any, ...] = ()
        if isinstance(entry, tuple) and len(entry) == 2 and entry[0] == P_MESSAGE and isinstance(entry[1], tuple):
            entry_fields = entry[1]
        numbers = [f[0] for f in entry_fields if isinstance(f, tuple) and len(f) == 6]
        key_at = entry_fields[0][2] if numbers == [1, 2] else -1
        key_node = nodes[key_at] if type(key_at) is int and 0 <= key_at < len(nodes) else None
        if not (isinstance(key_node, tuple) and key_node and key_node[0] in _MAP_KEYS):
            raise ValueError(f"{where}: a map field's child is an entry message (key 1: a scalar key, value 2)")
        if any(f[1] != PF_IMPLICIT for f in entry_fields):
            raise ValueError(f"{where}: the key and value of a map entry are implicit fields")
    return number, shape, child, missing, group, name


def _prepare(nodes: Any) -> list[Any]:
    """Validate a flat program and return its prepared nodes (index for index)."""
    if not isinstance(nodes, tuple) or not nodes:
        raise ValueError("a transcode program is a non-empty tuple of nodes")
    prepared: list[Any] = []
    for i, node in enumerate(nodes):
        if not isinstance(node, tuple) or not node or type(node[0]) is not int:
            raise ValueError(f"node {i}: a node is a tuple starting with its op, not {node!r}")
        op = node[0]
        if op in _SCALARS:
            if len(node) != 1:
                raise ValueError(f"node {i}: scalar node {op} takes no arguments")
            prepared.append(op)
        elif op in (P_TIMESTAMP, P_DURATION):
            if len(node) != 1:
                raise ValueError(f"node {i}: Timestamp and Duration nodes take no arguments")
            prepared.append(_Message(op, _timestamp_fields(op)))
        elif op == P_MESSAGE:
            if len(node) != 2 or not isinstance(node[1], tuple):
                raise ValueError(f"node {i}: a message node is (P_MESSAGE, fields)")
            fields = []
            for field in node[1]:
                number, shape, child, missing, group, name = _check_field(nodes, field, f"node {i}")
                kind = -1 if child < 0 else nodes[child][0]
                fields.append(_Field(number, shape, kind, missing, group, name.encode("utf-8")))
            numbers = [f.number for f in fields if f.shape != PF_CASE]
            if len(set(numbers)) != len(numbers):
                raise ValueError(f"node {i}: field numbers repeat")
            message = _Message(op, fields, i)
            members = {f.group for f in fields if f.shape == PF_ONEOF}
            if any(f.group not in members for f in fields if f.shape == PF_CASE):
                raise ValueError(f"node {i}: a case field names a oneof without members")
            prepared.append(message)
        elif op == P_RAW:
            if len(node) != 2 or type(node[1]) is not int or not -1 <= node[1] < len(nodes):
                raise ValueError(f"node {i}: a raw node is (P_RAW, check) with check -1 or a node")
            if node[1] >= 0 and nodes[node[1]][0] != P_MESSAGE:
                raise ValueError(f"node {i}: a raw node checks against a message node")
            prepared.append(_Raw(None))
        else:
            raise ValueError(f"node {i}: unknown transcode op {op!r}")
    if not isinstance(prepared[0], _Message) or prepared[0].op != P_MESSAGE:
        raise ValueError("node 0 (the root) must be a message node")
    for i, node in enumerate(nodes):  # link children now that every node exists (scalars are their op)
        if node[0] == P_MESSAGE:
            for f, raw in zip(prepared[i].fields, node[1]):
                if raw[2] >= 0:
                    f.child = prepared[raw[2]]
        elif node[0] == P_RAW and node[1] >= 0:
            prepared[i].check = prepared[node[1]]
    return prepared


class Program:
    """A transcode program, checked and prepared once (see the module docstring for the nodes).

    Parameters
    ----------
    nodes
        The flat tuple of nodes; node 0 is the root message. A malformed program is a ValueError.
    avro
        The Avro program ``(ops, kids)`` of the program's shadow schema read as itself, which
        :func:`decode` needs (the compiled twin binds each field to its op there).
    """

    def __init__(self, nodes: tuple[Any, ...], avro: tuple[Any, Any] | None = None) -> None:
        self.nodes = nodes
        self.root: _Message = _prepare(nodes)[0]
        if avro is not None and not (isinstance(avro, tuple) and len(avro) == 2):
            raise ValueError("avro is the Avro program (ops, kids)")
        if avro is not None and not avro[0]:
            raise ValueError("the Avro program has no ops")
        self.avro = avro


class _State:
    """What the fields of one message got while its bytes were read."""

    __slots__ = ("starts", "ends", "lists", "groups")

    def __init__(self, message: _Message) -> None:
        n = len(message.fields)
        self.starts = [-1] * n  # last occurrence of a last-wins scalar
        self.ends = [-1] * n
        self.lists: list[list[Occurrence]] = [[] for _ in range(n)]
        self.groups = [-1] * message.ngroups  # per oneof: the field index of the member met last


class _Row:
    """One payload being transcoded: its bytes, the output it appends to and the message depth."""

    def __init__(self, out: bytearray) -> None:
        self.buf = b""
        self.out = out
        self.depth = 0
        self.checking = 0  # inside a replaced oneof member (see superseded)

    # -- the wire format ---------------------------------------------------------------------------
    def varint(self, pos: int, end: int) -> tuple[int, int]:
        """The varint at ``pos`` (bits past 64 dropped) and the position after it."""
        buf, start, result, shift = self.buf, pos, 0, 0
        for _ in range(10):
            if pos >= end:
                raise _Fail(PROTO_TRUNCATED, start)
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result & _MASK64, pos
            shift += 7
        raise _Fail(PROTO_VARINT_TOO_LONG, start)

    def tag(self, pos: int, end: int) -> tuple[int, int]:
        """The tag at ``pos``: at most 5 bytes and 32 bits."""
        buf, start, result = self.buf, pos, 0
        for i in range(5):
            if pos >= end:
                raise _Fail(PROTO_TRUNCATED, start)
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << (7 * i)
            if b < 0x80:
                if result > _MASK32:
                    raise _Fail(PROTO_INVALID_TAG, start, -1)
                return result, pos
        raise _Fail(PROTO_INVALID_TAG, start, -1)

    def length(self, pos: int, end: int) -> tuple[int, int]:
        """The length-delimited value at ``pos`` (its length varint): (value start, value end)."""
        size, start = self.varint(pos, end)
        if size > end - start:
            raise _Fail(PROTO_LENGTH_PAST_END, pos, min(size, _INT64_MAX))
        return start, start + size

    def skip(self, wire: int, number: int, pos: int, end: int, tag_at: int) -> int:
        """Skip the value of an unknown field (wire type ``wire``) at ``pos``."""
        if wire == 0:
            return self.varint(pos, end)[1]
        if wire == 1 or wire == 5:
            width = 8 if wire == 1 else 4
            if end - pos < width:
                raise _Fail(PROTO_TRUNCATED, pos)
            return pos + width
        if wire == 2:
            return self.length(pos, end)[1]
        return self.skip_group(number, pos, end, tag_at)

    def skip_group(self, number: int, pos: int, end: int, tag_at: int) -> int:
        """Skip a group up to its end-group (nested groups included); iterative, depth-limited."""
        opened = [number]
        if self.depth + 1 > PROTO_MAX_DEPTH:
            raise _Fail(PROTO_DEPTH_EXCEEDED, tag_at, PROTO_MAX_DEPTH)
        while True:
            if pos >= end:
                raise _Fail(PROTO_TRUNCATED, tag_at)
            at = pos
            tag, pos = self.tag(pos, end)
            n, wire = tag >> 3, tag & 7
            if n == 0 or wire >= 6:
                raise _Fail(PROTO_INVALID_TAG, at, tag)
            if wire == 4:
                if n != opened[-1]:
                    raise _Fail(PROTO_INVALID_TAG, at, tag)
                opened.pop()
                if not opened:
                    return pos
            elif wire == 3:
                if self.depth + len(opened) + 1 > PROTO_MAX_DEPTH:
                    raise _Fail(PROTO_DEPTH_EXCEEDED, at, PROTO_MAX_DEPTH)
                opened.append(n)
            else:
                pos = self.skip(wire, n, pos, end, at)

    def check_utf8(self, start: int, end: int) -> None:
        chunk = self.buf[start:end]
        if not chunk.isascii():
            try:
                chunk.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise _Fail(PROTO_INVALID_UTF8, start + exc.start) from None

    # -- reading a message -------------------------------------------------------------------------
    def scan(self, message: _Message, pos: int, end: int, state: _State) -> None:
        """Read the fields of ``message`` in ``buf[pos:end]`` into ``state`` (values are not decoded)."""
        buf, fields, lookup = self.buf, message.fields, message.lookup
        while pos < end:
            tag_at = pos
            if buf[pos] < 0x80:
                tag = buf[pos]
                pos += 1
            else:
                tag, pos = self.tag(pos, end)
            number, wire = tag >> 3, tag & 7
            if number == 0 or wire == 4 or wire >= 6:
                raise _Fail(PROTO_INVALID_TAG, tag_at, tag)
            fi = lookup.get(number)
            if fi is None:
                pos = self.skip(wire, number, pos, end, tag_at)
                continue
            f = fields[fi]
            if wire != f.wire and not (wire == 2 and f.packable):
                raise _Fail(PROTO_WRONG_WIRE_TYPE, tag_at, tag)
            if wire == 0:
                start = pos
                pos = self.varint(pos, end)[1]
            elif wire == 2:
                start, pos = self.length(pos, end)
                if f.kind == P_STRING:
                    self.check_utf8(start, pos)
            else:
                width = 8 if wire == 1 else 4
                if end - pos < width:
                    raise _Fail(PROTO_TRUNCATED, pos)
                start = pos
                pos += width
            if f.group >= 0 and state.groups[f.group] != fi:
                old = state.groups[f.group]
                if old >= 0 and fields[old].collects and state.lists[old]:
                    self.superseded(fields[old].child, state.lists[old])
                state.groups[f.group] = fi
                state.lists[fi] = []  # a oneof that changes member drops what the earlier one had
            if f.collects:
                state.lists[fi].append((start, pos, wire))
            else:
                state.starts[fi] = start
                state.ends[fi] = pos

    def superseded(self, node: Any, spans: list[Occurrence]) -> None:
        """Check the bytes of a oneof's message member that a later member replaces, then drop
        them: the runtime refuses a payload whose replaced member is malformed, so that is an error
        here too. What only a kept value could violate (a required field, a Timestamp's range) is
        not checked, as the runtime does not check it either."""
        mark = len(self.out)
        self.checking += 1
        try:
            self.value(node, spans)
        finally:
            self.checking -= 1
        del self.out[mark:]

    def message(self, message: _Message, spans: list[Occurrence]) -> None:
        """Write the Avro record of ``message`` read from the concatenation of ``spans``."""
        self.depth += 1
        if self.depth > PROTO_MAX_DEPTH:
            raise _Fail(PROTO_DEPTH_EXCEEDED, spans[0][0], PROTO_MAX_DEPTH)
        state = _State(message)
        for start, end, _ in spans:
            self.scan(message, start, end, state)
        if message.op == P_MESSAGE:
            self.fields(message, state, spans[-1][1])
        else:
            self.timestamp(state, spans[0][0])
        self.depth -= 1

    def timestamp(self, state: _State, at: int) -> None:
        seconds = nanos = 0
        if state.starts[0] >= 0:
            seconds = _signed64(self.varint(state.starts[0], state.ends[0])[0])
        if state.starts[1] >= 0:
            nanos = _signed32(self.varint(state.starts[1], state.ends[1])[0])
        total = seconds * _NS + nanos
        if not _INT64_MIN <= total <= _INT64_MAX:
            if self.checking:
                return
            raise _Fail(PROTO_VALUE_RANGE, at)
        self.out += _zigzag(total)

    def fields(self, message: _Message, state: _State, end: int) -> None:
        out = self.out
        for fi, f in enumerate(message.fields):
            shape = f.shape
            if shape == PF_CASE:
                member = state.groups[f.group]
                if member < 0:
                    out.append(0)
                else:
                    name = message.fields[member].name
                    out += b"\x02" + _varint_bytes(len(name) << 1) + name
                continue
            if shape == PF_REPEATED:
                if f.child.__class__ is int:
                    self.repeated_scalar(f, state.lists[fi])
                else:
                    self.repeated_values(f, state.lists[fi])
                continue
            if shape == PF_MAP:
                self.entries(f, state.lists[fi])
                continue
            present = bool(state.lists[fi]) if f.collects else state.starts[fi] >= 0
            if shape == PF_ONEOF and state.groups[f.group] != fi:
                present = False
            if not present:
                if shape == PF_REQUIRED:
                    if self.checking:
                        continue
                    raise _Fail(PROTO_MISSING_REQUIRED, end, (message.index << 29) | f.number)
                assert f.missing is not None
                out += f.missing
                continue
            if shape == PF_OPTIONAL or shape == PF_ONEOF:
                out.append(2)
            if f.collects:
                self.value(f.child, state.lists[fi])
            else:
                self.scalar(f.kind, state.starts[fi], state.ends[fi])

    def value(self, node: Any, spans: list[Occurrence]) -> None:
        """A message-like value read from ``spans`` (merged)."""
        if node.op == P_RAW:
            if node.check is not None:
                mark = len(self.out)
                self.message(node.check, spans)
                del self.out[mark:]
            body = b"".join(self.buf[s:e] for s, e, _ in spans)
            self.out += _varint_bytes(len(body) << 1) + body
        else:
            self.message(node, spans)

    def scalar(self, kind: int, start: int, end: int) -> None:
        """Write the value at ``buf[start:end]`` (a varint, fixed bytes or a string's bytes)."""
        out, buf = self.out, self.buf
        if kind in _VARINT_KINDS:
            raw = self.varint(start, end)[0]
            if kind == P_INT32 or kind == P_UINT32:
                out += _zigzag(_signed32(raw))
            elif kind == P_INT64 or kind == P_UINT64:
                out += _zigzag(_signed64(raw))
            elif kind == P_SINT32:  # zigzag32 on the wire is Avro's zigzag of the same int
                out += _varint_bytes(raw & _MASK32)
            elif kind == P_SINT64:
                out += _varint_bytes(raw)
            else:
                out.append(1 if raw else 0)
        elif kind == P_FIXED32 or kind == P_SFIXED32:
            out += _zigzag(_signed32(int.from_bytes(buf[start : start + 4], "little")))
        elif kind == P_FIXED64 or kind == P_SFIXED64:
            out += _zigzag(_signed64(int.from_bytes(buf[start : start + 8], "little")))
        elif kind == P_FLOAT or kind == P_DOUBLE:
            out += buf[start:end]
        else:  # string (checked when read) and bytes
            out += _varint_bytes((end - start) << 1)
            out += buf[start:end]

    def repeated_scalar(self, f: _Field, occurrences: list[Occurrence]) -> None:
        kind, buf = f.kind, self.buf
        width = 4 if kind in _FIXED32_KINDS else 8 if kind in _FIXED64_KINDS else 0
        count = 0
        for start, end, wire in occurrences:
            if wire == 2 and f.packable:
                if width:
                    count += (end - start) // width
                else:  # one terminating byte per varint
                    count += sum(1 for b in buf[start:end] if b < 0x80)
            else:
                count += 1
        if count:
            self.out += _varint_bytes(count << 1)
        for start, end, wire in occurrences:
            if wire == 2 and f.packable:
                pos = start
                while pos < end:
                    if width:
                        if end - pos < width:
                            raise _Fail(PROTO_TRUNCATED, pos)
                        self.scalar(kind, pos, pos + width)
                        pos += width
                    else:
                        after = self.varint(pos, end)[1]
                        self.scalar(kind, pos, after)
                        pos = after
            else:
                self.scalar(kind, start, end)
        self.out.append(0)

    def repeated_values(self, f: _Field, occurrences: list[Occurrence]) -> None:
        """Strings, bytes and messages: one item per occurrence."""
        if occurrences:
            self.out += _varint_bytes(len(occurrences) << 1)
        for occurrence in occurrences:
            self.value(f.child, [occurrence])
        self.out.append(0)

    def entries(self, f: _Field, occurrences: list[Occurrence]) -> None:
        """Map entries: each written as a record, then a key met again keeps its first place and
        takes the last entry's record (the key's Avro bytes are canonical, so they are compared)."""
        out = self.out
        if not occurrences:
            out.append(0)
            return
        base = len(out)
        records: list[bytes] = []
        keys: list[bytes] = []
        key_kind = f.child.fields[0].kind
        for occurrence in occurrences:
            start = len(out)
            self.message(f.child, [occurrence])
            record = bytes(out[start:])
            records.append(record)
            keys.append(record[: _avro_key_size(record, key_kind)])
        del out[base:]
        last = {key: i for i, key in enumerate(keys)}
        order = list(dict.fromkeys(keys))
        out += _varint_bytes(len(order) << 1)
        for key in order:
            out += records[last[key]]
        out.append(0)

    def top(self, root: _Message, payload: bytes) -> None:
        self.buf, self.depth, self.checking = payload, 0, 0
        self.message(root, [(0, len(payload), 2)])


def _avro_key_size(record: bytes, kind: int) -> int:
    """Bytes of the Avro key at the start of a map entry record."""
    if kind == P_BOOL:
        return 1
    value, pos, shift = 0, 0, 0
    while True:
        b = record[pos]
        value |= (b & 0x7F) << shift
        pos += 1
        shift += 7
        if b < 0x80:
            break
    return pos + (value >> 1) if kind == P_STRING else pos


def transcode(
    program: Program,
    data: ByteData,
    starts: ArrayLike,
    ends: ArrayLike,
    validity: ArrayLike | None,
    keep_going: bool,
) -> Transcoded:
    """Transcode every Protobuf payload ``data[starts[i]:ends[i]]`` to its Avro binary form.

    Parameters
    ----------
    program
        The prepared program (:class:`Program`).
    data
        The buffer holding the payloads.
    starts, ends
        int64 bounds of each payload in ``data``.
    validity
        False rows are null (no output); None: every row is present.
    keep_going
        Report every bad row (True) or stop at the first one (False: the rows after it are not
        transcoded, their offsets equal the last and they are not valid).

    Returns
    -------
    tuple
        ``(errors, out, offsets, validity)``: the ``(code, row, offset, detail)`` errors, the Avro
        bytes of all rows (uint8), ``offsets`` (int64, n + 1; row i is ``out[offsets[i]:offsets[i + 1]]``,
        empty for null and bad rows) and the bool validity (False for null and bad rows), None when
        every row is valid.
    """
    view = memoryview(data)
    buf = view.cast("B") if len(view) else memoryview(b"")
    first = np.asarray(starts, dtype=np.int64)
    last = np.asarray(ends, dtype=np.int64)
    n = len(first)
    if len(last) != n:
        raise ValueError("starts and ends differ in length")
    present = None if validity is None else np.asarray(validity, dtype=bool)
    if present is not None and len(present) < n:
        raise ValueError("validity is shorter than the rows")
    for i in range(n):  # the bounds of null rows are never read
        if (present is None or present[i]) and not 0 <= first[i] <= last[i] <= len(buf):
            raise ValueError(f"row {i} [{first[i]}, {last[i]}) is outside the data ({len(buf)} bytes)")
    out = bytearray()
    offsets = np.zeros(n + 1, dtype=np.int64)
    valid = np.ones(n, dtype=bool)
    errors: list[KernelError] = []
    root = program.root
    row = _Row(out)
    for i in range(n):
        base = len(out)
        if present is not None and not present[i]:
            valid[i] = False
            offsets[i + 1] = base
            continue
        try:
            row.top(root, bytes(buf[int(first[i]) : int(last[i])]))
        except _Fail as exc:
            del out[base:]
            errors.append((exc.code, i, exc.offset, exc.detail))
            valid[i] = False
            if not keep_going:
                offsets[i + 1 :] = base
                valid[i + 1 :] = False
                break
        offsets[i + 1] = len(out)
    result = np.frombuffer(bytes(out), dtype=np.uint8) if out else np.zeros(0, dtype=np.uint8)
    return errors, result, offsets, (None if valid.all() else valid)


def decode(
    program: Program,
    layout: avro_py.Layout,
    avro_program: avro_py.Program,
    segments: Sequence[tuple[ByteData, ArrayLike, ArrayLike, ArrayLike | None]],
    keep_going: bool,
    hints: Sequence[tuple[float, float]] | None = None,
) -> tuple[list[KernelError], list[Any], KernelError | None]:
    """Decode every Protobuf payload of ``segments`` into the Avro column builders of ``layout``.

    Here each segment is transcoded (:func:`transcode`) and the Avro bytes are decoded by the Avro
    kernel (``avro_py.decode`` with ``avro_program``, the program ``program`` was made with); the
    compiled twin appends to the builders while it reads. Both give the same builders and the same
    errors.

    Parameters
    ----------
    program
        The prepared program, made with ``avro=`` (its shadow schema's Avro program).
    layout, avro_program
        That Avro program's layout and program as the Avro kernel twin of the same backend takes them.
    segments
        ``[(data, starts, ends, validity), ...]``, each as :func:`transcode` takes them, or with an
        int ``starts``: the prefix size every row skips, ``ends`` then the n + 1 offsets of the
        messages (row i is ``data[ends[i] + starts:ends[i + 1]]``); rows are numbered across
        segments.
    keep_going
        Report every bad row, which becomes a null row (True), or stop at the first one (False: the
        builders hold the rows before it).
    hints
        Bytes per row of each builder in an earlier batch, as ``avro_py.decode`` takes them.

    Returns
    -------
    tuple
        ``(errors, outputs, bug)``: the ``(code, row, offset, detail)`` errors, the builders as
        ``avro_py.decode`` returns them, and None, or the first Avro error the builders raised on
        what the transcoder gave them (``(code, row, offset, detail)``; a bug, never bad data). A
        message holding more items of no size than the builders take (``ZERO_SIZE_ITEM_LIMIT``) is
        an error, ``PROTO_TOO_MANY_EMPTY_ITEMS`` at offset 0 with the limit as detail.
    """
    if program.avro is None:
        raise ValueError("decode needs a Program made with its Avro program (avro=)")
    errors: list[KernelError] = []
    avro_segments: list[tuple[Any, Any, Any, Any, None]] = []
    row0 = 0
    for data, starts, ends, validity in segments:
        if isinstance(starts, (int, np.integer)):  # offsets and a prefix size
            bounds = np.asarray(ends, dtype=np.int64)
            if not len(bounds):
                raise ValueError("offsets need at least one entry")
            starts, ends = bounds[:-1] + int(starts), bounds[1:]
        found, out, offsets, valid = transcode(program, data, starts, ends, validity, keep_going)
        errors.extend((code, row0 + row, offset, detail) for code, row, offset, detail in found)
        rows = len(offsets) - 1
        if found and not keep_going:
            rows = found[0][1]  # the builders hold the rows before the first bad one
        avro_segments.append(
            (out, offsets[:rows], offsets[1 : rows + 1], None if valid is None else valid[:rows], None)
        )
        if found and not keep_going:
            break
        row0 += rows
    avro_errors, outputs = avro_py.decode(layout, [avro_program], avro_segments, keep_going, hints)
    assert avro_errors is not None and outputs is not None  # no segment carries a prefix to check
    errors, bug = avro_py.limit_errors(errors, avro_errors, keep_going, PROTO_TOO_MANY_EMPTY_ITEMS)
    return errors, outputs, bug
