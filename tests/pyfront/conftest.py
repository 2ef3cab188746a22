import sys
from pathlib import Path

# The helpers module sits beside the tests; the package itself may not be installed.
HERE = Path(__file__).resolve().parent
for path in (HERE, HERE.parent.parent):
    if str(path) not in sys.path:
        sys.path.insert(0, str(path))
