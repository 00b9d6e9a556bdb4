"""``python -m abrank`` runs the command-line interface."""

from abrank.cli import main

raise SystemExit(main())
