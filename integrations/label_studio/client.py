"""Talk to a Label Studio server through ``label-studio-sdk`` (imported lazily): connect, check
the URL, token and project once (:func:`check_project`), list users' e-mails; every call is
classified (:func:`is_transient`): transient failures are retried with backoff, permanent ones
fail at once. Messages carry no response headers and no API token. Pushing is in :mod:`.push`."""
from __future__ import annotations

import os
import re
import time
from typing import Any, Callable, Iterable, Optional

from crowd_keras.arguments import check_count, check_number

from ._controls import INSTALL_HINT
from ._records import _integer_id

API_KEY_ENV = "LABEL_STUDIO_API_KEY"
# The SDK retries connection errors itself, also for POST: a lost reply would then duplicate a
# batch. push_predictions retries on its own, after checking what the server already holds.
_NO_RETRY = {"max_retries": 0}


class LabelStudioError(RuntimeError):
    """A call to a Label Studio server failed (message scrubbed of the API token).

    ``transient`` is True when retrying later may succeed (connection refused or reset,
    timeouts, HTTP 408/425/429/5xx) and False when it cannot (a bad token, an unknown
    project, a malformed URL, a request the server rejects).
    """

    def __init__(self, message: str, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


class PushInterrupted(KeyboardInterrupt):
    """A push stopped by the user (Ctrl-C): still a ``KeyboardInterrupt``, whose message is
    the stopped push's account (how far it got, what every task holds, what to do), as a
    :class:`LabelStudioError` of a push the server stopped carries it."""


_TOKEN_PATTERN = re.compile(r"(?i)\b(token|bearer)(\s+|=)([A-Za-z0-9._\-]{16,})")
# the password of a URL's user info (http://user:password@host: basic auth of a proxy)
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^/\s:@'\"]*:)([^@\s/'\"]+)@")


def _secrets_of(client: Any = None, api_key: Optional[str] = None) -> list:
    found = [api_key, os.environ.get(API_KEY_ENV)]
    wrapper = getattr(client, "_client_wrapper", None)
    tokens = getattr(wrapper, "_tokens_client", None)
    for obj, attr in ((tokens, "_api_key"), (tokens, "_access_token"), (wrapper, "api_key")):
        value = getattr(obj, attr, None) if obj is not None else None
        found.append(value if isinstance(value, str) else None)
    return sorted({s for s in found if s and len(s) >= 4}, key=len, reverse=True)


def _forms(secret: str) -> list:
    """How a secret may be written in a message: itself, escaped as in a ``repr`` (an HTTP
    library's "Illegal header value b'Token ...\\n...'"), and each part of it between
    whitespace."""
    forms = {secret, secret.encode("unicode_escape").decode("ascii"),
             repr(secret.encode("utf-8", "backslashreplace"))[2:-1]}
    forms.update(part for part in re.split(r"\s+", secret) if len(part) >= 6)
    return sorted(forms, key=len, reverse=True)


def _scrub(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        for form in _forms(secret):
            text = text.replace(form, "***")
    text = _URL_PASSWORD.sub(lambda m: f"{m.group(1)}***@", text)
    return _TOKEN_PATTERN.sub(lambda m: f"{m.group(1)}{m.group(2)}***", text)


_TAG = re.compile(r"<[^>]*>")


def _one_line(text: str, html: bool = False) -> str:
    """``text`` on one line (every run of whitespace one space), at most 500 characters;
    ``html``: a reply's text body (a server's or a proxy's HTML error page) without its tags."""
    return " ".join((_TAG.sub(" ", text) if html else text).split())[:500]


def _describe(exc: BaseException) -> str:
    """An exception as one line without response headers (they carry session cookies)."""
    status = getattr(exc, "status_code", None)
    if status is not None and hasattr(exc, "body"):
        body = exc.body
        if isinstance(body, dict):
            body = {k: v for k, v in body.items() if k in ("detail", "validation_errors")} or body
        return f"HTTP {status}: {_one_line(str(body), html=isinstance(body, str))}"
    return f"{type(exc).__name__}: {_one_line(str(exc))}"


def describe_error(exc: BaseException, client: Any = None) -> str:
    """An exception from the SDK as one line: no response headers, the API token scrubbed."""
    return _scrub(_describe(exc), _secrets_of(client))


def _tls_error(exc: BaseException) -> Optional[BaseException]:
    """The ``ssl.SSLError`` behind ``exc`` (httpx wraps it in a ``ConnectError``) when no
    retry can mend it, else None. A TLS connection cut short (``SSLEOFError``, the server
    going away mid-handshake) may pass on the next attempt."""
    import ssl

    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, ssl.SSLError):
            return None if isinstance(exc, (ssl.SSLEOFError, ssl.SSLZeroReturnError)) else exc
        exc = exc.__cause__ or exc.__context__
    return None


def is_transient(exc: BaseException) -> bool:
    """True for failures a later attempt may not meet: HTTP 408/425/429/5xx, connection
    errors (refused, reset, lost reply) and timeouts; False for the rest (401, 404, 400, a URL
    without ``http://``, ...)."""
    status = getattr(exc, "status_code", None)
    if status is not None:
        return status in (408, 425, 429) or status >= 500
    if _tls_error(exc) is not None:   # https:// to an http server, a certificate refused
        return False
    try:
        import httpx
        if isinstance(exc, (httpx.UnsupportedProtocol, httpx.InvalidURL,
                            httpx.LocalProtocolError)):
            return False
        if isinstance(exc, httpx.TransportError):
            return True
    except ImportError:  # pragma: no cover
        pass
    return isinstance(exc, (ConnectionError, TimeoutError))


def check_retries(retries: Any, backoff: Any) -> tuple[int, float]:
    """``(retries, backoff)`` checked before any request: an integer >= 0 and a finite
    number >= 0 of seconds, else an error naming the argument (``retries=-1`` ran no request
    at all and returned None, a string ``backoff`` failed in ``time.sleep`` mid-push)."""
    return check_count(retries, "retries", 0), check_number(backoff, "backoff")


def _call(fn: Callable[[], Any], what: str, secrets: list, retries: int, backoff: float,
          before_retry: Optional[Callable[[], None]] = None,
          explain: Optional[Callable[[BaseException], Optional[str]]] = None) -> Any:
    """``fn()``, retried ``retries`` times with exponential ``backoff`` on transient failures.

    Raises :class:`LabelStudioError` (``transient`` set) whose message says whether the call
    was retried; ``explain(exc)`` may give a plainer reason for a permanent failure.
    """
    for attempt in range(retries + 1):
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - classified below, re-raised scrubbed
            transient = is_transient(exc)
            if not transient:
                reason = (explain(exc) if explain else None) or _describe(exc)
                raise LabelStudioError(_scrub(f"{what} failed: {reason} (a permanent error: "
                                              "not retried)", secrets)) from None
            if attempt == retries:
                tried = (f"after {attempt + 1} attempt(s), retried with backoff" if attempt
                         else "(a transient error, not retried: no retries allowed)")
                raise LabelStudioError(_scrub(f"{what} failed {tried}: {_describe(exc)}",
                                              secrets), transient=True) from None
            time.sleep(backoff * 2 ** attempt)
            if before_retry is not None:
                before_retry()


def check_url(url: str, api_key: Optional[str] = None) -> str:
    """``url`` without a trailing slash; raises :class:`LabelStudioError` when it has no
    ``http://``/``https://`` scheme or no host (such a URL never works: not retried). The
    message shows the URL with ``api_key``, ``$LABEL_STUDIO_API_KEY`` and ``token=...``
    replaced by ``***``."""
    from urllib.parse import urlsplit

    parts = urlsplit(str(url))
    if parts.scheme not in ("http", "https") or not parts.netloc:
        if "://" not in str(url):
            message = (f"Label Studio URL {str(url)!r} has no scheme: use 'http://{url}' "
                       "(or https://)")
        else:
            message = (f"Label Studio URL {str(url)!r} needs http:// or https:// and a host, "
                       "as in 'http://localhost:8080'")
        raise LabelStudioError(_scrub(message, _secrets_of(api_key=api_key)))
    return str(url).rstrip("/")


def _check_token_characters(key: str, where: str) -> None:
    """Refuse a token with a character no token holds (tokens are ASCII letters, digits and
    ``.-_``), without showing it: a line break inside made the HTTP library's error print the
    header, token and all; a space (``Token <key>`` copied from a curl line) was refused by
    the server as a wrong token."""
    odd = next((n for n, ch in enumerate(key) if ch.isspace() or not ch.isprintable()
                or not ch.isascii()), None)
    if odd is None:
        return
    ch = key[odd]
    what = ("a line break" if ch in "\r\n" else "a space" if ch.isspace() else
            f"the character {ascii(ch)}")
    hint = (" (give the key alone, without the 'Token ' or 'Bearer ' of an Authorization "
            "header)" if key[:odd].lower() in ("token", "bearer") else "")
    raise LabelStudioError(f"the Label Studio API token ({where}) holds {what} at character "
                           f"{odd + 1} of {len(key)}, which no token holds{hint}: check it")


def connect(url: str, api_key: Optional[str] = None, *, timeout: float = 60.0) -> Any:
    """A ``label_studio_sdk.LabelStudio`` client (no SDK-side retries: ours are idempotent).

    The token comes from ``api_key`` or ``$LABEL_STUDIO_API_KEY``: a legacy token or a
    personal access token (a JWT refresh token, exchanged by the SDK under ``url``'s path);
    it is never printed. Whitespace around it (a token file's newline) is dropped: no token
    holds any; a token with a space, a line break or a non-ASCII character inside is refused
    (:class:`LabelStudioError`, naming the position only), an ``api_key`` that is not a
    ``str`` is a ``TypeError``.
    """
    try:
        from label_studio_sdk import LabelStudio
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError(f"talking to Label Studio needs label-studio-sdk; "
                          f"{INSTALL_HINT}") from None
    if api_key is not None and not isinstance(api_key, str):
        # bytes were sent as "b'...'" and refused as a wrong token; a path failed on .strip
        hint = ("decode it: key.decode()" if isinstance(api_key, (bytes, bytearray)) else
                "a file? read it: Path(file).read_text()"
                if isinstance(api_key, os.PathLike) else "the token itself")
        raise TypeError(f"api_key must be the API token as a string, got "
                        f"{type(api_key).__name__} ({hint})")
    key = (api_key or os.environ.get(API_KEY_ENV) or "").strip()
    url = check_url(url, key)
    if not key:
        raise LabelStudioError(f"no Label Studio API token: set the {API_KEY_ENV} environment "
                               "variable (Python: api_key=)")
    _check_token_characters(key, "api_key" if api_key else API_KEY_ENV)
    timeout = check_number(timeout, "timeout")   # a string failed only at the first request
    try:
        import httpx

        http = httpx.Client(timeout=timeout, follow_redirects=True,
                            event_hooks={"response": [_refresh_reply]})
        # the trailing slash keeps a path prefix (http://host/label-studio) in the URL of the
        # SDK's token exchange, which it joins with urljoin (its other requests keep it anyway)
        return LabelStudio(base_url=url + "/", api_key=key, timeout=timeout, max_retries=0,
                           httpx_client=http)
    except Exception as exc:  # noqa: BLE001
        raise LabelStudioError(_scrub(f"cannot create a client for {url}: {_describe(exc)}",
                                      [key])) from None


def _refresh_reply(response: Any) -> None:
    """httpx response hook: a failed exchange of a personal access token (a JWT refresh
    token, at ``api/token/refresh/``) raises the SDK's ``ApiError`` with its HTTP status.
    The SDK parses that reply as JSON: another server's 404 page, or a proxy's 502 page while
    Label Studio restarts, was a ``JSONDecodeError``, called permanent and never retried."""
    if response.status_code == 200 or not response.request.url.path.endswith(
            "/api/token/refresh/"):
        return
    from label_studio_sdk.core.api_error import ApiError

    response.read()
    try:
        body = response.json()
    except ValueError:
        body = response.text[:2000]
    raise ApiError(status_code=response.status_code, body=body)


def fetch_user_emails(client: Any, *, retries: int = 3, backoff: float = 0.5) -> dict:
    """{user id: e-mail} of the organisation's users (to fill the report's e-mails)."""
    retries, backoff = check_retries(retries, backoff)
    users = _call(lambda: client.users.list(request_options=_NO_RETRY), "listing users",
                  _secrets_of(client), retries, backoff)
    return {int(u.id): u.email for u in users if getattr(u, "id", None) is not None}


def _base_url(client: Any) -> str:
    wrapper = getattr(client, "_client_wrapper", None)
    try:
        return str(wrapper.get_base_url()).rstrip("/")
    except AttributeError:
        return "the server"


def _page_hint(url: str) -> str:
    """A hint when ``url`` is a page's address copied from the browser (a project's data
    manager, the login page) rather than the server's."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.query or parts.fragment or re.search(r"/(projects|user|tasks|data)(/|$)",
                                                  parts.path):
        return (f": it looks like a page's address, not the server's (try "
                f"{parts.scheme}://{parts.netloc})")
    return ""


def check_project(client: Any, project_id: int, *, retries: int = 3,
                  backoff: float = 0.5) -> Any:
    """Check the URL, the token and the project with one request (``GET /api/projects/<id>``)
    before anything is written; returns the project (its ``label_config`` included).

    Raises :class:`LabelStudioError` with a precise reason: the token refused (401/403),
    no such project (404 from the API), a URL that is not Label Studio's API (404 or an HTML
    page), all permanent and not retried; or the server unreachable after ``retries``
    retries with backoff (``transient=True``).
    """
    retries, backoff = check_retries(retries, backoff)
    # True or "abc" went to /api/projects/True and was reported as a wrong URL
    project_id = _integer_id(project_id, "check_project", "project_id")
    url = _base_url(client)

    def explain(exc: BaseException) -> Optional[str]:
        status, body = getattr(exc, "status_code", None), getattr(exc, "body", None)
        detail = body.get("detail") if isinstance(body, dict) else None
        if status == 401:
            return (f"{url} refused the API token (HTTP 401{': ' + detail if detail else ''}); "
                    f"check {API_KEY_ENV} (a legacy token or a personal access token)")
        if status == 403:
            return f"the token's user may not open project {project_id} on {url} (HTTP 403)"
        if status == 404 and detail:
            return f"project {project_id} does not exist on {url} (HTTP 404: {detail})"
        if status == 404 or (status is not None and not isinstance(body, dict)):
            return (f"{url} does not answer as a Label Studio API (HTTP {status} for "
                    f"/api/projects/{project_id}); check the URL{_page_hint(url)}")
        tls = _tls_error(exc) if status is None else None
        if tls is not None:
            return (f"the TLS connection to {url} failed ({_one_line(str(tls))[:200]}); "
                    "check http:// against https:// and the server's certificate")
        if status is None and "protocol" in str(exc).lower():
            return f"{url} is not an http(s) URL ({str(exc)[:200]})"
        return None

    return _call(lambda: client.projects.get(id=project_id, request_options=_NO_RETRY),
                 f"checking project {project_id} at {url}", _secrets_of(client), retries, backoff,
                 explain=explain)
