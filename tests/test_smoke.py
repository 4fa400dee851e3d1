from dynaorm import UniqueConstraintError
from dynaorm.testing import TestBackend
from tests.models import User

import pytest


def test_register_and_duplicate_email(db: TestBackend) -> None:
    s = db.session()
    s.save(User(username="bob", email="Bob@Tables.com"))
    s.commit()
    before = db.scan_raw()
    s.save(User(username="bobby", email="bob@tables.com"))
    with pytest.raises(UniqueConstraintError) as err:
        s.commit()
    assert err.value.field == "email"
    assert db.scan_raw() == before
