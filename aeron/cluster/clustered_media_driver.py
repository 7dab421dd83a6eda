# SPDX-License-Identifier: Apache-2.0
"""A media driver, an archive and a consensus module in one process (Aeron's ``ClusteredMediaDriver``): a
cluster member, its clustered services running in their own processes (or beside it) on the same driver."""
from __future__ import annotations

from typing import Any

from aeron.archive.archive import Archive
from aeron.archive.archive import Context as ArchiveContext
from aeron.cluster.consensus_module import ConsensusModule
from aeron.cluster.consensus_module import Context as ConsensusModuleContext
from aeron.driver import Context as DriverContext
from aeron.driver import MediaDriver

__all__ = ["ClusteredMediaDriver"]


class ClusteredMediaDriver:
    """A driver, its archive and a consensus module; :meth:`launch` starts them in that order, :meth:`close` stops
    them in the reverse order."""

    def __init__(self, driver: MediaDriver, archive: Archive, consensus_module: ConsensusModule) -> None:
        """Made by :meth:`launch`."""
        self.media_driver = driver
        self.archive = archive
        self.consensus_module = consensus_module

    @classmethod
    def launch(cls, driver_context: DriverContext | None = None, archive_context: ArchiveContext | None = None,
               consensus_module_context: ConsensusModuleContext | None = None) -> ClusteredMediaDriver:
        """Launch the driver, then the archive and the consensus module on its directory; what started is closed
        again when a later part fails."""
        driver: Any = None
        archive: Any = None
        consensus_module: Any = None
        try:
            driver = MediaDriver.launch(driver_context)
            archive_ctx = archive_context if archive_context is not None else ArchiveContext()
            archive_ctx.aeron_dir = driver.aeron_dir
            archive = Archive.launch(archive_ctx)
            cm_ctx = consensus_module_context if consensus_module_context is not None else ConsensusModuleContext()
            cm_ctx.aeron_dir = driver.aeron_dir
            consensus_module = ConsensusModule.launch(cm_ctx)
            return cls(driver, archive, consensus_module)
        except BaseException:
            for part in (consensus_module, archive, driver):
                if part is not None:
                    try:
                        part.close()
                    except Exception:       # noqa: BLE001 - the launch failure is the error raised
                        pass
            raise

    def close(self) -> None:
        """Close the consensus module, the archive, then the driver."""
        try:
            self.consensus_module.close()
        finally:
            try:
                self.archive.close()
            finally:
                self.media_driver.close()

    def __enter__(self) -> ClusteredMediaDriver:
        """The running parts; the ``with`` block closes them."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close them."""
        self.close()

    def __repr__(self) -> str:
        """The driver directory and the member."""
        return f"ClusteredMediaDriver(aeron_dir={self.media_driver.aeron_dir!r}, {self.consensus_module!r})"
