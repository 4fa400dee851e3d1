"""``python -m dynaorm``: the ``dynaorm`` command."""

from dynaorm.tools.cli import main

raise SystemExit(main())
