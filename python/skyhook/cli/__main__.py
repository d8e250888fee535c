"""``python -m skyhook.cli``: the same as the ``skyhook`` command."""

from skyhook.cli import main

main()
