"""Patients whose social security numbers are stored encrypted (AES-GCM, a keyring's data
keys), unique by a keyed HMAC, found by value, updated by key (sealed for the item),
read back by ``values()``, never shown in a repr, and never readable with another key.

Run: ``python examples/encrypted_fields.py [--endpoint-url URL]``
(needs ``dynaorm[encryption]``)
"""

from __future__ import annotations

import os

from _support import run

from dynaorm import DecryptionError, Encrypted, Entity, StaticKeyring, Table, Unique

KEY = os.urandom(32)
#: the data keys' wrapping key, and the key the unique ssn's guard MAC is keyed with (it
#: outlives rotations of the first: StaticKeyring(new, previous=[KEY], mac_key=KEY))
clinic = Table("dynaorm-example-encrypted", keyring=StaticKeyring(KEY, mac_key=KEY))


class Patient(Entity):
    class Meta:
        table = clinic
        pk = "PATIENT#{patient_id}"
        sk = "PATIENT"
        unique = [Unique("ssn")]

    patient_id: str
    name: str
    ssn: Encrypted[str]


def main() -> None:
    with run(clinic, "encrypted fields") as db:
        s = db.session()
        s.save(Patient(patient_id="p1", name="Ada", ssn="123-45-6789"))
        s.commit()
        raw = next(i for i in db.scan_raw() if i["pk"]["S"] == "PATIENT#p1")
        print("stored ssn is ciphertext:", "123-45-6789" not in str(raw), sorted(raw["ssn"]))
        got, found = s.get(Patient, patient_id="p1"), s.find(Patient, ssn="123-45-6789")
        assert got is not None and found is not None
        print("read back:", got.ssn)
        print("found by value:", found.patient_id)
        s.update(Patient, patient_id="p1").set(ssn="987-65-4321")  # sealed for the item
        s.commit()
        print("values():", s.query(Patient, patient_id="p1").values("ssn"))  # the plaintext
        print("shown as:", s.get(Patient, patient_id="p1"))  # (repr: never the plaintext)
        old = clinic.keyring
        clinic.keyring = StaticKeyring(os.urandom(32), mac_key=KEY)  # another data key
        try:
            db.session().get(Patient, patient_id="p1")
        except DecryptionError as exc:
            print(f"another keyring: DecryptionError on field {exc.field!r}")
        clinic.keyring = old


if __name__ == "__main__":
    main()
