"""``python -m abrank`` runs the command-line interface."""

from abrank.cli import console

console()
