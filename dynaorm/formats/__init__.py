"""Formats that read the model (``table.model()``) and write another tool's document.

One module per format (the MCP data model, NoSQL Workbench, CloudFormation, Terraform,
IAM policies, ...), each reading the model's plain data only, never a private member of
an entity's spec (DESIGN.md, 0.7: "one intermediate representation, many spokes").
"""
