/**
 * The fence in front of servers nobody here wrote (`@modelcontextprotocol/server-memory`, `server-filesystem`)
 * and in front of one of ours whose tool declares an outputSchema, driven by the official SDK client, which
 * validates every structured answer against the schema the fence lists. Answers are lost on the fence→upstream
 * hop (test/fixtures/lossy-relay.mjs) and on the host→fence hop (a host timeout, then a re-issued call).
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  callTool as call,
  connect,
  filesystemServer,
  lookupFence,
  lookupPolicy,
  lossyRelay,
  memoryCreate,
  memoryServer,
  ordersFence,
  ordersServer,
  tempDir,
  wrapped,
  writeFence,
} from './child-helpers.js';

describe('server-memory behind the fence (its tools declare output schemas)', () => {
  function memoryFence(dir: string) {
    return writeFence(dir, {
      name: 'memory',
      timeoutMs: 500,
      policy: lookupPolicy,
      tools: {
        create_entities: memoryCreate,
      },
    });
  }

  it('its answer lost on both hops: the host gets a valid "done" on the re-issue, and one entity', async () => {
    const dir = tempDir('retrysafe-memory-');
    const memoryFile = join(dir, 'memory.jsonl');
    // The variable is set for the wrap process only: it reaches server-memory through the fence.
    const client = await wrapped(
      memoryFence(dir),
      ['--', process.execPath, lossyRelay, '--drop-answer', 'create_entities', '--', process.execPath, memoryServer],
      { MEMORY_FILE_PATH: memoryFile },
    );
    const { tools } = await client.listTools(); // the client now validates structured answers against these schemas
    expect(tools.find((t) => t.name === 'create_entities')?.outputSchema).toBeDefined();
    const name = `ent-${randomBytes(3).toString('hex')}`;
    const args = { entities: [{ name, entityType: 'person', observations: ['likes tea'] }] };
    await expect(call(client, 'create_entities', args, 100)).rejects.toMatchObject({ code: -32001 });
    const again = await call(client, 'create_entities', args);
    expect(again.isError).toBeFalsy();
    expect(again._meta?.retrysafe?.status).toBe('done');
    expect(again._meta?.retrysafe?.adopted).toBe(true);
    const third = await call(client, 'create_entities', args);
    expect(third._meta?.retrysafe?.status).toBe('done');
    expect(third.structuredContent).toEqual(again.structuredContent);
    const graph = (await call(client, 'read_graph', {})).structuredContent as { entities: { name: string }[] };
    expect(graph.entities.filter((e) => e.name === name)).toHaveLength(1);
    expect(existsSync(memoryFile)).toBe(true);
    // invalid input: refused before anything is claimed, and still a valid answer for the listed schema
    const bad = await call(client, 'create_entities', { entities: 'not a list' });
    expect(bad._meta?.retrysafe?.status).toBe('invalid-input');
  });
});

describe('our orders server with an outputSchema behind the fence', () => {
  it('every path answers what the listed schema allows: lookup, replay, conflict, handoff, invalid input; one order', async () => {
    const dir = tempDir('retrysafe-orders-schema-');
    const client = await wrapped(ordersFence(dir, 500), [
      '--',
      process.execPath,
      lossyRelay,
      '--drop-answer',
      'create_order',
      '--',
      process.execPath,
      ordersServer,
      '--output-schema',
    ]);
    await client.listTools();
    const ref = `PO-${randomBytes(3).toString('hex')}`;
    const args = { customer: 'cus_s', ref, sku: 'sku_1', quantity: 1 };
    const first = await call(client, 'create_order', args); // settled by the lookup
    expect(first._meta?.retrysafe).toMatchObject({ status: 'done', adopted: true });
    const replay = await call(client, 'create_order', args);
    expect(replay.structuredContent).toEqual(first.structuredContent);
    const conflict = await call(client, 'create_order', { ...args, sku: 'sku_2' });
    expect(conflict._meta?.retrysafe?.status).toBe('conflict');
    const handoff = await call(client, 'create_order', { customer: 'cus_s', ref: `${ref}-x`, sku: 'bad', quantity: 1 });
    expect(handoff._meta?.retrysafe?.status).toBe('needs-human');
    const invalid = await call(client, 'create_order', {
      customer: 'cus_s',
      ref: `${ref}-y`,
      sku: 'sku_1',
      quantity: 'one',
    });
    expect(invalid._meta?.retrysafe?.status).toBe('invalid-input');
    // a first call whose answer arrives: the upstream's own answer, unchanged
    const direct = await call(client, 'create_order', {
      customer: 'cus_s',
      ref: `${ref}-z`,
      sku: 'sku_1',
      quantity: 2,
    });
    expect(direct.structuredContent).toMatchObject({ order: { ref: `${ref}-z`, quantity: 2 } });
    const listed = (await call(client, 'list_orders', { customer: 'cus_s' })).structuredContent as {
      orders: { ref: string }[];
    };
    expect(listed.orders.filter((o) => o.ref === ref)).toHaveLength(1);
  });
});

describe('server-filesystem behind the fence (a writing tool)', () => {
  it('write_file with its answer lost: a valid "done" on the re-issue, the file written once', async () => {
    const dir = tempDir('retrysafe-fs-');
    const root = tempDir('retrysafe-fs-root-');
    const fence = lookupFence(dir, 'files', {
      write_file: { kind: 'set', idempotentByNature: true, intent: ['path'] },
    });
    const client = await wrapped(fence, [
      '--',
      process.execPath,
      lossyRelay,
      '--drop-answer',
      'write_file',
      '--',
      process.execPath,
      filesystemServer,
      root,
    ]);
    const { tools } = await client.listTools();
    // A set idempotent by nature: other content for one path is its next change, not a conflict.
    expect(tools.find((t) => t.name === 'write_file')?.description).toMatch(/sent as the operation's next change/);
    const path = join(root, 'note.txt');
    const a = await call(client, 'write_file', { path, content: 'hello' });
    expect(a._meta?.retrysafe?.status).toBe('done');
    const b = await call(client, 'write_file', { path, content: 'hello' });
    expect(b._meta?.retrysafe?.status).toBe('done');
    expect(b.structuredContent).toEqual(a.structuredContent);
    expect(readFileSync(path, 'utf8')).toBe('hello');
  });
});

describe('server-memory and server-filesystem: a fenced answer field by field against the direct one', () => {
  it('content, structuredContent, isError and _meta (besides retrysafe) are the same, first and on a re-issue', async () => {
    const dir = tempDir('retrysafe-compare-');
    const root = tempDir('retrysafe-compare-root-');
    const set = { kind: 'set', idempotentByNature: true, intent: ['path'] };
    const fences = {
      memory: writeFence(tempDir('retrysafe-compare-memory-'), {
        name: 'memory',
        tools: { create_entities: { kind: 'create', intent: ['entities.0.name'] } },
      }),
      files: writeFence(tempDir('retrysafe-compare-files-'), {
        name: 'files',
        tools: { write_file: set, create_directory: set },
      }),
    };
    const servers = { memory: [memoryServer], files: [filesystemServer, root] };
    /** Each server's client, direct or through its fence (each with a memory file of its own). */
    const clients = async (fenced: boolean) => {
      const env = { MEMORY_FILE_PATH: join(dir, `${fenced}.jsonl`) };
      const up = (s: keyof typeof servers) =>
        fenced
          ? wrapped(fences[s], ['--', process.execPath, ...servers[s]], env)
          : connect(process.execPath, servers[s], env);
      const [memory, files] = await Promise.all([up('memory'), up('files')]);
      await Promise.all([memory.listTools(), files.listTools()]); // both check structured content
      return { memory, files };
    };
    const [direct, fenced] = await Promise.all([clients(false), clients(true)]);
    const calls: [keyof typeof servers, string, Record<string, unknown>][] = [
      ['memory', 'create_entities', { entities: [{ name: 'Ada', entityType: 'person', observations: ['math'] }] }],
      ['files', 'create_directory', { path: join(root, 'notes') }],
      ['files', 'write_file', { path: join(root, 'notes', 'a.txt'), content: 'hello' }],
    ];
    for (const [server, name, args] of calls) {
      const { _meta, ...answer } = await call(direct[server], name, args);
      for (const adopted of [false, true]) {
        const { _meta: meta, ...mine } = await call(fenced[server], name, args);
        expect(mine).toEqual(answer);
        expect(meta).toEqual({ ..._meta, retrysafe: expect.objectContaining({ status: 'done', adopted }) });
      }
    }
  });
});
