"""The kernel's logger: stdlib logging under ``dsh.<plugin>``, never stdout by default.

stdout may be a protocol channel (ACP), so nothing here writes to it; a front end
that wants console output installs its own handler.
"""

from __future__ import annotations

import logging


class Logger:
    """printf-style logging (``logger.warn("x %s", y)``) for one plugin."""

    __slots__ = ("_log", "name")

    def __init__(self, name: str) -> None:
        self.name = name
        self._log = logging.getLogger(f"dsh.{name}" if name else "dsh")

    def debug(self, message: str, *args: object) -> None:
        self._log.debug(message, *args)

    def info(self, message: str, *args: object) -> None:
        self._log.info(message, *args)

    def warn(self, message: str, *args: object) -> None:
        self._log.warning(message, *args)

    warning = warn

    def error(self, message: str, *args: object) -> None:
        self._log.error(message, *args)
