"""The registry's schemas as the front end and the Avro decoder ask for
them (``splice.sql.value_schemas.SchemaLookup``), through confluent-kafka's
client: the latest version of a subject, a schema by id, every version of
a subject.

A registry that is not set, does not answer, or has no such subject or id
is a :class:`LookupFailed` whose words name the registry, the subject or id
and the setting; the compiler positions it at the statement.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from splice.engine.schema_registry import URL_VARIABLE, check_registry_url, registry_config
from splice.engine.settings_error import SettingsError
from splice.sql.value_schemas import LookupFailed, Registered

if TYPE_CHECKING:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from splice.engine.settings import SpliceSettings

# How long one request may take, and how often a failed one is tried again
# (the client's own defaults, 3 tries a second apart, made a compile of an
# unreachable registry wait; one answer in 10 s, or the error).
CLIENT = {"timeout": 10, "max.retries": 1}


class RegistrySchemas:
    """The schemas of ``settings``' registry (the settings read from the
    environment and splice.yaml when first asked, if not given)."""

    def __init__(self, settings: SpliceSettings | None = None,
                 conf: Mapping[str, str] | None = None) -> None:
        self._settings = settings
        self._conf = dict(conf) if conf is not None else None  # registry_config's, given
        self._client: SchemaRegistryClient | None = None
        self._url = ""

    def client(self) -> SchemaRegistryClient:
        if self._client is None:
            from confluent_kafka.schema_registry import SchemaRegistryClient

            try:
                conf = self._conf or registry_config(self._settings or _env_settings())
            except SettingsError as err:
                raise LookupFailed(str(err).split(": set ")[0], f"set {URL_VARIABLE} (or "
                                   "schema_registry_url in splice.yaml) to its URL; bash "
                                   "scripts/registry.sh start starts one") from None
            self._url = conf["url"]
            self._client = SchemaRegistryClient({**conf, **CLIENT})
        return self._client

    def at(self, url: str) -> RegistrySchemas:
        """The registry at ``url`` with this one's other client settings."""
        try:
            conf = self._conf or registry_config(self._settings or _env_settings())
        except SettingsError:
            conf = {}
        return RegistrySchemas(conf={**conf, "url": check_registry_url(url)})

    def latest(self, subject: str) -> Registered:
        client = self.client()
        found = self._ask(lambda: client.get_latest_version(subject), f"subject '{subject}'")
        return Registered(schema_id=found.schema_id, schema_type=found.schema.schema_type,
                          text=found.schema.schema_str)

    def by_id(self, schema_id: int) -> Registered:
        client = self.client()
        found = self._ask(lambda: client.get_schema(schema_id), f"schema id {schema_id}")
        return Registered(schema_id=schema_id, schema_type=found.schema_type,
                          text=found.schema_str)

    def versions(self, subject: str) -> list[Registered]:
        """Every version of ``subject``, oldest first."""
        client = self.client()
        numbers = self._ask(lambda: client.get_versions(subject), f"subject '{subject}'")
        out = []
        for number in numbers:
            found = self._ask(lambda n=number: client.get_version(subject, n),
                              f"version {number} of subject '{subject}'")
            out.append(Registered(schema_id=found.schema_id,
                                  schema_type=found.schema.schema_type,
                                  text=found.schema.schema_str))
        return out

    def _ask(self, call, what: str):  # type: ignore[no-untyped-def]
        from confluent_kafka.schema_registry.error import SchemaRegistryError

        try:
            return call()
        except SchemaRegistryError as err:
            if err.http_status_code == 404:
                raise LookupFailed(f"{what} is not in the schema registry at {self._url}") \
                    from None
            raise LookupFailed(f"the schema registry at {self._url} refused {what}: "
                               f"{err.error_message} (HTTP {err.http_status_code})") from None
        except Exception as err:  # connection refused, timeout, TLS
            raise LookupFailed(f"the schema registry at {self._url} cannot be reached "
                               f"({type(err).__name__}: {err}); check {URL_VARIABLE}") from None


def _env_settings() -> SpliceSettings:
    from splice.engine.settings import SpliceSettings

    return SpliceSettings.from_env()
