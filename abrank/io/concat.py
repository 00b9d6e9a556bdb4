"""One canonical frame from several files of the same kind: the dates of a window.

Each file is read and checked on its own (its errors name it and its lines); the frames
are then joined as if they had been one file: categorical columns keep one categorical
(the union of the categories, in byte order, as the readers give them), rows are put back
in the readers' order, and a key (a query, an impression) that two files both hold is an
error naming both files, since a window's dates must not repeat each other's rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from abrank._lazy import pandas as pd
from abrank.errors import DataError


def concat_frames(
    frames: Sequence[pd.DataFrame],
    paths: Sequence[str],
    *,
    key: str,
    order: Sequence[str],
    what: str,
) -> pd.DataFrame:
    """Join ``frames`` (read from ``paths``) into one, sorted stably by ``order`` (if any).

    ``key`` is the column whose values may not appear in two files (``what`` names it in
    the message: "query", "impression").
    """
    if len(frames) == 1:
        return frames[0]
    _check_disjoint(frames, paths, key, what)
    columns = list(frames[0].columns)
    for frame, path in zip(frames[1:], paths[1:]):
        if list(frame.columns) != columns:
            raise DataError(
                f"{path}: expected the columns of {paths[0]} ({', '.join(map(str, columns))}), "
                f"found {', '.join(map(str, frame.columns))}"
            )
    joined: dict[str, pd.Series | pd.Categorical] = {}
    for column in columns:
        parts = [frame[column] for frame in frames]
        if all(isinstance(part.dtype, pd.CategoricalDtype) for part in parts):
            joined[column] = pd.api.types.union_categoricals(
                parts, sort_categories=True, ignore_order=True
            )
        else:
            joined[column] = pd.concat(parts, ignore_index=True)
    frame = pd.DataFrame(joined)
    if order:
        frame = frame.sort_values(list(order), kind="stable", ignore_index=True)
    frame.attrs = dict(frames[0].attrs)
    return frame


def _check_disjoint(
    frames: Sequence[pd.DataFrame], paths: Sequence[str], key: str, what: str
) -> None:
    """No value of ``key`` in two files: the first one found is named with both files."""
    keys = [_distinct_text(frame[key]) for frame in frames]
    values = np.concatenate(keys)
    owner = np.repeat(np.arange(len(frames)), [len(k) for k in keys])
    seen = pd.Series(values).duplicated(keep=False).to_numpy()
    if not seen.any():
        return
    value = values[np.flatnonzero(seen)[0]]
    files = owner[values == value]
    raise DataError(
        f"{paths[files[1]]}: {what} {value!r}: expected each {what} in one date's file of "
        f"the window, got it in {paths[files[0]]} too"
    )


def _distinct_text(column: pd.Series) -> np.ndarray:
    """The distinct values of an id column as text (a categorical's from its codes)."""
    if isinstance(column.dtype, pd.CategoricalDtype):
        codes = np.unique(column.cat.codes.to_numpy())
        return column.cat.categories.take(codes[codes >= 0]).astype(str).to_numpy()
    return pd.unique(column.astype(str).to_numpy())
