"""The vocabulary of a readout's sections: plain, frozen data that each format draws.

:mod:`abrank.render.sections` builds a readout once into these blocks; the Markdown and
HTML renderers each draw them. Every text here is unescaped: the renderer escapes it for
its format. A :class:`Span` marked ``own`` holds text the report wrote itself from numbers
(``[+0.221, +0.271]``), which Markdown shows as it is rather than escaping its brackets.
"""

from __future__ import annotations

from dataclasses import Field, asdict, dataclass, field
from typing import Any, ClassVar, Literal

Style = Literal["", "strong", "em", "code"]
Align = Literal["left", "right"]


class _ToDict:
    #: every block is a dataclass (what :func:`dataclasses.asdict` asks of ``self``)
    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    def to_dict(self) -> dict[str, Any]:
        """The block as JSON-safe builtins (with its kind), for tests and debugging."""
        return {"kind": type(self).__name__, **asdict(self)}


@dataclass(frozen=True)
class Span(_ToDict):
    """A run of inline text: ``style`` is emphasis; ``own`` text is the report's own."""

    text: str
    style: Style = ""
    own: bool = False


def spans(*parts: str | Span) -> tuple[Span, ...]:
    """Inline content from plain strings (user text) and spans."""
    return tuple(p if isinstance(p, Span) else Span(str(p)) for p in parts)


def own(text: str, style: Style = "") -> Span:
    """A span of the report's own text (numbers, intervals, fixed wording)."""
    return Span(text, style, own=True)


@dataclass(frozen=True)
class Paragraph(_ToDict):
    """A paragraph; ``role`` names what it is (``opening``, ``gloss``, ``note``, ...)."""

    content: tuple[Span, ...]
    role: str = ""


@dataclass(frozen=True)
class Heading(_ToDict):
    """A heading inside a section (level 3), with an optional note after it."""

    text: str
    note: str = ""


@dataclass(frozen=True)
class Figure(_ToDict):
    """A big number: a subject, its before → after, the change and the verdict."""

    subject: str
    means: str
    delta: str
    verdict: str
    caveat: str = ""  # why the verdict is not to be taken as it stands (an alarm fired)


@dataclass(frozen=True)
class KeyFigures(_ToDict):
    """The big numbers shown before the dense lines."""

    figures: tuple[Figure, ...]


@dataclass(frozen=True)
class HeadlineLine(_ToDict):
    """One headline line with its comparison's verdict."""

    text: str
    verdict: str
    caveat: str = ""  # why the verdict is not to be taken as it stands (an alarm fired)


@dataclass(frozen=True)
class Headline(_ToDict):
    """The headline lines, one per metric x treatment."""

    lines: tuple[HeadlineLine, ...]


@dataclass(frozen=True)
class Alert(_ToDict):
    """A warning to put in front of the reader; an ``alarm`` (a sample ratio mismatch)
    is shown as a red banner: the readout's numbers are not to be trusted as they are."""

    text: str
    alarm: bool = False


@dataclass(frozen=True)
class Cell(_ToDict):
    """One table cell: its text, and for data cells the key and JSON value behind it.

    ``value`` is the JSON value behind the text when ``has_value`` is set (None is a value
    too: a missing number). ``css`` classes tell the HTML what the cell is (``text``,
    ``win``, ``wrap``, ``code``, ``hash``, ``secondary``, ``verdict``); ``own`` text is
    shown verbatim in Markdown, ``code`` text (a fingerprint) in backticks.
    """

    text: str
    key: str | None = None
    value: Any = field(default=None)
    has_value: bool = False
    css: str = ""
    own: bool = False
    code: bool = False


@dataclass(frozen=True)
class Column(_ToDict):
    """A table column's header, alignment and HTML class."""

    header: str
    align: Align = "right"
    css: str = ""


@dataclass(frozen=True)
class Table(_ToDict):
    """A table: columns, rows of cells, and a class naming it (``results``, ...)."""

    columns: tuple[Column, ...]
    rows: tuple[tuple[Cell, ...], ...]
    css: str = ""


@dataclass(frozen=True)
class Facts(_ToDict):
    """Named values (settings, counts, definitions): a list in Markdown, a <dl> in HTML.

    ``css`` names the list; in a ``legend`` the names are set in bold in Markdown.
    """

    items: tuple[tuple[str, str], ...]
    css: str = "facts"


@dataclass(frozen=True)
class ChartRef(_ToDict):
    """A chart by its file name under ``charts/``, with its alt text and caption."""

    name: str
    title: str
    caption: str


@dataclass(frozen=True)
class Code(_ToDict):
    """Verbatim text in a fenced block (``language`` as the fence's info string)."""

    text: str
    language: str = ""


@dataclass(frozen=True)
class Columns(_ToDict):
    """Blocks side by side in HTML (a grid), one after the other in Markdown."""

    parts: tuple[tuple[Block, ...], ...]


Block = (
    Paragraph | Heading | KeyFigures | Headline | Alert | Table | Facts | ChartRef | Code | Columns
)


@dataclass(frozen=True)
class Section(_ToDict):
    """A section of the readout: an id (the HTML anchor), a heading, its blocks."""

    id: str
    heading: str
    blocks: tuple[Block, ...]


@dataclass(frozen=True)
class TitleBlock(_ToDict):
    """What stands above the sections: the title, then the opening sentences, the big
    numbers, when and with what the readout was made, the description and the facts."""

    title: str
    opening: tuple[Block, ...]
    description: str
    meta: tuple[str, ...]


@dataclass(frozen=True)
class Document(_ToDict):
    """A whole readout as sections: what both formats draw."""

    title: TitleBlock
    sections: tuple[Section, ...]
    footer: tuple[str, ...]
