"""`python -m lambda_inbox_tools.cli`: the same as the `lambda-inbox` console script."""

from . import main

raise SystemExit(main())
