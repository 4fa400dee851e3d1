"""Index membership: which secondary indexes an entity's rows land in. Template indexes
(``Meta.indexes``: :class:`IndexKeys`, key attributes rendered from fields), native
multi-attribute indexes (the fields themselves), and the rule that only an entity's own
row or latest copy is indexed (version rows and guard items never are).
"""

from __future__ import annotations

from dataclasses import dataclass

from dynaorm.schema.templates import KeyTemplate

__all__ = ["IndexKeys"]


@dataclass(frozen=True)
class IndexKeys:
    """An entity's key templates for one secondary index."""

    name: str
    pk_attr: str
    sk_attr: str | None
    pk: KeyTemplate
    sk: KeyTemplate | None
    local: bool

    @property
    def fields(self) -> tuple[str, ...]:
        return (*self.pk.fields, *(self.sk.fields if self.sk else ()))
