"""Lets `python -m framejit ...` run the command line in framejit.cli."""

from framejit.cli import main

raise SystemExit(main())
