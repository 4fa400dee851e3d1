"""What DynamoDB, S3 and AWS's services do that a test engine does not, answered in front
of the engine: :mod:`.emulator` (the rules moto skips, index lag), :mod:`.bulk` (the bulk
API and filtered exports), :mod:`.vectors` (vector indexes and ``SearchVectors``),
:mod:`.exports` (DynamoDB exports to S3, made locally). The pytest fixtures that put them
in front of an engine are :mod:`dynaorm.testing`'s."""
