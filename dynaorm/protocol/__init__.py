"""The protocol every session operation speaks, and its rules (pure: no I/O, no driver,
no wire, no botocore): the step vocabulary and the one pump (:mod:`~dynaorm.protocol.steps`),
the immutable :class:`~dynaorm.protocol.policy.Policy` a client hands its drivers with the
retry rules it applies, the phase hooks (:mod:`~dynaorm.protocol.hooks`)
and what a request leaves behind (:mod:`~dynaorm.protocol.events`)."""
