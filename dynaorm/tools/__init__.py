"""Tools around the library: ``dynaorm check`` (audit and repair), the ``dynaorm`` command
and its demo."""
