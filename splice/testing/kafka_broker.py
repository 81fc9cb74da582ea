"""A single-node Apache Kafka broker (KRaft) started from the pinned jars.

No Docker: the broker is Apache Kafka's own server, ``kafka_2.13`` of the
version pinned in ``scripts/kafka/pom.xml``, fetched from Maven Central
into ``.kafka/libs`` by ``mvn dependency:copy-dependencies`` the first time
it is needed. ``bash scripts/kafka.sh start|stop`` runs this module's
``main``; the test suite's session fixture calls :func:`start_broker` with a
temporary folder.

A broker's folder holds ``server.properties``, ``data/`` (its log dirs),
``broker.log`` (its console), ``broker.pid`` and ``bootstrap`` (the
address clients use, ``127.0.0.1:<port>``).
"""

from __future__ import annotations

import base64
import os
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from splice.processes import end, server_main

ROOT = Path(__file__).resolve().parents[2]
POM = ROOT / "scripts" / "kafka" / "pom.xml"
LOG4J = ROOT / "scripts" / "kafka" / "log4j2.xml"
LIBS = ROOT / ".kafka" / "libs"
DEFAULT_FOLDER = ROOT / ".kafka" / "broker"
HEAP = "-Xmx256m"
READY_SECONDS = 60.0


class BrokerError(RuntimeError):
    """The broker could not be fetched, started or stopped; the message says
    why and where its log is."""


@dataclass(frozen=True)
class Broker:
    folder: Path
    port: int
    pid: int

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"


def fetch_jars(libs: Path = LIBS) -> Path:
    """The broker's jars, fetched with Maven when the folder has none."""
    if any(libs.glob("kafka_2.13-*.jar")):
        return libs
    libs.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mvn", "-q", "-f", str(POM), "dependency:copy-dependencies",
         f"-DoutputDirectory={libs}"], capture_output=True, text=True, check=False)
    if done.returncode != 0 or not any(libs.glob("kafka_2.13-*.jar")):
        raise BrokerError(f"fetching the Kafka jars with Maven failed (is `mvn` installed and "
                          f"Maven Central reachable?):\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return libs


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _properties(folder: Path, port: int, controller: int) -> str:
    settings = {
        "process.roles": "broker,controller",
        "node.id": "1",
        "controller.quorum.voters": f"1@127.0.0.1:{controller}",
        "listeners": f"PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names": "CONTROLLER",
        "inter.broker.listener.name": "PLAINTEXT",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "log.dirs": str(folder / "data"),
        "num.partitions": "1",
        "offsets.topic.replication.factor": "1",
        # One partition each for the groups' offsets and the transactions'
        # state (50 by default): a one-broker test machine creates them at
        # the first transactional producer and group in seconds, not minutes.
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
        "auto.create.topics.enable": "false",
        # Records keep their event time as their timestamp (the cases' are
        # from 2024), and Kafka's time retention (7 days by default) goes by
        # record timestamps: its checks deleted a case's records between a
        # run planning a micro-batch and reading it ("Could not read records
        # in offset [1, 2)", a whole suite's run). This broker keeps every
        # record; its checks run every second from its start (not first
        # after 30 s, then every 5 min), so that a deletion would show at
        # once, not by chance (tests/operators/test_kafka_source.py).
        "log.retention.ms": "-1",
        "log.initial.task.delay.ms": "1000",
        "log.retention.check.interval.ms": "1000",
    }
    return "".join(f"{k}={v}\n" for k, v in settings.items())


def _java(libs: Path, *args: str, heap: str = HEAP) -> list[str]:
    return ["java", heap, f"-Dlog4j2.configurationFile={LOG4J}", "-cp", f"{libs}/*", *args]


def running(folder: Path) -> Broker | None:
    """The broker this folder's pid file names, when it is alive."""
    try:
        pid = int((folder / "broker.pid").read_text())
        port = int((folder / "bootstrap").read_text().rsplit(":", 1)[1])
        os.kill(pid, 0)
    except (OSError, ValueError, IndexError):
        return None
    return Broker(folder, port, pid)


def new_cluster_id() -> str:
    """16 random bytes in URL-safe base64, what ``StorageTool random-uuid``
    prints, made here to save a JVM start. One in 64 begins with ``-``."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def format_args(cluster: str, props: Path) -> list[str]:
    """StorageTool's arguments. The id goes as ``--cluster-id=ID``: given as
    a separate word, an id that begins with ``-`` reads as an option and the
    format fails ("expected one argument"), which failed a CI run."""
    return ["kafka.tools.StorageTool", "format", f"--cluster-id={cluster}",
            f"--config={props}"]


def format_storage(props: Path, cluster: str, libs: Path = LIBS) -> None:
    """Format a new broker's log dirs for the KRaft cluster ``cluster``."""
    done = subprocess.run(_java(libs, *format_args(cluster, props)),
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise BrokerError(f"formatting the broker's storage for {props} failed:\n"
                          f"{done.stdout}{done.stderr}")


def start_broker(folder: Path = DEFAULT_FOLDER, port: int | None = None,
                 libs: Path = LIBS) -> Broker:
    """Start a broker keeping its data in ``folder`` (formatted the first
    time), and wait until it answers; one already running there is reused."""
    folder = folder.resolve()
    found = running(folder)
    if found is not None:
        return found
    fetch_jars(libs)
    folder.mkdir(parents=True, exist_ok=True)
    port = port or _free_port()
    props = folder / "server.properties"
    props.write_text(_properties(folder, port, _free_port()))
    log = folder / "broker.log"
    if not (folder / "data" / "meta.properties").exists():
        format_storage(props, new_cluster_id(), libs)
    with open(log, "ab") as out:
        process = subprocess.Popen(_java(libs, "kafka.Kafka", str(props)), stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    (folder / "broker.pid").write_text(str(process.pid))
    broker = Broker(folder, port, process.pid)
    (folder / "bootstrap").write_text(broker.bootstrap)
    _wait_ready(broker, process)
    return broker


def _wait_ready(broker: Broker, process: subprocess.Popen[bytes]) -> None:
    """Until the broker's port accepts a connection and it answers a
    metadata request (probed with a plain socket first: the Kafka client
    logs every refused connection)."""
    from confluent_kafka.admin import AdminClient

    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise BrokerError(f"the Kafka broker exited ({process.returncode}) while starting; "
                              f"see {broker.folder / 'broker.log'}")
        try:
            with socket.create_connection(("127.0.0.1", broker.port), timeout=1):
                pass
            AdminClient({"bootstrap.servers": broker.bootstrap,
                         "log_level": 0}).list_topics(timeout=5)
            return
        except Exception:  # OSError, KafkaException: not listening yet
            time.sleep(0.3)
    stop_broker(broker.folder)
    raise BrokerError(f"the Kafka broker did not answer within {READY_SECONDS:.0f} s; see "
                      f"{broker.folder / 'broker.log'}")


def stop_broker(folder: Path = DEFAULT_FOLDER, timeout: float = 20.0) -> bool:
    """Stop the broker of ``folder`` (SIGTERM, then SIGKILL after
    ``timeout``); False when none was running."""
    broker = running(folder.resolve())
    if broker is None:
        return False
    end(broker.pid, timeout)
    (broker.folder / "broker.pid").unlink(missing_ok=True)
    return True


def broker_address(settings: Any) -> str:
    """The brokers to use: the settings', else scripts/kafka.sh's broker
    (started when it is not running; its address is printed)."""
    if settings.kafka_bootstrap:
        return settings.kafka_bootstrap
    broker = start_broker()
    print(f"Kafka broker: {broker.bootstrap} (scripts/kafka.sh's; stop it with "
          "bash scripts/kafka.sh stop)", flush=True)
    return broker.bootstrap



def main(argv: list[str] | None = None) -> int:
    return server_main(argv, script="kafka_broker", what="Kafka broker",
                       default_folder=DEFAULT_FOLDER,
                       start=lambda folder: start_broker(folder).bootstrap, stop=stop_broker,
                       error=BrokerError, more={"fetch": fetch_jars})


if __name__ == "__main__":
    sys.exit(main())
