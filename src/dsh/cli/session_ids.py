"""Session ids as a user types them: any unique start of a stored session's id.

Used by ``dsh sessions show ID`` and by ``--resume ID`` of ``dsh run`` / ``dsh chat``.
"""

from __future__ import annotations

from dsh.cli.errors import CliError
from dsh.core.persistence import SESSION_PERSISTENCE, SessionPersistence
from dsh.kernel import Context


async def resolve_session_id(persistence: SessionPersistence, text: str) -> str:
    """The id of the one stored session whose id is ``text`` or starts with it.

    Raises :class:`CliError` naming ``dsh sessions list`` when none matches, and
    listing the candidates when several do.
    """
    if await persistence.has(text):
        return text
    candidates = sorted(header.id for header in await persistence.list() if header.id.startswith(text))
    if len(candidates) == 1:
        return candidates[0]
    if not candidates:
        raise CliError(f'no stored session has an id starting with "{text}": see `dsh sessions list`')
    raise CliError(
        f'"{text}" is the start of {len(candidates)} session ids ({", ".join(candidates)}): type more of the id'
    )


async def resolve_resume(root: Context, text: str | None) -> str | None:
    """``--resume`` ``text`` as a full session id (see :func:`resolve_session_id`); as is without persistence."""
    persistence = root.get(SESSION_PERSISTENCE)
    if text is None or persistence is None:
        return text
    try:
        return await resolve_session_id(persistence, text)
    except CliError as error:
        raise CliError(f'cannot resume session "{text}": {error}') from error
