"""Shared bodies of the atheris targets over small decoders nested inside frames, fuzzed on their
own so that every input reaches them: Micromessage2's text syntaxes and filters
(reference_impl/micromessage2/syntax.py, filters.py) and RabbitMQ Stream's SASL responses
(reference_impl/rabbitmq_stream/sasl.py).

Documented outcomes: the syntax parsers raise :class:`FrameError` (``PayloadError``), a filter
that cannot be read :class:`FilterError`, and the SASL parsers return None for malformed data.
Anything else propagates, and the fuzzer reports it as a crash.
"""
from __future__ import annotations

from wirecheck.reference_impl.core.errors import FrameError
from wirecheck.reference_impl.micromessage2 import syntax
from wirecheck.reference_impl.micromessage2.filters import FilterError, parse_filter
from wirecheck.reference_impl.rabbitmq_stream import sasl


def _parsed(parse, text: str, *args):
    try:
        return parse(text, *args)
    except FrameError:
        return None


def mm2_syntax_one_input(data: bytes) -> None:
    """``data`` as UTF-8 text (as the codec hands it over), every line through every parser:
    extension lists and COMMAND payloads (strict and lenient FIELDs), MESSAGE properties, a
    filter, URL-decoding. What parses re-formats to text that parses to the same thing; a
    filter's text (``str``) reads back as the same filter; a filter matched against any
    properties (typed and untyped) answers True or False."""
    text = data.decode("utf-8", "replace")
    lines = text.split("\n")
    filters, properties = [], [()]
    for line in lines:
        for strict in (True, False):
            extensions = _parsed(syntax.parse_extensions, line, strict)
            if extensions is not None:
                again = syntax.parse_extensions(syntax.format_extensions(extensions), strict)
                assert again == extensions, f"extensions {extensions} re-read as {again}"
            command = _parsed(syntax.parse_command, line, strict)
            if command is not None:
                again = syntax.parse_command(syntax.format_command(*command), strict)
                assert again == command, f"command {command} re-read as {again}"
        props = _parsed(syntax.parse_properties, line)
        if props is not None:
            again = syntax.parse_properties(syntax.format_properties(props))
            assert again == props, f"properties {props} re-read as {again}"
            properties.append(props)
        decoded = _parsed(syntax.url_decode, line)
        if decoded is not None:
            assert syntax.url_decode(syntax.url_encode(decoded)) == decoded, f"{decoded!r} re-encodes differently"
        try:
            flt = parse_filter(line)
        except FilterError:
            continue
        again = parse_filter(str(flt))
        assert again == flt, f"filter {flt} re-read as {again}"
        filters.append(flt)
    for flt in filters:
        for props in properties:
            for typed in (True, False):
                assert flt.matches(props, typed) in (True, False)


def rmqs_sasl_one_input(data: bytes) -> None:
    """``data`` as a SaslAuthenticate response read as PLAIN and as AMQPLAIN (and ``data``
    without its first byte, which may be a length): (user, password) strings or None."""
    for parse in (sasl.plain, sasl.amqplain):
        for body in (data, data[1:]):
            got = parse(body)
            assert got is None or (len(got) == 2 and all(isinstance(x, str) for x in got)), got
