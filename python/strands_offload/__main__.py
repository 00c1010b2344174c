"""``python -m strands_offload``: the ``strands-offload`` command."""

from .cli import main

raise SystemExit(main())
