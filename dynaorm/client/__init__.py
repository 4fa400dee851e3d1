"""Where and how requests go (I/O): the :class:`~dynaorm.client.client.Client` with its two
drivers and its connections, the configuration it reads (:mod:`~dynaorm.client.settings`),
botocore's failures mapped once (:mod:`~dynaorm.client.errors`), the public
:class:`~dynaorm.client.table.Table` (a table's description bound to a client) and the
clients tables share (:mod:`~dynaorm.client.shared`)."""
