"""``python -m dsh.cli``: the same as the ``dsh`` command."""

import sys

from dsh.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
