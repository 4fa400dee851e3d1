"""The vendored suites are run by the tests that name them, never collected themselves
(their ``test_*`` functions take a saver, not pytest fixtures)."""

collect_ignore_glob = ["*/test_*.py"]
