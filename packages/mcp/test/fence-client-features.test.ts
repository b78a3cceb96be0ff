/**
 * What an upstream asks its client (sampling, elicitation, roots) reaches the host behind the fence, as it does
 * directly: for a passed-through call and for a fenced one, and the host's roots reach the upstream. A host that did
 * not declare a feature gets the upstream an MCP error, never a hang. Real servers, the official SDK client as host.
 */
import { realpathSync } from 'node:fs';
import { pathToFileURL } from 'node:url';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ListRootsRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { connectUpstream } from '../src/fence/upstream.js';
import { parseFenceConfig } from '../src/index.js';
import {
  type Answer,
  clientOf,
  connect,
  everythingServer,
  fenceOver,
  filesystemServer,
  type HostFeatures,
  onCleanup,
  tempDir,
} from './fence-helpers.js';

const node = process.execPath;
const call = (client: Client, name: string, args: Record<string, unknown>) =>
  client.callTool({ name, arguments: args }, undefined, { timeout: 10_000 }) as Promise<Answer>;
const text = (a: Answer) => a.content?.[0]?.text ?? '';

/** A host that samples (taking `sampleMs`), asks its person (who declines) and lists `roots`; `asked` records each
 * request it answers. */
function host(roots: string[], asked: string[] = [], sampleMs = 0): HostFeatures {
  return {
    capabilities: { sampling: {}, elicitation: { form: {} }, roots: { listChanged: true } },
    answer: (client) => {
      client.setRequestHandler(CreateMessageRequestSchema, async () => {
        asked.push('sampling');
        await new Promise((r) => setTimeout(r, sampleMs));
        return { model: 'host-model', role: 'assistant', content: { type: 'text', text: 'sampled by the host' } };
      });
      client.setRequestHandler(ElicitRequestSchema, async () => {
        asked.push('elicitation');
        return { action: 'decline' };
      });
      client.setRequestHandler(ListRootsRequestSchema, async () => {
        asked.push('roots');
        return { roots: roots.map((dir) => ({ uri: pathToFileURL(dir).href, name: 'workspace' })) };
      });
    },
  };
}

/** Fence servers (one per host session) in process over one real server (a child), `tools` fenced. */
async function fenceOf(args: string[], name: string, tools: Record<string, unknown>) {
  const upstream = await connectUpstream({ command: node, args });
  onCleanup(() => upstream.close());
  const config = parseFenceConfig({ name, ledger: './unused.db', timeoutMs: 400, tools });
  return () => fenceOver(config, upstream);
}

describe('what the upstream asks its client, through the fence', () => {
  it('server-everything: sampling, elicitation and roots reach the host, passed through and fenced, as directly', async () => {
    const roots = [tempDir('retrysafe-roots-')];
    const sampling = { prompt: 'hello', maxTokens: 5 };
    // the host takes longer to sample than the fenced call's timeoutMs: waiting for the host is no lost answer
    const fence = await fenceOf([everythingServer, 'stdio'], 'everything', {
      'trigger-sampling-request': { kind: 'create', intent: ['prompt', 'maxTokens'] },
    });
    const asked: string[] = [];
    const client = await clientOf(fence(), 'host', host(roots, asked, 700));
    const direct = await connect(node, [everythingServer, 'stdio'], {}, host(roots));
    for (const [name, args] of [
      ['trigger-elicitation-request', {}],
      ['get-roots-list', {}],
    ] as const)
      expect(await call(client, name, args)).toEqual(await call(direct, name, args));
    expect(asked).toEqual(expect.arrayContaining(['elicitation', 'roots']));
    // fenced: the host samples once; the re-issued call is answered from the ledger, nothing is asked again
    const { _meta, ...theirs } = await call(direct, 'trigger-sampling-request', sampling);
    const first = await call(client, 'trigger-sampling-request', sampling);
    expect(first._meta?.retrysafe).toMatchObject({ status: 'done', adopted: false });
    expect(text(first)).toMatch(/sampled by the host/);
    expect({ ...first, _meta: undefined }).toEqual({ ...theirs, _meta: undefined });
    const samples = asked.filter((a) => a === 'sampling').length;
    const again = await call(client, 'trigger-sampling-request', sampling);
    expect(again._meta?.retrysafe).toMatchObject({ status: 'done', adopted: true });
    expect(asked.filter((a) => a === 'sampling')).toHaveLength(samples);
    await client.close();
    // a host that declared none of these: the upstream is answered an error at once, and says so in its answer
    const bare = await clientOf(fence(), 'bare host');
    const started = Date.now();
    const refused = await call(bare, 'trigger-elicitation-request', {});
    expect(refused.isError).toBe(true);
    expect(text(refused)).toMatch(/elicitation\/create: the host behind the retrysafe fence did not declare it/);
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it("server-filesystem serves the host's roots, not its command-line directory, as directly", async () => {
    const [given, root] = [tempDir('retrysafe-given-'), tempDir('retrysafe-root-')];
    const fence = await fenceOf([filesystemServer, given], 'files', {
      create_directory: { kind: 'create', intent: ['path'] },
    });
    const allowed = async (client: Client) => text(await call(client, 'list_allowed_directories', {}));
    const direct = await connect(node, [filesystemServer, given], {}, host([root]));
    const client = await clientOf(fence(), 'host', host([root]));
    await expect.poll(() => allowed(direct)).toContain(realpathSync(root));
    await expect.poll(() => allowed(client)).toContain(realpathSync(root));
    expect(await allowed(client)).toEqual(await allowed(direct));
    // the host's roots change: it says so, and the upstream reads them again through the fence
    const next = tempDir('retrysafe-next-');
    client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots: [{ uri: pathToFileURL(next).href }] }));
    await client.sendRootsListChanged();
    await expect.poll(() => allowed(client)).toContain(realpathSync(next));
  });
});
