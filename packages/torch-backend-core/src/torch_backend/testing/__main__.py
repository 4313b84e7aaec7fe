import sys

from torch_backend.testing._runner import main

sys.exit(main())
