"""The I/O boundary: the botocore client each table sends through (sync and async), the
retry rules of one request, request events and commit results. Every failure leaves here
as a :class:`~dynaorm.RequestError`."""
