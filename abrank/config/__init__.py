"""Experiment configs: YAML in, a validated :class:`Experiment` out.

A config names the experiment, the control arm, one or more treatments, the judgments, the
metrics and the analysis options. It is read with ``yaml.safe_load`` semantics and checked
in full before any data is touched: every problem is reported at once, each naming the
file, the YAML line and the field path, so a user fixes a config in one pass.

The modules, from the file down: :mod:`~abrank.config.reader` (the YAML text, its lines,
its repeated keys), :mod:`~abrank.config.build` (the models' refusals in the config's
words), :mod:`~abrank.config.checks` (the checks across keys, one per concern),
:mod:`~abrank.config.experiment` (the :class:`Experiment` and what follows from it). The
keys and checks of each concern: :mod:`~abrank.config.arms`, :mod:`~abrank.config.metrics`,
:mod:`~abrank.config.analysis`, :mod:`~abrank.config.segments`,
:mod:`~abrank.config.outputs`; of each kind of experiment: :mod:`~abrank.config.offline`
(rankings and judgments), :mod:`~abrank.config.online` (impression logs),
:mod:`~abrank.config.interleaved` (interleaved logs). Beneath them:
:mod:`~abrank.config.keys` (strict models, names, columns), :mod:`~abrank.config.paths`
(input paths), :mod:`~abrank.config.problems` (the words of a problem),
:mod:`~abrank.config.dates`, :mod:`~abrank.config.engine`, :mod:`~abrank.config.simulation`.
"""

from __future__ import annotations

from abrank.config.analysis import AnalysisConfig
from abrank.config.arms import ArmConfig
from abrank.config.build import build_experiment
from abrank.config.engine import Engine, EngineConfig
from abrank.config.experiment import Experiment
from abrank.config.keys import INPUT_FORMATS, Columns, DecimalMark, Separator, Slug
from abrank.config.offline import JudgmentsConfig
from abrank.config.online import CovariatesConfig, LogConfig
from abrank.config.outputs import CumulativeWindow
from abrank.config.reader import MAX_DEPTH, MAX_VALUES, load_experiment, parse_experiment
from abrank.config.segments import AttributesConfig, SegmentsConfig
from abrank.config.simulation import SimulationConfig

__all__ = [
    "INPUT_FORMATS",
    "MAX_DEPTH",
    "MAX_VALUES",
    "AnalysisConfig",
    "ArmConfig",
    "AttributesConfig",
    "Columns",
    "CovariatesConfig",
    "CumulativeWindow",
    "DecimalMark",
    "Engine",
    "EngineConfig",
    "Experiment",
    "JudgmentsConfig",
    "LogConfig",
    "SegmentsConfig",
    "Separator",
    "SimulationConfig",
    "Slug",
    "build_experiment",
    "load_experiment",
    "parse_experiment",
]
