import type {
  DeleteItemCommandInput,
  GetItemCommandInput,
  PutItemCommandInput,
  QueryCommandInput,
  UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import type { OperationState } from '@retrysafe/contract';
import { PRUNABLE_STATES } from '@retrysafe/contract/ledger';
import { type Item, OPTIONAL_ATTRIBUTES } from './rows.js';
import { CLOSED_INDEX, OPEN_INDEX, TTL_ATTRIBUTE } from './schema.js';

/** Every request the ledger sends, as plain inputs. Names go through placeholders (several are reserved words). */

type Key = Item;
const keyOf = (id: string): Key => ({ id: { S: id } });

export function getItem(table: string, id: string): GetItemCommandInput {
  return { TableName: table, Key: keyOf(id), ConsistentRead: true };
}

/** A new operation: only where no item is, or where one is past its TTL (gone to every read). */
export function putNew(table: string, item: Item, nowMs: number): PutItemCommandInput {
  return {
    TableName: table,
    Item: item,
    ConditionExpression: 'attribute_not_exists(#id) OR #ttl <= :now',
    ExpressionAttributeNames: { '#id': 'id', '#ttl': TTL_ATTRIBUTE },
    ExpressionAttributeValues: { ':now': { N: String(Math.floor(nowMs / 1000)) } },
  };
}

/**
 * Every later write: the whole item's attributes, applied only while the item still carries the fence
 * and the version this write started from (any other write since, by anyone, moved the version).
 */
export function updateAt(table: string, item: Item, fence: number, version: number): UpdateItemCommandInput {
  const names: Record<string, string> = { '#fence': 'fence', '#version': 'version' };
  const values: Item = { ':fence0': { N: String(fence) }, ':version0': { N: String(version) } };
  const set: string[] = [];
  for (const [i, [name, value]] of Object.entries(item).entries()) {
    if (name === 'id') continue;
    names[`#a${i}`] = name;
    values[`:a${i}`] = value;
    set.push(`#a${i} = :a${i}`);
  }
  const remove = OPTIONAL_ATTRIBUTES.filter((name) => item[name] === undefined).map((name, i) => {
    names[`#r${i}`] = name;
    return `#r${i}`;
  });
  return {
    TableName: table,
    Key: keyOf(item.id!.S!),
    UpdateExpression: `SET ${set.join(', ')}${remove.length ? ` REMOVE ${remove.join(', ')}` : ''}`,
    ConditionExpression: '#fence = :fence0 AND #version = :version0',
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
  };
}

/**
 * Retention: deletes the item only while it is the version the prune read of the same operation (its creation:
 * an id past its TTL starts afresh at version 1, and may reach the version read).
 */
export function deleteAt(table: string, id: string, version: number, createdAt: number): DeleteItemCommandInput {
  return {
    TableName: table,
    Key: keyOf(id),
    ConditionExpression: '#version = :version AND #createdAt = :createdAt',
    ExpressionAttributeNames: { '#version': 'version', '#createdAt': 'createdAt' },
    ExpressionAttributeValues: { ':version': { N: String(version) }, ':createdAt': { N: String(createdAt) } },
  };
}

/** What a query of one state's index narrows to: newest first (`back`), created before `before`, a provider, an operation. */
export interface StateQuery {
  readonly back?: boolean;
  readonly before?: number;
  readonly provider?: string | undefined;
  readonly operation?: string | undefined;
}

/** One page of the operations in `state`, in creation order, from the sparse index that holds that state. */
export function queryState(table: string, state: OperationState, q: StateQuery, start?: Key): QueryCommandInput {
  const closed = PRUNABLE_STATES.includes(state);
  const names: Record<string, string> = { '#state': closed ? 'closedState' : 'openState' };
  const values: Item = { ':state': { S: state } };
  let key = '#state = :state';
  if (q.before !== undefined) {
    names['#createdAt'] = 'createdAt';
    values[':before'] = { N: String(q.before) };
    key += ' AND #createdAt < :before';
  }
  // Only the items a listing keeps come back (every item of the state is still read).
  const terms: string[] = [];
  for (const name of ['provider', 'operation'] as const) {
    const value = q[name];
    if (!value) continue;
    names[`#${name}`] = name;
    values[`:${name}`] = { S: value };
    terms.push(`#${name} = :${name}`);
  }
  return {
    TableName: table,
    IndexName: closed ? CLOSED_INDEX : OPEN_INDEX,
    // The listings read the record: an index that does not carry every attribute is refused, not read as keys only.
    Select: 'ALL_ATTRIBUTES',
    ScanIndexForward: !q.back,
    KeyConditionExpression: key,
    ...(terms.length ? { FilterExpression: terms.join(' AND ') } : {}),
    ExpressionAttributeNames: names,
    ExpressionAttributeValues: values,
    ...(start ? { ExclusiveStartKey: start } : {}),
  };
}
