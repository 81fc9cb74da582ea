"""The schema registry's client: Splice's settings to confluent-kafka's
``SchemaRegistryClient``.

The registry's URL is ``schema_registry_url`` (SPLICE_SCHEMA_REGISTRY_URL).
Its client settings are named as ksqlDB names them in its server's
properties (``ksql.schema.registry.basic.auth.user.info``, ...), so that a
ksqlDB user's settings move over unchanged; they are the mapping
``schema_registry`` (SPLICE_SCHEMA_REGISTRY_CONF, or splice.yaml). ksqlDB's
client is Java's, confluent-kafka's is Python's, and their settings differ:

- ``basic.auth.credentials.source`` is not a setting of the Python client.
  ``USER_INFO`` passes ``basic.auth.user.info``; ``URL`` leaves the
  credentials to the URL's ``user:password@`` (which the Python client
  reads); ``SASL_INHERIT`` (Kafka's SASL credentials) is refused. Unlike
  ksqlDB, whose default source is ``URL`` (and which then ignores the user
  info), a user info given without a source is used: it can only mean that.
- Java reads TLS keys and certificates from key stores; the Python client
  reads PEM files. ``ssl.ca.location``, ``ssl.certificate.location``,
  ``ssl.key.location`` and ``ssl.key.password`` pass as they are; a trust
  store or key store of type ``PEM`` becomes ``ssl.ca.location`` /
  ``ssl.certificate.location`` (a PEM key store holds the key and its
  certificates in one file); JKS and PKCS12 stores are refused with the
  command that converts them.

docs/configuration.md has the table; a setting of another name is an error
that lists these.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from splice.engine.settings_error import SettingsError

if TYPE_CHECKING:
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from splice.engine.settings import SpliceSettings

PREFIX = "ksql.schema.registry."
URL_VARIABLE = "SPLICE_SCHEMA_REGISTRY_URL"
CONF_VARIABLE = "SPLICE_SCHEMA_REGISTRY_CONF"

# ksqlDB's names (after the prefix) passed to confluent-kafka under the same name.
PASSED = ("basic.auth.user.info", "ssl.ca.location", "ssl.certificate.location",
          "ssl.key.location", "ssl.key.password")
# ksqlDB's names read to decide what to pass.
TRANSLATED = ("basic.auth.credentials.source", "ssl.truststore.location",
              "ssl.truststore.type", "ssl.truststore.password", "ssl.keystore.location",
              "ssl.keystore.type", "ssl.keystore.password",
              "ssl.endpoint.identification.algorithm")
NAMES = tuple(PREFIX + name for name in (*PASSED, *TRANSLATED))
SOURCES = ("USER_INFO", "URL")


def check_registry_conf(conf: Mapping[str, Any], where: str) -> dict[str, str]:
    """The registry's client settings with their names checked (values as
    text); ``where`` names the place they came from in an error."""
    checked: dict[str, str] = {}
    for key, value in conf.items():
        name = str(key)
        if name == PREFIX + "url":
            raise SettingsError(f"{where}: the registry's URL is its own setting: set "
                                f"{URL_VARIABLE} (or schema_registry_url in splice.yaml), not "
                                f"{name}")
        if name not in NAMES:
            raise SettingsError(f"{where}: {name!r} is not a schema registry setting Splice "
                                f"passes; they are {', '.join(NAMES)}")
        checked[name] = str(value)
    return checked


def check_registry_url(url: str) -> str:
    """The registry's URL: http(s), the API's root (``.../apis/ccompat/v7``
    for Apicurio's Confluent-compatible API)."""
    text = url.strip().rstrip("/")
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise SettingsError(f"{URL_VARIABLE} (or schema_registry_url in splice.yaml) must be "
                            f"an http:// or https:// URL, not {url!r}")
    return text


def client_config(url: str, conf: Mapping[str, str]) -> dict[str, str]:
    """confluent-kafka's ``SchemaRegistryClient`` settings for ``url`` and
    the ksqlDB-named settings ``conf`` (the module docstring says how each
    is taken)."""
    given = {name.removeprefix(PREFIX): value for name, value in
             check_registry_conf(conf, CONF_VARIABLE).items()}
    out = {name: given[name] for name in PASSED if name in given}
    url = _credentials(url, given, out)
    _stores(given, out)
    return {"url": url, **out}


def _credentials(url: str, given: dict[str, str], out: dict[str, str]) -> str:
    """Basic auth: the URL, with the user info taken or left per the source."""
    source = given.get("basic.auth.credentials.source", "").strip().upper()
    if not source:
        source = "USER_INFO" if "basic.auth.user.info" in given else "URL"
    if source not in SOURCES:
        raise SettingsError(
            f"{PREFIX}basic.auth.credentials.source is {source!r}: Splice's registry client "
            f"takes USER_INFO ({PREFIX}basic.auth.user.info) or URL (user:password@ in the "
            "URL)" + ("; it cannot inherit Kafka's SASL credentials" if source ==
                      "SASL_INHERIT" else ""))
    parts = urlsplit(url)
    if source == "URL":
        out.pop("basic.auth.user.info", None)  # ksqlDB ignores it so
        return url
    info = given.get("basic.auth.user.info", "")
    if ":" not in info:
        raise SettingsError(f"{PREFIX}basic.auth.credentials.source=USER_INFO needs "
                            f"{PREFIX}basic.auth.user.info as user:password")
    # The user info wins over credentials in the URL, as in ksqlDB; the
    # Python client refuses to be given both.
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def _stores(given: dict[str, str], out: dict[str, str]) -> None:
    """Java's trust and key stores, as the PEM files the Python client reads."""
    if given.get("ssl.endpoint.identification.algorithm", "https").strip().lower() != "https":
        raise SettingsError(
            f"{PREFIX}ssl.endpoint.identification.algorithm must be https (or unset): "
            "Splice's registry client always checks the server's host name")
    for store, target in (("truststore", "ssl.ca.location"),
                          ("keystore", "ssl.certificate.location")):
        location = given.get(f"ssl.{store}.location")
        if location is None:
            continue
        kind = given.get(f"ssl.{store}.type", "JKS").strip().upper()
        if kind != "PEM":
            raise SettingsError(
                f"{PREFIX}ssl.{store}.location is a {kind} store: Splice's registry client "
                f"reads PEM files. Convert it (keytool -importkeystore -deststoretype PKCS12, "
                f"then openssl pkcs12 -nodes) and set {PREFIX}ssl.{store}.type=PEM, or give "
                f"{PREFIX}{target}")
        if f"ssl.{store}.password" in given:
            raise SettingsError(f"{PREFIX}ssl.{store}.password: a PEM store has no password "
                                f"(a key's is {PREFIX}ssl.key.password)")
        if target in out:
            raise SettingsError(f"both {PREFIX}ssl.{store}.location and {PREFIX}{target} are "
                                "set: give one")
        out[target] = location


def registry_config(settings: SpliceSettings) -> dict[str, str]:
    """The client settings of ``settings``' registry; an error that says
    how to set one when there is none."""
    if not settings.schema_registry_url:
        raise SettingsError(f"no schema registry is set: set {URL_VARIABLE} (or "
                            "schema_registry_url in splice.yaml) to its URL; `bash "
                            "scripts/registry.sh start` starts one and prints it")
    return client_config(settings.schema_registry_url, settings.schema_registry)


def registry_client(settings: SpliceSettings) -> SchemaRegistryClient:
    """A confluent-kafka registry client for ``settings``' registry."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    return SchemaRegistryClient(registry_config(settings))
