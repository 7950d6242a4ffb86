"""dsh: an agent harness where everything is a plugin.

Importing this package has no side effects. The curated entry points live in
the subpackages: :mod:`dsh.kernel` (plugin kernel), :mod:`dsh.core` (interface
services and vocabulary), :mod:`dsh.agent_loop` (the loop), :mod:`dsh.testing`.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
