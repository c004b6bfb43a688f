"""The registry configured once, a provider per topic: :class:`SchemaInfoProviderFactory` and
:class:`SchemaInfoProvider`, in the spirit of the PIP-420 draft ("one ``SchemaInfoProvider`` per
topic, made by a factory")."""

from __future__ import annotations

import threading
from typing import Any, Self

from ... import keyvalue as _kv
from ... import wire
from . import subjects as _subjects
from .avro_schema import AvroExternalSchema
from .base import ExternalSchema
from .ids import external_protocol
from .json_schema import JsonExternalSchema
from .keyvalue_schema import KeyValueExternalSchema, primitive_type
from .subjects import ProviderSettings, ProviderSource, SubjectNameStrategy, check_topic_form, warn_fast_is_ignored

__all__ = ["SchemaInfoProvider", "SchemaInfoProviderFactory"]


class SchemaInfoProvider(ProviderSettings):
    """The registry configuration for one topic (made by :class:`SchemaInfoProviderFactory`).

    Attributes
    ----------
    topic : str
    registry : Registry
        Shared by every provider of the factory.
    protocol : wire.Protocol
    framed, auto_register, use_latest : bool
        Defaults for the schemas made from this provider.
    strategy : callable
        The subject name strategy, ``(topic, record_name, is_key) -> subject``.
    topic_in_subject : {"full", "local"}
        Which form of the topic name goes into subjects (``local``: the part after the last ``/``).
    """

    def avro_schema(self, schema: Any = None, **options: Any) -> AvroExternalSchema:
        """An :class:`AvroExternalSchema` for this topic; ``options`` as its parameters."""
        return AvroExternalSchema(self, schema, **options)

    def json_schema(self, schema: Any = None, **options: Any) -> JsonExternalSchema:
        """A :class:`JsonExternalSchema` for this topic; ``options`` as its parameters."""
        return JsonExternalSchema(self, schema, **options)


class SchemaInfoProviderFactory(ProviderSource):
    """Configure the registry once; get a provider, and external schemas, per topic.

    Parameters
    ----------
    registry : Registry, optional
        A registry object (:class:`~pulsar_codec.registry.LocalRegistry`,
        :class:`~pulsar_codec.registry.ConfluentRegistry`, or anything with ``register``,
        ``get_schema``, ``get_latest`` and ``lookup``). It stays open when the factory closes.
    url : str, optional
        Instead of ``registry``: the URL of a Confluent-compatible registry. The factory opens a
        :class:`~pulsar_codec.registry.ConfluentRegistry` with ``auth`` / ``token`` / ``verify`` /
        ``cert`` / ``timeout`` / ``registry_options`` and closes it in :meth:`close`.
    auth : (user, password), optional
    token : str, optional
        Bearer token.
    verify : bool, path or ssl.SSLContext, default True
        TLS verification (CA bundle path, or False).
    cert : path or (certfile, keyfile), optional
        Client certificate for mutual TLS.
    timeout : float or (connect, read), optional
    protocol : wire.Protocol or str, default wire.CONFLUENT
        Framing: ``CONFLUENT``, ``HORTONWORKS``, ``APICURIO`` (v2, 8-byte ids) or ``APICURIO_V3``.
    framed : bool, default True
        Keep the registry prefix in ``EncodeData.data`` (see :mod:`pulsar_codec.external`).
    subject_name_strategy : str or callable, default "topic"
        ``"topic"`` (``<topic>-value`` / ``-key``), ``"record"`` (the full record name),
        ``"topic_record"`` (``<topic>-<full record name>``), or ``(topic, record_name, is_key) -> str``.
    topic_in_subject : {"full", "local"}, default "full"
        Put the topic in subjects as given, or only its local name
        (``persistent://public/default/orders`` -> ``orders``, as a Kafka client on KoP would).
    auto_register : bool, default True
        Register the writer schema under its subject (compatibility checked by the registry).
        False: look the schema up in the subject instead (SchemaNotFoundError if it is not there).
    use_latest : bool, default False
        Write with the subject's latest version instead of the given schema. An Avro schema
        given no schema (nor ``reader_schema``) also reads every message as that version, one
        message as a batch (confluent-kafka's ``use.latest.version``).
    fast : bool, optional
        Deprecated and ignored (every message is decoded by the compiled plan).
    registry_options
        Passed to :class:`~pulsar_codec.registry.ConfluentRegistry` (``retries``, ``cache_size``...).

    Examples
    --------
    >>> factory = SchemaInfoProviderFactory(url="https://registry:8081", auth=("u", "p"))  # doctest: +SKIP
    >>> orders = factory.avro_schema("persistent://public/default/orders", ORDER_SCHEMA)  # doctest: +SKIP
    >>> producer = client.create_producer(topic, schema=ExternalSchemaAdapter(orders))   # doctest: +SKIP
    """

    def __init__(
        self,
        registry: Any = None,
        *,
        url: str | None = None,
        auth: tuple[str, str] | None = None,
        token: str | None = None,
        verify: Any = True,
        cert: Any = None,
        timeout: float | tuple[float, float] | None = None,
        protocol: wire.Protocol | str = wire.CONFLUENT,
        framed: bool = True,
        subject_name_strategy: str | SubjectNameStrategy = "topic",
        topic_in_subject: str = "full",
        auto_register: bool = True,
        use_latest: bool = False,
        fast: bool | None = None,
        **registry_options: Any,
    ) -> None:
        warn_fast_is_ignored(fast)
        if (registry is None) == (url is None):
            raise ValueError("give either registry= or url=")
        configs: dict[str, str] = {}
        if url is not None:
            from ...registry.http import ConfluentRegistry  # httpx is an optional extra

            options = dict(registry_options)
            if timeout is not None:
                options["timeout"] = timeout
            registry = ConfluentRegistry(url, auth=auth, token=token, verify=verify, cert=cert, **options)
            self._owns_registry = True
            configs["schema.registry.url"] = registry.url
            if auth is not None or token is not None or "@" in url:
                key = "basic.auth.credentials.source" if token is None else "bearer.auth.credentials.source"
                configs[key] = "USER_INFO" if token is None else "STATIC_TOKEN"
        else:
            if auth is not None or token is not None or cert is not None or registry_options:
                raise ValueError("auth, token, cert and registry options apply to url=, not to a registry object")
            self._owns_registry = False
            url_attr = getattr(registry, "url", None)
            if isinstance(url_attr, str):
                configs["schema.registry.url"] = url_attr
        for method in ("register", "get_schema"):
            if not callable(getattr(registry, method, None)):
                raise TypeError(f"registry must have a {method}() method, got {type(registry).__name__}")
        self.registry = registry
        self._settings: dict[str, Any] = {
            "protocol": external_protocol(protocol),
            "framed": framed,
            "subject_name_strategy": subject_name_strategy,
            "topic_in_subject": check_topic_form(topic_in_subject),
            "auto_register": auto_register,
            "use_latest": use_latest,
            "configs": configs,
        }
        _subjects.subject_name_strategy(subject_name_strategy)  # fail early on a bad name
        self._providers: dict[str, SchemaInfoProvider] = {}
        self._lock = threading.Lock()
        self._closed = False

    def of(self, topic: str) -> SchemaInfoProvider:
        """The provider of ``topic`` (one per topic, made on first use).

        Raises
        ------
        RuntimeError
            The factory is closed.
        """
        if self._closed:
            raise RuntimeError("the SchemaInfoProviderFactory is closed")
        with self._lock:
            provider = self._providers.get(topic)
            if provider is None:
                provider = self._providers[topic] = SchemaInfoProvider(topic, self.registry, **self._settings)
            return provider

    def avro_schema(self, topic: str, schema: Any = None, **options: Any) -> AvroExternalSchema:
        """An :class:`AvroExternalSchema` for ``topic`` (``options``: ``reader_schema``, ``is_key``,
        ``schema_id``, ``auto_register``, ``use_latest``, ``subject``, ``protocol``, ``framed``)."""
        return self.of(topic).avro_schema(schema, **options)

    def json_schema(self, topic: str, schema: Any = None, **options: Any) -> JsonExternalSchema:
        """A :class:`JsonExternalSchema` for ``topic`` (``options`` as for :meth:`avro_schema`)."""
        return self.of(topic).json_schema(schema, **options)

    def keyvalue_schema(
        self, topic: str, key_schema: Any, value_schema: Any, *, format: str = "avro", convention: str = _kv.JAVA
    ) -> KeyValueExternalSchema:
        """A :class:`KeyValueExternalSchema` for ``topic``.

        ``key_schema`` / ``value_schema`` are external schemas, Pulsar primitive types
        (:class:`~pulsar_codec.pulsar_types.SchemaType` or its name, for the key only, as PIP-420
        allows), or schema definitions that become ``format`` (``"avro"`` or ``"json"``) external
        schemas, the key one registered under the key subject (``<topic>-key``).
        """
        if format not in ("avro", "json"):
            raise ValueError(f"format must be 'avro' or 'json', got {format!r}")
        provider = self.of(topic)
        make = provider.avro_schema if format == "avro" else provider.json_schema

        def side(schema: Any, is_key: bool) -> Any:
            if isinstance(schema, ExternalSchema) or schema is None:
                return schema
            if is_key and primitive_type(schema) is not None:
                return primitive_type(schema)
            return make(schema, is_key=is_key)

        return KeyValueExternalSchema(
            side(key_schema, True), side(value_schema, False), topic=topic, convention=convention
        )

    def close(self) -> None:
        """Close the registry client if the factory opened it (``url=``)."""
        self._closed = True
        if self._owns_registry:
            self.registry.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SchemaInfoProviderFactory(registry={self.registry!r}, protocol={self._settings['protocol'].name})"
