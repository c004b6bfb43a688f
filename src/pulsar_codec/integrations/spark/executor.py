"""What lives in an executor's Python process: its decoders, its backend, and the stats about both.

Spark unpickles a job's function once per task, so anything kept on the job itself would be
rebuilt (and its schemas fetched again) for every task. The decoders therefore live here, one per
configuration per process, and every task of every job with that configuration reuses it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import uuid
from collections import Counter
from collections.abc import Hashable, Iterator, Mapping
from typing import Any

import pyarrow as pa

from ..._kernels import _backend
from ...errors import RegistryError, SchemaNotFoundError
from ...pipeline import MessageDecoder, MessageEncoder
from ...registry import RegistryConfig

__all__ = [
    "ShippedSchemas",
    "count_batch",
    "executor_stats",
    "schema_key",
    "shared_decoder",
    "shared_encoder",
    "use_backend",
]

_log = logging.getLogger("pulsar_codec")


def schema_key(schema_id: Any) -> Any:
    """One spelling per id: ``5``, ``np.int64(5)`` and ``"5"`` are all ``5``; pairs stay pairs; a
    GUID is a ``uuid.UUID`` whether given as one or as its text."""
    if isinstance(schema_id, tuple):
        return tuple(int(part) for part in schema_id)
    if isinstance(schema_id, uuid.UUID):
        return schema_id
    if isinstance(schema_id, str) and not schema_id.strip().lstrip("-").isdigit():
        try:
            return uuid.UUID(schema_id.strip())
        except ValueError:
            return schema_id
    return int(schema_id)


class ShippedSchemas(Mapping[Any, Any]):
    """The writer schemas resolved on the driver, in front of a registry the executors can open.

    A :class:`~pulsar_codec.pipeline.MessageDecoder` reads it as a Mapping of id -> schema: an id
    shipped with the job is answered from memory; any other id is asked of a client built from
    ``fallback`` (once per process: the decoder caches what it gets). With no fallback (the driver
    had a Mapping or an in-memory registry) an id that was not shipped is a
    :class:`~pulsar_codec.errors.SchemaNotFoundError`. Pickling keeps the schemas and the config,
    never the client.

    Parameters
    ----------
    schemas : Mapping of id -> schema
        Schema text (or anything a registry may return) by id: an int, a ``uuid.UUID`` (GUID, asked
        of the fallback registry by GUID), or a Hortonworks ``(metadata_id, version)`` pair.
    fallback : RegistryConfig, optional
        The registry to ask for ids that were not shipped.
    missing : iterable of ids, optional
        Ids the driver found missing from the registry: not asked for again.
    complete : bool
        ``schemas`` is the whole registry (the driver was given a Mapping): an id not among them
        is not in the registry (a :class:`~pulsar_codec.errors.SchemaNotFoundError`, an error
        row), whether or not the driver looked for it.
    """

    def __init__(
        self,
        schemas: Mapping[Any, Any],
        fallback: RegistryConfig | None = None,
        missing: Any = (),
        complete: bool = False,
    ) -> None:
        self.schemas: dict[Any, Any] = {schema_key(k): v for k, v in schemas.items()}
        self.fallback = fallback
        self.missing: frozenset[Any] = frozenset(schema_key(k) for k in missing)
        self.complete = complete
        self.fetched: Counter[Any] = Counter()
        self._client: Any = None
        self._lock = threading.Lock()

    def __getitem__(self, schema_id: Any) -> Any:
        key = schema_key(schema_id)
        with self._lock:
            found = self.schemas.get(key)
            if found is not None:
                return found
            if key in self.missing or self.complete:
                raise SchemaNotFoundError(f"schema id {key} is not in the registry")
            client = self._fallback_client(f"schema id {key}")
            self.fetched[key] += 1
            found = client.get_schema(key)
        if found is None:
            raise SchemaNotFoundError(f"schema id {key} is not in the registry")
        return found

    def _fallback_client(self, what: str) -> Any:
        """The fallback registry's client (built once; the caller holds the lock)."""
        if self.fallback is None:
            # not bad data but a job that cannot ask: a RegistryError fails the task (no error rows)
            raise RegistryError(
                f"{what} was not resolved on the driver and the executors have no registry to ask "
                "(a Mapping or LocalRegistry(':memory:') registry): resolve it on the driver "
                "(prefetch=True or subjects=[...]) or use a registry the executors can reach"
            )
        if self._client is None:
            self._client = self.fallback.build()
        return self._client

    def get_version(self, subject: str, version: Any = "latest") -> Any:
        """One version of a subject, from the fallback registry: what a format's reference resolver
        asks for when a schema fetched here refers to others (shipped schemas carry their
        references' texts already)."""
        with self._lock:
            client = self._fallback_client(f"the reference to subject {subject!r} version {version!r}")
        return client.get_version(subject, version)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.schemas)

    def __len__(self) -> int:
        return len(self.schemas)

    def add(self, schemas: Mapping[Any, Any], missing: Any = ()) -> None:
        """Ship more schemas (a later job's) into this one; ids already known keep their schema.

        ``missing`` is the later job's view of the ids the registry lacks: it replaces this one's.
        """
        with self._lock:
            for k, v in schemas.items():
                self.schemas.setdefault(schema_key(k), v)
            self.missing = frozenset(schema_key(k) for k in missing) - set(self.schemas)

    def __getstate__(self) -> dict[str, Any]:
        return {"schemas": self.schemas, "fallback": self.fallback, "missing": self.missing, "complete": self.complete}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(  # type: ignore[misc]
            state["schemas"], state["fallback"], state.get("missing", ()), state.get("complete", False)
        )

    def __repr__(self) -> str:
        return f"ShippedSchemas({sorted(self.schemas, key=str)}, fallback={self.fallback!r})"


# per process; a cap, so a long-lived executor running many different jobs does not grow without end
_KEEP = 32
_DECODERS: dict[Hashable, tuple[MessageDecoder, ShippedSchemas]] = {}
_LOCK = threading.Lock()
_FALLBACKS: list[str] = []
_BATCHES: Counter[str] = Counter()  # batches decoded per backend name, in this process


def shared_decoder(key: Hashable, decoder: MessageDecoder, schemas: ShippedSchemas) -> MessageDecoder:
    """This process's decoder for ``key``: the first one a task brings is kept, later tasks' and
    jobs' shipped schemas are added to it, so each id is parsed and planned once per process.

    ``schemas`` is the :class:`ShippedSchemas` that ``decoder`` reads from.
    """
    with _LOCK:
        kept = _DECODERS.get(key)
        if kept is None:
            _DECODERS[key] = (decoder, schemas)
            while len(_DECODERS) > _KEEP:  # the oldest configuration goes first
                del _DECODERS[next(iter(_DECODERS))]
            return decoder
    kept[1].add(schemas.schemas, schemas.missing)
    return kept[0]


_ENCODERS: dict[Hashable, MessageEncoder] = {}


def shared_encoder(key: Hashable, encoder: MessageEncoder) -> MessageEncoder:
    """This process's encoder for ``key`` (the first one a task brings), so each writer schema's
    encoder is compiled once per process."""
    with _LOCK:
        kept = _ENCODERS.setdefault(key, encoder)
        while len(_ENCODERS) > _KEEP:
            del _ENCODERS[next(iter(_ENCODERS))]
        return kept


def count_batch() -> None:
    """Count one decoded batch under the backend running it (reported by :func:`executor_stats`)."""
    _BATCHES[_backend.active().name] += 1


@contextlib.contextmanager
def use_backend(name: str) -> Iterator[None]:
    """Run a block with the backend the driver ran (``name``).

    When this process cannot load it (the compiled twin failed to import here), the pure twin runs
    and the ``pulsar_codec`` logger says so with the reason, once per process; the fallback is also
    listed by :func:`executor_stats`. With ``PULSAR_CODEC_REQUIRE_EXTENSIONS=1`` the import failure
    is an error instead (raised when the package is imported).
    """
    try:
        backend = _backend.get(name)
    except ImportError as exc:
        reason = f"{name}: {exc}"
        with _LOCK:
            first = reason not in _FALLBACKS
            if first:
                _FALLBACKS.append(reason)
        if first:
            _log.warning(
                "pulsar_codec: the driver runs the %r backend but this executor process (pid %d) cannot load it, "
                "running the pure-Python twin: %s",
                name,
                os.getpid(),
                exc,
            )
        backend = _backend.get("python")
    with _backend.use(backend.name):
        yield


def _stats_batches(batches: Iterator[Any]) -> Iterator[Any]:
    for _ in batches:
        pass
    with _LOCK:
        kept = list(_DECODERS.values())
    registries = [
        {
            "spec": repr(schemas.fallback) if schemas.fallback is not None else "shipped schemas only",
            "known": [
                str(k) if isinstance(k, uuid.UUID) else k  # GUIDs as their text: JSON has no UUID
                for k in sorted(
                    set(schemas.schemas) | set(schemas.fetched),
                    key=lambda k: (not isinstance(k, int), str(k).zfill(20)),
                )
            ],
            "fetched": {str(k): v for k, v in schemas.fetched.items()},
        }
        for _, schemas in kept
    ]
    report = {
        "pid": os.getpid(),
        "backend": _backend.default().name,
        "batches": dict(_BATCHES),
        "fallbacks": list(_FALLBACKS),
        "decoders": len(kept),
        "registries": registries,
    }
    yield pa.RecordBatch.from_arrays(
        [pa.array([os.getpid()], pa.int64()), pa.array([json.dumps(report)])], ["pid", "report"]
    )


def executor_stats(spark: Any, tasks: int | None = None) -> list[dict[str, Any]]:
    """What the executor Python processes hold, one dict per process reached.

    Runs a small job of ``tasks`` tasks (default: twice the default parallelism); each reports its
    process id (``pid``), default backend (``backend``), decode batches run per backend
    (``batches``), backends it could not load (``fallbacks``), how many decoders it keeps
    (``decoders``) and, per decoder (``registries``), the registry it falls back to (``spec``, the
    ``repr`` of its :class:`~pulsar_codec.registry.RegistryConfig`), the ids it knows (``known``)
    and how often each id was fetched from that registry (``fetched``: id -> count, which stays 1
    per process). Processes that run none of the tasks are not reported.

    Returns
    -------
    list of dict
        One report per executor process, sorted by process id.
    """
    tasks = tasks or 2 * spark.sparkContext.defaultParallelism
    df = spark.range(0, tasks, 1, tasks)
    rows = df.mapInArrow(_stats_batches, "pid long, report string").collect()
    by_pid = {row["pid"]: json.loads(row["report"]) for row in rows}
    return [by_pid[p] for p in sorted(by_pid)]
