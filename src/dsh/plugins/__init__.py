"""Optional behavior shipped with dsh, each a plugin on documented extension points."""

__all__: list[str] = []
