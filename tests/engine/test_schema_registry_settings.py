"""The schema registry's settings: its URL and its client's settings by
ksqlDB's names, from each place, mapped to confluent-kafka's client (no
server: tests/engine/test_schema_registry.py talks to a real one)."""

from __future__ import annotations

from pathlib import Path

import pytest
from splice.engine.schema_registry import NAMES, client_config, registry_client, registry_config
from splice.engine.settings import SettingsError, SpliceSettings

from splice.testing.schema_registry import RegistryError, _maven

P = "ksql.schema.registry."
URL = "http://127.0.0.1:8081/apis/ccompat/v7"


def test_the_url_and_client_settings_come_from_each_place_key_by_key(tmp_path: Path) -> None:
    (tmp_path / "splice.yaml").write_text(
        "schema_registry_url: http://file:8081/apis/ccompat/v7/\n"
        "schema_registry:\n"
        f"  {P}basic.auth.user.info: file:pw\n"
        f"  {P}ssl.ca.location: /file/ca.pem\n")
    s = SpliceSettings.from_env({}, project_dir=tmp_path)
    # the trailing slash dropped: the client joins paths to the URL
    assert s.schema_registry_url == "http://file:8081/apis/ccompat/v7"
    assert s.schema_registry == {f"{P}basic.auth.user.info": "file:pw",
                                 f"{P}ssl.ca.location": "/file/ca.pem"}
    env = {"SPLICE_SCHEMA_REGISTRY_URL": " http://env:8081 ",
           "SPLICE_SCHEMA_REGISTRY_CONF": f'{{"{P}basic.auth.user.info": "env:pw"}}'}
    s = SpliceSettings.from_env(env, project_dir=tmp_path)
    assert s.schema_registry_url == "http://env:8081"
    assert s.schema_registry == {f"{P}basic.auth.user.info": "env:pw",
                                 f"{P}ssl.ca.location": "/file/ca.pem"}
    s = SpliceSettings.from_env(env, project_dir=tmp_path, schema_registry_url="https://x:1",
                                schema_registry={f"{P}ssl.ca.location": "/explicit.pem"})
    assert s.schema_registry_url == "https://x:1"
    assert s.schema_registry == {f"{P}basic.auth.user.info": "env:pw",
                                 f"{P}ssl.ca.location": "/explicit.pem"}
    assert SpliceSettings.from_env({}).schema_registry_url is None
    assert SpliceSettings.from_env({}).schema_registry == {}


def test_a_bad_url_or_an_unknown_name_is_one_message_naming_it(tmp_path: Path) -> None:
    with pytest.raises(SettingsError) as err:
        SpliceSettings.from_env({"SPLICE_SCHEMA_REGISTRY_URL": "localhost:8081"})
    assert str(err.value) == ("SPLICE_SCHEMA_REGISTRY_URL (or schema_registry_url in "
                              "splice.yaml) must be an http:// or https:// URL, not "
                              "'localhost:8081'")
    with pytest.raises(SettingsError) as err:
        SpliceSettings.from_env({"SPLICE_SCHEMA_REGISTRY_CONF": f'{{"{P}basic.auth.user": "u"}}'})
    assert str(err.value) == (f"SPLICE_SCHEMA_REGISTRY_CONF: '{P}basic.auth.user' is not a "
                              f"schema registry setting Splice passes; they are "
                              f"{', '.join(NAMES)}")
    (tmp_path / "splice.yaml").write_text(f"schema_registry:\n  {P}url: http://h:1\n")
    with pytest.raises(SettingsError) as err:
        SpliceSettings.from_env({}, project_dir=tmp_path)
    assert str(err.value) == (
        f"{tmp_path / 'splice.yaml'}: schema_registry: the registry's URL is its own setting: "
        f"set SPLICE_SCHEMA_REGISTRY_URL (or schema_registry_url in splice.yaml), not {P}url")
    with pytest.raises(SettingsError, match="SPLICE_SCHEMA_REGISTRY_CONF is not a JSON object"):
        SpliceSettings.from_env({"SPLICE_SCHEMA_REGISTRY_CONF": "user=x"})
    with pytest.raises(SettingsError) as err:
        registry_config(SpliceSettings.from_env({}))
    assert str(err.value) == ("no schema registry is set: set SPLICE_SCHEMA_REGISTRY_URL (or "
                              "schema_registry_url in splice.yaml) to its URL; `bash "
                              "scripts/registry.sh start` starts one and prints it")


def test_basic_auth_goes_to_the_clients_user_info_as_its_source_says() -> None:
    user_info = {f"{P}basic.auth.credentials.source": "USER_INFO",
                 f"{P}basic.auth.user.info": "alice:s3cret"}
    assert client_config(URL, user_info) == {"url": URL, "basic.auth.user.info": "alice:s3cret"}
    # ksqlDB's default source is URL, which ignores a user info; given alone,
    # it can only mean to be used.
    assert client_config(URL, {f"{P}basic.auth.user.info": "alice:s3cret"}) == {
        "url": URL, "basic.auth.user.info": "alice:s3cret"}
    # USER_INFO wins over credentials in the URL (the Python client refuses both).
    assert client_config("http://bob:pw@h:8081/apis/ccompat/v7", user_info) == {
        "url": "http://h:8081/apis/ccompat/v7", "basic.auth.user.info": "alice:s3cret"}
    # URL: the URL's own credentials; the user info is ignored, as ksqlDB does.
    source_url = {f"{P}basic.auth.credentials.source": "url",
                  f"{P}basic.auth.user.info": "alice:s3cret"}
    assert client_config("http://bob:pw@h:8081", source_url) == {"url": "http://bob:pw@h:8081"}
    with pytest.raises(SettingsError) as err:
        client_config(URL, {f"{P}basic.auth.credentials.source": "SASL_INHERIT"})
    assert str(err.value) == (
        f"{P}basic.auth.credentials.source is 'SASL_INHERIT': Splice's registry client takes "
        f"USER_INFO ({P}basic.auth.user.info) or URL (user:password@ in the URL); it cannot "
        "inherit Kafka's SASL credentials")
    with pytest.raises(SettingsError) as err:
        client_config(URL, {f"{P}basic.auth.credentials.source": "USER_INFO"})
    assert str(err.value) == (f"{P}basic.auth.credentials.source=USER_INFO needs "
                              f"{P}basic.auth.user.info as user:password")


def test_tls_settings_pass_as_pem_files_and_java_stores_are_refused_with_the_fix() -> None:
    pem = {f"{P}ssl.ca.location": "/ca.pem", f"{P}ssl.certificate.location": "/me.pem",
           f"{P}ssl.key.location": "/me.key", f"{P}ssl.key.password": "kp",
           f"{P}ssl.endpoint.identification.algorithm": "HTTPS"}
    assert client_config(URL, pem) == {
        "url": URL, "ssl.ca.location": "/ca.pem", "ssl.certificate.location": "/me.pem",
        "ssl.key.location": "/me.key", "ssl.key.password": "kp"}
    stores = {f"{P}ssl.truststore.location": "/trust.pem", f"{P}ssl.truststore.type": "PEM",
              f"{P}ssl.keystore.location": "/me-and-key.pem", f"{P}ssl.keystore.type": "pem",
              f"{P}ssl.key.password": "kp"}
    assert client_config(URL, stores) == {
        "url": URL, "ssl.key.password": "kp", "ssl.ca.location": "/trust.pem",
        "ssl.certificate.location": "/me-and-key.pem"}
    with pytest.raises(SettingsError) as err:
        client_config(URL, {f"{P}ssl.truststore.location": "/trust.jks",
                            f"{P}ssl.truststore.password": "changeit"})
    assert str(err.value).startswith(f"{P}ssl.truststore.location is a JKS store: Splice's "
                                     "registry client reads PEM files. Convert it")
    with pytest.raises(SettingsError, match="a PEM store has no password"):
        client_config(URL, {**stores, f"{P}ssl.keystore.password": "x"})
    with pytest.raises(SettingsError, match="always checks the server's host name"):
        client_config(URL, {f"{P}ssl.endpoint.identification.algorithm": ""})
    with pytest.raises(SettingsError, match="give one"):
        client_config(URL, {**stores, f"{P}ssl.ca.location": "/other.pem"})


def test_the_client_is_confluent_kafkas_with_the_mapped_settings() -> None:
    """confluent-kafka's client refuses a key it does not know: every key
    the mapping makes is one it takes (the credentials are where it reads
    them)."""
    s = SpliceSettings.from_env({
        "SPLICE_SCHEMA_REGISTRY_URL": URL,
        "SPLICE_SCHEMA_REGISTRY_CONF": f'{{"{P}basic.auth.credentials.source": "USER_INFO", '
                                       f'"{P}basic.auth.user.info": "alice:s3:cret"}}'})
    client = registry_client(s)
    assert client._rest_client.base_urls == [URL]
    assert client._rest_client.auth == ("alice", "s3:cret")


def test_a_failed_build_names_its_log(tmp_path: Path) -> None:
    """Real Maven, given a pom that is not there."""
    log = tmp_path / "build.log"
    with pytest.raises(RegistryError) as err:
        _maven(tmp_path / "missing.xml", "package", tmp_path, log)
    assert f"building the schema registry failed (mvn package of {tmp_path / 'missing.xml'}" \
        in str(err.value)
    assert f"see {log}:" in str(err.value)
    assert "missing.xml" in log.read_text()
