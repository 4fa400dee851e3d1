"""The sync edge: :class:`~dynaorm.Session`, the unit of work run through the table's sync
transport."""
