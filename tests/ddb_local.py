"""The DynamoDB Local launcher moved to ``tests/support/ddb_local.py``; this name stays
only because the benchmarks (``benchmarks/*.py``) import ``tests.ddb_local``."""

from tests.support.ddb_local import (
    DEFAULT_CACHE_DIR,
    DUMMY_ACCESS_KEY,
    DUMMY_REGION,
    DUMMY_SECRET_KEY,
    JAR_ENV_VAR,
    DynamoDBLocal,
    find_jar,
)

__all__ = ["DEFAULT_CACHE_DIR", "DUMMY_ACCESS_KEY", "DUMMY_REGION", "DUMMY_SECRET_KEY",
           "JAR_ENV_VAR", "DynamoDBLocal", "find_jar"]
