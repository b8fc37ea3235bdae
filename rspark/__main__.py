import sys

from rspark.cli import main

sys.exit(main())
