"""``python -m splice.cli``: the ``splice`` command."""

import sys

from splice.cli import main

sys.exit(main())
