import type {
  DeleteItemCommandInput,
  GetItemCommandInput,
  PutItemCommandInput,
  QueryCommandInput,
  ScanCommandInput,
  UpdateItemCommandInput,
} from '@aws-sdk/client-dynamodb';
import type { ListFilter } from '@retrysafe/contract';
import { type Item, OPTIONAL_ATTRIBUTES } from './rows.js';
import { OPEN_INDEX, TTL_ATTRIBUTE } from './schema.js';

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

/** One page of the open operations in `state`, oldest first unless `back` (the sparse index). */
export function queryOpen(table: string, state: string, back: boolean, start?: Key): QueryCommandInput {
  return {
    TableName: table,
    IndexName: OPEN_INDEX,
    // The listings read the record: an index that does not carry every attribute is refused, not read as keys only.
    Select: 'ALL_ATTRIBUTES',
    ScanIndexForward: !back,
    KeyConditionExpression: '#open = :state',
    ExpressionAttributeNames: { '#open': 'openState' },
    ExpressionAttributeValues: { ':state': { S: state } },
    ...(start ? { ExclusiveStartKey: start } : {}),
  };
}

/** A Scan's filter: only the items a listing keeps come back (every item is still read). */
export type ScanFilter = Pick<
  ScanCommandInput,
  'FilterExpression' | 'ExpressionAttributeNames' | 'ExpressionAttributeValues'
>;

/** Items in one of the listing's states, of its provider and operation (an empty one filters nothing, as elsewhere). */
export function scanFilter(filter: ListFilter): ScanFilter | undefined {
  const names: Record<string, string> = {};
  const values: Item = {};
  const terms: string[] = [];
  if (filter.states?.length) {
    names['#state'] = 'state';
    for (const [i, state] of filter.states.entries()) values[`:s${i}`] = { S: state };
    terms.push(`#state IN (${filter.states.map((_, i) => `:s${i}`).join(', ')})`);
  }
  for (const name of ['provider', 'operation'] as const) {
    const value = filter[name];
    if (!value) continue;
    names[`#${name}`] = name;
    values[`:${name}`] = { S: value };
    terms.push(`#${name} = :${name}`);
  }
  if (terms.length === 0) return undefined;
  return { FilterExpression: terms.join(' AND '), ExpressionAttributeNames: names, ExpressionAttributeValues: values };
}

/** One page of the whole table (listings without an open-state filter, retention). */
export function scanPage(table: string, start?: Key, filter?: ScanFilter): ScanCommandInput {
  return { TableName: table, ConsistentRead: true, ...filter, ...(start ? { ExclusiveStartKey: start } : {}) };
}
