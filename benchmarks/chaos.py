"""Chaos at scale (the machinery is `devkit.chaos`, shared with tests/integration/test_chaos.py).

.venv/bin/python benchmarks/chaos.py [--deliveries 100000] [--seed N] [--consumers 8] [--duplicate-read auto|never|always] [--relay-via sqs|sns]
"""

from devkit.chaos import main

if __name__ == "__main__":
    main()
