"""``python -m dynaorm``: the ``dynaorm`` command."""

from dynaorm.cli.main import main

raise SystemExit(main())
