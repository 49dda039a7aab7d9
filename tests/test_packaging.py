"""The installed package: hdl/, sim/ and boards/ install inside xpfilt (xpfilt.hdl, xpfilt.sim,
xpfilt.boards), with every subpackage, and no generic top-level names (issue 12)."""

import subprocess
import sys
import zipfile

from xpfilt.paths import repo_root


def test_the_wheel_holds_one_top_level_package_with_every_subpackage(tmp_path):
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--quiet",
            "-w",
            str(tmp_path),
            str(repo_root()),
        ],
        check=True,
        capture_output=True,
    )
    [wheel] = tmp_path.glob("xpfilt-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {name.split("/")[0] for name in names if "/" in name and ".dist-info" not in name}
    assert top == {"xpfilt"}
    packages = {name.rsplit("/", 1)[0] for name in names if name.endswith("/__init__.py")}
    root = repo_root()
    in_tree = {
        "xpfilt/" + init.parent.relative_to(root / "xpfilt").as_posix()
        for init in (root / "xpfilt").rglob("__init__.py")
    }
    in_tree = {p.removesuffix("/.") for p in in_tree}
    for folder in ("hdl", "sim", "boards"):
        in_tree |= {
            f"xpfilt/{folder}/" + init.parent.relative_to(root / folder).as_posix()
            for init in (root / folder).rglob("__init__.py")
        }
    in_tree = {p.removesuffix("/.") for p in in_tree}
    assert packages == in_tree
    assert {
        "xpfilt/lang",
        "xpfilt/software",
        "xpfilt/hwspec",
        "xpfilt/compiler",
        "xpfilt/model",
        "xpfilt/verify",
        "xpfilt/verify/fuzz",
        "xpfilt/scale",
        "xpfilt/eda",
        "xpfilt/hdl",
    } <= packages
    for module in ("xpfilt/hdl/custom.py", "xpfilt/sim/engine_tb.py", "xpfilt/boards/cli.py"):
        assert module in names
