"""The sync edge: :class:`~dynaorm.Session` and the driver that performs protocol steps
with the sync transport (threads for concurrent steps)."""
