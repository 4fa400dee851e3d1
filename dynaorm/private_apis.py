"""Every private attribute of a dependency that dynaorm's core relies on, in one place.

Each function names the library, the attribute and why no public way serves; when a
dependency changes one of them, this is the only module of the core to mend. A surface
keeps those only it relies on in a module of its own, so it can leave with them
(:mod:`dynaorm.testing.private_apis`: moto's and OpenTelemetry's, for the test backend;
:mod:`dynaorm.lake.private_apis`: pyiceberg's).
Dependencies are imported when a function is called (``import dynaorm`` loads none of
them).
"""

import sys
from typing import Any

__all__ = ["botocore_operation_url", "botocore_verify", "checked_aiohttp_session",
           "config_options", "moto_active"]


def config_options(config: Any) -> dict[str, Any]:
    """The options a ``botocore.config.Config`` was given (``None``: none).

    botocore: ``Config._user_provided_options``, the same record ``Config.merge`` reads;
    there is no public way to tell a given option from a default one, and dynaorm must keep
    exactly what the user set while choosing its own defaults for the rest."""
    if config is None:
        return {}
    return dict(config._user_provided_options)


def botocore_verify(client: Any) -> Any:
    """How a botocore client verifies TLS: ``False``, ``True``/``None`` (the default
    bundle) or a CA bundle path.

    botocore: ``client._endpoint.http_session._verify``. botocore resolves ``verify=`` from
    the call, ``AWS_CA_BUNDLE``, the profile's ``ca_bundle`` and ``REQUESTS_CA_BUNDLE``
    only into its HTTP session; reading it there keeps dynaorm's wire on the same decision."""
    endpoint = getattr(client, "_endpoint", None)
    return getattr(getattr(endpoint, "http_session", None), "_verify", True)


def botocore_operation_url(client: Any, operation: str) -> str | None:
    """The URL a botocore client sends ``operation`` to (no parameter naming a resource);
    ``None`` for an aiobotocore client (whose rules are asked in a coroutine).

    botocore: ``client._ruleset_resolver.construct_endpoint``, the client's endpoint rules
    asked for one operation, as each request asks them. Its ``meta.endpoint_url`` is
    resolved for no operation in particular, by the older resolver (in some partitions
    another host than a request's), and ``SearchVectors`` goes to another endpoint than
    every other operation; botocore has no public way to ask where a request will go."""
    model = client.meta.service_model.operation_model(operation)
    found = client._ruleset_resolver.construct_endpoint(
        operation_model=model, call_args={}, request_context={})
    if hasattr(found, "close") and not hasattr(found, "url"):  # (a coroutine: not run)
        found.close()
        return None
    return str(found.url)


def moto_active() -> bool:
    """Whether moto's in-process mock (``mock_aws``) is on: it answers inside botocore's
    HTTP layer only, so requests must go through a botocore client then.

    moto: ``moto.core.models.botocore_stubber.enabled``, the switch ``mock_aws`` turns on
    (looked up only when moto is already imported)."""
    models = sys.modules.get("moto.core.models")
    stubber = getattr(models, "botocore_stubber", None)
    return bool(getattr(stubber, "enabled", False))


def checked_aiohttp_session() -> type[Any]:
    """aiobotocore's ``AIOHTTPSession`` whose connector never hands a pooled connection
    to the next request while it holds bytes no request asked for (an extra answer, the
    rest of a short one): aiohttp checks only that the socket is open, so those bytes
    became the next request's answer (``wire="botocore"`` under ``AsyncSession``).

    aiobotocore: overrides ``AIOHTTPSession._create_connector`` (the one place its
    connector is made; ``AioConfig(http_session_cls=...)`` is public). aiohttp: wraps the
    connector's ``_get`` (which takes a pooled connection) to drop, first, every pooled
    protocol whose public ``should_close`` says it holds unread data, reading the pool
    ``_conns``."""
    from aiobotocore.httpsession import AIOHTTPSession

    class CheckedSession(AIOHTTPSession):  # type: ignore[misc]
        async def _create_connector(self, proxy_url: Any) -> Any:
            connector = await super()._create_connector(proxy_url)
            take = connector._get

            async def _get(key: Any, traces: Any) -> Any:
                pooled = connector._conns.get(key)
                if pooled:
                    for entry in [e for e in pooled if e[0].should_close]:
                        pooled.remove(entry)
                        entry[0].close()
                    if not pooled:
                        del connector._conns[key]
                return await take(key, traces)

            connector._get = _get
            return connector

    return CheckedSession
