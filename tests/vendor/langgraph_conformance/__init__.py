"""Two capabilities of LangGraph's checkpointer conformance suite not yet on the package
index (``delta_channel_history``, ``delta_channel_reconstruction``), vendored from
LangGraph's repository at pinned commits: see README.md. Run beside the released suite by
tests/integration/test_langgraph_conformance.py."""
