"""The kernel logger: stdlib logging under dsh.<plugin>, never stdout."""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap

import pytest

from dsh.kernel import Context, Logger, PluginSpec


async def test_a_plugin_logger_is_named_after_the_plugin_and_formats_printf_style(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """ctx.logger.warn("x %s", y) lands under dsh.<plugin> with the arguments substituted."""
    root = Context()
    fiber = await root.plugin(PluginSpec(name="ui", apply=lambda ctx, _c: None))
    with caplog.at_level(logging.DEBUG, logger="dsh"):
        fiber.ctx.logger.debug("debug %s", 1)
        fiber.ctx.logger.info("info %s", 2)
        fiber.ctx.logger.warn("warn %s", 3)
        fiber.ctx.logger.warning("warning %s", 4)
        fiber.ctx.logger.error("error %s", 5)
        root.logger.info("root says %s", "hi")
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        ("dsh.ui", "DEBUG", "debug 1"),
        ("dsh.ui", "INFO", "info 2"),
        ("dsh.ui", "WARNING", "warn 3"),
        ("dsh.ui", "WARNING", "warning 4"),
        ("dsh.ui", "ERROR", "error 5"),
        ("dsh", "INFO", "root says hi"),
    ]
    assert fiber.ctx.logger is fiber.ctx.logger
    assert Logger("x").name == "x"


def test_the_logger_never_writes_to_stdout() -> None:
    """In a fresh process with no logging set up, errors go to stderr and stdout stays empty."""
    script = textwrap.dedent(
        """
        import asyncio
        from dsh.kernel import Context, PluginSpec

        async def main():
            root = Context()
            fiber = await root.plugin(PluginSpec(name="noisy", apply=lambda ctx, _c: None))
            fiber.ctx.logger.error("visible %s", "problem")
            fiber.ctx.logger.warn("also %s", "visible")
            await root.dispose()

        asyncio.run(main())
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert "visible problem" in done.stderr
    assert "also visible" in done.stderr
