"""reconfigure()'s streams byte for byte (issue 16, part 3): its full and delta streams for a
few add / remove cases keep the digests they had before its generation was made faster."""

import hashlib

import pytest

from xpfilt import workloads
from xpfilt.compiler.programmable import HardwareSpec, configure, reconfigure
from xpfilt.lang.xpath import load_queries
from xpfilt.paths import shared_data

STRUCTURAL = HardwareSpec(clusters=4, columns=128, max_tag_len=16, tags=127)
GROUPED = HardwareSpec(clusters=4, columns=128, max_tag_len=16, tags=127, readout_group=4)
CLOSING = HardwareSpec(clusters=2, columns=32, max_tag_len=8, tags=15, slots=4, twig_width=4)
PREDICATES = [
    "/a/b[@x > 2]",
    "/a[b]/c",
    "//c or /b",
    "/a/b[@x > 2] and not(/a/c)",
    "/a[@id=1]",
    "/b[@n='x' and @id]",
    "//a/b[c][d]/e",
    "/a/*/c",
    "//d//e",
]


def _nitf(count: int) -> list[str]:
    schema = workloads.DtdSchema.load(shared_data() / "nitf/nitf-2-5.dtd")
    return workloads.generate_queries(
        schema,
        workloads.QueryGenConfig(
            count=count, max_depth=8, p_wildcard=0.15, p_descendant=0.15, seed=7
        ),
    )


def _digests(spec: HardwareSpec, loaded: list[str], after: list[str]) -> str:
    base = configure(load_queries(loaded).queries, spec)
    update = reconfigure(load_queries(after).queries, base.stream(), spec)
    again = reconfigure(load_queries(loaded).queries, update.stream(), spec)
    return " ".join(
        hashlib.sha256(repr(part).encode() if not isinstance(part, bytes) else part).hexdigest()[
            :12
        ]
        for part in (
            update.stream(),
            update.delta(),
            again.stream(),
            again.delta(),
            # the answers as the tuples they were before the condition IR (same digest)
            [
                (n, w if isinstance(w, int) else w.to_tuple())
                for n, w in sorted(update.answers.items())
            ],
            update.rejected,
        )
    )


def _cases():
    nitf = _nitf(200)
    return {
        "nitf add": (STRUCTURAL, nitf[:60], nitf[:60] + nitf[60:63]),
        "nitf remove": (STRUCTURAL, nitf[:60], [t for i, t in enumerate(nitf[:60]) if i % 7]),
        "nitf overflow": (STRUCTURAL, nitf[:60], nitf[:200]),
        "grouped": (GROUPED, nitf[:40], nitf[5:50]),
        "closing": (CLOSING, PREDICATES[:5], PREDICATES[2:]),
    }


GOLDEN = {
    "nitf add": "399b76966d08 abc715e8ec5e e3e8d34ba17e b7329b1c59bb 173d825ff4b3 2e38e77b22c3",
    "nitf remove": "374b1cce2574 bd19c96a8eda e3e8d34ba17e 4fb38c32ed67 777634ab495b 2e38e77b22c3",
    "nitf overflow": "31136f3967a6 4badc4e9177a 6630de2d685d ef2f31eee294 70ef505fb7b0 0146620d4e7d",
    "grouped": "3bcd4ad4bf53 a7f986f20a45 64336140e5d1 1678175e7089 88b4b856d25c 2e38e77b22c3",
    "closing": "c4cb013591c8 12d71c73991e ea3a35cf6151 009ad27bac9f 91c3486c1183 2e38e77b22c3",
}


@pytest.mark.parametrize("name", ["nitf add", "nitf remove", "nitf overflow", "grouped", "closing"])
def test_reconfigure_streams_unchanged(name):
    assert _digests(*_cases()[name]) == GOLDEN[name]


if __name__ == "__main__":
    for name, case in _cases().items():
        print(f"    {name!r}: {_digests(*case)!r},")
