"""A schema registry with Confluent's REST API, built from Maven Central.

No Docker, and no registry server is packaged on PyPI, npm or Debian here:
the registry is Apicurio Registry 2.4.2.Final (in-memory storage), whose
Confluent-compatible API is at ``/apis/ccompat/v7``. ``scripts/registry/``
holds what builds it with Maven into ``.registry/build`` the first time it
is needed (about two minutes and 210 MB of downloads on a cold machine;
every later start reuses the build). docs/decisions/schema-registry.md says
why it is this registry and what its build needs.

``bash scripts/registry.sh start|stop [FOLDER]`` runs this module's
``main``; the test suite's session fixture calls :func:`start_registry`
with a temporary folder. A registry's folder holds ``registry.log`` (its
console), ``registry.pid`` and ``url`` (what clients are given, with the
API's path: ``http://127.0.0.1:<port>/apis/ccompat/v7``). Its schemas live
in its memory: a stop forgets them.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from splice.processes import end, server_main

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "scripts" / "registry"
POM = SOURCES / "pom.xml"
DEPLOYMENT_POM = SOURCES / "config-index-deployment" / "pom.xml"
BUILD = ROOT / ".registry" / "build"
DEFAULT_FOLDER = ROOT / ".registry" / "server"
# The Quarkus legacy-jar package: the runner jar, its libraries in lib/.
RUNNER = Path("app") / "splice-schema-registry-1-runner.jar"
API_PATH = "/apis/ccompat/v7"
# A small heap, one GC thread, the JIT's first tier alone: a registry of a
# test's few schemas needs no more, and on two cores the optimizing
# compiler and the parallel collector took CPU from the tests.
JVM_FLAGS = ("-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
READY_SECONDS = 120.0
BUILD_SECONDS = 1800.0


class RegistryError(RuntimeError):
    """The registry could not be built, started or stopped; the message says
    why and where its log is."""


@dataclass(frozen=True)
class Registry:
    folder: Path
    port: int
    pid: int

    @property
    def url(self) -> str:
        """What a Confluent client is given: the compatible API's root."""
        return f"http://127.0.0.1:{self.port}{API_PATH}"

    @property
    def log(self) -> Path:
        return self.folder / "registry.log"


def sources_digest() -> str:
    """A digest of everything the build reads from the repository: a changed
    pom or build step makes the next start build again."""
    digest = hashlib.sha256()
    for path in sorted(p for p in SOURCES.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(SOURCES)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def built(build: Path = BUILD) -> Path | None:
    """The runner jar of a finished build of the current sources, if any."""
    stamp = build / "sources.sha256"
    jar = build / RUNNER
    with contextlib.suppress(OSError):
        if jar.is_file() and stamp.read_text().strip() == sources_digest():
            return jar
    return None


def _maven(pom: Path, goal: str, build: Path, log: Path) -> None:
    with open(log, "a") as out:
        out.write(f"\n$ mvn -f {pom} {goal}\n")
        out.flush()
        try:
            done = subprocess.run(
                ["mvn", "-B", "--no-transfer-progress", "-f", str(pom), goal,
                 f"-Dregistry.build={build}"],
                stdout=out, stderr=subprocess.STDOUT, timeout=BUILD_SECONDS, check=False)
        except FileNotFoundError:
            raise RegistryError("building the schema registry needs Maven (`mvn`), which is "
                                "not installed") from None
        except subprocess.TimeoutExpired:
            raise RegistryError(f"building the schema registry took over {BUILD_SECONDS:.0f} s "
                                f"(mvn {goal} of {pom}); see {log}") from None
    if done.returncode != 0:
        tail = "".join(log.read_text(errors="replace").splitlines(keepends=True)[-15:])
        raise RegistryError(f"building the schema registry failed (mvn {goal} of {pom}, exit "
                            f"{done.returncode}; is Maven Central reachable?); see {log}:\n{tail}")


def build_registry(build: Path = BUILD) -> Path:
    """The registry's runner jar, built with Maven unless the current
    sources' build is there. First the stand-in deployment module (installed
    into the local Maven repository, where Quarkus looks it up), then the
    app. One build at a time: a second caller waits and reuses it."""
    found = built(build)
    if found is not None:
        return found
    build.mkdir(parents=True, exist_ok=True)
    with open(build / "build.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        found = built(build)  # built by whoever held the lock
        if found is not None:
            return found
        log = build / "build.log"
        log.write_text("")
        (build / "sources.sha256").unlink(missing_ok=True)
        # Maven leaves what an earlier build put in its folders (a resource
        # since removed would be packaged again): each build starts empty.
        for output in ("config-index-deployment", "app"):
            shutil.rmtree(build / output, ignore_errors=True)
        _maven(DEPLOYMENT_POM, "install", build, log)
        _maven(POM, "package", build, log)
        if not (build / RUNNER).is_file():
            raise RegistryError(f"the schema registry's build left no {RUNNER}; see {log}")
        (build / "sources.sha256").write_text(sources_digest() + "\n")
        return build / RUNNER


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def running(folder: Path) -> Registry | None:
    """The registry this folder's pid file names, when it is alive."""
    try:
        pid = int((folder / "registry.pid").read_text())
        url = (folder / "url").read_text().strip()
        port = int(url.split("//", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])
        os.kill(pid, 0)
    except (OSError, ValueError, IndexError):
        return None
    return Registry(folder, port, pid)


def java_command(jar: Path, port: int) -> list[str]:
    """The registry's JVM, listening on the loopback address only."""
    return ["java", *JVM_FLAGS, f"-Dquarkus.http.port={port}", "-Dquarkus.http.host=127.0.0.1",
            "-jar", str(jar)]


def start_registry(folder: Path = DEFAULT_FOLDER, port: int | None = None,
                   build: Path = BUILD) -> Registry:
    """Start a registry (built first when needed) whose log and pid go to
    ``folder``, and wait until its API answers; one already running there
    is reused."""
    folder = folder.resolve()
    found = running(folder)
    if found is not None:
        return found
    jar = build_registry(build)
    folder.mkdir(parents=True, exist_ok=True)
    port = port or _free_port()
    with open(folder / "registry.log", "ab") as out:
        # Its own folder as the working directory: Quarkus reads a
        # config/application.properties there, and none should be picked up.
        process = subprocess.Popen(java_command(jar, port), cwd=folder, stdout=out,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   start_new_session=True)
    registry = Registry(folder, port, process.pid)
    (folder / "registry.pid").write_text(str(process.pid))
    (folder / "url").write_text(registry.url + "\n")
    _wait_ready(registry, process)
    return registry


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/subjects", timeout=2) as response:
            return response.status == 200
    except (OSError, urllib.error.URLError):
        return False


def _wait_ready(registry: Registry, process: subprocess.Popen[bytes]) -> None:
    """Until the API lists its subjects (the port opens before the API is
    deployed)."""
    deadline = time.monotonic() + READY_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            (registry.folder / "registry.pid").unlink(missing_ok=True)
            raise RegistryError(f"the schema registry exited ({process.returncode}) while "
                                f"starting; see {registry.log}")
        if _answers(registry.url):
            return
        time.sleep(0.25)
    stop_registry(registry.folder)
    raise RegistryError(f"the schema registry did not answer within {READY_SECONDS:.0f} s; "
                        f"see {registry.log}")


def stop_registry(folder: Path = DEFAULT_FOLDER, timeout: float = 20.0) -> bool:
    """Stop the registry of ``folder`` (SIGTERM, then SIGKILL after
    ``timeout``); False when none was running."""
    registry = running(folder.resolve())
    if registry is None:
        return False
    end(registry.pid, timeout)
    (registry.folder / "registry.pid").unlink(missing_ok=True)
    return True


def registry_address(settings: Any) -> str:
    """The registry to use: the settings' URL, else scripts/registry.sh's
    registry (built and started when it is not running; its URL is
    printed)."""
    if settings.schema_registry_url:
        return str(settings.schema_registry_url)
    registry = start_registry()
    print(f"schema registry: {registry.url} (scripts/registry.sh's; stop it with "
          "bash scripts/registry.sh stop)", flush=True)
    return registry.url


def main(argv: list[str] | None = None) -> int:
    return server_main(argv, script="registry.sh", what="schema registry",
                       default_folder=DEFAULT_FOLDER,
                       start=lambda folder: start_registry(folder).url, stop=stop_registry,
                       error=RegistryError, more={"build": lambda: str(build_registry())})


if __name__ == "__main__":
    sys.exit(main())
