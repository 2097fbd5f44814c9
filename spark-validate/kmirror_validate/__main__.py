"""`python -m kmirror_validate`: the same as the kmirror-validate console script."""

from kmirror_validate.cli import entry

entry()
