// Items ElectroDB 3 writes for its own task-manager example (examples/taskManager in
// github.com/tywalch/electrodb, MIT): the example's three entities as it declares them,
// a few of the example's data records each, rendered by `put(...).params()` (no request
// is sent), in DynamoDB's wire form.
import { readFileSync } from "node:fs";
import { Entity } from "electrodb";
import { marshall } from "@aws-sdk/util-dynamodb";

const table = "electro";
const Task = new Entity({
  model: { entity: "task", version: "1", service: "task-manager" },
  attributes: {
    taskName: { type: "string", required: true },
    project: { type: "string", required: true },
    employee: { type: "string", required: true },
    description: { type: "string" },
    status: { type: ["open", "in-progress", "closed"], default: "open" },
    points: { type: "number", required: true },
    comments: { type: "any" },
  },
  indexes: {
    task: { pk: { field: "pk", composite: ["taskName"] }, sk: { field: "sk", composite: ["project", "employee"] } },
    project: { index: "gsi1pk-gsi1sk-index", pk: { field: "gsi1pk", composite: ["project"] }, sk: { field: "gsi1sk", composite: ["employee", "status"] } },
    assigned: { collection: "assignments", index: "gsi3pk-gsi3sk-index", pk: { field: "gsi3pk", composite: ["employee"] }, sk: { field: "gsi3sk", composite: ["project", "status"] } },
    statuses: { index: "gsi4pk-gsi4sk-index", pk: { field: "gsi4pk", composite: ["status"] }, sk: { field: "gsi4sk", composite: ["project", "employee"] } },
  },
}, { table });
const Office = new Entity({
  model: { entity: "Office", version: "1", service: "task-manager" },
  attributes: {
    officeName: { type: "string" }, country: { type: "string" }, state: { type: "string" },
    city: { type: "string" }, zip: { type: "string" }, address: { type: "string" },
  },
  indexes: {
    locations: { pk: { field: "pk", composite: ["country", "state"] }, sk: { field: "sk", composite: ["city", "zip", "officeName"] } },
    office: { index: "gsi1pk-gsi1sk-index", collection: "workplaces", pk: { field: "gsi1pk", composite: ["officeName"] }, sk: { field: "gsi1sk", composite: [] } },
  },
}, { table });
const Employee = new Entity({
  model: { entity: "employee", version: "1", service: "task-manager" },
  attributes: {
    employee: { type: "string" }, firstName: { type: "string", required: true },
    lastName: { type: "string", required: true }, officeName: { type: "string", required: true },
    title: { type: "string", required: true },
    team: { type: ["development", "marketing", "finance", "product", "cool cats and kittens"], required: true },
    salary: { type: "string", required: true }, manager: { type: "string" },
    dateHired: { type: "string" }, birthday: { type: "string" },
  },
  indexes: {
    employee: { pk: { field: "pk", composite: ["employee"] }, sk: { field: "sk", composite: [] } },
    coworkers: { index: "gsi1pk-gsi1sk-index", collection: "workplaces", pk: { field: "gsi1pk", composite: ["officeName"] }, sk: { field: "gsi1sk", composite: ["team", "title", "employee"] } },
    teams: { index: "gsi2pk-gsi2sk-index", pk: { field: "gsi2pk", composite: ["team"] }, sk: { field: "gsi2sk", composite: ["dateHired", "title"] } },
    employeeLookup: { collection: "assignments", index: "gsi3pk-gsi3sk-index", pk: { field: "gsi3pk", composite: ["employee"] }, sk: { field: "gsi3sk", composite: [] } },
    roles: { index: "gsi4pk-gsi4sk-index", pk: { field: "gsi4pk", composite: ["title"] }, sk: { field: "gsi4sk", composite: ["salary"] } },
    directReports: { index: "gsi5pk-gsi5sk-index", pk: { field: "gsi5pk", composite: ["manager"] }, sk: { field: "gsi5sk", composite: ["team", "officeName"] } },
  },
}, { table });

const data = JSON.parse(readFileSync(process.argv[2], "utf8"));
const items = [
  ...data.offices.slice(0, 3).map((o) => Office.put(o).params().Item),
  ...data.employees.filter((e) => e.manager).slice(0, 4).map((e) => Employee.put(e).params().Item),
  ...data.tasks.slice(0, 5).map(({ comments, type, ...t }) => Task.put(t).params().Item),
];
process.stdout.write(JSON.stringify(items.map((i) => marshall(i)), null, 1));
