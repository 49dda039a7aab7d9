"""Hypothesis strategies: small random documents and queries over a shared tag alphabet.

A small alphabet makes recursion (a tag inside itself), '*' and '//' interact often.
"""

from __future__ import annotations

from hypothesis import strategies as st

TAGS = ["a", "b", "c", "d.e"]
VALUES = ["1", "2", " 2 ", "x"]

names = st.sampled_from(TAGS)


@st.composite
def elements(draw, depth: int = 0, max_depth: int = 7):
    """An element as (name, attrs, children); children are elements or text strings."""
    name = draw(names)
    attrs = draw(st.dictionaries(st.sampled_from(["id", "n"]), st.sampled_from(VALUES),
                                 max_size=2))
    children = []
    if depth < max_depth:
        for _ in range(draw(st.integers(0, 3))):
            if draw(st.integers(0, 3)) == 0:
                children.append(draw(st.sampled_from(VALUES)))
            else:
                children.append(draw(elements(depth + 1, max_depth)))
    return (name, attrs, children)


def serialize(element, style: int = 0) -> str:
    """XML text of an element tree; ``style`` varies self-closing tags, comments and CDATA."""
    name, attrs, children = element
    attr_text = "".join(f' {k}="{v}"' for k, v in attrs.items())
    if not children and style % 2:
        return f"<{name}{attr_text}/>"
    parts = []
    for i, child in enumerate(children):
        if isinstance(child, str):
            parts.append(f"<![CDATA[{child}]]>" if (style + i) % 3 == 0 else child)
        else:
            parts.append(serialize(child, style + i))
        if (style + i) % 4 == 1:
            parts.append("<!-- c -->")
    return f"<{name}{attr_text}>{''.join(parts)}</{name}>"


@st.composite
def documents(draw) -> bytes:
    root = draw(elements())
    style = draw(st.integers(0, 11))
    prolog = ['<?xml version="1.0"?>\n', "<!DOCTYPE a>\n", "<?pi x?>", ""][style % 4]
    return (prolog + serialize(root, style) + "\n<!-- end -->").encode()


@st.composite
def queries(draw, predicates: bool = False) -> str:
    steps = []
    for _ in range(draw(st.integers(1, 5))):
        axis = draw(st.sampled_from(["/", "//"]))
        name = draw(st.sampled_from(TAGS + ["*"]))
        pred = ""
        if predicates and draw(st.integers(0, 3)) == 0:
            target = draw(st.sampled_from(["@id", "@n", "text()"]))
            op = draw(st.sampled_from(["=", "!=", "<", ">="]))
            literal = draw(st.sampled_from(["1", "2", "'x'", "' 2 '"]))
            pred = f"[{target}{op}{literal}]"
        steps.append(f"{axis}{name}{pred}")
    return "".join(steps)
