"""The row revision (contract 20, 21): a fresh random value every dynaorm write stamps on
the rows it puts or updates, under ``Table(revision_attribute=...)`` (default ``"_rev"``).
After an answer that may have been lost, one consistent read proves the write applied (the
row holds this write's revision) or not applied (it still holds the one the object was
loaded with: revisions never recur). See :mod:`dynaorm.write.outcomes`.
"""

from __future__ import annotations

__all__ = ["REVISION"]

#: the revision every dynaorm write stamps on an entity's row (a fresh random value per
#: request): after an answer that may have been lost, a consistent read proves the write
#: applied (the row holds this write's revision) or not applied (it still holds the one
#: the object was loaded with: revisions never recur). See write/outcomes.py.
REVISION = "_rev"
