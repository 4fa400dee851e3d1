"""Writing: staged work planned into a ``WritePlan`` of write records (guards, version rows,
optimistic conditions), checked against DynamoDB's limits, rendered to requests, and
failures mapped back to typed errors. Pure: no I/O."""
