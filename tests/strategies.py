"""Hypothesis strategies: small random documents and queries over a shared tag alphabet.

A small alphabet makes recursion (a tag inside itself), '*' and '//' interact often.
"""

from __future__ import annotations

from hypothesis import strategies as st

TAGS = ["a", "b", "c", "d.e"]
VALUES = ["1", "2", " 2 ", "x"]

names = st.sampled_from(TAGS)


@st.composite
def elements(draw, depth: int = 0, max_depth: int = 7, values=tuple(VALUES)):
    """An element as (name, attrs, children); children are elements or text strings (drawn
    from ``values``, which may hold markup such as character and entity references)."""
    name = draw(names)
    attrs = draw(st.dictionaries(st.sampled_from(["id", "n"]), st.sampled_from(values), max_size=2))
    children = []
    if depth < max_depth:
        for _ in range(draw(st.integers(0, 3))):
            if draw(st.integers(0, 3)) == 0:
                children.append(draw(st.sampled_from(values)))
            else:
                children.append(draw(elements(depth + 1, max_depth, values)))
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


#: Steps of plain queries, and near misses: a separator, a name test, something after it.
GOOD_SEPARATORS = ["/", "//"]
GOOD_NAMES = TAGS + ["*", "b1", "x-y", "_z", "ns:a", "A.b-9"]
BAD_SEPARATORS = GOOD_SEPARATORS + ["///", "", " /", "\\"]
BAD_NAMES = GOOD_NAMES + ["ns:", ":a", "a::b", "a:b:c", "1a", ".a", "-a", "é", "", "**", "a*"]
BAD_SUFFIXES = [
    "",
    "[@id=1]",
    "[text()!='x']",
    "[@n>=",
    "()",
    "(",
    ")",
    "]",
    "::",
    ":",
    " ",
    "\t",
    "|",
    "@",
    "\n",
]


@st.composite
def query_texts(draw) -> str:
    """Any query line, good or bad: a generated query (with or without predicates), a plain
    query with one step or two replaced by a near miss, or arbitrary text."""
    kind = draw(st.integers(0, 3))
    if kind == 0:
        return draw(queries())
    if kind == 1:
        return draw(queries(predicates=True))
    if kind == 2:
        steps = draw(
            st.lists(
                st.tuples(st.sampled_from(GOOD_SEPARATORS), st.sampled_from(GOOD_NAMES)),
                min_size=1,
                max_size=5,
            )
        )
        steps = ["".join(step) for step in steps]
        for _ in range(draw(st.integers(1, 2))):
            bad = "".join(
                draw(
                    st.tuples(
                        st.sampled_from(BAD_SEPARATORS),
                        st.sampled_from(BAD_NAMES),
                        st.sampled_from(BAD_SUFFIXES),
                    )
                )
            )
            steps.insert(draw(st.integers(0, len(steps))), bad)
        return "".join(steps)
    return draw(st.text(max_size=12))


@st.composite
def predicate_paths(draw, tags, predicate, max_steps: int = 3, per_step=(0, 1, 1, 2)) -> str:
    """A path of 1..``max_steps`` steps over ``tags`` and ``*``, each step with a number of
    predicates drawn from ``per_step``, each drawn from the strategy ``predicate``."""
    text = ""
    for _ in range(draw(st.integers(1, max_steps))):
        text += draw(st.sampled_from(["/", "//"])) + draw(st.sampled_from(list(tags) + ["*"]))
        for _ in range(draw(st.sampled_from(per_step))):
            text += f"[{draw(predicate)}]"
    return text


@st.composite
def path_combinations(draw, path, depth: int = 0) -> str:
    """A boolean combination of paths drawn from the strategy ``path`` (``and``, ``or``,
    ``not(...)``, parentheses), at most two levels deep, so 1..4 paths."""
    kind = draw(st.integers(0, 3 if depth < 2 else 0))
    if kind == 0:
        return draw(path)
    if kind == 1:
        return f"not({draw(path_combinations(path, depth + 1))})"
    joiner = " and " if kind == 2 else " or "
    return (
        f"({draw(path_combinations(path, depth + 1))}{joiner}"
        f"{draw(path_combinations(path, depth + 1))})"
    )
