"""`python -m eagle3lint`.

`python -m` puts the working directory first on `sys.path`. Linting a checkout from inside it
would then import whatever that checkout holds under the names eagle3lint imports (`typer.py`,
`rich/`) and load rule plugins from any `*.dist-info` folder in it: code of the analysed tree
would run. The entry is taken off before anything else is imported, as `python -P` would.
"""

import os
import sys

if sys.path and sys.path[0] in ("", os.getcwd()):
    del sys.path[0]

from eagle3lint.cli import main

main()
