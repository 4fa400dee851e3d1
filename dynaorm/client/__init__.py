"""Where and how requests go (I/O): the :class:`~dynaorm.client.client.Client` with its two
drivers, its registry of wires, the tracers it finds and the one transport it chooses, the
configuration it reads (:mod:`~dynaorm.client.settings`, :mod:`~dynaorm.client.plain`),
botocore's wire (:mod:`~dynaorm.client.botocore`: its clients, its failures mapped), the
public :class:`~dynaorm.client.table.Table` (a table's description bound to a client) and
the clients tables share (:mod:`~dynaorm.client.shared`)."""
