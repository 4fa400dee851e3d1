"""Tools around the library: ``dynaorm check`` (audit and repair), ``dynaorm migrate``
(moving items off a previous layout), the checkpoint both keep, the ``dynaorm`` command and
its demo."""
