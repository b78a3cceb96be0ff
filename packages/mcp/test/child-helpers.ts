/** Shared by the tests that drive `retrysafe-mcp` and the servers as child processes: their paths, temp dirs removed
 * after each test, fence files, the host (the SDK's client over stdio). Light to import (no source of the package):
 * fence-helpers.ts adds the in-process parts. */
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { ClientCapabilities } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';

export const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
export const ordersServer = fileURLToPath(new URL('./fixtures/orders-server.mjs', import.meta.url));
/** An McpServer (the official SDK's) whose create_ticket's input schema changes on a call to next_schema. */
export const ticketsServer = fileURLToPath(new URL('./fixtures/tickets-server.mjs', import.meta.url));
/** The tools, resources and prompts the MCP conformance suite's server scenarios call, written to its requirements. */
export const conformanceServer = fileURLToPath(new URL('./fixtures/conformance-server.mjs', import.meta.url));
/** An McpServer whose tools run only as tasks: research reports progress after its task has completed, ask elicits. */
export const lateProgressServer = fileURLToPath(new URL('./fixtures/late-progress-server.mjs', import.meta.url));
export const lossyRelay = fileURLToPath(new URL('./fixtures/lossy-relay.mjs', import.meta.url));
const require = createRequire(import.meta.url);
const serverDir = (name: string) => dirname(require.resolve(`@modelcontextprotocol/${name}/package.json`));
/** The real third-party servers, installed as dev dependencies. */
export const memoryServer = join(serverDir('server-memory'), 'dist/index.js');
export const filesystemServer = join(serverDir('server-filesystem'), 'dist/index.js');
/** The official reference server that exercises every protocol feature; started as `node <it> stdio`. */
export const everythingServer = join(serverDir('server-everything'), 'dist/index.js');

export type Answer = {
  isError?: boolean;
  structuredContent?: Record<string, unknown>;
  content?: { type: string; text?: string }[];
  _meta?: { retrysafe?: { status: string; businessOperationId?: string; adopted?: boolean } };
};

const cleanups: (() => Promise<unknown> | unknown)[] = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!();
});
export const onCleanup = (f: () => Promise<unknown> | unknown) => cleanups.push(f);

/** `make()` once, before the tests of the enclosing describe that share it (none depends on another's state): what it
 * registers with onCleanup (its clients, temp dirs) runs after them all, not after the first. */
export function sharedByTests<T>(make: () => Promise<T>): () => T {
  let value: T;
  const mine: typeof cleanups = [];
  beforeAll(async () => {
    const from = cleanups.length;
    value = await make();
    mine.push(...cleanups.splice(from));
  });
  afterAll(async () => {
    while (mine.length) await mine.pop()!();
  });
  return () => value;
}

/** A temp dir, removed after the test once the cleanups registered after it (the clients, whose child processes write into it) have run. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** The docs' HTTP API example copied into a temp dir, orders.create given `paramsSchema`; returns its retrysafe.yaml. */
export function httpExampleWithSchema(prefix: string, paramsSchema: unknown): string {
  const example = fileURLToPath(new URL('../../config/examples/http-api/', import.meta.url));
  const dir = tempDir(prefix);
  for (const f of readdirSync(example)) copyFileSync(join(example, f), join(dir, f));
  const file = join(dir, 'retrysafe.yaml');
  const config = parseYaml(readFileSync(file, 'utf8')) as {
    adapters: { acme: { operations: Record<string, { paramsSchema?: unknown }> } };
  };
  config.adapters.acme.operations['orders.create']!.paramsSchema = paramsSchema;
  writeFileSync(file, stringifyYaml(config));
  return file;
}

/** Writes `value` as JSON to `dir/name`; returns the path. */
export function writeJson(dir: string, name: string, value: unknown): string {
  const file = join(dir, name);
  writeFileSync(file, JSON.stringify(value));
  return file;
}

export const writeFence = (dir: string, fence: Record<string, unknown>) =>
  writeJson(dir, 'fence.json', { ledger: './fence.db', handoffs: './handoffs.jsonl', ...fence });

/** The process whose id is in `pidFile` exits. The wait covers a watchdog process's own start and its 200 ms poll on a
 * loaded machine (two seconds did not, in CI); the assertion is that it ends, not how soon. */
export async function expectStopped(pidFile: string) {
  const pid = Number(readFileSync(pidFile, 'utf8'));
  const alive = () => {
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  };
  for (let i = 0; i < 500 && alive(); i++) await new Promise((r) => setTimeout(r, 20));
  onCleanup(() => alive() && process.kill(pid, 'SIGKILL'));
  expect(alive()).toBe(false);
}

/** The orders server's create_order as the fence files declare it, reconciled through list_orders. */
export const ordersTool = (lookup: Record<string, unknown> = {}) => ({
  kind: 'create',
  intent: ['customer', 'ref'],
  resultRef: 'id',
  toolErrors: 'rejected',
  lookup: {
    tool: 'list_orders',
    arguments: { customer: '{{customer}}' },
    items: 'orders',
    match: { customer: 'customer', ref: 'ref' },
    consistencyDelay: 0,
    ...lookup,
  },
});
export const lookupPolicy = { lookupWindowMs: 3000, waitForOtherMs: 10_000, baseMs: 10, capMs: 50 };

/** A fence file of `tools` with the lookup policy above. */
export const lookupFence = (dir: string, name: string, tools: Record<string, unknown>, timeoutMs = 500) =>
  writeFence(dir, { name, timeoutMs, policy: lookupPolicy, tools });

/** The upstream `node server …args` behind the lossy relay, which drops the answers of `tool`'s calls. */
export const droppingAnswers = (tool: string, server: string, ...args: string[]) => [
  '--',
  process.execPath,
  lossyRelay,
  '--drop-answer',
  tool,
  '--',
  process.execPath,
  server,
  ...args,
];

/** A tool call whose client waits long: the real servers behind a fence start slowly on a loaded machine. */
export const callTool = (client: Client, name: string, args: Record<string, unknown>, timeout = 20_000) =>
  client.callTool({ name, arguments: args }, undefined, { timeout }) as Promise<Answer>;

/** server-memory's create_entities: one entity per name, so the name is the intent open_nodes can look up. */
export const memoryCreate = {
  kind: 'create',
  intent: ['entities.0.name'],
  lookup: {
    tool: 'open_nodes',
    arguments: { names: ['{{entities.0.name}}'] },
    items: 'entities',
    match: { name: 'entities.0.name' },
    consistencyDelay: 0,
    lateApplyBound: '1s',
  },
};

/** A fence file over the orders server (timeouts short, so a lost answer is seen quickly). */
export const ordersFence = (dir: string, timeoutMs: number, extra: Record<string, unknown> = {}) =>
  writeFence(dir, {
    name: 'orders',
    timeoutMs,
    policy: lookupPolicy,
    tools: { create_order: ordersTool({ lateApplyBound: '1s' }) },
    ...extra,
  });

/** What a host declares, and how it answers what the server asks it (its handlers, set before it connects). */
export type HostFeatures = { capabilities?: ClientCapabilities; answer?: (client: Client) => void };

/** The host: the official SDK client over stdio. */
export async function connect(
  command: string,
  args: string[],
  env: Record<string, string> = {},
  { capabilities = {}, answer }: HostFeatures = {},
): Promise<Client> {
  const client = new Client({ name: 'scripted-agent', version: '1.0.0' }, { capabilities });
  answer?.(client);
  await client.connect(
    new StdioClientTransport({ command, args, env: { PATH: process.env.PATH ?? '', ...env }, stderr: 'ignore' }),
  );
  onCleanup(() => client.close());
  return client;
}

export const wrapped = (fence: string, upstream: string[], env: Record<string, string> = {}) =>
  connect(process.execPath, [bin, 'wrap', '--config', fence, ...upstream], env);
