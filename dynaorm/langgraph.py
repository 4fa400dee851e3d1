"""LangGraph's checkpointer and memory store, where dynaorm 0.8 and 0.9 put them: the
adapter is a distribution of its own, ``dynaorm-langgraph`` (import ``dynaorm_langgraph``;
the extra ``dynaorm[langgraph]`` installs it), and this module hands its names on."""

from dynaorm_langgraph import Saver, Store, ThreadBusyError

__all__ = ["Saver", "Store", "ThreadBusyError"]
