"""Nanosecond-keeping ``datetime`` / ``time`` and the integer time units Pulsar's primitives use.

Python's ``datetime`` and ``time`` stop at microseconds; Pulsar's INSTANT, LOCAL_TIME and
LOCAL_DATE_TIME carry nanoseconds. :class:`NanoDateTime` and :class:`NanoTime` keep the three
digits below the microseconds in ``.nanosecond``, as ``pandas.Timestamp`` does, so a value read and
written back is unchanged. Public through :mod:`pulsar_codec.primitives`.
"""

from __future__ import annotations

import datetime as _dt
import operator
from collections.abc import Callable
from typing import Any, ClassVar, Self, SupportsIndex

__all__ = [
    "NanoDateTime",
    "NanoTime",
    "EPOCH",
    "EPOCH_NAIVE",
    "EPOCH_ORDINAL",
    "datetime_ns",
    "time_ns",
    "nano_datetime",
    "nano_time",
]

#: 1970-01-01T00:00:00Z, the epoch of DATE, TIMESTAMP and INSTANT.
EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
#: 1970-01-01T00:00:00 without a zone, the epoch of LOCAL_DATE_TIME.
EPOCH_NAIVE = _dt.datetime(1970, 1, 1)
#: ``date.toordinal()`` of 1970-01-01, the epoch day of LOCAL_DATE.
EPOCH_ORDINAL = _dt.date(1970, 1, 1).toordinal()


class _Nanoseconds:
    """What :class:`NanoDateTime` and :class:`NanoTime` share.

    The ``nanosecond`` below the microseconds (0-999), and equality, hashing and ordering that take
    it into account. ``_base`` is the standard class extended (``datetime`` or ``time``).
    """

    __slots__ = ()
    # the standard class extended; Any, since its methods are called unbound with a subclass instance
    _base: ClassVar[Any]

    def __new__(cls, *args: Any, nanosecond: int = 0, **kwargs: Any) -> Self:
        if not 0 <= nanosecond <= 999:
            raise ValueError(f"nanosecond must be in 0..999, got {nanosecond}")
        instance = cls._base.__new__(cls, *args, **kwargs)
        instance._ns = int(nanosecond)  # the slot each concrete class declares
        made: Self = instance
        return made

    @property
    def nanosecond(self) -> int:
        """Nanoseconds below the microseconds, 0-999 (0 on values made by ``datetime`` arithmetic)."""
        # datetime arithmetic builds instances without calling __new__, so _ns may be unset
        return getattr(self, "_ns", 0)

    def __repr__(self) -> str:
        text = self._base.__repr__(self)
        return text if not self.nanosecond else f"{text[:-1]}, nanosecond={self.nanosecond})"

    def _other_ns(self, other: object) -> int | None:
        """The nanosecond of a comparable value (0 for a plain one); None when not comparable."""
        if not isinstance(other, self._base):
            return None
        return int(getattr(other, "nanosecond", 0))

    def __eq__(self, other: object) -> bool:
        ns = self._other_ns(other)
        if ns is None:
            return NotImplemented
        return bool(self._base.__eq__(self, other) is True and self.nanosecond == ns)

    def __ne__(self, other: object) -> bool:
        ns = self._other_ns(other)
        if ns is None:
            return NotImplemented
        return not self.__eq__(other)

    def __hash__(self) -> int:
        base: int = self._base.__hash__(self)
        return base if not self.nanosecond else hash((base, self.nanosecond))

    def _compare(self, other: object, ns: int, op: Callable[[Any, Any], bool], name: str) -> bool:
        if self._base.__eq__(self, other) is True:
            return op(self.nanosecond, ns)
        # the base class's own operator compares the parts above the nanoseconds without recursing
        result: bool = getattr(self._base, name)(self, other)
        return result

    def __lt__(self, other: object) -> bool:
        ns = self._other_ns(other)
        return NotImplemented if ns is None else self._compare(other, ns, operator.lt, "__lt__")

    def __le__(self, other: object) -> bool:
        ns = self._other_ns(other)
        return NotImplemented if ns is None else self._compare(other, ns, operator.le, "__le__")

    def __gt__(self, other: object) -> bool:
        ns = self._other_ns(other)
        return NotImplemented if ns is None else self._compare(other, ns, operator.gt, "__gt__")

    def __ge__(self, other: object) -> bool:
        ns = self._other_ns(other)
        return NotImplemented if ns is None else self._compare(other, ns, operator.ge, "__ge__")


class NanoDateTime(_Nanoseconds, _dt.datetime):
    """A ``datetime`` that also keeps the nanoseconds below its microseconds (0-999).

    ``nanosecond`` is read by :func:`pulsar_codec.primitives.encode` (``pandas.Timestamp`` has the
    same attribute). Equality, hashing and ordering take it into account; arithmetic returns values
    without it.
    """

    __slots__ = ("_ns",)
    _base = _dt.datetime

    def _plain(self) -> _dt.datetime:
        return _dt.datetime(
            self.year,
            self.month,
            self.day,
            self.hour,
            self.minute,
            self.second,
            self.microsecond,
            tzinfo=self.tzinfo,
            fold=self.fold,
        )

    # datetime defines __reduce_ex__, which pickle prefers to __reduce__
    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        return (_rebuild_nano_datetime, (self._plain(), self.nanosecond))

    def isoformat(self, sep: str = "T", timespec: str = "auto") -> str:
        """ISO 8601 text with nine fractional digits when ``nanosecond`` is set."""
        if not self.nanosecond or timespec not in ("auto", "nanoseconds"):
            return super().isoformat(sep, timespec if timespec != "nanoseconds" else "microseconds")
        text = super().isoformat(sep, "microseconds")
        cut = text.rindex(".") + 7
        return f"{text[:cut]}{self.nanosecond:03d}{text[cut:]}"


def _rebuild_nano_datetime(plain: _dt.datetime, nanosecond: int) -> NanoDateTime:
    return NanoDateTime(
        plain.year,
        plain.month,
        plain.day,
        plain.hour,
        plain.minute,
        plain.second,
        plain.microsecond,
        tzinfo=plain.tzinfo,
        fold=plain.fold,
        nanosecond=nanosecond,
    )


class NanoTime(_Nanoseconds, _dt.time):
    """A ``time`` that also keeps the nanoseconds below its microseconds (0-999); see :class:`NanoDateTime`."""

    __slots__ = ("_ns",)
    _base = _dt.time

    def _plain(self) -> _dt.time:
        return _dt.time(self.hour, self.minute, self.second, self.microsecond, tzinfo=self.tzinfo, fold=self.fold)

    def __reduce_ex__(self, protocol: SupportsIndex) -> tuple[Any, ...]:
        return (_rebuild_nano_time, (self._plain(), self.nanosecond))

    def isoformat(self, timespec: str = "auto") -> str:
        """ISO 8601 text with nine fractional digits when ``nanosecond`` is set."""
        if not self.nanosecond or timespec not in ("auto", "nanoseconds"):
            return super().isoformat(timespec if timespec != "nanoseconds" else "microseconds")
        text = super().isoformat("microseconds")
        cut = text.rindex(".") + 7
        return f"{text[:cut]}{self.nanosecond:03d}{text[cut:]}"

    __str__ = isoformat


def _rebuild_nano_time(plain: _dt.time, nanosecond: int) -> NanoTime:
    return NanoTime(
        plain.hour,
        plain.minute,
        plain.second,
        plain.microsecond,
        tzinfo=plain.tzinfo,
        fold=plain.fold,
        nanosecond=nanosecond,
    )


# -- integer units --------------------------------------------------------------------------------


def datetime_ns(value: _dt.datetime, *, local: bool) -> int:
    """Nanoseconds since the epoch, ``nanosecond`` attribute included.

    An aware value counts from the UTC epoch and a naive one is taken as UTC; with ``local`` the
    wall-clock time counts, whatever the zone (LOCAL_DATE_TIME).
    """
    if local or value.tzinfo is None:
        delta = value.replace(tzinfo=None) - EPOCH_NAIVE
    else:
        delta = value - EPOCH
    us = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return us * 1000 + int(getattr(value, "nanosecond", 0))


def time_ns(value: _dt.time) -> int:
    """The nanosecond of the day of a wall-clock time, ``nanosecond`` attribute included."""
    us = ((value.hour * 60 + value.minute) * 60 + value.second) * 1_000_000 + value.microsecond
    return us * 1000 + int(getattr(value, "nanosecond", 0))


def nano_datetime(epoch: _dt.datetime, ns: int) -> NanoDateTime:
    """``epoch`` plus ``ns`` nanoseconds, with ``epoch``'s zone.

    Raises
    ------
    OverflowError
        The result is outside ``datetime``'s years 1-9999.
    """
    us, rest = divmod(ns, 1000)
    plain = epoch + _dt.timedelta(microseconds=us)
    return NanoDateTime(
        plain.year,
        plain.month,
        plain.day,
        plain.hour,
        plain.minute,
        plain.second,
        plain.microsecond,
        tzinfo=plain.tzinfo,
        nanosecond=rest,
    )


def nano_time(nod: int) -> NanoTime:
    """The time of a nanosecond of the day (``0 <= nod < 86400e9``)."""
    us, rest = divmod(nod, 1000)
    s, us = divmod(us, 1_000_000)
    m, s = divmod(s, 60)
    h, m = divmod(m, 60)
    return NanoTime(h, m, s, us, nanosecond=rest)
