"""What every format's compatibility rules return, and the shape of a rules module.

A format package may hold a ``compat`` module (``formats/avro/compat.py``; later
``formats/json/compat.py``, ``formats/protobuf/compat.py``) that satisfies :class:`FormatRules`.
:mod:`pulsar_codec.compat` applies the registry strategies and the PIP-44 checks over those rules,
and knows nothing of any one format.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from ..errors import IncompatibleSchemaError

__all__ = ["COMPATIBLE", "CompatibilityResult", "FormatRules", "Incompatibility"]


@dataclass(frozen=True)
class Incompatibility:
    """One reason why a reader cannot read a writer.

    Attributes
    ----------
    kind : str
        ``TYPE_MISMATCH``, ``NAME_MISMATCH``, ``FIXED_SIZE_MISMATCH``, ``MISSING_ENUM_SYMBOLS``,
        ``READER_FIELD_MISSING_DEFAULT_VALUE``, ``MISSING_UNION_BRANCH`` (Avro Java's names), or
        ``SCHEMA_TYPE_MISMATCH`` / ``STRATEGY`` / ``NO_SCHEMA`` for the checks around them.
    location : str
        JSON pointer into the reader schema, as Avro Java reports it (``/fields/1/type/symbols``).
    path : str
        The same place in words: ``Event.status``, ``Event.tags[]``, ``Event.attrs{}``,
        ``Event.payload|1`` (union branch 1).
    message : str
        What is wrong.
    """

    kind: str
    location: str
    path: str
    message: str

    def __str__(self) -> str:
        if not (self.kind or self.location or self.path):
            return self.message  # a reason relayed from a remote registry, already in words
        where = f" at {self.location}" if self.location else ""
        path = f" ({self.path})" if self.path else ""
        return f"{self.kind}{where}{path}: {self.message}"


@dataclass(frozen=True)
class CompatibilityResult:
    """Outcome of a check; true when compatible.

    Attributes
    ----------
    compatible : bool
    incompatibilities : tuple of Incompatibility
        Empty when compatible.
    """

    compatible: bool
    incompatibilities: tuple[Incompatibility, ...] = field(default=())

    def __bool__(self) -> bool:
        return self.compatible

    @property
    def reasons(self) -> list[str]:
        """Readable reasons, one per incompatibility, naming where it is."""
        return [str(i) for i in self.incompatibilities]

    def raise_if_incompatible(self, message: str = "schema is incompatible") -> None:
        """Raise :class:`~pulsar_codec.errors.IncompatibleSchemaError` with the reasons if incompatible."""
        if not self.compatible:
            reasons = self.reasons
            detail = "; ".join(reasons[:5]) + ("; ..." if len(reasons) > 5 else "")
            raise IncompatibleSchemaError(f"{message}: {detail}" if detail else message, reasons=reasons)

    def relabel(self, context: str) -> CompatibilityResult:
        """The same result with every message prefixed by ``context`` (``"key"``, ``"version 3"``)."""
        if self.compatible:
            return self
        return CompatibilityResult(
            False,
            tuple(
                Incompatibility(i.kind, i.location, i.path, f"{context}: {i.message}") for i in self.incompatibilities
            ),
        )

    @classmethod
    def ok(cls) -> CompatibilityResult:
        """The compatible result."""
        return COMPATIBLE

    @classmethod
    def fail(cls, kind: str, message: str, location: str = "", path: str = "") -> CompatibilityResult:
        """An incompatible result with one reason."""
        return cls(False, (Incompatibility(kind, location, path, message),))

    @classmethod
    def merge(cls, results: Iterable[CompatibilityResult]) -> CompatibilityResult:
        """Compatible when every one of ``results`` is; their reasons in order, each once."""
        items: list[Incompatibility] = []
        compatible = True
        for r in results:
            compatible = compatible and r.compatible
            items.extend(i for i in r.incompatibilities if i not in items)
        return cls(compatible, tuple(items))


COMPATIBLE = CompatibilityResult(True)
"""The compatible result (shared: results are immutable)."""


@runtime_checkable
class FormatRules(Protocol):
    """What a format's ``compat`` module provides (a module satisfies this protocol).

    Schemas may be given as registry text, bytes, decoded JSON or the value :meth:`parse`
    returned; every function accepts all of them.
    """

    def parse(self, schema: Any) -> Any:
        """The format's parsed schema, which :meth:`check` and :meth:`canonical_form` accept.

        Raises :class:`~pulsar_codec.errors.SchemaError` when the schema is malformed.
        """
        ...

    def canonical_form(self, schema: Any) -> str:
        """Text under which a registry considers two schemas of this format the same."""
        ...

    def check(self, reader: Any, writer: Any) -> CompatibilityResult:
        """Can data written with ``writer`` be read with ``reader``?"""
        ...
