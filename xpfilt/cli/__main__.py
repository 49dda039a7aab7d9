"""``python -m xpfilt.cli``: the ``xpfilt`` command."""

from xpfilt.cli import main

main()
