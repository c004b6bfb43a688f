"""Row shapes: how the kernel's one-row decode turns slot elements into Python values.

:func:`row_shapes` gives, per slot of a reader layout, the ``(names, text, convert)`` triple of the
kernel contract (``_kernels/avro_py.py``), chosen so a value decoded alone equals the same row of a
decoded batch after ``to_pylist()``: records are dicts, strings ``str``, enums their symbol,
decimals ``Decimal`` at the column's scale, dates, times and timestamps ``datetime`` objects (UTC
timestamps carry the ``zoneinfo`` UTC pyarrow attaches), durations ``pyarrow.MonthDayNano``, ``uuid``
on ``fixed(16)`` its canonical text. Where
pyarrow's conversion has corners of its own (nanosecond timestamps, values out of ``datetime``'s
range), the converter asks pyarrow for that one scalar, so both paths stay identical there too.
"""

from __future__ import annotations

import datetime
import decimal
import struct
import uuid
import zoneinfo
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from ..._kernels.defs import K_BIN, K_I32, K_I64, K_RAW, K_STRUCT
from ...errors import ErrorCode, error_for
from .plan import Layout, Slot
from .schema import Record

__all__ = ["row_shapes"]

Convert = Callable[[Any], Any]
RowShape = tuple[tuple[str, ...] | None, bool, Convert | None]

_UTC = zoneinfo.ZoneInfo("UTC")  # what pyarrow's to_pylist attaches to tz="UTC" timestamps
_EPOCH_UTC = datetime.datetime(1970, 1, 1, tzinfo=_UTC)
_EPOCH = datetime.datetime(1970, 1, 1)
_EPOCH_ORDINAL = datetime.date(1970, 1, 1).toordinal()
_DAY_MS = 86_400_000
_DAY_US = 86_400_000_000
_INTERVAL = struct.Struct("<iiq")
# exact for every decimal256 (76 digits): the default context would round past 28 digits
_DECIMALS = decimal.Context(prec=100, Emin=-999_999, Emax=999_999)


def _scalar(typ: pa.DataType) -> Convert:
    """pyarrow's own conversion of one value (for the corners the fast converters leave to it).

    A value past what ``datetime`` holds has no Python form (pyarrow's ``to_pylist`` raises for it
    too, while the Arrow column holds it): :class:`~pulsar_codec.errors.AvroDecodeError`
    ``AVRO_NO_PYTHON_VALUE`` for the one message, not pyarrow's bare OverflowError.
    """

    def convert(v: Any) -> Any:
        try:
            return pa.scalar(v, typ).as_py()
        except (OverflowError, ValueError):
            raise error_for(ErrorCode.AVRO_NO_PYTHON_VALUE, 0, 0, v, target=str(typ)) from None

    return convert


def _timestamp(typ: pa.DataType) -> Convert:
    if typ.unit == "ns":
        return _scalar(typ)
    epoch = _EPOCH if typ.tz is None else _EPOCH_UTC
    fallback = _scalar(typ)
    if typ.unit == "s":

        def seconds(v: int) -> Any:
            try:
                return epoch + datetime.timedelta(seconds=v)
            except OverflowError:
                return fallback(v)

        return seconds
    if typ.unit == "ms":

        def millis(v: int) -> Any:
            try:
                return epoch + datetime.timedelta(milliseconds=v)
            except OverflowError:
                return fallback(v)

        return millis

    def micros(v: int) -> Any:
        try:
            return epoch + datetime.timedelta(microseconds=v)
        except OverflowError:
            return fallback(v)

    return micros


def _time(typ: pa.DataType) -> Convert:
    fallback = _scalar(typ)
    if typ.unit == "ms":

        def millis(v: int) -> Any:
            if not 0 <= v < _DAY_MS:
                return fallback(v)
            s, ms = divmod(v, 1000)
            m, s = divmod(s, 60)
            return datetime.time(m // 60, m % 60, s, ms * 1000)

        return millis
    if typ.unit != "us":
        return fallback

    def micros(v: int) -> Any:
        if not 0 <= v < _DAY_US:
            return fallback(v)
        s, us = divmod(v, 1_000_000)
        m, s = divmod(s, 60)
        return datetime.time(m // 60, m % 60, s, us)

    return micros


def _date(typ: pa.DataType) -> Convert:
    fallback = _scalar(typ)

    def days(v: int) -> Any:
        try:
            return datetime.date.fromordinal(_EPOCH_ORDINAL + v)
        except (OverflowError, ValueError):
            return fallback(v)

    return days


def _decimal(scale: int) -> Convert:
    exponent = -scale

    def unscaled(raw: bytes) -> decimal.Decimal:
        return decimal.Decimal(int.from_bytes(raw, "little", signed=True)).scaleb(exponent, _DECIMALS)

    return unscaled


def _interval(raw: bytes) -> Any:
    return pa.MonthDayNano(_INTERVAL.unpack(raw))


def _uuid_text(raw: bytes) -> str:
    return str(uuid.UUID(bytes=raw))


def _convert(slot: Slot) -> Convert | None:
    """The converter of one slot's non-null values, or None when the raw value is already right."""
    if slot.symbols is not None:
        return tuple(slot.symbols).__getitem__
    typ = slot.type
    if slot.kind == K_RAW:
        if pa.types.is_decimal(typ):
            return _decimal(typ.scale)
        if pa.types.is_interval(typ):
            return _interval
        if pa.types.is_string(typ):  # uuid on fixed(16): the canonical text, as the batch path gives
            return _uuid_text
        return None
    if slot.kind in (K_I32, K_I64):
        if pa.types.is_timestamp(typ):
            return _timestamp(typ)
        if pa.types.is_time(typ):
            return _time(typ)
        if pa.types.is_date32(typ):
            return _date(typ)
    return None


def row_shapes(layout: Layout) -> list[RowShape]:
    """One ``(names, text, convert)`` per slot of ``layout`` (see the module docstring)."""
    shapes: list[RowShape] = []
    for sid, slot in enumerate(layout.slots):
        names: tuple[str, ...] | None = None
        if slot.kind == K_STRUCT:
            if sid == 0:
                names = tuple(layout.names) if layout.is_record else None
            else:
                assert isinstance(slot.node, Record)
                names = tuple(f.name for f in slot.node.fields)
        text = slot.kind == K_BIN and (pa.types.is_string(slot.type) or pa.types.is_large_string(slot.type))
        shapes.append((names, text, _convert(slot)))
    return shapes
