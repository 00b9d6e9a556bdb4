"""pandas, imported on first use, and early in the background where that helps.

``abrank metrics`` on TREC files starts parsing before pandas is needed (pyarrow imports
pandas on its first NumPy conversion); importing pandas in a second thread while the
first file parses overlaps a few tenths of a second of start-up with work. Modules that
need pandas write ``from abrank._lazy import pandas as pd`` and use ``pd`` as usual.
"""

from __future__ import annotations

import threading
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

    def load() -> None:
        import pandas  # noqa: F401

    threading.Thread(target=load, name="import-pandas", daemon=True).start()
