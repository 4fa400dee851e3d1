"""The core: the one step vocabulary every protocol speaks and the pump that expands it
(:mod:`dynaorm.core.protocol`), batch rounds, and the unit of work (staging and the commit
with its named phases). Pure: drivers in :mod:`dynaorm.sync` and :mod:`dynaorm.aio` perform
the steps."""
