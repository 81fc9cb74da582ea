"""Whether a server Splice is told to use answers at all, asked before a
client that would retry for minutes (Spark registering with a master, a
Connect client, a Kafka consumer) is left to find out."""

from __future__ import annotations

import socket


def unanswered(addresses: list[str], timeout: float = 3.0) -> list[str]:
    """Why none of ``addresses`` (``host:port``, ``[v6]:port``, or with a
    ``protocol://`` prefix as Kafka's listeners are written) accepts a TCP
    connection, one reason each; empty as soon as one does."""
    reasons = []
    for address in addresses:
        bare = address.strip().split("://", 1)[-1]
        host, _, port = bare.rpartition(":")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout):
                return []
        except (OSError, ValueError) as err:
            reasons.append(f"{bare}: {getattr(err, 'strerror', None) or err}")
    return reasons
