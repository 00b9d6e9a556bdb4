"""pandas, imported on first use, and modules imported early in the background where
that helps.

``abrank metrics`` on TREC files starts parsing before pandas is needed (pyarrow imports
pandas on its first NumPy conversion); importing pandas in a second thread while the
first file parses overlaps a few tenths of a second of start-up with work. Likewise an SQL
engine's statements run without Python's lock, so the modules the comparisons need after
them import meanwhile (:func:`import_in_background`). Modules that need pandas write
``from abrank._lazy import pandas as pd`` and use ``pd`` as usual.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any


class _Pandas:
    """Forwards attribute access to the pandas module, importing it the first time."""

    def __getattr__(self, name: str) -> Any:
        import pandas

        return getattr(pandas, name)


if TYPE_CHECKING:  # the type checker reads ``pd.DataFrame`` and the rest from pandas itself
    import pandas as pandas
else:
    pandas = _Pandas()


def import_pandas_in_background() -> None:
    """Start importing pandas in a daemon thread (a later import waits for it to finish)."""
    import_in_background("pandas")


def import_in_background(*names: str) -> None:
    """Start importing the modules ``names`` in a daemon thread, one after another (an
    import of one of them elsewhere waits for it to finish; a failure here is left for
    that import to raise)."""

    def load() -> None:
        for name in names:
            try:
                importlib.import_module(name)
            except Exception:  # noqa: BLE001 - the import where the module is used says why
                return

    threading.Thread(target=load, name="import-" + ",".join(names), daemon=True).start()


def lazy_attribute(package: str, table: Mapping[str, str], name: str) -> Any:
    """The attribute ``name`` of ``package`` imported on first use from the module that
    ``table`` names for it: a package's ``__getattr__``, so that importing the package
    does not import what a run may never use."""
    module = table.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
