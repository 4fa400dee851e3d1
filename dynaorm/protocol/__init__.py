"""The protocol every session operation speaks, and its rules (pure: no I/O, no driver,
no wire, no botocore): the step vocabulary and the one pump (:mod:`~dynaorm.protocol.steps`),
the retry rules (:mod:`~dynaorm.protocol.retry`), the immutable :class:`~dynaorm.protocol.
policy.Policy` a client hands its drivers, the phase hooks (:mod:`~dynaorm.protocol.hooks`)
and what a request leaves behind (:mod:`~dynaorm.protocol.events`)."""
