"""``python -m kgroup`` runs the ``kgroup`` command."""

from kgroup.cli import main

main()
