"""Label Studio client against loopback HTTP servers that are not Label Studio (another web
server at the given URL, a proxy answering 502 while Label Studio restarts, a path prefix,
https:// to http://) and tokens that are not plain text (found by the server-side push
hunt; no Label Studio server needed)."""
from __future__ import annotations

import http.server
import re
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("label_studio_sdk")
jwt = pytest.importorskip("jwt")   # PyJWT, a dependency of label-studio-sdk

from crowd_keras.integrations import label_studio as ls  # noqa: E402


def _personal_access_token() -> str:
    """A JWT refresh token shaped as Label Studio's personal access tokens (the SDK exchanges
    it at api/token/refresh/ before the first request)."""
    return jwt.encode({"token_type": "refresh", "exp": int(time.time()) + 3600,
                       "user_id": "1"}, "a key that is not the server's, 32 bytes or more",
                      algorithm="HS256")


@pytest.fixture()
def html_server():
    """A loopback server answering every request with ``state["status"]`` and an HTML page."""
    state = {"status": 404, "paths": []}

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self) -> None:
            state["paths"].append((self.command, self.path))
            body = f"<html><body><h1>{state['status']} Error</h1></body></html>".encode()
            self.send_response(state["status"])
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, *args) -> None:   # no request lines on stderr
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = False   # server_close() waits for the request threads
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state["url"] = f"http://127.0.0.1:{server.server_address[1]}"
    yield state
    server.shutdown()
    server.server_close()
    thread.join(5)


def test_a_personal_access_token_at_a_url_that_is_not_label_studio(html_server, capsys):
    # the token exchange's HTML 404 read as JSON: "JSONDecodeError: Expecting value: line 1
    # column 1 (char 0)", while a legacy token got "does not answer as a Label Studio API"
    token = _personal_access_token()
    client = ls.connect(html_server["url"], token)
    with pytest.raises(ls.LabelStudioError) as info:
        ls.check_project(client, 2, retries=2, backoff=0.01)
    text = str(info.value)
    assert "does not answer as a Label Studio API (HTTP 404" in text, text
    assert "check the URL" in text and "JSONDecodeError" not in text, text
    assert not info.value.transient and token not in text
    assert html_server["paths"] == [("POST", "/api/token/refresh/")]   # not retried
    out = capsys.readouterr()
    assert token not in out.out + out.err


def test_a_proxys_502_during_the_token_exchange_is_retried(html_server):
    # a proxy's 502 page while Label Studio restarts: permanent ("JSONDecodeError", not
    # retried) for a personal access token, transient for a legacy one
    html_server["status"] = 502
    token = _personal_access_token()
    client = ls.connect(html_server["url"], token)
    with pytest.raises(ls.LabelStudioError) as info:
        ls.check_project(client, 2, retries=2, backoff=0.01)
    text = str(info.value)
    assert info.value.transient and "after 3 attempt(s)" in text and "HTTP 502" in text, text
    assert "<" not in text and token not in text   # the page's text, on one line
    assert len(html_server["paths"]) == 3


def test_a_personal_access_token_is_exchanged_under_the_urls_path_prefix(html_server):
    # Label Studio served under a prefix (http://host/label-studio behind a proxy): the
    # token exchange went to /api/token/refresh/, outside it (the SDK joins it with urljoin
    # and the URL's trailing slash was dropped), while the API requests kept the prefix
    client = ls.connect(html_server["url"] + "/label-studio/", _personal_access_token())
    with pytest.raises(ls.LabelStudioError):
        ls.check_project(client, 2, retries=0)
    assert html_server["paths"] == [("POST", "/label-studio/api/token/refresh/")]
    legacy = ls.connect(html_server["url"] + "/label-studio", "0" * 40)
    with pytest.raises(ls.LabelStudioError, match=r"http://127\.0\.0\.1:\d+/label-studio "
                                                  "does not answer"):
        ls.check_project(legacy, 2, retries=0)
    assert html_server["paths"][1] == ("GET", "/label-studio/api/projects/2/")


def test_https_to_an_http_server_fails_at_once(html_server):
    # the TLS error was taken for a transient one: retried with backoff, then "after 4
    # attempt(s)" (a refused certificate likewise)
    client = ls.connect(html_server["url"].replace("http://", "https://"), "0" * 40)
    started = time.monotonic()
    with pytest.raises(ls.LabelStudioError) as info:
        ls.check_project(client, 2, retries=3, backoff=0.5)
    text = str(info.value)
    assert not info.value.transient and time.monotonic() - started < 3, text
    assert "the TLS connection to https://127.0.0.1" in text, text
    assert "check http:// against https://" in text and "not retried" in text, text


@pytest.mark.parametrize("key, hint", [
    # bytes were sent as "Token b'...'" and refused as a wrong token ("check
    # LABEL_STUDIO_API_KEY"); a path failed with "'PosixPath' object has no attribute 'strip'"
    (b"0123456789abcdef0123456789abcdef01234567", r"bytes \(decode it: key.decode\(\)\)"),
    (Path("token.txt"), r"\w*Path \(a file\? read it"),
    (12345678, r"int \(the token itself\)"),
])
def test_an_api_key_that_is_not_text_is_refused_without_showing_it(key, hint):
    with pytest.raises(TypeError, match=rf"api_key must be the API token as a string, got "
                                        rf"{hint}") as info:
        ls.connect("http://127.0.0.1:9", key)
    assert "0123456789abcdef" not in str(info.value)


TOKEN = "0123456789abcdef0123456789abcdef01234567"   # a legacy token's shape (40 hex)


@pytest.mark.parametrize("key, words", [
    (TOKEN[:8] + "\r\n" + TOKEN[8:], "holds a line break at character 9 of 42"),
    ("Token " + TOKEN, "holds a space at character 6 of 46, which no token holds (give the "
                       "key alone, without the 'Token ' or 'Bearer '"),
])
def test_a_token_with_a_line_break_or_a_space_is_refused_without_showing_it(key, words,
                                                                           monkeypatch):
    # a line break inside: "LocalProtocolError: Illegal header value b'Token 01234567\r\n
    # 89ab...'", the token in the message; "Token <key>": refused by the server as wrong
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", key)
    pattern = r"the Label Studio API token \(LABEL_STUDIO_API_KEY\) " + re.escape(words)
    with pytest.raises(ls.LabelStudioError, match=pattern) as info:
        ls.connect("http://127.0.0.1:9")
    assert TOKEN[:8] not in str(info.value) and TOKEN[8:20] not in str(info.value)


def test_the_token_of_a_callers_client_is_scrubbed_in_its_escaped_form(html_server):
    # a client made by the caller, not by connect(): the HTTP library names the header
    # escaped ("\r\n" as two characters each), which the scrubbing did not recognise
    from label_studio_sdk import LabelStudio

    client = LabelStudio(base_url=html_server["url"], api_key=TOKEN[:8] + "\r\n" + TOKEN[8:])
    with pytest.raises(ls.LabelStudioError, match="Illegal header value") as info:
        ls.push_predictions(client, 2, [{"task": 1, "result": []}], model_version="v",
                            retries=0)
    text = str(info.value)
    assert TOKEN[:8] not in text and TOKEN[8:20] not in text, text


def test_a_pages_address_copied_from_the_browser_is_named_as_such(html_server):
    # the data manager's address (…/projects/3/data?tab=1) was only "check the URL"
    client = ls.connect(html_server["url"] + "/projects/3/data?tab=1", TOKEN)
    with pytest.raises(ls.LabelStudioError, match=r"it looks like a page's address, not the "
                                                  r"server's \(try http://127\.0\.0\.1:\d+\)"):
        ls.check_project(client, 3, retries=0)
