"""The model: tables, entities and what their ``Meta`` declares (specs, key templates,
shards, rules), the codec between Python values and DynamoDB attribute values, condition
expressions, per-object state and its public inspection, timestamps, and stream records.
Pure: a table here is a description (:class:`~dynaorm.model.table.TableSchema`); binding it
to a client and its administration are :class:`dynaorm.Table`'s (``dynaorm.client``)."""
