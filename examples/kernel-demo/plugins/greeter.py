"""A class plugin that provides the ``greeter`` service."""

from __future__ import annotations

from pydantic import BaseModel

from dsh.kernel import Context, Service, ServiceKey


class Greeter(Service):
    """Greets whoever asks, with the configured greeting."""

    name = "greeter"

    class Config(BaseModel):
        greeting: str = "Hello"

    def __init__(self, ctx: Context, config: Greeter.Config) -> None:
        super().__init__(ctx, ServiceKey[Greeter]("greeter"))
        self.greeting = config.greeting
        ctx.effect(lambda: lambda: print("greeter: service withdrawn"), "farewell")

    def greet(self, who: str) -> str:
        return f"{self.greeting}, {who}!"
