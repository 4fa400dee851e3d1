"""Keys per tenant, and forgetting one: each tenant's encrypted values are sealed under a
data key of its own (wrapped by the table's keyring, kept in a key table of its own, made
on first use); ``table.forget`` destroys one tenant's key, after which every encrypted
value of that tenant reads as ``ForgottenError`` (wherever its copy is: rows, history,
what a scan copied before), no write seals one for it, and its other fields and every
other tenant read as before. ``dynaorm forget MODULE:TABLE --scope tenant_id=acme`` is the
command.

Run: ``python examples/tenant_keys.py [--endpoint-url URL]``
(needs ``dynaorm[encryption]``)
"""

from __future__ import annotations

import os

from _support import run

from dynaorm import Encrypted, Entity, ForgottenError, StaticKeyring, Table

crm = Table("dynaorm-example-tenants", keyring=StaticKeyring(os.urandom(32)),
            key_scope="tenant_id")


class Customer(Entity):
    class Meta:
        table = crm
        pk = "TENANT#{tenant_id}#CUSTOMER#{customer_id}"
        sk = "CUSTOMER"

    tenant_id: str
    customer_id: str
    name: str
    email: Encrypted[str]


def main() -> None:
    with run(crm, "keys per tenant, and forgetting one") as db:
        s = db.session()
        s.save(Customer(tenant_id="acme", customer_id="c1", name="Ada", email="ada@acme.io"))
        s.save(Customer(tenant_id="globex", customer_id="c1", name="Hank",
                        email="hank@globex.io"))
        s.commit()
        keys = db.session().client.send("Scan", {"TableName": crm.key_table})["Items"]
        print("tenant keys in", crm.key_table, len(keys))
        copy = db.scan_raw()  # (what a backup or an export holds: ciphertext)
        sealed = [bytes(r["email"]["B"])[2:9] for r in copy if "email" in r]
        print("each value names its tenant's key:", sealed)
        gone = crm.forget(scope={"tenant_id": "acme"})
        print("forgot acme at", gone.forgotten_at == crm.forget(
            scope={"tenant_id": "acme"}).forgotten_at and "the same time, twice")
        r = db.session()
        try:
            r.get(Customer, tenant_id="acme", customer_id="c1")
        except ForgottenError as exc:
            print("acme's email:", type(exc).__name__, exc.scope)
        print("acme's other fields:", r.query(Customer, tenant_id="acme",
                                              customer_id="c1").values("name"))
        hank = r.get(Customer, tenant_id="globex", customer_id="c1")
        assert hank is not None
        print("globex reads as before:", hank.email)
        s.save(Customer(tenant_id="acme", customer_id="c2", name="Bob", email="b@acme.io"))
        try:
            s.commit()
        except ForgottenError:
            print("a write for acme: refused before sending")
        blob = crm.seal(b"agent state", scope={"tenant_id": "globex"}, context="thread-1")
        print("sealed bytes open:", crm.open(blob, context="thread-1"))


if __name__ == "__main__":
    main()
