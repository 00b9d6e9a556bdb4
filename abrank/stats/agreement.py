"""How well two judges agree on the documents both graded: weighted Cohen's kappa, the
confusion matrix, the mean grade difference, and Kendall's tau between two orderings.

Machine labels (an LLM assessor's) stand in for human judgments only as far as they agree
with them; DESIGN.md "Machine-labelled judgments". Cohen's kappa compares the observed
agreement with the agreement the two judges' grade shares would give by chance; its
weights count a disagreement by how far apart the two grades lie in the ordered list of
grades either judge used (linear: |i - j|; quadratic: (i - j)^2), the definition of
scikit-learn's ``cohen_kappa_score``.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Literal

import numpy as np

from abrank.records import Record

__all__ = ["Agreement", "agreement", "confusion_matrix", "kendall_tau", "weighted_kappa"]

Weights = Literal["linear", "quadratic"] | None


def confusion_matrix(human: np.ndarray, machine: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(grades, counts): the sorted grades either judge used, and counts[i, j] the
    documents graded grades[i] by the human and grades[j] by the machine."""
    human = np.asarray(human, dtype=np.float64)
    machine = np.asarray(machine, dtype=np.float64)
    grades, codes = np.unique(np.concatenate([human, machine]), return_inverse=True)
    k = grades.size
    rows, cols = codes[: human.size], codes[human.size :]
    counts = np.bincount(rows * k + cols, minlength=k * k).reshape(k, k)
    return grades, counts


def weighted_kappa(human: np.ndarray, machine: np.ndarray, weights: Weights = None) -> float:
    """Cohen's kappa of two judges' grades of the same documents, unweighted or with
    ``linear`` or ``quadratic`` weights; NaN when there is nothing to compare or chance
    alone explains every agreement (one grade throughout)."""
    _, counts = confusion_matrix(human, machine)
    total = counts.sum()
    if total == 0:
        return math.nan
    observed = counts / total
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    index = np.arange(counts.shape[0])
    gap = np.abs(index[:, None] - index[None, :]).astype(np.float64)
    if weights is None:
        cost = (gap > 0).astype(np.float64)
    elif weights == "linear":
        cost = gap
    elif weights == "quadratic":
        cost = gap**2
    else:
        raise ValueError(f"weights: expected None, 'linear' or 'quadratic', got {weights!r}")
    chance = float((cost * expected).sum())
    if chance == 0.0:
        return math.nan
    return 1.0 - float((cost * observed).sum()) / chance


def kendall_tau(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b between two orderings of the same items (scipy's), NaN with fewer
    than two items or when either ordering is all ties."""
    from scipy.stats import kendalltau

    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    keep = np.isfinite(x) & np.isfinite(y)
    if keep.sum() < 2:
        return math.nan
    return float(kendalltau(x[keep], y[keep]).statistic)


@dataclasses.dataclass(frozen=True)
class Agreement(Record):
    """Two judges on the documents both graded: how many (``overlap``), kappa with linear
    and quadratic weights, the confusion matrix (``grades``: its rows, the human grades,
    and columns, the machine's; ``counts``) and ``mean_difference``, machine - human."""

    overlap: int
    kappa_linear: float | None
    kappa_quadratic: float | None
    confusion: dict[str, Any]
    mean_difference: float | None

    def to_dict(self) -> dict[str, Any]:
        """JSON-safe builtins (NaN as None)."""
        return {
            "overlap": self.overlap,
            "kappa_linear": _finite(self.kappa_linear),
            "kappa_quadratic": _finite(self.kappa_quadratic),
            "confusion": self.confusion,
            "mean_difference": _finite(self.mean_difference),
        }


def agreement(human: np.ndarray, machine: np.ndarray) -> Agreement:
    """The :class:`Agreement` of the two judges' grades of the same documents, in order."""
    human = np.asarray(human, dtype=np.float64)
    machine = np.asarray(machine, dtype=np.float64)
    if human.shape != machine.shape:
        raise ValueError(
            f"machine: expected one grade per human grade ({human.size}), got {machine.size}"
        )
    grades, counts = confusion_matrix(human, machine)
    return Agreement(
        overlap=int(human.size),
        kappa_linear=weighted_kappa(human, machine, "linear"),
        kappa_quadratic=weighted_kappa(human, machine, "quadratic"),
        confusion={
            "grades": [_grade(g) for g in grades],
            "counts": counts.astype(int).tolist(),
        },
        mean_difference=float(np.mean(machine - human)) if human.size else math.nan,
    )


def _grade(value: float) -> float | int:
    """A grade as JSON shows it: an integer where it is one."""
    return int(value) if float(value).is_integer() else float(value)


def _finite(value: float | None) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None
