"""The model: tables, entities and what their ``Meta`` declares (specs, key templates,
shards, rules), the codec between Python values and DynamoDB attribute values, condition
expressions, per-object state and timestamps, and stream records. Pure: the only I/O here
is ``Table``'s own administration (create, delete, exists) through its transport."""
