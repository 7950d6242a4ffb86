"""Public test helpers for dsh and for code built on it."""

__all__: list[str] = []
