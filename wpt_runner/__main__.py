"""`python -m wpt_runner run ...` (see cli.py)."""
import sys

from .cli import main

sys.exit(main())
