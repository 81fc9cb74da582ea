"""An output topic's schema registered under the topic's subject
(TopicNameStrategy, as ksqlDB registers it: ``<topic>-value``,
``<topic>-key``), once when the sink step's query is built.

The subject's latest version decides: the same schema is reused (its id);
a different one is checked against it and registered as a new version
when compatible, or refused (:class:`SchemaRefused`, naming the subject,
the columns whose type changed, and the fix). The check is Splice's own,
Avro's reader/writer rules (a registry may enforce none: Apicurio by
default does not): BACKWARD, the registry's default (the new schema reads
the records written with the latest), unless the subject is set to a
stricter level (FORWARD: the latest reads the new; FULL: both). NONE is
not taken (:func:`_level` says why): to make an incompatible change, delete
the subject. A JSON Schema's check is simpler: a property of the latest whose
type differs now is refused; a property added or dropped is taken.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from splice.engine.registry_schemas import RegistrySchemas
from splice.operators.sources import SourceError
from splice.sql.avro_types import Unmapped, record_fields

if TYPE_CHECKING:
    from confluent_kafka.schema_registry import SchemaRegistryClient


class SchemaRefused(SourceError):
    """The output's schema is not compatible with the subject's latest
    version: nothing is registered, nothing is sent. (A SourceError: the
    run reports the step failed with these words, no traceback.)"""


class RegistryFailed(SourceError):
    """The registry did not answer, or refused the schema: nothing is sent."""


@dataclass(frozen=True)
class SinkSchema:
    """A schema to register: ``schema_type`` AVRO or JSON."""

    subject: str
    schema_type: str
    schema: Any  # the parsed schema (dict, or an Avro primitive's name)

    @property
    def text(self) -> str:
        return json.dumps(self.schema, separators=(",", ":"))


@dataclass(frozen=True)
class Registration:
    subject: str
    schema_id: int
    registered: bool  # a new version (else the latest's id, reused)


def register(lookup: RegistrySchemas, wanted: SinkSchema, output: str) -> Registration:
    """``wanted``'s id under its subject: the latest's if the same, else a
    new version's when compatible; :class:`SchemaRefused` otherwise."""
    client = lookup.client()
    subject = wanted.subject
    latest = _ask(lambda: _latest(client, subject), f"subject '{subject}'")
    if latest is not None:
        if latest.schema.schema_type.upper() == wanted.schema_type and \
                json.loads(latest.schema.schema_str) == wanted.schema:
            return Registration(subject, latest.schema_id, registered=False)
        level = _level(client, subject)
        why = _breaks(latest.schema.schema_type, latest.schema.schema_str, wanted, level)
        if why:  # (the fix: a new subject, as a new topic's, starts at version 1)
            raise SchemaRefused(
                f"output '{output}': its {wanted.schema_type} schema is not {level} compatible "
                f"with version {latest.version} of subject '{subject}' (schema id "
                f"{latest.schema_id}): {why}. Keep the column's type (CAST it in the SELECT), "
                f"or write to another topic; if every consumer of the topic can take the "
                f"change, delete subject '{subject}' first")
    from confluent_kafka.schema_registry import Schema

    schema_id = _ask(lambda: client.register_schema(subject, Schema(wanted.text,
                                                                    wanted.schema_type)),
                     f"registering a version of subject '{subject}'")
    return Registration(subject, int(schema_id), registered=True)


def _latest(client: SchemaRegistryClient, subject: str) -> Any:
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    try:
        return client.get_latest_version(subject)
    except SchemaRegistryError as err:
        if err.http_status_code == 404:
            return None
        raise


def _level(client: SchemaRegistryClient, subject: str) -> str:
    """The subject's compatibility level when it is stricter than
    BACKWARD's one direction (FORWARD, FULL, their _TRANSITIVE), else
    BACKWARD. NONE is not taken: Apicurio answers NONE for every subject
    that enforces no rule (its default), so an explicit NONE cannot be told
    from none set, and Confluent's own default is BACKWARD."""
    try:
        level = str(client.get_compatibility(subject)).upper()
    except Exception:  # not set for the subject (404), or not served
        return "BACKWARD"
    return level if level.startswith(("FORWARD", "FULL")) else "BACKWARD"


def _breaks(latest_type: str, latest_text: str, wanted: SinkSchema, level: str) -> str:
    """Why ``wanted`` may not follow the latest version at ``level``."""
    if latest_type.upper() != wanted.schema_type:
        return (f"the latest version is a {latest_type} schema, and this output writes "
                f"{wanted.schema_type}")
    if wanted.schema_type == "JSON":
        return _json_breaks(json.loads(latest_text), wanted.schema)
    directions = []
    if level.startswith(("BACKWARD", "FULL")):
        directions.append((wanted.text, latest_text, "the new schema cannot read the "
                                                     "records of the latest"))
    if level.startswith(("FORWARD", "FULL")):
        directions.append((latest_text, wanted.text, "the latest schema cannot read the new "
                                                     "records"))
    for reader, writer, what in directions:
        words = _avro_breaks(reader, writer)
        if words:
            return f"{_changed_columns(latest_text, wanted.text)}{what} ({words})"
    return ""


def _avro_breaks(reader: str, writer: str) -> str:
    import avro.compatibility
    import avro.schema

    result = avro.compatibility.ReaderWriterCompatibilityChecker().get_compatibility(
        avro.schema.parse(reader), avro.schema.parse(writer))
    if result.compatibility == avro.compatibility.SchemaCompatibilityType.compatible:
        return ""
    return "; ".join(sorted(f"{m}" for m in result.messages))


def _changed_columns(old: str, new: str) -> str:
    """The fields whose column type changed, in words ending '; '."""
    try:
        before = {f.name: f.type for f in record_fields(old)}
        after = {f.name: f.type for f in record_fields(new)}
    except Unmapped:  # a primitive key
        return f"the key was {old}, is {new} now; "
    changed = [f"column '{name}' was {before[name].upper()} and is {typ.upper()} now"
               for name, typ in after.items() if name in before and before[name] != typ]
    return "".join(f"{c}; " for c in changed)


def _json_breaks(old: dict[str, Any], new: dict[str, Any]) -> str:
    before, after = old.get("properties", {}), new.get("properties", {})
    changed = [f"column '{name}' was {json.dumps(before[name])} and is {json.dumps(typ)} now"
               for name, typ in after.items() if name in before and before[name] != typ]
    return "; ".join(changed)


def _ask(call, what: str):  # type: ignore[no-untyped-def]
    """The registry's answer; its failure as :class:`RegistryFailed`."""
    from confluent_kafka.schema_registry.error import SchemaRegistryError

    try:
        return call()
    except SchemaRegistryError as err:
        raise RegistryFailed(f"the schema registry refused {what}: {err.error_message} "
                             f"(HTTP {err.http_status_code})") from None
    except Exception as err:  # connection refused, timeout, TLS
        raise RegistryFailed(f"the schema registry cannot be reached for {what} "
                             f"({type(err).__name__}: {err})") from None
