"""LangGraph's checkpointer and memory store in the application's own table (contract
23; extra ``dynaorm[langgraph]``): :class:`Saver` and :class:`Store`."""

from dynaorm_langgraph.fence import ThreadBusyError
from dynaorm_langgraph.saver import Saver
from dynaorm_langgraph.store import Store

__all__ = ["Saver", "Store", "ThreadBusyError"]
