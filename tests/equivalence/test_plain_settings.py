"""The plain environment's fast path (:func:`dynaorm.client.plain.plain_settings`: no
botocore session) against the botocore session, over generated environments: random
subsets of the variables botocore reads (credentials, regions, endpoints, profiles, CA
bundles, proxies, Lambda's), shared config and credentials files present or not. Whenever
the fast path declines, fine; whenever it accepts, the wire's settings, the credentials,
``max_attempts``, the configured endpoint and the request it signs (every header,
``Authorization`` included, for a fixed clock) are those of the session's path, and the
signature is the one botocore's own ``SigV4Auth`` computes."""

from __future__ import annotations

import configparser
import dataclasses
import datetime
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import botocore.auth
import botocore.session
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from dynaorm import Client, DynaormError, RequestError, Table
from dynaorm.client.plain import (
    ALLOWED,
    PROFILE_KEYS,
    PlainCredentials,
    plain_settings,
    user_agent,
)
from dynaorm.client.plain import light_settings as light_client
from dynaorm.client.settings import (
    configured_endpoint,
    credentials_for,
    resolve_max_attempts,
)
from dynaorm.protocol.policy import DEFAULT_MAX_ATTEMPTS
from dynaorm.wire import WireSettings, sigv4
from dynaorm.wire.endpoint import client_endpoint
from tests.support.examples import examples
from tests.support.loaders import shared_loaders

FROZEN = datetime.datetime(2026, 11, 24, 8, 30, 15, tzinfo=datetime.UTC)

#: variables and the values they may take (the first ones the plain environment's)
_VARIABLES: dict[str, list[str]] = {
    "AWS_ACCESS_KEY_ID": ["AKIDEXAMPLE", "", "AKID WITH SPACE"],
    "AWS_SECRET_ACCESS_KEY": ["wJalrXUtnFEMI/K7MDENG", ""],
    "AWS_SESSION_TOKEN": ["IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJGMEQ", ""],
    "AWS_SECURITY_TOKEN": ["legacy-token", ""],
    "AWS_REGION": ["eu-west-1", "", "cn-north-1", "us-gov-west-1", "us east 1", "il-central-1"],
    "AWS_DEFAULT_REGION": ["us-east-2", "", "ap-southeast-4", "-bad"],
    "AWS_EXECUTION_ENV": ["AWS_Lambda_python3.11", "odd env/1 #x", ""],
    "AWS_LAMBDA_FUNCTION_NAME": ["orders"],
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": ["512"],
    "AWS_XRAY_CONTEXT_MISSING": ["LOG_ERROR"],
    "_X_AMZN_TRACE_ID": ["Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8"],
    "AWS_ENDPOINT_URL_DYNAMODB": ["http://127.0.0.1:8123"],
    "AWS_ENDPOINT_URL": ["http://127.0.0.1:8124"],
    "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": ["true"],
    "AWS_CA_BUNDLE": ["/nonexistent/ca.pem"],
    "REQUESTS_CA_BUNDLE": ["/nonexistent/requests.pem"],
    "HTTPS_PROXY": ["http://proxy.test:3128", ""],
    "no_proxy": ["*"],
    "AWS_PROFILE": ["other"],
    "AWS_DEFAULT_PROFILE": ["other"],
    "AWS_CREDENTIAL_EXPIRATION": ["2999-01-01T00:00:00Z"],
    "AWS_ACCOUNT_ID": ["123456789012"],
    "AWS_USE_FIPS_ENDPOINT": ["true"],
    "AWS_USE_DUALSTACK_ENDPOINT": ["true"],
    "AWS_DEFAULTS_MODE": ["standard"],
    "AWS_MAX_ATTEMPTS": ["2", "", "0", "three", " 7 ", "-1", "2.0"],
    "AWS_RETRY_MODE": ["adaptive", "legacy"],
    "AWS_SDK_UA_APP_ID": ["myapp"],
    "AWS_SOMETHING_NEW": ["1"],
    "BOTO_DISABLE_CRT": ["true"],
}
_CONFIG = ["[default]\nregion = sa-east-1\n", "[default]\nendpoint_url = http://127.0.0.1:9\n",
           "[other]\nregion = eu-north-1\n", "", "[default]\nregion = ap-south-1\noutput = json\n",
           "[profile default]\nRegion = eu-south-1\n", "[default]\nmax_attempts = 3\n",
           "[default]\nregion =\n  nested = x\n", "[default]\nregion = us west\n",
           "[default]\nregion = us-west-1\n[profile other]\nendpoint_url = http://x:1\n",
           "[default]\nregion = eu-west-2\nretry_mode = adaptive\n",
           "[default]\nregion = eu-west-2\nmax_attempts = 0\n", "[default]\nmax_attempts = x\n",
           "[default]\nmax_attempts =\n  nested = x\n", "[profile other]\nmax_attempts = 4\n",
           "[default]\nregion = eu-west-2\nca_bundle = /x.pem\n",
           "[default]\nretry_mode = standard\n[other]\nretry_mode = legacy\n",
           "[default]\nregion = eu-west-2\nservices = mine\n[services mine]\ndynamodb =\n"
           "  endpoint_url = http://127.0.0.1:9\n", "not an ini file [", "[default]\nregion\n"]
_CREDENTIALS = ["[default]\naws_access_key_id = FILEKEY\naws_secret_access_key = FILESECRET\n",
                "[default]\nregion = me-south-1\n", "",
                "[default]\naws_session_token = FILETOKEN\n", "[default]\nca_bundle = /x.pem\n",
                "[default]\nmax_attempts = 6\n", "[default]\nmax_attempts = -2\n"]
_ENDPOINTS = [None, "http://localhost:8000", "http://127.0.0.1:8000/", "https://dynamodb.example.test",
              "https://dynamodb.example.test:4443", "http://example.test:80",
              "https://Example.test", "http://[::1]:8000", "https://db.example.test/path",
              "http://localhost:99999", "https://user@db.example.test"]
_REGIONS = [None, "eu-central-1", "us-east-1", "cn-northwest-1"]


def _clear() -> dict[str, str]:
    """The environment without anything botocore or urllib reads."""
    return {k: v for k, v in os.environ.items() if not (
        k.startswith(("AWS_", "BOTO", "_X_AMZN")) or k.lower().endswith("_proxy")
        or k == "REQUESTS_CA_BUNDLE")}


def _seen(settings: WireSettings) -> dict[str, Any]:
    return ({k: v for k, v in vars(settings).items()
             if k not in ("_credentials", "_signer", "endpoint")}
            | {k: v for k, v in vars(settings.endpoint).items() if k != "credentials"}
            | {"signer": (settings._signer.host, settings._signer.region,
                          settings._signer.fast)})


def _signed(settings: WireSettings) -> dict[str, str]:
    request = {"TableName": "things", "Key": {"pk": {"S": "A#1"}, "sk": {"S": "A"}},
               "ConsistentRead": True}
    return settings.prepare("GetItem", request)[1]


def _botocore_signed(settings: WireSettings, credentials: Any,
                     headers: dict[str, str], body: bytes) -> dict[str, str]:
    sent = {k: v for k, v in headers.items()
            if k in ("Content-Type", "X-Amz-Target", "User-Agent")}
    request = AWSRequest(method="POST", url=settings.endpoint.url, data=body, headers=sent)
    SigV4Auth(credentials, "dynamodb", settings.endpoint.region).add_auth(request)
    return {str(k): str(v) for k, v in request.headers.items()}


def _attempts(read: Callable[[], int]) -> int | str:
    """``read()``, or the message of the DynaormError it raises."""
    try:
        return read()
    except DynaormError as exc:
        return str(exc)


def _compare(endpoint_url: str | None, region: str | None, config: Any = None) -> bool:
    """Whether the fast path accepted; when it did, assert it matches the session's (and,
    but for the ``User-Agent``'s business metrics, the botocore client's)."""
    fast = plain_settings(endpoint_url, region, config)
    if fast is None:
        return False
    session = botocore.session.get_session()
    credentials = credentials_for(endpoint_url, session)
    assert type(credentials).__name__ == "Credentials"  # not refreshable
    assert fast.credentials == PlainCredentials(*credentials.get_frozen_credentials()[:3])
    assert credentials.account_id is None and fast.credentials.account_id is None
    client = Client(endpoint_url, region, config=config)
    assert client._plain is not None
    assert _attempts(lambda: client.max_attempts) == _attempts(
        lambda: resolve_max_attempts(None, session))
    assert client._session is None  # (read without a botocore session)
    assert configured_endpoint(endpoint_url, session) == endpoint_url
    light = light_client(endpoint_url, region, owner="t", config=config, session=session,
                         credentials=credentials)
    assert light is not None  # the session's path makes no client either
    slow_settings = WireSettings(light)
    fast_settings = WireSettings(fast)
    assert _seen(fast_settings) == _seen(slow_settings)
    # the botocore client itself: the same endpoint, region, and (but for botocore's
    # business-metrics token, which names features making a client used) User-Agent
    made = client.botocore  # (the client's own builder)
    own = client_endpoint(made, credentials)
    assert (made.meta.endpoint_url, made.meta.region_name) == (
        fast_settings.endpoint.url, fast_settings.endpoint.region)
    assert fast.user_agent.split() == [t for t in own.user_agent.split()
                                       if not t.startswith("m/")]
    assert dataclasses.replace(fast, user_agent="", credentials=None) == (
        dataclasses.replace(own, user_agent="", credentials=None))
    signed = _signed(fast_settings)
    assert signed == _signed(slow_settings)
    body = fast_settings.prepare("GetItem", {"TableName": "things", "Key": {
        "pk": {"S": "A#1"}, "sk": {"S": "A"}}, "ConsistentRead": True})[0]
    theirs = _botocore_signed(slow_settings, credentials, signed, body)
    for name in ("Authorization", "X-Amz-Date", "X-Amz-Security-Token"):
        assert signed.get(name) == theirs.get(name), name
    return True


@pytest.fixture(scope="module", autouse=True)
def _parsed_once() -> Iterator[None]:
    with shared_loaders():
        yield


#: the signer's own clock, before a test freezes it
_REAL_STAMP = sigv4._stamp


@pytest.fixture(autouse=True)
def _frozen_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both signers at one instant: botocore's (its ``get_current_datetime``) and
    dynaorm's own (:func:`dynaorm.wire.sigv4._stamp`)."""
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda *a, **k: FROZEN)
    monkeypatch.setattr(sigv4, "_stamp", lambda: FROZEN.strftime("%Y%m%dT%H%M%SZ"))


_TAKEN = sorted(n for n in _VARIABLES if n in ALLOWED or n.startswith(("AWS_LAMBDA_", "_X")))
_OTHERS = sorted(set(_VARIABLES) - set(_TAKEN))


@settings(max_examples=examples(100), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(taken=st.dictionaries(st.sampled_from(_TAKEN), st.integers(0, 5), max_size=8),
       others=st.just({}) | st.dictionaries(st.sampled_from(_OTHERS), st.integers(0, 5),
                                            max_size=4),
       plain=st.booleans(), config=st.sampled_from([None, None, *_CONFIG]),
       shared=st.sampled_from([None, None, *_CREDENTIALS]), named=st.booleans(),
       endpoint_url=st.sampled_from(_ENDPOINTS), region=st.sampled_from(_REGIONS))
def test_the_fast_path_resolves_what_botocore_resolves(
        taken: dict[str, int], others: dict[str, int], plain: bool, config: str | None,
        shared: str | None, named: bool, endpoint_url: str | None, region: str | None,
        ) -> None:
    _run(taken | others, plain, config, shared, named, endpoint_url, region)


@settings(max_examples=examples(60), deadline=None)
@given(taken=st.dictionaries(st.sampled_from(_TAKEN), st.integers(0, 5), max_size=10),
       named=st.booleans(), endpoint_url=st.sampled_from(_ENDPOINTS[:6]),
       region=st.sampled_from(_REGIONS))
def test_the_fast_path_resolves_what_botocore_resolves_in_plain_environments(
        taken: dict[str, int], named: bool, endpoint_url: str | None, region: str | None,
        ) -> None:
    """The same, over environments made of the allowed variables only (most accepted)."""
    _run(taken, True, None, None, named, endpoint_url, region)


@settings(max_examples=examples(60), deadline=None)
@given(config=st.sampled_from([None, *_CONFIG]), shared=st.sampled_from([None, *_CREDENTIALS]),
       regions=st.dictionaries(st.sampled_from(["AWS_REGION", "AWS_DEFAULT_REGION"]),
                               st.integers(0, 5), max_size=2),
       named=st.booleans(), endpoint_url=st.sampled_from(_ENDPOINTS[:6]),
       region=st.sampled_from(_REGIONS))
def test_the_fast_path_resolves_what_botocore_resolves_with_shared_files(
        config: str | None, shared: str | None, regions: dict[str, int], named: bool,
        endpoint_url: str | None, region: str | None) -> None:
    """The same, with credentials in the environment and shared files of every kind (the
    profile's region read where the environment names none)."""
    credentials = {"AWS_ACCESS_KEY_ID": 0, "AWS_SECRET_ACCESS_KEY": 0}
    _run(credentials | regions, False, config, shared, named, endpoint_url, region)


def _run(variables: dict[str, int], plain: bool, config: str | None, shared: str | None,
         named: bool, endpoint_url: str | None, region: str | None) -> None:
    environ = _clear()
    if plain:  # half the examples start from the plain environment
        environ.update(AWS_ACCESS_KEY_ID="AKIDPLAIN", AWS_SECRET_ACCESS_KEY="secretplain",
                       AWS_DEFAULT_REGION="eu-west-3")
    for name, pick in variables.items():
        values = _VARIABLES[name]
        environ[name] = values[pick % len(values)]
    with tempfile.TemporaryDirectory() as home, pytest.MonkeyPatch.context() as patch:
        environ["HOME"] = home
        aws = Path(home) / ".aws"
        if named:  # the files' paths given by variables, else the defaults under ~/.aws
            environ["AWS_CONFIG_FILE"] = str(Path(home) / "cfg")
            environ["AWS_SHARED_CREDENTIALS_FILE"] = str(Path(home) / "creds")
        for text, name, default in ((config, "AWS_CONFIG_FILE", aws / "config"),
                                    (shared, "AWS_SHARED_CREDENTIALS_FILE",
                                     aws / "credentials")):
            if text is not None:
                path = Path(environ.get(name, str(default)))
                path.parent.mkdir(exist_ok=True)
                path.write_text(text)
        for name in list(os.environ):
            patch.delenv(name)
        for name, value in environ.items():
            patch.setenv(name, value)
        accepted = _compare(endpoint_url, region)
    event(("accepted" if accepted else "declined")
          + (" with a shared file" if (config, shared) != (None, None) else ""))
    if accepted:  # what the fast path may accept at all: files of a plain default profile
        for text in (config, shared):
            assert text is None or _default_keys(text) <= PROFILE_KEYS, text
        assert all(name in ALLOWED or name.startswith(("AWS_LAMBDA_", "_X_AMZN"))
                   or name in ("HTTPS_PROXY", "REQUESTS_CA_BUNDLE") for name in variables)


def _default_keys(text: str) -> set[str]:
    """The keys of the ``default`` profile of a shared file's ``text``."""
    parser = configparser.RawConfigParser()
    parser.read_string(text)
    return {key for section in ("default", "profile default") if parser.has_section(section)
            for key in parser.options(section)}



@pytest.mark.parametrize("endpoint_url, region, extra", [
    (None, None, {}),
    ("http://localhost:8000", None, {"AWS_DEFAULT_REGION": ""}),
    ("http://127.0.0.1:8000/", "us-west-2", {"AWS_SESSION_TOKEN": "tok"}),
    ("https://dynamodb.example.test:4443", None, {"AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
                                                  "AWS_LAMBDA_FUNCTION_NAME": "f",
                                                  "_X_AMZN_TRACE_ID": "Root=1-a-b"}),
    (None, "ap-northeast-3", {"AWS_SECURITY_TOKEN": "old", "AWS_SESSION_TOKEN": "new"}),
    (None, None, {"AWS_CA_BUNDLE": "/etc/ssl/corporate.pem"}),  # (a Lambda's, a proxy's CA)
    (None, None, {"REQUESTS_CA_BUNDLE": "/etc/ssl/requests.pem"}),
    (None, None, {"AWS_CA_BUNDLE": "/a.pem", "REQUESTS_CA_BUNDLE": "/b.pem"}),
    (None, None, {"AWS_RETRY_MODE": "adaptive"}),  # (a client's Config sets its own)
    (None, None, {"AWS_MAX_ATTEMPTS": "3"}),  # (read by dynaorm: botocore's retries are off)
])
def test_the_plain_environments_are_taken(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                          endpoint_url: str | None, region: str | None,
                                          extra: dict[str, str]) -> None:
    """The environments the fast path exists for are accepted (and match botocore)."""
    for name in os.environ:
        if name not in _clear():
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    for name, value in {"AWS_ACCESS_KEY_ID": "AKID", "AWS_SECRET_ACCESS_KEY": "SECRET",
                        "AWS_REGION": "eu-west-1", **extra}.items():
        monkeypatch.setenv(name, value)
    assert _compare(endpoint_url, region)


@pytest.mark.parametrize("change", [
    {"AWS_PROFILE": "missing"}, {"AWS_PROFILE": "default"}, {"AWS_PROFILE": ""},
    {"AWS_DEFAULT_PROFILE": "x"},
    {"REQUESTS_CA_BUNDLE": ""}, {"https_proxy": "http://p:1"}, {"ALL_PROXY": "http://p:1"},
    {"AWS_ENDPOINT_URL": "http://127.0.0.1:1"}, {"AWS_ROLE_ARN": "arn:aws:iam::1:role/r"},
    {"AWS_WEB_IDENTITY_TOKEN_FILE": "/t"}, {"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "/v2"},
    {"AWS_DATA_PATH": "/models"}, {"BOTOCORE_EXPERIMENTAL__PLUGINS": "x=y"},
    {"AWS_CREDENTIAL_EXPIRATION": "2999-01-01T00:00:00Z"}, {"AWS_ACCOUNT_ID": "1"},
    {"AWS_SECRET_ACCESS_KEY": ""}, {"AWS_ACCESS_KEY_ID": ""}, {"AWS_REGION": "cn-north-1"},
    {"AWS_REGION": ""}, {"AWS_UNKNOWN": "1"},
])
def test_anything_else_declines(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                change: dict[str, str]) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    environ = {**_clear(), "HOME": str(tmp_path), "AWS_ACCESS_KEY_ID": "AKID",
               "AWS_SECRET_ACCESS_KEY": "SECRET", "AWS_REGION": "eu-west-1"}
    assert plain_settings(None, None, environ=environ) is not None
    assert plain_settings(None, None, environ=environ | change) is None


@pytest.mark.parametrize("path, plain, declined", [
    (".aws/config", "[default]\nregion = eu-west-2\noutput = json\nretry_mode = adaptive\n"
     "max_attempts = 3\n", "[default]\nregion = eu-west-2\nca_bundle = /etc/ssl/ca.pem\n"),
    (".aws/credentials", "[default]\naws_access_key_id = A\naws_secret_access_key = S\n",
     "[default]\naws_access_key_id = A\ncredential_process = /bin/creds\n"),
    (".aws/config", "", "[default\nregion = eu-west-2\n"),
    (".aws/models", None, ""),
])
def test_a_file_under_aws_declines_unless_its_default_profile_is_plain(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, path: str, plain: str | None,
        declined: str) -> None:
    """A shared file is read: its ``default`` profile may hold a region, the output format,
    credentials, ``retry_mode`` and ``max_attempts``; any other key, a file that does not
    parse, or ``~/.aws/models`` (even empty) leaves the environment to the session."""
    monkeypatch.setenv("HOME", str(tmp_path))
    environ = {**_clear(), "HOME": str(tmp_path), "AWS_ACCESS_KEY_ID": "AKID",
               "AWS_SECRET_ACCESS_KEY": "SECRET", "AWS_REGION": "eu-west-1"}
    (tmp_path / ".aws").mkdir()
    assert plain_settings(None, None, environ=environ) is not None
    if plain is not None:
        (tmp_path / path).write_text(plain)
        assert plain_settings(None, None, environ=environ) is not None
    (tmp_path / path).write_text(declined)
    assert plain_settings(None, None, environ=environ) is None


#: shared files botocore reads in its own way, and the region each resolves to (``None``:
#: the fast path leaves it to the session): the profile named two ways (the later section
#: is the profile), keys in capitals, comments, a value continued or nested, a byte order
#: mark, a duplicate key or section, a region botocore would refuse
_ODD_FILES: list[tuple[bytes, bytes | None, str | None]] = [
    (b"[default]\nregion = eu-west-1\n[profile default]\nregion = eu-north-1\n", None,
     "eu-north-1"),
    (b"[profile default]\nregion = eu-north-1\n[default]\nregion = eu-west-1\n", None,
     "eu-west-1"),
    (b"[profile default]\nregion = eu-north-1\n[default]\noutput = json\n", None, None),
    (b'[profile "default"]\nregion = eu-north-1\n', None, "eu-north-1"),
    (b"[default]\nREGION = eu-west-1\nOutput = json\n", None, "eu-west-1"),
    (b"# c\n[default]\n; c\nregion: eu-west-1\n# region = us-east-1\n", None, "eu-west-1"),
    (b"[default]\nregion = eu-west-1 ; not a comment here\n", None, None),
    (b"[default]\nregion = eu-west-1\n  continued\n", None, None),
    (b"[default]\nregion = eu-west-1\noutput =\n  nested = x\n", None, "eu-west-1"),
    (b"\xef\xbb\xbf[default]\nregion = eu-west-1\n", None, None),
    (b"[default]\nregion = eu-west-1\nregion = eu-north-1\n", None, None),
    (b"[default]\nregion = eu-west-1\n[default]\noutput = json\n", None, None),
    ("[default]\nregion = eu-west-\u0661\n".encode(), None, None),
    (b"[default]\nregion = EU-WEST-1\n", None, None),
    (b"[default]\nregion = eu-west-1\n", b"[default]\nregion = me-south-1\n", "me-south-1"),
    (b"[default]\nregion = eu-west-1\n", b"[profile default]\nregion = me-south-1\n",
     "eu-west-1"),
    (b"[default]\nregion = eu-west-1\n", b"[default]\nregion =\n", None),
    (b"[default]\nregion = eu-west-1\n", b"[default]\naws_account_id = 123456789012\n",
     None),
]


def _credentials_only(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """The environment of credentials alone, ``home`` its home directory."""
    for name in set(os.environ) - set(_clear()):
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKID")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "SECRET")


@pytest.mark.parametrize("config, shared, region", _ODD_FILES)
def test_odd_shared_files_resolve_as_the_session_resolves_them(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, config: bytes, shared: bytes | None,
        region: str | None) -> None:
    """Shared files botocore parses in its own way: what the fast path accepts, it
    resolves as the session does (its region, the request it signs); what it cannot
    tell, it declines."""
    _credentials_only(monkeypatch, tmp_path)
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "config").write_bytes(config)
    if shared is not None:
        (tmp_path / ".aws" / "credentials").write_bytes(shared)
    assert _compare(None, None) is (region is not None)
    found = plain_settings(None, None)
    assert (found and found.region) == region


def test_shared_files_are_found_where_the_session_finds_them(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A variable in a file's path is expanded as botocore expands it; a directory at the
    config file's path (botocore reads no config there) declines."""
    _credentials_only(monkeypatch, tmp_path)
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "cfg").write_text("[default]\nregion = sa-east-1\n")
    monkeypatch.setenv("CONFDIR", str(tmp_path / "conf"))
    monkeypatch.setenv("AWS_CONFIG_FILE", "$CONFDIR/cfg")
    assert _compare(None, None)
    found = plain_settings(None, None)
    assert found is not None and found.region == "sa-east-1"
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "conf"))
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    assert plain_settings(None, None) is None
    assert Client().botocore.meta.region_name == (
        "eu-west-1")


@pytest.mark.parametrize("variable, profile, error", [
    ("three", None, ": invalid literal for int() with base 10: 'three'"),
    ("", "max_attempts = 4", ": invalid literal for int() with base 10: ''"),  # (set, empty)
    ("2.0", None, ": invalid literal for int() with base 10: '2.0'"),
    ("0", None, ", got 0"),
    ("-1", "max_attempts = 4", ", got -1"),
    (None, "max_attempts = x", ": invalid literal for int() with base 10: 'x'"),
    (None, "max_attempts = 0", ", got 0"),
    (None, "max_attempts =\n  nested = x", ": int() argument must be a string, a bytes-like "
     "object or a real number, not 'dict'"),
])
def test_a_bad_configured_max_attempts_fails_alike_on_the_plain_path(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, variable: str | None,
        profile: str | None, error: str) -> None:
    """``AWS_MAX_ATTEMPTS`` (set, even empty) or else the profile's ``max_attempts`` that
    is not an int >= 1: the plain client's first request raises, before anything is sent
    and without a botocore session, the DynaormError the session's path raises."""
    _credentials_only(monkeypatch, tmp_path)
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    if variable is not None:
        monkeypatch.setenv("AWS_MAX_ATTEMPTS", variable)
    if profile is not None:
        (tmp_path / ".aws").mkdir()
        (tmp_path / ".aws" / "config").write_text(f"[default]\n{profile}\n")
    client = Client("http://127.0.0.1:9")  # (nothing listens there: nothing may be sent)
    with pytest.raises(DynaormError) as raised:
        Table("things", client=client).exists()
    assert client._plain is not None and client._session is None
    with pytest.raises(DynaormError) as theirs:
        resolve_max_attempts(None, botocore.session.get_session())
    assert str(raised.value) == str(theirs.value) == (
        "Client: AWS_MAX_ATTEMPTS / the profile's max_attempts must be an int >= 1" + error)


@pytest.mark.parametrize("variable, profile, attempts", [
    (None, "[default]\nmax_attempts = 2\n", 2), ("3", "[default]\nmax_attempts = 2\n", 3),
    (" 2 ", None, 2), (None, "[default]\nregion = eu-west-1\n", DEFAULT_MAX_ATTEMPTS),
])
def test_the_plain_path_makes_the_configured_attempts(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, variable: str | None,
        profile: str | None, attempts: int) -> None:
    """A configured ``max_attempts`` keeps the plain path, and is the number of requests a
    throttled one gets (a loopback server that always throttles)."""
    from tests.support.hostile import Reply, answer, serving

    _credentials_only(monkeypatch, tmp_path)
    if variable is not None:
        monkeypatch.setenv("AWS_MAX_ATTEMPTS", variable)
    if profile is not None:
        (tmp_path / ".aws").mkdir()
        (tmp_path / ".aws" / "config").write_text(profile)
    throttled = answer(b'{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException"}',
                       status="400 Bad Request")
    with serving(lambda n, body: Reply(throttled)) as server:
        client = Client(server.url, "eu-west-1", max_wait=0)  # (retries without waiting)
        try:
            with pytest.raises(RequestError, match=f"after {attempts} attempts"):
                Table("things", client=client).exists()
        finally:
            client.close()
    assert client._plain is not None and client._session is None
    assert client.max_attempts == attempts == len(server.bodies)


def test_the_profiles_region_comes_after_the_environments(monkeypatch: pytest.MonkeyPatch,
                                                          tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "config").write_text("[default]\nregion = ap-south-1\n")
    environ = {**_clear(), "HOME": str(tmp_path), "AWS_ACCESS_KEY_ID": "AKID",
               "AWS_SECRET_ACCESS_KEY": "SECRET"}
    for extra, region in (({}, "ap-south-1"), ({"AWS_DEFAULT_REGION": "eu-west-3"}, "eu-west-3"),
                          ({"AWS_REGION": "us-west-2"}, "us-west-2")):
        found = plain_settings(None, None, environ=environ | extra)
        assert found is not None and found.region == region
    # (an empty AWS_DEFAULT_REGION is botocore's region: the profile's is not read)
    assert plain_settings(None, None, environ=environ | {"AWS_DEFAULT_REGION": ""}) is None


def test_a_config_or_a_mock_declines(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import botocore.config

    from dynaorm.client.client import in_process_mock

    environ = {**_clear(), "HOME": str(tmp_path), "AWS_ACCESS_KEY_ID": "AKID",
               "AWS_SECRET_ACCESS_KEY": "SECRET", "AWS_REGION": "eu-west-1"}
    assert plain_settings(None, None, botocore.config.Config(), environ=environ) is not None
    for declined in ({"tcp_keepalive": True}, {"user_agent": "mine/1"},
                     {"signature_version": "v4"}, {"user_agent_appid": "app"},
                     {"defaults_mode": "standard"}, {"read_timeout": 5, "tcp_keepalive": False}):
        config = botocore.config.Config(**declined)
        assert plain_settings(None, None, config, environ=environ) is None, declined
    with in_process_mock():
        assert plain_settings(None, None, environ=environ) is None


#: ``Config`` options the fast path takes (:data:`~dynaorm.client.plain.PLAIN_OPTIONS`)
_PLAIN_CONFIGS: list[dict[str, Any]] = [
    {"connect_timeout": 3, "read_timeout": 7.5, "max_pool_connections": 5},
    {"read_timeout": 5},
    {"connect_timeout": None, "read_timeout": None, "max_pool_connections": 0},
    {"retries": {"max_attempts": 2, "mode": "adaptive"}},
    {"retries": {"total_max_attempts": 9, "mode": "legacy"}, "parameter_validation": True},
    {"region_name": "ap-southeast-2"},
    {"region_name": "cn-north-1"},
    {"user_agent_extra": "myapp/1.2 framework/x"},
    {"user_agent_extra": "ua/2.1"},  # (already in botocore's agent: there twice)
    {"user_agent_extra": "bad\r\nX-Injected: 1 caf\u00e9/2#x"},
    {"proxies": {"https": "http://user:p%40ss@proxy.test:3128"},
     "proxies_config": {"proxy_use_forwarding_for_https": True}},
    {"proxies": {"http": "http://proxy.test:3128"}},
    {"client_cert": ("/certs/client.pem", "/certs/client.key"), "read_timeout": 1},
]


@pytest.mark.parametrize("endpoint_url", [None, "http://127.0.0.1:8000", "https://db.test"])
@pytest.mark.parametrize("options", _PLAIN_CONFIGS)
def test_a_config_of_plain_options_resolves_what_botocore_resolves(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, options: dict[str, Any],
        endpoint_url: str | None) -> None:
    """A ``Config`` setting only options the own wire reads itself keeps the fast path,
    and resolves the endpoint, region, timeouts, pool, proxy, client certificate,
    ``User-Agent``, attempts and signature botocore's session and client resolve."""
    import botocore.config

    from dynaorm import Client

    _credentials_only(monkeypatch, tmp_path)
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    config = botocore.config.Config(**options)
    accepted = _compare(endpoint_url, None, config)
    assert accepted is (endpoint_url is not None or options.get("region_name") != "cn-north-1")
    client = Client(endpoint_url, config=config)
    assert (client._plain is not None) is accepted
    assert client.max_attempts == DEFAULT_MAX_ATTEMPTS  # (a Config's retries are botocore's)
    if accepted:
        assert client._plain is not None and client._plain.connect_timeout == options.get(
            "connect_timeout", 15) and client._plain.read_timeout == options.get(
            "read_timeout", 30)


@given(st.text(max_size=30))
@settings(max_examples=examples(200), deadline=None)
def test_the_user_agent_sanitizing_is_botocores(raw: str) -> None:
    from botocore.useragent import sanitize_user_agent_string_component

    from dynaorm.wire.endpoint import sanitized

    for allow in (False, True):
        assert sanitized(raw, allow_hash=allow) == sanitize_user_agent_string_component(
            raw, allow)


def test_the_user_agent_is_botocores(monkeypatch: pytest.MonkeyPatch) -> None:
    from botocore.config import Config
    from botocore.useragent import UserAgentString

    from dynaorm.client.settings import CONFIG_DEFAULTS

    config = Config(**CONFIG_DEFAULTS, retries={"total_max_attempts": 1, "mode": "standard"},
                    parameter_validation=False)
    for env in ("", "AWS_Lambda_python3.11", "we?rd/#1 x"):
        monkeypatch.setenv("AWS_EXECUTION_ENV", env)
        made = UserAgentString.from_environment().set_session_config(
            "Botocore", botocore.__version__, "").with_client_config(config).to_string()
        assert user_agent(os.environ) == made


@pytest.mark.parametrize("keylog", [None, "keys.log"])
def test_the_tls_context_is_botocores(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                      keylog: str | None) -> None:
    """The TLS context made without ``botocore.httpsession`` is the one botocore's
    ``create_urllib3_context`` makes (with the urllib3 installed here)."""
    from botocore.httpsession import create_urllib3_context

    from dynaorm.wire import http

    if keylog is not None:
        monkeypatch.setenv("SSLKEYLOGFILE", str(tmp_path / keylog))
    assert http._urllib3_major() is not None and http._urllib3_major() >= 2
    monkeypatch.delitem(__import__("sys").modules, "botocore.httpsession")
    own = http._base_context()
    theirs = create_urllib3_context()

    def seen(context: Any) -> tuple[Any, ...]:
        return (context.protocol, context.options, context.verify_mode, context.check_hostname,
                context.post_handshake_auth, context.minimum_version, context.maximum_version,
                [c["name"] for c in context.get_ciphers()], context.keylog_filename,
                context.verify_flags)

    assert seen(own) == seen(theirs)


def test_the_signer_stamps_the_current_utc_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The signer reads the time itself, with or without ``botocore.auth`` loaded (the
    plain environment's first request): ``X-Amz-Date`` is now, in UTC, whatever the
    local zone (botocore's ``get_current_datetime`` is UTC too)."""
    import sys
    import time

    zone = os.environ.get("TZ")
    monkeypatch.setattr(sigv4, "_stamp", _REAL_STAMP)  # (not the frozen clock)
    monkeypatch.setenv("TZ", "America/St_Johns")  # (UTC-3:30: an error shows in minutes)
    monkeypatch.delitem(sys.modules, "botocore.auth")
    signer = sigv4.Signer("http://127.0.0.1:8000", "eu-west-1")
    time.tzset()
    try:
        before = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
        signed = signer.sign(b"{}", "DynamoDB_20120810.GetItem", "ua",
                             PlainCredentials("AKID", "SECRET", "TOKEN"))
        after = datetime.datetime.now(datetime.UTC)
    finally:
        if zone is None:  # (the process's zone back, for the next tests)
            monkeypatch.delenv("TZ")
        else:
            monkeypatch.setenv("TZ", zone)
        time.tzset()
    stamp = datetime.datetime.strptime(signed["X-Amz-Date"], "%Y%m%dT%H%M%SZ").replace(
        tzinfo=datetime.UTC)
    assert before <= stamp <= after
    assert f"/{stamp:%Y%m%d}/eu-west-1/dynamodb/aws4_request" in signed["Authorization"]


@settings(max_examples=examples(100), deadline=None)
@given(st.dictionaries(st.sampled_from(["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "ALL_PROXY",
                                        "all_proxy", "NO_PROXY", "no_proxy", "Ftp_Proxy",
                                        "REQUEST_METHOD", "PROXY"]),
                       st.sampled_from(["", "http://proxy.test:3128", "*", "GET"]), max_size=4),
       st.sampled_from(["https://dynamodb.eu-west-1.amazonaws.com", "http://127.0.0.1:8000"]))
def test_no_proxy_shortcut_is_botocores(variables: dict[str, str], url: str) -> None:
    """Where the wire skips botocore's proxy lookup (no ``*_proxy`` variable with a value),
    botocore's finds no proxy either."""
    from botocore.httpsession import ProxyConfiguration
    from botocore.utils import get_environ_proxies

    from dynaorm.wire.endpoint import _no_environ_proxies

    with pytest.MonkeyPatch.context() as patch:
        for name in list(os.environ):
            if name.lower().endswith("_proxy") or name == "REQUEST_METHOD":
                patch.delenv(name)
        for name, value in variables.items():
            patch.setenv(name, value)
        if _no_environ_proxies():
            found = get_environ_proxies(url)
            assert ProxyConfiguration(proxies=found).proxy_url_for(url) is None
        else:
            assert any(v and k.lower().endswith("_proxy") for k, v in variables.items())


def test_a_client_takes_the_fast_path_only_for_its_own_wire_and_a_plain_config(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import botocore.config

    from dynaorm import Client

    for name in os.environ:
        if name not in _clear():
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKID")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "SECRET")
    plain = Client("http://127.0.0.1:9", region="eu-west-1", max_attempts=1)
    assert plain._plain is not None and plain.max_attempts == 1
    assert plain.sync_wire is not None and plain._session is None
    assert Client(region="eu-west-1").max_attempts == DEFAULT_MAX_ATTEMPTS
    assert Client("http://127.0.0.1:9", region="eu-west-1", wire="botocore")._plain is None
    configured = Client("http://127.0.0.1:9", region="eu-west-1",
                        config=botocore.config.Config(read_timeout=3))
    assert configured._plain is not None
    assert configured.sync_wire.endpoint.read_timeout == 3 and configured._session is None
    kept = Client("http://127.0.0.1:9", region="eu-west-1",
                  config=botocore.config.Config(read_timeout=3, tcp_keepalive=True))
    assert kept._plain is None
    assert kept.sync_wire.endpoint.read_timeout == 3 and kept._session is not None
