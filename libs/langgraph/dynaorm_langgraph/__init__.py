"""LangGraph's checkpointer and memory store in the application's own table (contract
23; extra ``dynaorm[langgraph]``): :class:`Saver` and :class:`Store`, imported (LangGraph
with them) when first asked for: dynaorm's check loads ``rows.SURFACE_ROWS`` without."""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dynaorm_langgraph.fence import ThreadBusyError
    from dynaorm_langgraph.saver import Saver
    from dynaorm_langgraph.store import Store

__all__ = ["Saver", "Store", "ThreadBusyError"]

_MODULES = {"Saver": "saver", "Store": "store", "ThreadBusyError": "fence"}


def __getattr__(name: str) -> Any:
    """A name of ``__all__``, from its module."""
    if name not in _MODULES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"dynaorm_langgraph.{_MODULES[name]}"), name)
