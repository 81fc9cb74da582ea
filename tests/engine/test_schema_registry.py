"""The project's schema registry (Apicurio's Confluent-compatible API,
splice/testing/schema_registry.py) through confluent-kafka's own clients,
built from Splice's settings: schemas registered and fetched, records
round-tripped in the Confluent wire format, an incompatible evolution
refused; and ``scripts/registry.sh`` from the shell. Nothing is mocked:
the session's registry (tests/conftest.py) answers every call."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import urllib.request
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from confluent_kafka.schema_registry import Schema
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.serialization import MessageField, SerializationContext
from splice.engine.schema_registry import registry_client
from splice.engine.settings import SpliceSettings

from splice.processes import gone
from splice.testing.schema_registry import API_PATH, RegistryError, start_registry
from tests.conftest import ROOT
from tests.helpers.tcp_forwarder import forwarding

pytestmark = pytest.mark.registry

P = "ksql.schema.registry."
ORDER = {"type": "record", "name": "Order", "namespace": "splice.test",
         "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}]}


def avro(schema: dict) -> Schema:
    return Schema(json.dumps(schema), "AVRO")


def with_field(field: dict) -> dict:
    return {**ORDER, "fields": [*ORDER["fields"], field]}


def fresh(name: str) -> str:
    """A subject of this test alone: the session's registry keeps every
    schema registered in it."""
    return f"{name}-{uuid.uuid4().hex[:8]}-value"


def client(url: str, **conf: str):
    return registry_client(SpliceSettings.from_env(
        {"SPLICE_SCHEMA_REGISTRY_URL": url, "SPLICE_SCHEMA_REGISTRY_CONF": json.dumps(conf)}))


def test_a_schema_registered_is_fetched_by_id_and_as_the_subjects_latest(schema_registry):
    subject = fresh("orders")
    registry = client(schema_registry)
    schema_id = registry.register_schema(subject, avro(ORDER))
    assert isinstance(schema_id, int) and schema_id > 0
    by_id = client(schema_registry).get_schema(schema_id)  # a client with no cache
    assert (json.loads(by_id.schema_str), by_id.schema_type) == (ORDER, "AVRO")
    latest = client(schema_registry).get_latest_version(subject)
    assert (latest.subject, latest.version, latest.schema_id) == (subject, 1, schema_id)
    assert json.loads(latest.schema.schema_str) == ORDER
    assert subject in registry.get_subjects()
    # The same schema again is the same id and version, not a new one.
    assert client(schema_registry).register_schema(subject, avro(ORDER)) == schema_id
    assert client(schema_registry).lookup_schema(subject, avro(ORDER)).version == 1
    assert registry.get_versions(subject) == [1]


def test_a_record_round_trips_through_the_avro_serializer_in_the_wire_format(schema_registry):
    topic = fresh("round-trip").removesuffix("-value")
    context = SerializationContext(topic, MessageField.VALUE)
    writer = AvroSerializer(client(schema_registry), json.dumps(ORDER))
    data = writer({"id": 7, "item": "apple"}, context)
    # The Confluent wire format: magic byte 0, the schema's id (4 bytes, big
    # endian), then the Avro binary record (7 zig-zag is 14; "apple").
    registered = client(schema_registry).get_latest_version(f"{topic}-value")
    assert data[0] == 0
    assert int.from_bytes(data[1:5], "big") == registered.schema_id
    assert data[5:] == bytes([14, 10]) + b"apple"
    # A deserializer of its own client fetches the writer's schema by its id.
    reader = AvroDeserializer(client(schema_registry))
    assert reader(data, context) == {"id": 7, "item": "apple"}


def test_an_evolution_the_compatibility_refuses_is_refused_by_the_registry(schema_registry):
    subject = fresh("evolving")
    registry = client(schema_registry)
    registry.register_schema(subject, avro(ORDER))
    # (confluent-kafka 2.16 returns the answer's body, not the level its
    # annotation says)
    assert registry.set_compatibility(subject, "BACKWARD") == {"compatibility": "BACKWARD"}
    assert client(schema_registry).get_compatibility(subject) == "BACKWARD"
    # A new field without a default: readers of v2 cannot read v1's records.
    no_default = avro(with_field({"name": "qty", "type": "int"}))
    assert registry.test_compatibility(subject, no_default) is False
    with pytest.raises(SchemaRegistryError) as err:
        registry.register_schema(subject, no_default)
    assert err.value.http_status_code == 409
    assert "Incompatible artifact" in err.value.error_message
    # With a default it is compatible: version 2.
    with_default = avro(with_field({"name": "qty", "type": "int", "default": 1}))
    assert registry.test_compatibility(subject, with_default) is True
    v2 = registry.register_schema(subject, with_default)
    assert registry.get_versions(subject) == [1, 2]
    assert client(schema_registry).get_latest_version(subject).schema_id == v2
    # A v1 record read with v2 takes the default.
    context = SerializationContext(subject.removesuffix("-value"), MessageField.VALUE)
    old = AvroSerializer(client(schema_registry), json.dumps(ORDER),
                         conf={"auto.register.schemas": False, "use.latest.version": False})
    record = old({"id": 1, "item": "pear"}, context)
    reader = AvroDeserializer(client(schema_registry),
                              json.dumps(with_field({"name": "qty", "type": "int",
                                                     "default": 1})))
    assert reader(record, context) == {"id": 1, "item": "pear", "qty": 1}


def basic(user_info: str) -> bytes:
    return b"authorization: basic " + base64.b64encode(user_info.encode()).lower()


def test_the_basic_auth_settings_reach_the_registry_as_the_clients_header(schema_registry):
    """Through a forwarder that keeps what the client sent: the registry
    (which has no users) answers, and the request carried the credentials
    the settings gave, by ksqlDB's names."""
    subject = fresh("auth")
    client(schema_registry).register_schema(subject, avro(ORDER))
    port = urlsplit(schema_registry).port
    with forwarding(("127.0.0.1", port)) as forwarder:
        url = f"http://{forwarder.address}{API_PATH}"
        given = client(url, **{f"{P}basic.auth.credentials.source": "USER_INFO",
                               f"{P}basic.auth.user.info": "alice:s3cret"})
        assert subject in given.get_subjects()
        assert basic("alice:s3cret") in bytes(forwarder.received).lower()
        # Source URL: the URL's own credentials, the user info ignored.
        forwarder.received.clear()
        in_url = client(f"http://bob:pw@{forwarder.address}{API_PATH}",
                        **{f"{P}basic.auth.credentials.source": "URL",
                           f"{P}basic.auth.user.info": "alice:s3cret"})
        assert in_url.get_latest_version(subject).version == 1
        sent = bytes(forwarder.received).lower()
        assert basic("bob:pw") in sent and basic("alice:s3cret") not in sent


def test_registry_sh_starts_a_registry_prints_its_url_and_stops_it(tmp_path: Path,
                                                                    schema_registry):
    """From the shell, as a user runs it (the build is the session's)."""
    folder = tmp_path / "registry"
    env = {**os.environ, "PYTHON": str(ROOT / ".venv" / "bin" / "python")}

    def script(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", str(ROOT / "scripts" / "registry.sh"), *args],
                              env=env, text=True, capture_output=True, timeout=300)

    started = script("start", str(folder))
    assert started.returncode == 0, started.stderr
    url = started.stdout.strip()
    assert url.startswith("http://127.0.0.1:") and url.endswith("/apis/ccompat/v7")
    assert url != schema_registry
    assert (folder / "url").read_text().strip() == url
    pid = int((folder / "registry.pid").read_text())
    with urllib.request.urlopen(f"{url}/subjects", timeout=10) as response:
        assert json.loads(response.read()) == []  # a registry of its own, empty
    again = script("start", str(folder))  # the running one, reused
    assert (again.returncode, again.stdout.strip()) == (0, url)
    stopped = script("stop", str(folder))
    assert (stopped.returncode, stopped.stdout.strip()) == (0, "stopped")
    assert gone(pid)
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", urlsplit(url).port),
                                                          timeout=2):
        pass
    idle = script("stop", str(folder))
    assert idle.stdout.strip() == f"no schema registry running in {folder}"


def test_a_registry_that_cannot_start_is_an_error_naming_its_log(tmp_path: Path,
                                                                 schema_registry):
    """Its port taken: the JVM exits, and the error says where to look."""
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        with pytest.raises(RegistryError) as err:
            start_registry(tmp_path / "busy", port=port)
    log = tmp_path / "busy" / "registry.log"
    assert str(err.value).startswith("the schema registry exited (")
    assert str(err.value).endswith(f"while starting; see {log}")
    assert f"Port {port} seems to be in use by another process" in log.read_text()
    assert not (tmp_path / "busy" / "registry.pid").exists()
