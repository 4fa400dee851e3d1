// Items DynamoDB-Toolbox 2 writes for its documentation's Pokemon example ("KV Store" and
// "Scans & Queries" in github.com/dynamodb-toolbox/dynamodb-toolbox, MIT): the documented
// schema, with the byTrainerId index keyed on the plain attributes trainerId and
// captureDate, and Toolbox's own internal attributes (entity name, created and modified
// times) left on, rendered by PutItemCommand's params() (no request is sent).
import { Table } from "dynamodb-toolbox/table";
import { Entity } from "dynamodb-toolbox/entity";
import { PutItemCommand } from "dynamodb-toolbox/entity/actions/put";
import { item, string, number, boolean, set, list, map, record, anyOf } from "dynamodb-toolbox/schema";
import { marshall } from "@aws-sdk/util-dynamodb";
import { DynamoDBClient } from "@aws-sdk/client-dynamodb";
import { DynamoDBDocumentClient } from "@aws-sdk/lib-dynamodb";

const PokeTable = new Table({
  name: "poke-table",
  partitionKey: { name: "pokemonId", type: "string" },
  indexes: { byTrainerId: { type: "global", partitionKey: { name: "trainerId", type: "string" }, sortKey: { name: "captureDate", type: "string" } } },
  documentClient: DynamoDBDocumentClient.from(new DynamoDBClient({ region: "us-east-1" })),
});
const pokeType = string().enum("fire", "water", "grass", "electric", "flying");
const pokemonSchema = item({
  pokemonId: string().key(),
  customName: string().optional(),
  species: string().enum("pikachu", "charizard", "bulbasaur", "squirtle"),
  level: number(),
  isLegendary: boolean().optional(),
  pokeTypes: set(pokeType),
  evolutions: list(string()).default([]),
  resistances: record(pokeType, number()).partial(),
  captureState: anyOf(map({ status: string().enum("captured"), capturedAt: string() }), map({ status: string().enum("wild") })).default({ status: "wild" }),
  trainerId: string().optional(),
  captureDate: string().optional(),
});
const PokemonEntity = new Entity({ name: "pokemon", table: PokeTable, schema: pokemonSchema });
const rows = [
  { pokemonId: "pikachu-1", species: "pikachu", level: 12, pokeTypes: new Set(["electric"]), resistances: { electric: 2 }, trainerId: "ash-ketchum", captureDate: "2025-03-01T10:00:00.000Z", captureState: { status: "captured", capturedAt: "2025-03-01T10:00:00.000Z" }, customName: "Sparky" },
  { pokemonId: "charizard-1", species: "charizard", level: 36, isLegendary: false, pokeTypes: new Set(["fire", "flying"]), evolutions: ["charmander", "charmeleon"], resistances: { fire: 2, grass: 2 }, trainerId: "ash-ketchum", captureDate: "2025-04-02T09:30:00.000Z", captureState: { status: "captured", capturedAt: "2025-04-02T09:30:00.000Z" } },
  { pokemonId: "bulbasaur-1", species: "bulbasaur", level: 5, pokeTypes: new Set(["grass"]), resistances: { water: 2 } },
  { pokemonId: "squirtle-1", species: "squirtle", level: 9, pokeTypes: new Set(["water"]), resistances: {}, trainerId: "misty", captureDate: "2025-05-03T08:15:00.000Z", captureState: { status: "captured", capturedAt: "2025-05-03T08:15:00.000Z" } },
  { pokemonId: "pikachu-2", species: "pikachu", level: 3, pokeTypes: new Set(["electric"]), resistances: {} },
];
const items = rows.map((r) => PokemonEntity.build(PutItemCommand).item(r).params().Item);
process.stdout.write(JSON.stringify(items.map((i) => marshall(i, { removeUndefinedValues: true })), null, 1));
