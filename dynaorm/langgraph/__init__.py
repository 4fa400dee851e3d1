"""LangGraph's checkpointer (and memory store) in the application's own table (contract
23; extra ``dynaorm[langgraph]``): :class:`Saver`."""

from dynaorm.langgraph.saver import Saver

__all__ = ["Saver"]
