// dynalite (a DynamoDB implementation in JavaScript, in memory) on a random loopback port, and the
// official client pointed at it. Credentials are dummies: nothing leaves the machine.
import type { AddressInfo } from 'node:net';
import { DynamoDBClient, GetItemCommand } from '@aws-sdk/client-dynamodb';
import type { BusinessOperationId } from '@retrysafe/contract';
// @ts-expect-error dynalite ships no types
import dynalite from 'dynalite';
import { createDynamoDbLedger, type DynamoDbLedgerOptions, ensureTable } from '../src/index.js';

export interface Dynalite {
  readonly endpoint: string;
  client(): DynamoDBClient;
  /** A new empty table with the ledger's index. */
  table(prefix: string): Promise<string>;
  close(): Promise<void>;
}

/** The tests' epoch, and a new operation id each call (`what-1`, `what-2`, …). */
export const T0 = Date.UTC(2026, 0, 1);
let n = 0;
export const newId = (what: string) => `${what}-${++n}` as BusinessOperationId;

export const TEST_CREDENTIALS = { accessKeyId: 'test', secretAccessKey: 'test' };

/** `createTableMs`: how long a new table stays CREATING (default 0). */
export async function startDynalite(createTableMs = 0): Promise<Dynalite> {
  const server = dynalite({ createTableMs, deleteTableMs: 0, updateTableMs: 0 });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = () => new DynamoDBClient({ endpoint, region: 'local', credentials: TEST_CREDENTIALS });
  const admin = client();
  let n = 0;
  return {
    endpoint,
    client,
    async table(prefix) {
      const name = `${prefix}-${process.pid}-${++n}`;
      await ensureTable(admin, name);
      return name;
    },
    async close() {
      admin.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The tests' ledgers and raw reads on `db`'s tables. */
export function onTables(db: Dynalite) {
  /** `count` ledgers on one table, each with its own client (as separate processes would be). */
  async function ledgers(count: number, options: { retentionMs: number; cards: [] } | object = {}) {
    const table = await db.table('ledger');
    const all = Array.from({ length: count }, () =>
      createDynamoDbLedger({ table, client: db.client(), ...options } as DynamoDbLedgerOptions),
    );
    return { table, all, first: all[0]!, close: () => Promise.all(all.map((l) => l.close())) };
  }

  async function rawItem(table: string, id: string) {
    const client = db.client();
    try {
      return (await client.send(new GetItemCommand({ TableName: table, Key: { id: { S: id } }, ConsistentRead: true })))
        .Item;
    } finally {
      client.destroy();
    }
  }
  return { ledgers, rawItem };
}
