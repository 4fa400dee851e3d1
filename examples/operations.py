"""Operations from the model: a table's operational settings applied by create() and read
back, its CloudFormation and Terraform, and a least-privilege IAM policy scoped to a
tenant, all from the one declaration.

Run: ``python examples/operations.py [--endpoint-url URL]``
"""

from __future__ import annotations

import json

from _support import run

from dynaorm import GSI, Entity, SettingsError, Table, Unique
from dynaorm.formats import cloudformation, iam, terraform

saas = Table("dynaorm-example-operations",
             indexes=[GSI("by_status", pk="gsi1pk", sk="gsi1sk", max_on_demand=(200, 100))],
             max_on_demand=(1000, 500), deletion_protection=False,
             tags={"team": "payments"})


class Invoice(Entity):
    class Meta:
        table = saas
        pk = "TENANT#{tenant_id}#INVOICE#{invoice_id}"
        sk = "INVOICE"
        unique = (Unique("number", scope="TENANT#{tenant_id}"),)
        indexes = {"by_status": ("TENANT#{tenant_id}#STATUS#{status}", "{invoice_id}")}

    tenant_id: str
    invoice_id: str
    number: str
    status: str = "open"


def main() -> None:
    try:
        Table("dynaorm-example-refused", pitr_days=90)
    except SettingsError as exc:
        print("refused before sending:", str(exc).split(": ", 1)[1].split(" (")[0])
    with run(saas, "operations from the model"):
        live = saas.settings()
        print("deletion protection as created:", live.deletion_protection)
        print("the endpoint cannot report:", sorted(live.unknown) or "nothing")
    model = saas.model()
    template, _ = cloudformation.to_format(model)
    (resource,) = template["Resources"].values()
    props = resource["Properties"]
    print("CloudFormation OnDemandThroughput:", props["OnDemandThroughput"])
    text, _ = terraform.to_format(model)
    print("Terraform:", text.splitlines()[0])
    policy, uncovered = iam.to_format(model, "write", scope="tenant_id")
    (table,) = [s for s in policy["Statement"] if s["Sid"] == "Table"]
    print("IAM actions:", ", ".join(a.split(":")[1] for a in table["Action"]))
    print("IAM leading keys:", json.dumps(
        table["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"]))
    print("IAM refuses tags holding:", json.dumps(
        table["Condition"]["StringNotLike"]["aws:PrincipalTag/tenant_id"]))
    print("what the scope cannot cover:", uncovered or "nothing")


if __name__ == "__main__":
    main()
