"""Seeded generators for the fuzz harness: small DTD-free documents, path queries, hostile
mutations of documents, and mutations of configuration streams.

Every function takes a :class:`random.Random`, so a case is fully described by its seed. The
alphabets are small on purpose: recursion (a tag inside itself), ``*`` and ``//`` then interact
often, and a handful of values make predicates true as often as false.
"""

from __future__ import annotations

import random
import zlib
from typing import Optional, Sequence

__all__ = [
    "TAGS",
    "random_document",
    "random_query",
    "random_queries",
    "hostile_document",
    "HOSTILE_KINDS",
    "mutate_stream",
    "STREAM_MUTATIONS",
    "short_document",
]

#: Tags queries use; ``ab`` shares a prefix with ``a`` (the tag decoder's CAM walks prefixes).
TAGS = ["a", "b", "c", "d.e", "a-b", "_x", "ab"]
#: Names only documents use: unknown to every engine's dictionary.
DOC_ONLY = ["f", "abc", "\u00e9l", "B"]
ATTRS = ["id", "n", "k"]
VALUES = ["1", "2", " 2 ", "x", "", "1.5", "-0", "a b", "02", ".5"]
TEXTS = VALUES + ["&amp;", "a&lt;b", "&#50;", "&#x32;", "x&gt;", "\n  ", "&quot;2&quot;", "t\u00e9"]
LITERALS = ["1", "2", "'x'", "' 2 '", "''", "1.5", "'a b'", "0", "-0", "'2'", '"x"']
OPS = ["=", "!=", "<", "<=", ">", ">="]


# --- well-formed documents -----------------------------------------------------------------


def _element(rng: random.Random, depth: int, max_depth: int, fanout: int) -> tuple:
    names = TAGS if rng.random() < 0.9 else DOC_ONLY
    name = rng.choice(names)
    attrs = {}
    for _ in range(rng.choice((0, 0, 0, 1, 1, 2))):
        attrs[rng.choice(ATTRS)] = rng.choice(VALUES + ["&amp;", "&#50;", "a&lt;"])
    children: list = []
    if depth < max_depth:
        for _ in range(rng.randint(0, fanout)):
            r = rng.random()
            if r < 0.55:
                children.append(_element(rng, depth + 1, max_depth, fanout))
            elif r < 0.8:
                children.append(("text", rng.choice(TEXTS)))
            elif r < 0.88:
                children.append(("cdata", rng.choice(VALUES + ["<b>", "]]", "&amp;"])))
            elif r < 0.95:
                children.append(("comment", rng.choice(["", " c ", "<a>", "-x"])))
            else:
                children.append(("pi", rng.choice(["p", "p x", "q ?"])))
    return (name, attrs, children)


def _render(rng: random.Random, element: tuple, out: list) -> None:
    name, attrs, children = element
    out.append("<" + name)
    for key, value in attrs.items():
        quote = rng.choice("\"'")
        out.append(
            rng.choice((" ", " ", "\n", "  "))
            + key
            + rng.choice(("=", " = "))
            + quote
            + value
            + quote
        )
    if not children and rng.random() < 0.5:
        out.append(rng.choice(("/>", " />")))
        return
    out.append(rng.choice((">", ">", "\n>", " >")))
    for child in children:
        kind = child[0]
        if kind == "text":
            out.append(child[1])
        elif kind == "cdata":
            out.append(f"<![CDATA[{child[1]}]]>")
        elif kind == "comment":
            out.append(f"<!--{child[1]}-->")
        elif kind == "pi":
            out.append(f"<?{child[1]}?>")
        else:
            _render(rng, child, out)
    out.append(f"</{name}{rng.choice(('', '', ' ', chr(10)))}>")


PROLOGS = [
    "",
    "",
    '<?xml version="1.0"?>\n',
    '<?xml version="1.0" encoding="UTF-8"?>',
    "<?xml version='1.0' encoding='utf-8' standalone='yes'?>\n",
    "<!DOCTYPE a>\n",
    "<!-- head -->",
    "<?pi x?>\n",
    "<!DOCTYPE b [<!ELEMENT b ANY><!-- c -->]>",
    '<?xml version="1.0"?><!DOCTYPE a SYSTEM "none.dtd">',
]


def random_document(rng: random.Random, max_depth: int = 7, fanout: int = 3) -> bytes:
    """A small well-formed, namespace-free document without entity declarations."""
    out = [rng.choice(PROLOGS)]
    _render(rng, _element(rng, 1, rng.randint(1, max_depth), fanout), out)
    out.append(rng.choice(("", "\n", "<!-- end -->", "\n<?end?>\n")))
    return "".join(out).encode()


def _comparison(rng: random.Random) -> str:
    target = rng.choice(["@" + rng.choice(ATTRS), "text()"])
    return f"{target}{rng.choice(OPS)}{rng.choice(LITERALS)}"


def _condition(rng: random.Random, depth: int) -> str:
    """A predicate of the whole language: comparisons, existence, position(), nested paths
    (twigs), and/or/not, nested up to three levels."""
    kind = rng.randrange(9 if depth < 3 else 4)
    if kind <= 1:
        return _comparison(rng)
    if kind == 2:
        return rng.choice(
            ["@" + rng.choice(ATTRS), "text()", f"position() {rng.choice(OPS)} {rng.randint(1, 3)}"]
        )
    if kind == 3:
        name = rng.choice(TAGS) if rng.random() < 0.8 else "*"
        return rng.choice(("", "./", ".//")) + name
    if kind == 4:
        parts = [rng.choice(("", ".//")) + rng.choice(TAGS)]
        for _ in range(rng.randint(0, 2)):
            parts.append(rng.choice(("/", "//")) + rng.choice(TAGS + ["*"]))
            if rng.random() < 0.4:
                parts[-1] += f"[{_condition(rng, depth + 1)}]"
        return "".join(parts)
    if kind == 5:
        return f"not({_condition(rng, depth + 1)})"
    joiner = (" and ", " or ")[kind % 2]
    return joiner.join(
        f"({_condition(rng, depth + 1)})" if rng.random() < 0.3 else _condition(rng, depth + 1)
        for _ in range(rng.randint(2, 3))
    )


def random_query(rng: random.Random, predicates: bool = False) -> str:
    """A path; with ``predicates``, steps may carry value predicates (since issue 14: any
    predicate of the language, ``[N]``, several per step), and a query may be a shorthand
    comparison or a boolean combination of paths."""
    steps = []
    for _ in range(rng.choice((1, 1, 2, 2, 3, 3, 4, 5, 6))):
        step = rng.choice(("/", "//")) + (rng.choice(TAGS) if rng.random() < 0.8 else "*")
        if predicates and rng.random() < 0.3:
            if rng.random() < 0.5:
                step += f"[{_comparison(rng)}]"
            else:
                for _ in range(rng.randint(1, 2)):
                    step += (
                        f"[{rng.randint(1, 3)}]"
                        if rng.random() < 0.15
                        else f"[{_condition(rng, 0)}]"
                    )
        steps.append(step)
    path = "".join(steps)
    if predicates and rng.random() < 0.1:
        path += f" {rng.choice(OPS)} {rng.choice(LITERALS)}"
    if predicates and rng.random() < 0.1:
        other = random_query(rng, predicates)
        path = rng.choice(
            (f"{path} and {other}", f"{path} or not({other})", f"not({path}) or {other}")
        )
    return path


def random_queries(rng: random.Random, predicates: bool = False, most: int = 12) -> list[str]:
    return [random_query(rng, predicates) for _ in range(rng.randint(1, most))]


# --- hostile documents ----------------------------------------------------------------------

TOKENS = [
    b"<",
    b"&",
    b"]]>",
    b"</",
    b"<!--",
    b"-->",
    b"<![CDATA[",
    b"<?",
    b"?>",
    b'"',
    b"'",
    b">",
    b"/>",
    b"\x00",
    b"\xff",
    b"\xc3",
    b"&#0;",
    b"&#x110000;",
    b"&amp",
    b"&lt;",
    b"<!DOCTYPE a>",
    b"<?xml version='1.0'?>",
    b"<a>",
    b"</a>",
    b"<b/>",
    b"\r",
    b"\t",
    b"<!",
    b"<!-",
    b"<![",
    b"--",
    b"=",
    b"\xef\xbb\xbf",
    b"<a",
    b"&e;",
    b"&#38;#60;",
]
ENCODINGS = [
    "UTF-8",
    "utf-8",
    "ISO-8859-1",
    "latin1",
    "US-ASCII",
    "UTF-16",
    "UTF-16LE",
    "Shift_JIS",
    "UTF-7",
    "x-unknown",
    "hex",
    "rot13",
    "zlib",
    "cp037",
    "windows-1252",
    "",
    "EUC-JP",
    "ISO-8859-15",
    "UCS-4",
    "utf8",
    "koi8-r",
]
DOCTYPES = [
    b"<!DOCTYPE>",
    b'<!DOCTYPE"">',
    b"<!DOCTYPE a>",
    b"<!DOCTYPE a []>",
    b'<!DOCTYPE a SYSTEM "file:///etc/passwd">',
    b'<!DOCTYPE a PUBLIC "-//x//y" "y.dtd">',
    b"<!DOCTYPE a [<!ELEMENT a (b)*><!ATTLIST a id CDATA #IMPLIED>]>",
    b'<!DOCTYPE a [<!ATTLIST a n CDATA "1"><!ATTLIST b id CDATA "2">]>',
    b"<!DOCTYPE a [",
    b"<!DOCTYPE a [<!ENTITY e 'x>'>",
    b"<!DOCTYPE a [<!-- ] > -->]>",
    b"<!DOCTYPE a [<!ENTITY % p \"<!ENTITY e '1'>\"> %p;]>",
    b"<!DOCTYPE a><!DOCTYPE a>",
    b"<!doctype a>",
    b"<!DOCTYPEa>",
    b"<!DOCTYPE a [<!NOTATION n SYSTEM 'x'>]>",
    b"<!DOCTYPE a [<?pi ]>?>]>",
    b'<!DOCTYPE a [<!ENTITY e SYSTEM "http://127.0.0.1:9/x">]>',
]
XXE = [
    b'<!DOCTYPE a [<!ENTITY x SYSTEM "file:///etc/passwd">]><a>&x;<b/></a>',
    b'<!DOCTYPE a [<!ENTITY % x SYSTEM "file:///etc/passwd"> %x;]><a><b/></a>',
    b'<!DOCTYPE a [<!ENTITY x SYSTEM "http://127.0.0.1:9/">]><a>&x;</a>',
    b'<!DOCTYPE a [<!ENTITY e "<b/>">]><a>&e;</a>',
    b'<!DOCTYPE a [<!ENTITY e "<b>">]><a>&e;</b></a>',
    b'<!DOCTYPE a [<!ENTITY e "&e;">]><a>&e;</a>',
    b'<!DOCTYPE a [<!ENTITY e "x">]><a n="&e;"><b/></a>',
    b'<!DOCTYPE a [<!ENTITY e "<c>x</c>">]><a><b>&e;</b></a>',
]


def billion_laughs(levels: int, fan: int) -> bytes:
    decls = [b'<!ENTITY l0 "lol">']
    for i in range(1, levels):
        decls.append(b'<!ENTITY l%d "' % i + (b"&l%d;" % (i - 1)) * fan + b'">')
    return b"<!DOCTYPE a [" + b"".join(decls) + b"]><a><b>&l%d;</b></a>" % (levels - 1)


def short_document(rng: random.Random) -> bytes:
    """1 to 3 bytes, mostly from XML's markup alphabet."""
    alphabet = b"<>/a!?-[]& \n\"'x"
    return bytes(
        rng.choice(alphabet) if rng.random() < 0.8 else rng.randrange(256)
        for _ in range(rng.randint(1, 3))
    )


def _span(rng: random.Random, n: int) -> tuple[int, int]:
    i = rng.randint(0, n)
    return i, rng.randint(i, min(n, i + rng.choice((1, 2, 4, 16))))


def _encoded(rng: random.Random, base: bytes) -> bytes:
    enc = rng.choice(ENCODINGS)
    body = base.split(b"?>", 1)[1] if base.startswith(b"<?xml") else base
    text = body.decode("utf-8", "replace")
    if rng.random() < 0.5:
        text = text.replace("a", "\u00e9", 1)
    decl = f'<?xml version="1.0" encoding="{enc}"?>'
    payload = decl + text
    try:
        if rng.random() < 0.6:
            return payload.encode(enc or "utf-8")
    except (LookupError, UnicodeError, TypeError, ValueError):
        pass
    return payload.encode("utf-8")


def hostile_document(
    rng: random.Random, base: bytes, max_depth: int, max_name: int
) -> tuple[str, bytes]:
    """A mutated or hostile variant of ``base``: (kind, bytes)."""
    kind = rng.choice(HOSTILE_KINDS)
    n = len(base)
    data = bytearray(base)
    if kind == "byte-flip":
        for _ in range(rng.randint(1, 4)):
            if data:
                data[rng.randrange(len(data))] = rng.randrange(256)
    elif kind == "bit-flip":
        if data:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    elif kind == "truncate":
        data = data[: rng.randint(0, max(0, n - 1))]
    elif kind == "insert":
        for _ in range(rng.randint(1, 2)):
            i = rng.randint(0, len(data))
            data[i:i] = rng.choice(TOKENS)
    elif kind == "delete":
        i, j = _span(rng, n)
        del data[i:j]
    elif kind == "duplicate":
        i, j = _span(rng, n)
        data[j:j] = data[i:j]
    elif kind == "deep":
        depth = rng.choice((max_depth - 1, max_depth, max_depth + 1, max_depth + 5, 300, 3000))
        name = rng.choice((b"a", b"b", b"f"))
        inner = rng.choice((b"", b"<b/>", b"<c>t</c>", base.split(b">", 1)[-1][:0]))
        data = (
            bytearray(b"<" + name + b">") * max(depth, 0)
            + inner
            + (b"</" + name + b">") * max(depth, 0)
        )
    elif kind == "long-name":
        length = rng.choice((max_name - 1, max_name, max_name + 1, max_name + 2, 200, 5000))
        long = b"a" * max(length, 1)
        data = bytearray(
            rng.choice(
                (
                    b"<%s/>" % long,
                    b"<a><%s>x</%s></a>" % (long, long),
                    b"<a %s='1'><b/></a>" % long,
                    b"<%s><b/></a>" % long,
                    b"<a><b/></%s>" % long,
                )
            )
        )
    elif kind == "encoding":
        data = bytearray(_encoded(rng, base))
    elif kind == "bom":
        bom = rng.choice(
            (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff", b"\xef\xbb", b"\x00\x00\xfe\xff")
        )
        if bom in (b"\xff\xfe", b"\xfe\xff") and rng.random() < 0.7:
            body = base.decode("utf-8", "replace").encode(
                "utf-16-le" if bom == b"\xff\xfe" else "utf-16-be"
            )
        else:
            body = base
        data = bytearray(bom + body if rng.random() < 0.9 else bom)
    elif kind == "tiny":
        data = bytearray(b"" if rng.random() < 0.15 else short_document(rng))
    elif kind == "doctype":
        root = base.split(b"?>", 1)[1] if base.startswith(b"<?xml") else base
        if root.startswith(b"<!DOCTYPE"):
            root = root.split(b">", 1)[1]
        dt = rng.choice(DOCTYPES)
        data = bytearray(dt + root if rng.random() < 0.8 else root + dt)
    elif kind == "xxe":
        data = bytearray(
            rng.choice(XXE)
            if rng.random() < 0.6
            else billion_laughs(rng.randint(2, 10), rng.randint(2, 10))
        )
    elif kind == "namespace":
        data = bytearray(
            rng.choice(
                (
                    b"<x:a><b/></x:a>",
                    b'<a xmlns="urn:u"><b/></a>',
                    b'<x:a xmlns:x="urn:x"><b/></x:a>',
                    b'<a xmlns:x="urn:x"><x:b/></a>',
                    b"<a><b x:y='1'/></a>",
                    b"<:a/>",
                    b"<a:b:c/>",
                    b'<a xmlns:x=""><b/></a>',
                    b"<xmlns:a/>",
                    b'<a xml:lang="en"><b/></a>',
                )
            )
        )
    elif kind == "junk":
        data = bytearray(
            rng.choice(
                (
                    base + b"<b/>",
                    b"text" + base,
                    base + b"text",
                    b"  \n" + base,
                    b"\n<?xml version='1.0'?>" + base,
                    base + b"]]>",
                    base + b"\x00",
                    base + base,
                )
            )
        )
    elif kind == "random":
        alphabet = b"<>/ab!?-[]&;=\"' \nxCDATOY#"
        data = bytearray(
            rng.choice(alphabet) if rng.random() < 0.9 else rng.randrange(256)
            for _ in range(rng.randint(4, 64))
        )
    return kind, bytes(data)


#: What the fast engine's compiled scanner (xpfilt/software/compiled.py) decides itself, each
#: beside a near miss expat rejects: declarations, references, UTF-8 edges, comments, PIs,
#: attributes, CDATA.
SCANNER_TOKENS = [
    b'<?xml version="1.0"?>',
    b"<?xml version='1.0' encoding='UTF-8' standalone='yes'?>",
    b'<?xml version="1.0" encoding="utf-8" ?>',
    b'<?xml version="1.1"?>',
    b'<?xml version="1.0" standalone="maybe"?>',
    b'<?xml version="1.0" standalone="no" encoding="utf-8"?>',
    b'<?xml encoding="utf-8"?>',
    b'<?xml version="1.0"encoding="utf-8"?>',
    b"<?xml-stylesheet href='x'?>",
    b"<?XML x?>",
    b"<?xMl?>",
    b"<?pi?>",
    b"<?pi data?>",
    b"<?pi?data?>",
    b"<?a:b x?>",
    b"<!---->",
    b"<!-- - -->",
    b"<!-- -- -->",
    b"<!----->",
    b"<!--->",
    b"<![CDATA[]]>",
    b"<![CDATA[<&]]]>",
    b"<![cdata[x]]>",
    b"&#9;",
    b"&#x9;",
    b"&#X41;",
    b"&#x;",
    b"&#65",
    b"&#8;",
    b"&#xD800;",
    b"&#xFFFE;",
    b"&#1114111;",
    b"&#1114112;",
    b"&#00000000065;",
    b"&apos;",
    b"&quot;",
    b"&QUOT;",
    b"&gt",
    b"\x7f",
    b"\xc2\x80",
    b"\xc2\xa0",
    b"\xc0\xaf",
    b"\xe0\x80\x80",
    b"\xed\xa0\x80",
    b"\xef\xbf\xbe",
    b"\xef\xbf\xbd",
    b"\xf0\x90\x80\x80",
    b"\xf4\x90\x80\x80",
    b"\xf8\x88\x80\x80\x80",
    b"\xc3\xa9",
    b"\xe2\x82",
    b' k="1" k="2"',
    b' k="1"n="2"',
    b" k=1",
    b' k = "a<b"',
    b" k='&lt;&#60;'",
    b" k='\t\r\n'",
    b"/",
    b" /",
    b"</a >",
    b"</a\n>",
    b"</ a>",
    b"<a/ >",
    b"<\xc3\xa9/>",
    b"<a\xc3\xa9/>",
    b"<a.b-c_d:e/>",
    b"<-a/>",
    b"<1a/>",
    b"]]",
    b"]>",
    b"\r\n",
    b" ",
]


def scanner_document(rng: random.Random) -> tuple[str, bytes]:
    """A random document, mutated for the compiled scanner: one of :data:`HOSTILE_KINDS`, or
    1-3 :data:`SCANNER_TOKENS` inserted (mostly at a markup boundary), or left well-formed."""
    base = random_document(rng)
    roll = rng.random()
    if roll < 0.15:
        return "well-formed", base
    if roll < 0.45:
        return hostile_document(rng, base, 16, 32)
    data = bytearray(base)
    for _ in range(rng.randint(1, 3)):
        token = rng.choice(SCANNER_TOKENS)
        if rng.random() < 0.7:  # just inside or after a tag, or at the start
            bounds = [i for i, b in enumerate(data) if b in b"<>"] or [0]
            i = rng.choice(bounds) + rng.choice((0, 1))
        else:
            i = rng.randint(0, len(data))
        data[i:i] = token
    return "scanner-token", bytes(data)


HOSTILE_KINDS = [
    "byte-flip",
    "byte-flip",
    "bit-flip",
    "truncate",
    "truncate",
    "insert",
    "insert",
    "insert",
    "delete",
    "duplicate",
    "deep",
    "long-name",
    "encoding",
    "bom",
    "tiny",
    "doctype",
    "xxe",
    "namespace",
    "junk",
    "random",
]


# --- configuration streams ------------------------------------------------------------------

STREAM_MUTATIONS = [
    "flip",
    "flip",
    "flip-header",
    "flip-crc",
    "truncate",
    "truncate",
    "extend",
    "foreign",
    "header-recrc",
    "splice",
    "random",
]


def mutate_stream(
    rng: random.Random, stream: bytes, other: Optional[bytes], foreign: Sequence[bytes]
) -> tuple[str, bytes]:
    """A corrupted variant of a configuration stream that the engine must reject:
    (kind, bytes). ``other``: a valid stream of another query set for the same hardware;
    ``foreign``: valid streams of other hardware."""
    kind = rng.choice(STREAM_MUTATIONS)
    data = bytearray(stream)
    bits = len(data) * 8
    if kind == "flip":
        for bit in rng.sample(range(bits), rng.randint(1, 3)):
            data[bit // 8] ^= 1 << bit % 8
    elif kind == "flip-header":
        bit = rng.randrange(88)
        data[bit // 8] ^= 1 << bit % 8
    elif kind == "flip-crc":
        bit = bits - 1 - rng.randrange(32)
        data[bit // 8] ^= 1 << bit % 8
    elif kind == "truncate":
        data = data[: rng.randint(1, len(data) - 1)]
    elif kind == "extend":
        data += bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    elif kind == "foreign":
        if foreign:
            data = bytearray(rng.choice(foreign))
        else:  # a foreign fingerprint, with a CRC that matches it
            data[3] ^= 0x5A
            data[-4:] = zlib.crc32(bytes(data[:-4])).to_bytes(4, "little")
    elif kind == "header-recrc":
        # a header field changed and the CRC recomputed: only the header check can reject it
        bit = rng.randrange(88)
        data[bit // 8] ^= 1 << bit % 8
        data[-4:] = zlib.crc32(bytes(data[:-4])).to_bytes(4, "little")
    elif kind == "splice":
        if other is not None and other != stream:
            cut = rng.randint(12, len(data) - 5)
            data = data[:cut] + bytearray(other[cut:])
        else:
            data[-1] ^= 0x80
    elif kind == "random":
        data = bytearray(rng.randrange(256) for _ in range(len(data)))
    if _still_valid(bytes(data), stream):  # e.g. a splice of two streams with equal tails
        data[-1] ^= 0x01
    return kind, bytes(data)


def _still_valid(data: bytes, stream: bytes) -> bool:
    """Would the hardware that ``stream`` is for accept ``data`` (same header and length, CRC
    right)? Such a "mutation" is just another valid configuration."""
    return (
        len(data) == len(stream)
        and data[:11] == stream[:11]
        and zlib.crc32(data[:-4]).to_bytes(4, "little") == data[-4:]
    )
