# SPDX-License-Identifier: Apache-2.0
"""``python -m aeron.cluster.service [props-file ...] [key=value ...]``: a clustered service container in its own
process (Aeron's ``ClusteredServiceContainer.main``), beside a consensus module, ours or Java's, on the same media
driver.

Settings are the container's ``aeron.cluster.*`` properties and ``aeron.dir``, from ``AERON_*`` environment
variables, properties files and ``key=value`` arguments, later ones winning; other properties in the files (the
driver's, the consensus module's) are ignored, as Java ignores the system properties it does not read. The
service is ``aeron.cluster.service.class.name`` (``module:Class``, or ``module.Class``), made with no arguments.
Runs until the consensus module terminates the service, or SIGINT or SIGTERM.
"""
from __future__ import annotations

import signal
import sys
import threading

from aeron.cluster.service.clustered_service_container import ClusteredServiceContainer, Context, container_property
from aeron.common.errors import AeronError
from aeron.common.version import VERSION_TEXT


def read_properties(args: list[str]) -> dict[str, str]:
    """``key=value`` arguments and the properties files named by the others, in order (OSError for a file that
    cannot be read)."""
    properties: dict[str, str] = {}
    for arg in args:
        if "=" in arg:
            key, value = (arg[2:] if arg.startswith("-D") else arg).split("=", 1)
            properties[key.strip()] = value.strip()
            continue
        with open(arg, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith(("#", "!")) and "=" in line:
                    key, value = line.split("=", 1)
                    properties[key.strip()] = value.strip()
    return properties


def main(argv: list[str] | None = None) -> int:
    """Run a container until its service terminates or a signal; returns the exit status."""
    args = sys.argv[1:] if argv is None else argv
    if any(arg in ("-h", "--help") for arg in args):
        print(__doc__)
        return 0
    if "--version" in args:
        print(VERSION_TEXT)
        return 0
    try:
        properties = {k: v for k, v in read_properties(args).items() if container_property(k)}
    except OSError as ex:
        print(f"aeron.cluster.service: {ex}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        container = ClusteredServiceContainer.launch(Context(properties, termination_hook=stop.set))
    except AeronError as ex:
        print(f"aeron.cluster.service: {ex}", file=sys.stderr)
        return 1
    try:
        stop.wait()
    finally:
        container.close()
    print("Shutdown ClusteredServiceContainer...", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
