"""The entity rules: one module per feature an entity declares in ``Meta`` (unique
attributes, versioning, encryption, a previous layout, timestamps and TTL, write sharding,
index membership, the row revision)."""
