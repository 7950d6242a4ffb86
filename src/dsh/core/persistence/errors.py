"""The error every persistence seam raises on purpose.

:class:`PersistenceError` carries a stable ``code`` beside its message:

``SESSION_EXISTS``      create() of an id that is tracked or already stored
``SESSION_NOT_FOUND``   load() of an id nothing stored
``SESSION_LOCKED``      a session another live process writes (the message names its pid)
``LEASE_LOST``          a write by a writer whose lease another writer took over (it stored nothing)
``SEQ_MISMATCH``        an append whose seqs do not continue the stored log
``UNSUPPORTED_VERSION`` a stored header whose format version is not 1
``ID_COLLISION``        a live session whose log disagrees with the stored one
``NOT_SERIALIZABLE``    an event whose data is not a JSON value
``CORRUPT_LOG``         damage inside the committed region of a stored log
``INVALID_ID``          an id that cannot name a storage artifact
``SCHEMA_VERSION``      a database stamped by an incompatible build
``STORAGE_IO``          the storage itself failed (the OS or driver error is ``__cause__``)
"""

from __future__ import annotations

from dsh.core.errors import HarnessError


class PersistenceError(HarnessError):
    """A persistence failure; see the module docstring for the codes."""
