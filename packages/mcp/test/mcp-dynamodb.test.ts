// The MCP server on a DynamoDB ledger named in its config file ({ ledger: { dynamodb } }): a scripted
// agent performs an operation through the real server (a child process, over stdio) and the
// operation is in the DynamoDB table (dynalite on a loopback port; credentials from the environment).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { BusinessOperationId } from '@retrysafe/contract';
import { createDynamoDbLedger } from '@retrysafe/ledger-dynamodb';
import { createSandboxProvider, REPLAYING_BEHAVIOUR, startSandboxServer } from '@retrysafe/sandbox';
import { afterAll, expect, it } from 'vitest';
import { writeJson } from './child-helpers.js';
import { startLocalDynamo } from './local-dynamo.js';

const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url));
const dynamo = await startLocalDynamo('retrysafe-mcp');
const { endpoint } = dynamo;
const sandbox = await startSandboxServer({ provider: createSandboxProvider({ ...REPLAYING_BEHAVIOUR }), port: 0 });
const dir = mkdtempSync(join(tmpdir(), 'retrysafe-mcp-dynamodb-'));
afterAll(async () => {
  await sandbox.close();
  await dynamo.close();
  rmSync(dir, { recursive: true, force: true });
});

it('serves a config whose ledger is a DynamoDB table, and records each operation there', async () => {
  const config = writeJson(dir, 'retrysafe.json', {
    ledger: { dynamodb: { table: 'retrysafe-mcp', region: 'local', endpoint } },
    adapters: { sandbox: { baseUrl: sandbox.url, timeoutMs: 2000, behaviour: REPLAYING_BEHAVIOUR } },
  });
  const env = { PATH: process.env.PATH ?? '', AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test' };
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [bin, '--config', config],
    env,
    stderr: 'pipe',
  });
  let stderr = '';
  transport.stderr?.on('data', (d) => (stderr += String(d)));
  const client = new Client({ name: 'scripted-agent', version: '1.0.0' });
  try {
    await client.connect(transport);
    const { tools } = await client.listTools();
    const tool = tools.map((t) => t.name).find((n) => n.startsWith('sandbox_'))!;
    const r = (await client.callTool({ name: tool, arguments: { ref: 'order-mcp-1', amount: 5 } }))
      .structuredContent as { status: string; businessOperationId: string };
    expect(r.status, stderr).toBe('done');
    const ledger = createDynamoDbLedger({ table: 'retrysafe-mcp', client: dynamo.client });
    expect(await ledger.get(r.businessOperationId as BusinessOperationId)).toMatchObject({
      state: 'succeeded',
      attemptCount: 1,
    });
    // The status tool reads the same table.
    const status = (
      await client.callTool({ name: 'retrysafe_status', arguments: { businessOperationId: r.businessOperationId } })
    ).structuredContent;
    expect(status, stderr).toMatchObject({ found: true });
  } finally {
    await client.close();
  }
});
