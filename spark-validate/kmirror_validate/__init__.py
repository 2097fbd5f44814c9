"""kmirror-validate: a PySpark job that proves a mirror's target holds an exact copy of the
source (docs/validation.md). `kmirror_validate.compare` holds the DataFrame functions;
`kmirror_validate.cli` the command line."""

from kmirror import __version__

__all__ = ["__version__"]
