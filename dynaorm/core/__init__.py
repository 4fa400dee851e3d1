"""The unit of work: staging (typed entries, coalesced per stored item), the commit with its
named phases (prepare, plan, send, settle), and the protocols of every session operation
that needs DynamoDB (bulk writes and a table's administration included). Pure: a client's
driver performs the steps these protocols yield."""
