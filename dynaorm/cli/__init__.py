"""The ``dynaorm`` command (:mod:`dynaorm.cli.main`: its parser, the table references it
resolves, and ``check``, ``migrate``, ``backfill``, ``export`` and ``demo``) and the modules
of its other subcommands: ``model`` (:mod:`~dynaorm.cli.model`), ``explain``
(:mod:`~dynaorm.cli.explain`), ``iam`` (:mod:`~dynaorm.cli.iam`), the lake's export options
(:mod:`~dynaorm.cli.lake`) and ``mcp`` (:mod:`~dynaorm.cli.mcp`)."""
