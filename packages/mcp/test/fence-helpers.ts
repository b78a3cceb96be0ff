/** Shared by the fence tests: temp dirs, fence files, a real MCP client (the host) and `retrysafe-mcp wrap` as a child process. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { afterEach } from 'vitest';

export const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
export const ordersServer = fileURLToPath(new URL('./fixtures/orders-server.mjs', import.meta.url));
export const lossyRelay = fileURLToPath(new URL('./fixtures/lossy-relay.mjs', import.meta.url));
const require = createRequire(import.meta.url);
const serverDir = (name: string) => dirname(require.resolve(`@modelcontextprotocol/${name}/package.json`));
/** The real third-party servers, installed as dev dependencies. */
export const memoryServer = join(serverDir('server-memory'), 'dist/index.js');
export const filesystemServer = join(serverDir('server-filesystem'), 'dist/index.js');

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

/** A temp dir, removed after the test once the cleanups registered after it (the clients, whose child processes write into it) have run. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

export function writeFence(dir: string, fence: Record<string, unknown>): string {
  const file = join(dir, 'fence.json');
  writeFileSync(file, JSON.stringify({ ledger: './fence.db', handoffs: './handoffs.jsonl', ...fence }));
  return file;
}

/** The host: the official SDK client over stdio. */
export async function connect(command: string, args: string[], env: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'scripted-agent', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({ command, args, env: { PATH: process.env.PATH ?? '', ...env }, stderr: 'ignore' }),
  );
  cleanups.push(() => client.close());
  return client;
}

export const wrapped = (fence: string, upstream: string[], env: Record<string, string> = {}) =>
  connect(process.execPath, [bin, 'wrap', '--config', fence, ...upstream], env);
