"""Entry point for spark-submit, which runs a file rather than a console script:

    spark-submit --master k8s://https://api:6443 \
      --jars "$(ls "$KMIRROR_SPARK_JARS"/*.jar | paste -sd,)" \
      spark-validate/kmirror_validate/job.py --mm2.config mm2.properties --json-out report.json

The same flags as `kmirror-validate`; spark-submit's master and settings are used.
"""

from __future__ import annotations

import sys
from pathlib import Path

if __name__ == "__main__":
    # Run as a file from a checkout: make both packages importable without installing them.
    root = Path(__file__).resolve().parents[2]
    for path in (root / "spark-validate", root / "image"):
        if path.is_dir() and str(path) not in sys.path:
            sys.path.insert(0, str(path))
    sys.path[:] = [p for p in sys.path if Path(p).resolve() != Path(__file__).resolve().parent]

    from kmirror_validate.cli import main

    sys.exit(main())
