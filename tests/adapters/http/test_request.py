"""Request heads: request line, Host, the caller's fields, content-length; header injection refused."""

from __future__ import annotations

import pytest

from dsh.adapters.http import InvalidRequestError, Proxy, parse_url
from dsh.adapters.http.request import encode_connect, encode_request

URL = parse_url("http://api.example.com:8080/v1/chat?stream=1")


def test_encodes_the_request_line_host_fields_and_length() -> None:
    """(extra) origin-form target, Host with the non-default port, fields in order, content-length"""
    head, close = encode_request("POST", URL, {"authorization": "Bearer k", "Accept": "text/event-stream"}, 12)
    assert not close
    assert head == (
        b"POST /v1/chat?stream=1 HTTP/1.1\r\n"
        b"Host: api.example.com:8080\r\n"
        b"authorization: Bearer k\r\n"
        b"Accept: text/event-stream\r\n"
        b"content-length: 12\r\n\r\n"
    )


def test_pairs_may_repeat_and_the_caller_may_set_host() -> None:
    """(extra) a list of pairs keeps repeats; a caller's Host replaces the URL's; its content-length is ours"""
    head, _ = encode_request(
        "GET", parse_url("https://h/x"), [("x-a", "1"), ("x-a", "2"), ("HOST", "other"), ("Content-Length", "99")], 0
    )
    assert head == b"GET /x HTTP/1.1\r\nHost: other\r\nx-a: 1\r\nx-a: 2\r\n\r\n"


@pytest.mark.parametrize(("method", "sent"), [("POST", True), ("PUT", True), ("PATCH", True), ("GET", False)])
def test_content_length_zero_only_for_methods_that_carry_a_body(method: str, sent: bool) -> None:
    """(extra) an empty POST says content-length: 0; an empty GET says nothing"""
    head, _ = encode_request(method, URL, {}, 0)
    assert (b"content-length: 0\r\n" in head) is sent


def test_absolute_form_and_credentials_through_a_forward_proxy() -> None:
    """(extra) an http target through a proxy: absolute-form request line and proxy-authorization"""
    proxy = Proxy("proxy", 3128, "Basic dTpw", "HTTP_PROXY")
    head, _ = encode_request("GET", URL, {}, 0, proxy)
    assert head.startswith(b"GET http://api.example.com:8080/v1/chat?stream=1 HTTP/1.1\r\n")
    assert b"proxy-authorization: Basic dTpw\r\n" in head
    bare, _ = encode_request("GET", URL, {}, 0, Proxy("proxy", 3128, None, "HTTP_PROXY"))
    assert b"proxy-authorization" not in bare


def test_connect_request() -> None:
    """(extra) CONNECT host:port with Host and, when the proxy has credentials, proxy-authorization"""
    target = parse_url("https://[::1]/x")
    assert encode_connect(target, Proxy("p", 1, None, "HTTPS_PROXY")) == (
        b"CONNECT [::1]:443 HTTP/1.1\r\nHost: [::1]:443\r\n\r\n"
    )
    assert encode_connect(target, Proxy("p", 1, "Basic eA==", "HTTPS_PROXY")).endswith(
        b"proxy-authorization: Basic eA==\r\n\r\n"
    )


@pytest.mark.parametrize("value", ["a\r\nx-injected: 1", "a\nb", "a\rb", "a\0b"])
def test_rejects_cr_lf_or_nul_in_a_header_value(value: str) -> None:
    """CR/LF in a header value: InvalidRequestError (header injection)"""
    with pytest.raises(InvalidRequestError, match="inject header lines") as caught:
        encode_request("GET", URL, {"x-user": value}, 0)
    assert caught.value.url == str(URL)


@pytest.mark.parametrize("name", ["", "bad name", "x:y", "a\r\nb", "caf\u00e9"])
def test_rejects_header_names_that_are_not_tokens(name: str) -> None:
    """(extra) names with spaces, colons, CR/LF or non-ASCII letters are refused"""
    with pytest.raises(InvalidRequestError, match="not a valid HTTP token"):
        encode_request("GET", URL, {name: "v"}, 0)


@pytest.mark.parametrize("method", ["", "GET /x HTTP/1.1\r\n", "G T", "GET\n"])
def test_rejects_methods_that_are_not_tokens(method: str) -> None:
    """(extra) the method is a token too"""
    with pytest.raises(InvalidRequestError, match="method"):
        encode_request(method, URL, {}, 0)


@pytest.mark.parametrize(
    ("value", "close"), [("close", True), ("Keep-Alive, CLOSE", True), ("keep-alive", False), ("closed", False)]
)
def test_reports_a_connection_close_request(value: str, close: bool) -> None:
    """(extra) the caller's connection: close is reported so the connection is not reused"""
    assert encode_request("GET", URL, [("x", "1"), ("Connection", value)], 0)[1] is close


def test_never_sends_transfer_encoding() -> None:
    """(extra) the body always goes with content-length: a caller's transfer-encoding is refused"""
    with pytest.raises(InvalidRequestError, match="transfer-encoding"):
        encode_request("POST", URL, {"Transfer-Encoding": "chunked"}, 3)


def test_values_must_be_latin_1() -> None:
    """(extra) Latin-1 values go as they are; others are refused with the offending text"""
    assert b"x-name: caf\xe9\r\n" in encode_request("GET", URL, {"x-name": "caf\u00e9"}, 0)[0]
    with pytest.raises(InvalidRequestError, match="outside Latin-1") as caught:
        encode_request("GET", URL, {"x-name": "snow \u2603"}, 0)
    assert "\u2603" in str(caught.value)
