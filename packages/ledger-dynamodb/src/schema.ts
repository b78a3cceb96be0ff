import { setTimeout as sleep } from 'node:timers/promises';
import {
  CreateTableCommand,
  type CreateTableCommandInput,
  DescribeTableCommand,
  DescribeTimeToLiveCommand,
  type DynamoDBClient,
  type GlobalSecondaryIndex,
  type KeySchemaElement,
  UpdateTimeToLiveCommand,
} from '@aws-sdk/client-dynamodb';
import { LedgerError } from '@retrysafe/contract';

/** The sparse indexes of open and of closed operations: only items that carry `openState` / `closedState` are in each. */
export const OPEN_INDEX = 'open';
export const CLOSED_INDEX = 'closed';
/** The TTL attribute: epoch seconds, set when an operation closes (succeeded, rejected, abandoned). */
export const TTL_ATTRIBUTE = 'expiresAt';

/**
 * One item per operation, keyed by its business-operation id. The record and receipts are JSON
 * strings beside the attributes that conditions and queries read. The state keys one of two sparse
 * indexes: `openState` while the operation is open or handed off (recovery, handoff listings),
 * `closedState` once it is closed (listings of the history, prune), so no listing scans the table.
 */
export function tableDefinition(table: string): CreateTableCommandInput {
  return {
    TableName: table,
    BillingMode: 'PAY_PER_REQUEST',
    AttributeDefinitions: [
      { AttributeName: 'id', AttributeType: 'S' },
      { AttributeName: 'openState', AttributeType: 'S' },
      { AttributeName: 'closedState', AttributeType: 'S' },
      { AttributeName: 'createdAt', AttributeType: 'N' },
    ],
    KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }],
    GlobalSecondaryIndexes: [
      [OPEN_INDEX, 'openState'],
      [CLOSED_INDEX, 'closedState'],
    ].map(([IndexName, state]) => ({
      IndexName,
      KeySchema: [
        { AttributeName: state, KeyType: 'HASH' },
        { AttributeName: 'createdAt', KeyType: 'RANGE' },
      ],
      Projection: { ProjectionType: 'ALL' },
    })),
  };
}

/** What a table made elsewhere lacks, and how to make it. */
export const notKeyed = (table: string) =>
  `table ${table} is not keyed as the ledger needs (partition id; index ${OPEN_INDEX}: partition openState, index ${CLOSED_INDEX}: partition closedState, each sorted by createdAt with all attributes projected): make it as tableDefinition(table) declares it`;

export interface EnsureTableReport {
  readonly created: boolean;
  /** `unsupported`: the service has no TTL API (a local implementation): closed operations stay until pruned. */
  readonly ttl: 'enabled' | 'unsupported';
}

const keysOf = (keys: readonly KeySchemaElement[] = []) => keys.map((k) => `${k.AttributeName} ${k.KeyType}`).join();

const errorName = (err: unknown) => (err as { name?: string } | null)?.name;

async function describe(client: DynamoDBClient, table: string) {
  try {
    return (await client.send(new DescribeTableCommand({ TableName: table }))).Table ?? null;
  } catch (err) {
    if (errorName(err) === 'ResourceNotFoundException') return null;
    throw err;
  }
}

async function waitActive(client: DynamoDBClient, table: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const t = await describe(client, table);
    const indexes = t?.GlobalSecondaryIndexes ?? [];
    if (t?.TableStatus === 'ACTIVE' && indexes.every((i) => i.IndexStatus === 'ACTIVE')) {
      // A table made elsewhere without the indexes as declared (keys, every attribute projected) would take writes,
      // but recovery, listings and prune could never read the records.
      const want = tableDefinition(table);
      const unlike = (w: GlobalSecondaryIndex) => {
        const index = indexes.find((i) => i.IndexName === w.IndexName);
        return keysOf(index?.KeySchema) !== keysOf(w.KeySchema) || index?.Projection?.ProjectionType !== 'ALL';
      };
      if (keysOf(t.KeySchema) !== keysOf(want.KeySchema) || want.GlobalSecondaryIndexes!.some(unlike))
        throw new LedgerError(`DynamoDB ${notKeyed(table)}`, { reason: 'not-a-ledger' });
      return;
    }
    if (Date.now() >= deadline) throw new LedgerError(`DynamoDB table ${table} is not ACTIVE after ${timeoutMs} ms`);
    await sleep(100);
  }
}

/** Turns TTL on for the table; a service without the TTL API (dynalite) answers that it does not know it. */
async function enableTtl(client: DynamoDBClient, table: string): Promise<EnsureTableReport['ttl']> {
  const isOn = async () => {
    const seen = await client.send(new DescribeTimeToLiveCommand({ TableName: table }));
    const { TimeToLiveStatus: status, AttributeName: on } = seen.TimeToLiveDescription ?? {};
    if (status !== 'ENABLED' && status !== 'ENABLING') return false;
    // A table has one TTL attribute: on another, closed operations never expire, and turning ours on is refused.
    if (on !== undefined && on !== TTL_ATTRIBUTE)
      throw new LedgerError(
        `DynamoDB table ${table} has TTL on attribute ${on}, not ${TTL_ATTRIBUTE}: turn it off first`,
      );
    return true;
  };
  try {
    if (await isOn()) return 'enabled';
    await client.send(
      new UpdateTimeToLiveCommand({
        TableName: table,
        TimeToLiveSpecification: { AttributeName: TTL_ATTRIBUTE, Enabled: true },
      }),
    );
    return 'enabled';
  } catch (err) {
    if (errorName(err) === 'UnknownOperationException') return 'unsupported';
    // Another process turned it on since we looked: DynamoDB refuses a second UpdateTimeToLive.
    if (errorName(err) === 'ValidationException' && (await isOn())) return 'enabled';
    throw err;
  }
}

/**
 * Creates the ledger's table and its index (on-demand capacity) unless the table exists, waits until
 * both are ACTIVE, and turns on TTL for `expiresAt`. Needs dynamodb:CreateTable, DescribeTable,
 * DescribeTimeToLive and UpdateTimeToLive; the ledger itself needs none of them.
 */
export async function ensureTable(
  client: DynamoDBClient,
  table: string,
  options: { readonly timeoutMs?: number } = {},
): Promise<EnsureTableReport> {
  const { timeoutMs = 300_000 } = options;
  // NaN or Infinity would wait for a table that never becomes ACTIVE for ever.
  if (!(Number.isFinite(timeoutMs) && timeoutMs >= 0))
    throw new LedgerError(`ensureTable: timeoutMs must be a number ≥ 0, got ${String(timeoutMs)}`);
  let created = false;
  try {
    if ((await describe(client, table)) === null) {
      try {
        await client.send(new CreateTableCommand(tableDefinition(table)));
        created = true;
      } catch (err) {
        // Another process created it meanwhile: wait for it like any other.
        if (errorName(err) !== 'ResourceInUseException') throw err;
      }
    }
    await waitActive(client, table, timeoutMs);
    return { created, ttl: await enableTtl(client, table) };
  } catch (cause) {
    if (LedgerError.isInstance(cause)) throw cause;
    throw new LedgerError(`cannot set up DynamoDB table ${table}: ${(cause as Error).message}`, { cause });
  }
}
