"""The sync sessions: :class:`~dynaorm.Session`, the unit of work run through its client's
sync driver, and the blocking terminals of its queries and scans."""
