"""The table of experiment designs: which design reads an experiment, and which a readout.

A design (DESIGN.md "The spine") is everything specific to one kind of experiment: which
configs it claims and the keys it checks, its metric names, which engines run it, how its
inputs become evidence and the evidence a readout, and its report sections. The four
built in live in :mod:`abrank.designs` (offline replays, online A/B tests, interleaving,
counterfactual evaluation);
:func:`register` adds one from outside the package. The rest of abrank asks this table,
never the kind of an experiment, so that a new design is a new folder and one call.

This module sits below every stage (it imports none of them): the configuration asks it
for an experiment's design, the pipeline for the design's run, the report for its
sections. The built-in designs are imported by name the first time the table is read.
"""

from __future__ import annotations

import importlib
import inspect
import threading
from collections.abc import Iterator, Mapping
from typing import Any, Protocol, runtime_checkable

__all__ = ["DESIGNS", "Design", "DesignTable", "register", "run_design"]

#: The modules of the built-in designs, each defining ``DESIGN``; the last one claims
#: what no other does.
BUILT_IN = (
    "abrank.designs.counterfactual",
    "abrank.designs.interleaved",
    "abrank.designs.online",
    "abrank.designs.offline",
)


@runtime_checkable
class Design(Protocol):
    """What the pipeline, the configuration and the report ask of a design.

    ``name`` is the design's name in summary.json (``design``) and, for a design added with
    :func:`register`, the value of ``analysis.design`` that selects it; ``statistics`` names
    the tests it uses (:mod:`abrank.stats.registry`: ``paired``, ``independent`` or
    ``interleaved``), which ``analysis.tests`` are checked against.
    """

    name: str
    statistics: str
    #: its runs build large temporaries from big logs (the CLI tunes the allocator for them)
    large_logs: bool

    def claims(self, experiment: Any) -> bool:
        """Whether this design analyses ``experiment`` (a validated config)."""
        ...

    def reads(self, summary: Any) -> bool:
        """Whether a readout (its typed summary) is this design's (for its report)."""
        ...

    def metric_name(self, name: str) -> str:
        """A metric's canonical name; a ConfigError saying why ``name`` names none."""
        ...

    def metric_label(self, experiment: Any, name: str) -> str:
        """A metric's name in a report's prose (``MRR@10``)."""
        ...

    def check(self, checks: Any, experiment: Any, analysis: Any) -> Any:
        """The design's own keys checked (problems added to ``checks``); the ``analysis``
        section as resolved."""
        ...

    def arm_holds(self, experiment: Any) -> tuple[str, bool]:
        """What an arm's files hold, in messages (``rankings``, ``impressions``), and
        whether they are logs (read for every date of a window; globs and folders)."""
        ...

    def check_engine(self, experiment: Any, engine: str) -> None:
        """A ConfigError unless engine ``engine`` runs ``experiment``."""
        ...

    def run(self, experiment: Any, inputs: Any, say: Any, engine: Any) -> Any:
        """The experiment's :class:`~abrank.readout.Readout`, from its resolved ``inputs``
        on ``engine`` (an :class:`~abrank.analysis.engine.EngineChoice`); ``say`` reports
        progress. A design may also take the keyword ``explain`` (:func:`run_design`)."""
        ...

    def validate(self, experiment: Any, inputs: Any, engine: Any) -> dict[str, Any]:
        """What ``abrank validate`` finds in the inputs, opened as :meth:`run` opens them
        short of scoring: the :class:`~abrank.analysis.validate.ValidationResult` fields
        ``arms`` and those of the design (e.g. ``judged_queries``, ``unit``)."""
        ...

    def report(self) -> Any:
        """The report sections the design adds (:class:`abrank.render.sections.KindSections`)."""
        ...


class DesignTable(Mapping[str, Design]):
    """Design name -> design, the built-in ones loaded on first use; designs added with
    :func:`register` are asked first, in the reverse order of registration."""

    def __init__(self) -> None:
        self._designs: dict[str, Design] = {}
        self._added: list[str] = []
        self._loaded = False
        self._lock = threading.RLock()

    def _load(self) -> dict[str, Design]:
        if not self._loaded:
            with self._lock:
                if not self._loaded:
                    for module in BUILT_IN:
                        design = importlib.import_module(module).DESIGN
                        self._designs.setdefault(design.name, design)
                    self._loaded = True
        return self._designs

    def __getitem__(self, name: str) -> Design:
        return self._load()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())

    def add(self, design: Design) -> Design:
        """Add ``design`` (replacing a registered one of the same name); a ValueError for
        an object that is not a design or takes a built-in design's name."""
        missing = [
            name
            for name in ("name", "statistics", "large_logs", *_HOOKS)
            if not hasattr(design, name)
        ]
        if missing:
            raise ValueError(
                f"register: expected a design (abrank.designs.Design), got "
                f"{type(design).__name__} without {', '.join(missing)}"
            )
        designs = self._load()
        if design.name in designs and design.name not in self._added:
            raise ValueError(
                f"register: expected a new design name, got {design.name!r}, a built-in design's"
            )
        with self._lock:
            designs[design.name] = design
            if design.name in self._added:
                self._added.remove(design.name)
            self._added.append(design.name)
        return design

    def remove(self, name: str) -> None:
        """Forget a design added with :func:`register` (built-in ones stay)."""
        with self._lock:
            if name in self._added:
                self._added.remove(name)
                del self._designs[name]

    def added(self) -> list[str]:
        """The names of the designs added with :func:`register`, in the order added."""
        return list(self._added)

    def _in_order(self) -> list[Design]:
        designs = self._load()
        built_in = [d for name, d in designs.items() if name not in self._added]
        return [designs[name] for name in reversed(self._added)] + built_in

    def of(self, experiment: Any) -> Design:
        """The design that analyses ``experiment``: the first that claims it."""
        for design in self._in_order():
            if design.claims(experiment):
                return design
        raise LookupError(f"no design claims the experiment {getattr(experiment, 'name', '')!r}")

    def of_summary(self, summary: Any) -> Design:
        """The design whose readout ``summary`` is (a typed summary)."""
        for design in self._in_order():
            if design.reads(summary):
                return design
        raise LookupError(f"no design reads a summary of design {getattr(summary, 'design', '')!r}")

    def selectable(self) -> dict[str, Design]:
        """The designs that ``analysis.design: <name>`` selects: the built-in ones that say
        so (``selected_by_name``), then those added with :func:`register`."""
        designs = self._load()
        built_in = {
            name: design
            for name, design in designs.items()
            if name not in self._added and getattr(design, "selected_by_name", False)
        }
        return {**built_in, **{name: designs[name] for name in self._added}}


_HOOKS = (
    "claims",
    "reads",
    "metric_name",
    "metric_label",
    "check",
    "arm_holds",
    "check_engine",
    "run",
    "validate",
    "report",
)

#: Every design abrank knows: the built-in ones and those added with :func:`register`.
DESIGNS = DesignTable()


def run_design(
    design: Design, experiment: Any, inputs: Any, say: Any, engine: Any, *, explain: bool = True
) -> Any:
    """``design.run(...)``; ``explain=False`` asks for the readout without its explanation
    tables (``queries``, ``rankings``), which no output then reads (the summary is the
    same), of a design whose ``run`` takes the keyword ``explain``. Any other design (one
    written to the four-argument ``run``) makes its readout as it always does."""
    run: Any = design.run  # the keyword is not part of the protocol
    if not explain and "explain" in inspect.signature(run).parameters:
        return run(experiment, inputs, say, engine, explain=False)
    return run(experiment, inputs, say, engine)


def register(design: Design) -> Design:
    """Add a design from outside abrank; configs with ``analysis.design: <its name>`` are
    then analysed by it. Returns the design (so that it can decorate an instance)."""
    return DESIGNS.add(design)
