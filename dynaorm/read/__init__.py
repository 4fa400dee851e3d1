"""Reading: key conditions, type selection, the pager over one or more streams, cursors,
and the ``Query`` and ``Scan`` builders with their terminals. Pure: reads are protocols
(see :mod:`dynaorm.protocol.steps`) that a transport performs."""
