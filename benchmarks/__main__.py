import sys

from benchmarks.run_all import main

sys.exit(main())
