"""LangGraph's checkpointer and memory store in the application's own table (contract
23; extra ``dynaorm[langgraph]``): :class:`Saver` and :class:`Store`."""

from dynaorm.langgraph.fence import ThreadBusyError
from dynaorm.langgraph.saver import Saver
from dynaorm.langgraph.store import Store

__all__ = ["Saver", "Store", "ThreadBusyError"]
