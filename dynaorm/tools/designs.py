"""The model's formats (moved to :mod:`dynaorm.formats`, one module each) and the code
``dynaorm model --import`` prints (:mod:`dynaorm.formats.code`), under the names 0.6 gave
them."""

from __future__ import annotations

from dynaorm.formats import READABLE, export, read
from dynaorm.formats.code import import_code

__all__ = ["FORMATS", "export", "import_code", "read"]

#: the formats 0.6's ``FORMATS`` named: written and read back (the infrastructure formats
#: of :data:`dynaorm.formats.FORMATS` are written only)
FORMATS = READABLE
