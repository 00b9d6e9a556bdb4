"""The drawing vocabulary every chart shares: palette, sizes, the Chart, matplotlib, PNG.

Every chart of a readout is drawn with matplotlib's object API on the Agg canvas: figures
are built with :class:`matplotlib.figure.Figure` (no pyplot, so no global figure registry
to leak into and nothing to close) and saved as PNG without a timestamp, so the same
readout gives the same bytes. matplotlib itself is imported on the first drawing only.

Colours come from the Okabe-Ito palette, which stays distinguishable under the common
forms of colour blindness; wins, ties and losses keep one colour each across charts.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from abrank.readout.model import Summary
from abrank.readout.typed import arm_names
from abrank.render.blocks import ChartRef

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# Okabe-Ito colours.
BLUE = "#0072B2"
ORANGE = "#E69F00"
GREEN = "#009E73"
PURPLE = "#CC79A7"
SKY = "#56B4E9"
VERMILLION = "#D55E00"
YELLOW = "#F0E442"
GREY = "#999999"
BLACK = "#000000"

ARM_COLOURS = (BLUE, ORANGE, GREEN, PURPLE, SKY, VERMILLION, YELLOW)
VERDICT_COLOURS = {"win": GREEN, "loss": VERMILLION, "inconclusive": GREY}
WIN, TIE, LOSS = GREEN, GREY, VERMILLION
TIE_EDGE = "#555555"  # outline of the tie bar

# The report sections that show charts: the overall results, where relevant documents
# land (offline) or where clicks land and how units spread (online), the preference per
# impression and per unit (interleaving), the segment breakdowns.
# Dated readouts add the trend over the history's dates; offline readouts with explanation
# tables, what moved the metrics.
SECTIONS = (
    "results",
    "trend",
    "positions",
    "clicks",
    "preference",
    "propensities",
    "segments",
    "moved",
)

DPI = 100
WIDTH = 9.0  # inches: 900 px, which fits a laptop screen and a printed page


@dataclass(frozen=True)
class Chart:
    """One chart of a readout: file name under ``charts/``, title (alt text), caption.

    The figure is drawn only when :attr:`png` is first read, so the Markdown report can
    link charts without paying for drawing them; the bytes are then kept.
    ``weight`` is the chart's drawing cost relative to a one-panel chart, for sharing
    charts among worker processes (:func:`abrank.workers.render_charts`). ``section``
    names the report section that shows it (one of :data:`SECTIONS`), so the reports place
    charts without knowing their file names.
    """

    name: str
    title: str
    caption: str
    draw: Callable[[], Figure] = field(repr=False, compare=False)
    weight: float = field(default=1.0, compare=False)
    section: str = "results"

    @cached_property
    def png(self) -> bytes:
        """The chart as PNG bytes (drawn on first use)."""
        return png(self.draw())

    def to_dict(self) -> dict[str, Any]:
        """The chart's description (without the image), as JSON-safe builtins."""
        return {"name": self.name, "title": self.title, "caption": self.caption}


def chart_refs(charts: Sequence[Chart], section: str) -> list[ChartRef]:
    """The references a report section places for its charts, in the charts' order."""
    return [ChartRef(c.name, c.title, c.caption) for c in charts if c.section == section]


@cache
def mpl_classes() -> SimpleNamespace:
    """matplotlib's classes, imported on the first drawing (0.3 s or more), so that
    planning charts and importing this module or :mod:`abrank.render` cost nothing."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg
    from matplotlib.figure import Figure
    from matplotlib.font_manager import FontProperties
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.ticker import MaxNLocator
    from PIL import Image

    return SimpleNamespace(
        FigureCanvasAgg=FigureCanvasAgg,
        RendererAgg=RendererAgg,
        Figure=Figure,
        FontProperties=FontProperties,
        Line2D=Line2D,
        Patch=Patch,
        MaxNLocator=MaxNLocator,
        Image=Image,
    )


def arm_colour(summary: Summary | dict[str, Any], arm: str) -> str:
    """A stable colour per arm: the control first, then the treatments in order."""
    order = arm_names(summary)
    index = order.index(arm) if arm in order else len(order)
    return ARM_COLOURS[index % len(ARM_COLOURS)]


def png(fig: Figure) -> bytes:
    """The figure drawn once on the Agg canvas, as an RGB PNG without metadata.

    Figures are laid out beforehand (:mod:`abrank.render.chart_panels`), so there is no
    layout engine to run (matplotlib's constrained and tight layouts each cost a whole
    extra draw), and the opaque white canvas loses nothing without its alpha channel.
    """
    canvas = mpl_classes().FigureCanvasAgg(fig)
    canvas.draw()
    size = canvas.get_width_height()
    image = mpl_classes().Image.frombuffer("RGBA", size, canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    buffer = io.BytesIO()
    image.convert("RGB").save(buffer, format="png", compress_level=1)  # 2x faster, ~5% larger
    return buffer.getvalue()


@cache
def _renderer() -> Any:
    return mpl_classes().RendererAgg(1, 1, DPI)


def text_width(text: str, size: float) -> float:
    """Width in pixels of one line of text in the default font at ``size`` points."""
    if not text:
        return 0.0
    width, _, _ = _renderer().get_text_width_height_descent(
        text, mpl_classes().FontProperties(size=size), ismath=False
    )
    return float(width)
