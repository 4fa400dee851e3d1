"""The schema: tables and entities as descriptions. Key templates, the entity base class,
the spec each class's ``Meta`` is read into (once, at class creation, where every
definition error is raised), definition-time checks, field paths, stream records, and the
entity rules (:mod:`dynaorm.schema.rules`). Pure: a table here
(:class:`~dynaorm.schema.table.TableSchema`) sends nothing; :class:`dynaorm.Table` binds it
to a client."""
