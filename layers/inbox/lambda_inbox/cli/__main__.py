"""`python -m lambda_inbox.cli`: the same as the `lambda-inbox` console script."""

from . import main

raise SystemExit(main())
