"""A module plugin: it injects the ``greeter`` service and prints one greeting.

The loader builds the plugin from this namespace (``name``, ``inject``, ``Config``,
``apply``); it starts only once a ``greeter`` service exists.
"""

from __future__ import annotations

from typing import Protocol

from pydantic import BaseModel

from dsh.kernel import Context, ServiceKey


class Greets(Protocol):
    def greet(self, who: str) -> str: ...


GREETER: ServiceKey[Greets] = ServiceKey("greeter")

name = "hello"
inject = ["greeter"]


class Config(BaseModel):
    who: str = "world"


def apply(ctx: Context, config: Config) -> None:
    print(ctx[GREETER].greet(config.who))
    ctx.effect(lambda: lambda: print("hello: unloaded"), "goodbye")
