import sys

from tsukuctl.cli import main

sys.exit(main())
