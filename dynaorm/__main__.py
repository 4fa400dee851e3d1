"""``python -m dynaorm``: the ``dynaorm`` command."""

from .cli import main

raise SystemExit(main())
