"""Hostile spellings of http(s) URLs, as hypothesis strategies: the forms that make a link read
one way by a filter and another way by a browser (backslashes, '@', tabs and newlines,
ideographic and fullwidth dots, percent-encoding in the host, IDNA and ACE labels, IPv4 in
short, decimal, hex and octal form, IPv6 with zones). Used by the reference test of core.urls
(tests/scoring/test_urls_whatwg.py) and by benchmarks/hostile_input.py."""

from __future__ import annotations

from hypothesis import strategies as st

__all__ = ["hostile_urls"]

_schemes = st.sampled_from(
    [
        "http://",
        "https://",
        "HTTPS://",
        "hTtP://",
        "http:\\\\",
        "https:/\\",
        "https:",
        "http:/",
        "https:////",
        " https://",
    ]
)
_dots = st.sampled_from([".", ".", ".", "\u3002", "\uff0e", "\uff61", "%2e", "%2E", "\u2024", "%E3%80%82"])
_ascii_labels = st.sampled_from(
    [
        "bad",
        "example",
        "com",
        "www",
        "login",
        "xn--mnchen-3ya",
        "xn--",
        "xn--a",
        "xn--1ug",
        "XN--ZCA",
        "a",
        "EXAMPLE",
        "co",
    ]
)
_unicode_labels = st.sampled_from(
    [
        "münchen",
        "例え",
        "ｅｘａｍｐｌｅ",
        "ß",
        "faß",
        "ǅ",
        "\u00ad",
        "a\u200bb",
        "\u0661\u0662",
        "bücher",
        "ΑΒΓ",
        "xn--ü",
    ]
)
_noise = st.sampled_from(
    [
        "\\",
        "@",
        "\t",
        "\n",
        "\r",
        "%5C",
        "%5c",
        "%40",
        "%00",
        "%20",
        "%41",
        "%25",
        "%",
        "^",
        "|",
        "_",
        "~",
        "!",
        "*",
        ":",
    ]
)
_label = st.one_of(
    _ascii_labels,
    _ascii_labels,
    _unicode_labels,
    st.builds(lambda a, n, b: a + n + b, _ascii_labels, _noise, _ascii_labels),
    st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=4),
)
_domain = st.builds(
    lambda labels, dots, tail: (
        "".join(f"{lab}{dot}" for lab, dot in zip(labels[:-1], dots, strict=False)) + labels[-1] + tail
    ),
    st.lists(_label, min_size=1, max_size=4),
    st.lists(_dots, min_size=3, max_size=3),
    st.sampled_from(["", "", ".", "..", "\u3002"]),
)


def _ipv4_number(value: int, form: str) -> str:
    return {
        "dec": str(value),
        "hex": hex(value),
        "HEX": hex(value).upper().replace("X", "x"),
        "oct": "0" + oct(value)[2:],
    }[form]


_ipv4 = st.builds(
    lambda numbers, forms, tail: ".".join(_ipv4_number(n, f) for n, f in zip(numbers, forms, strict=False)) + tail,
    st.lists(
        st.one_of(st.integers(0, 255), st.integers(0, 2**32 + 1), st.sampled_from([0, 127, 169, 254, 4294967295])),
        min_size=1,
        max_size=5,
    ),
    st.lists(st.sampled_from(["dec", "hex", "HEX", "oct"]), min_size=5, max_size=5),
    st.sampled_from(["", "", ".", "%2e"]),
)
_ipv6 = st.builds(
    lambda address, zone: f"[{address}{zone}]",
    st.sampled_from(
        [
            "::1",
            "2001:DB8::1",
            "::ffff:127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "fe80::1",
            "::",
            "1:2:3:4:5:6:7:8",
            "1::2::3",
            "::127.0.0.1",
            "zz::1",
            "2001:db8:0:0:0:0:0:1",
        ]
    ),
    st.sampled_from(["", "", "%25eth0", "%eth0", "%251", "%"]),
)
_userinfo = st.sampled_from(
    [
        "",
        "",
        "",
        "user@",
        "u:p@",
        "bad.example\\@",
        "bad.example%5C@",
        "bad.example%5c@",
        "a@b@",
        "@",
        ":@",
        "bad.example\t@",
    ]
)
_ports = st.sampled_from(["", "", "", ":", ":80", ":443", ":8080", ":65535", ":65536", ":0x50", ":-1", ": 80"])
_tails = st.sampled_from(
    [
        "",
        "/",
        "/login",
        "\\login",
        "/a/../b",
        "/%2e%2e/x",
        "?q=1",
        "#frag",
        "/@example.com",
        "\\@example.com/",
        "/ä ö",
        "?",
        "/x?y#z",
    ]
)
hostile_urls = st.builds(
    lambda scheme, userinfo, host, port, tail: f"{scheme}{userinfo}{host}{port}{tail}",
    _schemes,
    _userinfo,
    st.one_of(_domain, _domain, _ipv4, _ipv6),
    _ports,
    _tails,
)
