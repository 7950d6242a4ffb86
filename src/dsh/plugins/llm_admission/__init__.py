"""``llm-admission``: model requests start a few at a time, so a burst of new ones does not stall the streams.

A module plugin: load ``dsh.plugins.llm_admission`` (YAML name ``llm-admission``); it
needs the ``llm`` service. ``dsh batch`` workers load it. Its parts:

* :mod:`.slots` -- :class:`Slots`, a first-come, first-served count with abortable waits;
* :mod:`.plugin` -- the limits (:class:`Config`, :class:`Admission`), the stream wrapper
  (:class:`AdmittedStream`), :func:`install_admission`, :func:`admission_plugin` (with a
  test clock) and the plugin entry.
"""

from dsh.plugins.llm_admission.plugin import (
    DEFAULT_HOLD_MS,
    DEFAULT_MAX_OPENING,
    Admission,
    AdmittedStream,
    Config,
    admission_plugin,
    apply,
    inject,
    install_admission,
    name,
)
from dsh.plugins.llm_admission.slots import Slots

__all__ = [
    "DEFAULT_HOLD_MS",
    "DEFAULT_MAX_OPENING",
    "Admission",
    "AdmittedStream",
    "Config",
    "Slots",
    "admission_plugin",
    "apply",
    "inject",
    "install_admission",
    "name",
]
