import sys

from mempald.main import main

sys.exit(main())
