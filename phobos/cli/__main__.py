"""`python -m phobos.cli` is `phobos-compile`."""

import sys

from phobos.cli.compile import main

sys.exit(main())
