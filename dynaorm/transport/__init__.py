"""Steps, retries and the I/O boundary: the step vocabulary every protocol speaks and the
pump that expands it (:mod:`dynaorm.transport.steps`), the retry rules of one request,
request events and commit results, and the two drivers -- the botocore client each table
sends through (:mod:`dynaorm.transport.sync`) and the aiobotocore one
(:mod:`dynaorm.transport.aio`). Every failure leaves here as a
:class:`~dynaorm.RequestError`."""
