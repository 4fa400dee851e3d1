from dynaorm.langgraph.store import Store as Store
