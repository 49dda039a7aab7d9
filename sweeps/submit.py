"""The ``xpfilt`` command as a file, for ``spark-submit`` (which runs a file, not a module):

spark-submit --master spark://HOST:7077 sweeps/submit.py sweep sweeps/quick.yaml -o OUT
"""

import sys

from xpfilt.cli import main

if __name__ == "__main__":
    sys.exit(main())
