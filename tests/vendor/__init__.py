"""Test code of other projects, vendored verbatim (with its licence) until released."""
