"""Reading: key conditions, type selection, the pager over one or more streams, cursors,
and queries and scans as pure descriptions (``QuerySpec``, ``ScanSpec``) with the protocol
of every terminal (see :mod:`dynaorm.protocol.steps`); the sync and async terminals that
run them through a driver are :mod:`dynaorm.sync.reads` and :mod:`dynaorm.aio.reads`."""
