"""The names abrank writes directly under a reports root, beside the experiments' folders.

A reports root (``reports/`` by default) holds one folder per experiment, named as the
experiment, and abrank's own entries: the history store's folder and the index page. An
experiment named as one of those would have its readout folder collide with them, so the
config refuses such names (:func:`reserved_problem`); the history store and the index page
take their names from here, so that the list cannot drift from what they write.
"""

from __future__ import annotations

#: The history store's folder under the reports root (:mod:`abrank.history.store`).
HISTORY_FOLDER = "history"
#: The index page of the reports root (:mod:`abrank.render.index_page`).
INDEX_PAGE = "index.html"
#: Every name abrank uses directly under a reports root.
RESERVED_NAMES = (HISTORY_FOLDER, INDEX_PAGE)


def is_reserved(name: str) -> bool:
    """Whether ``name`` is one of :data:`RESERVED_NAMES`, in any case (a case-insensitive
    file system, macOS's or Windows's, sees ``History`` as ``history``)."""
    return name.casefold() in {reserved.casefold() for reserved in RESERVED_NAMES}


def reserved_problem(name: str) -> str | None:
    """The message for an experiment name that collides with abrank's own files under the
    reports root, or None when the name is free."""
    if not is_reserved(name):
        return None
    return (
        f"expected a name other than abrank's own files under the reports root, got "
        f"{name!r}: the name is reserved (reserved names: {', '.join(RESERVED_NAMES)}, in any case)"
    )
