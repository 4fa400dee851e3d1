"""Values: what a stored value is and how it travels. The registry of attribute kinds and
the codec that asks it, the fast loader, per-object state, DynamoDB's limits, condition
expressions, typed key values and the write records a plan is made of. Pure, and below
every entity: nothing here knows a ``Meta``."""
